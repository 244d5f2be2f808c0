/**
 * GET /blockchain-events/status (docs/reference/api.md#endpoints-without-credentials): per followed chain, the node's head, the last
 * processed block, the lag in blocks and seconds, and the state. Read from the database, so any
 * process with the api role answers for the ingest processes. Costs nothing; needs an API key.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Common } from '../../services/context.ts';
import { chainStatus } from '../../services/status.ts';
import { sendData } from '../envelope.ts';
import { ContextQuery, envelope } from '../schemas.ts';

const Nullable = <T extends ReturnType<typeof Type.Integer> | ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const HoldItem = Type.Object({
  heldSince: Type.String({ description: 'When the breaker tripped (ISO 8601).' }),
  reason: Type.Union([Type.Literal('reorganisation'), Type.Literal('disagreement')], {
    description:
      'reorganisation: the chain was rewound deeper than reorgBreakerDepth; disagreement: a node claimed such a reorganisation and no second node confirmed it (several nodes per chain).',
  }),
  depth: Type.Integer({ description: 'The deepest reorganisation (or disagreement) since the chain was held, in blocks.' }),
  breakerDepth: Type.Integer({ description: "The chain's reorgBreakerDepth when it tripped." }),
  description: Type.String({ description: 'The same in one sentence, as the alert says it.' }),
  ancestorHeight: Type.Integer({ description: "The last trip's common ancestor: the highest block herald and the node agreed on." }),
  ancestorHash: Nullable(Type.String()),
  blocks: Type.Array(
    Type.Object({
      height: Type.Integer(),
      orphanedHash: Type.String({ description: "herald's block at this height, which left the chain (or which a node claims left it)." }),
      newHash: Nullable(Type.String({ description: "The node's block at this height when the breaker tripped; null when not read." })),
    }),
    { description: 'The blocks involved in the last trip, lowest first.' },
  ),
  trips: Type.Integer({ description: 'How often the breaker tripped since the chain was held (the last 20 are kept).' }),
});

export const ChainStatusItem = Type.Object({
  blockchain: Type.String(),
  network: Type.String(),
  state: Type.Union(
    ['starting', 'following', 'catching-up', 'held', 'stopped', 'not-configured', 'no-node'].map((s) => Type.Literal(s)),
    {
      description:
        "following: within a block of the node's head; catching-up: further behind; held: the deep-reorganisation breaker tripped (see hold): the chain is followed, its unconfirmed and block events are sent, its confirmed callbacks wait until the operator releases it; stopped: a reorganisation deeper than the window (see stopReason; an operator must look); starting: configured, no block processed yet; not-configured: followed before on this database, not now; no-node: your active subscriptions are on this chain but no node of this installation follows it, so they send no callbacks until the operator adds one (see stopReason).",
    },
  ),
  nodeHeight: Nullable(Type.Integer({ description: "The node's head height when last asked." })),
  processedHeight: Nullable(Type.Integer({ description: 'The last block processed (callbacks of its events enqueued).' })),
  processedHash: Nullable(Type.String()),
  lagBlocks: Nullable(Type.Integer()),
  lagSeconds: Nullable(Type.Integer({ description: 'Seconds from the last processed block to now when behind the head; 0 when caught up.' })),
  lastBlockTimestamp: Nullable(Type.Integer({ description: 'Timestamp (Unix seconds) of the last processed block.' })),
  nodeCheckedAt: Nullable(Type.String({ description: 'When the node was last asked for its head (ISO 8601).' })),
  stopReason: Nullable(Type.String({ description: 'Why the chain is stopped (state stopped) or not followed (state no-node).' })),
  hold: Type.Union([HoldItem, Type.Null()], {
    description:
      'The deep-reorganisation breaker (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker): why the chain is held, how deep, the blocks involved; null when it is not held.',
  }),
  mempool: Type.Union(
    [
      Type.Object({
        state: Type.Union([Type.Literal('following'), Type.Literal('failing'), Type.Literal('idle')], {
          description:
            'failing: the last round could not read the node (retried with backoff); idle: no unconfirmed subscription on the chain, so the node is not read.',
        }),
        method: Type.String({
          description:
            "How new transactions are learnt: 'getrawmempool polling', 'zmq rawtx + getrawmempool polling', 'pending transaction filter' or 'websocket newPendingTransactions + pending transaction filter'.",
        }),
        lastPolledAt: Nullable(Type.String({ description: 'The last round that read the node (ISO 8601).' })),
        lagSeconds: Nullable(Type.Integer({ description: 'Seconds since that round.' })),
        backlog: Type.Integer({ description: 'Transactions the node listed that are not read yet.' }),
        transactionsSeen: Type.Integer({ description: 'Transactions first seen since the ingest process started.' }),
        callbacksFired: Type.Integer({ description: 'Unconfirmed-event callbacks queued since the ingest process started.' }),
      }),
      Type.Null(),
    ],
    { description: 'The mempool reader (unconfirmed events) as the ingest role last reported it; null on chains without one.' },
  ),
  nodes: Type.Array(
    Type.Object({
      url: Type.String({ description: "The node's URL without credentials (an API key in the path shows as ***)." }),
      eligible: Type.Boolean({
        description:
          'Blocks are read from this node: it answers, is on the chain its label names, is not syncing, and its head is within maxLagBlocks of the best.',
      }),
      reason: Nullable(
        Type.String({
          description:
            "Why the node is not eligible; null when it is. 'wrong chain: ...' when the node says it is another chain than the label's (it is never read).",
        }),
      ),
      headHeight: Nullable(Type.Integer()),
      lagBlocks: Nullable(Type.Integer({ description: 'Blocks behind the best eligible head.' })),
      errorRate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], { description: 'Failed / all requests over the last minute.' }),
      latencyMs: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'Moving average latency of answered requests.' }),
      checkedAt: Type.String({ description: 'When the node was last checked (ISO 8601).' }),
    }),
    {
      description: "The chain's nodes (rpcUrls) as the ingest role last checked them; a pool of one is read whatever its eligibility says.",
    },
  ),
});

export function statusRoutes(app: FastifyInstance, common: Common): void {
  app.get(
    '/blockchain-events/status',
    {
      config: { endpoint: 'status' },
      schema: {
        tags: ['operations'],
        summary: 'Chain following status: head, processed height and lag of every followed chain',
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ items: Type.Array(ChainStatusItem) })) },
      },
    },
    async (request, reply) => {
      const result = await chainStatus(common, request.caller, new Date());
      return sendData(request, reply, 200, { items: result.value }, result);
    },
  );
}

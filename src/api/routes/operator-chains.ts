/** The operator's chain and delivery routes: states, lag history, reset, the delivery queue and its history. */
import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BLOCKCHAINS, type Blockchain, type ChainKey, type Network } from '../../domain/chains.ts';
import { unixSeconds } from '../../domain/time.ts';
import { releaseChain, resetChain } from '../../services/chains.ts';
import type { Common } from '../../services/context.ts';
import * as monitoring from '../../services/operator-monitoring.ts';
import { holdItem } from '../../services/status.ts';
import { sendData } from '../envelope.ts';
import { Context, ContextQuery, chainParams, envelope } from '../schemas.ts';
import { NO_CREDITS } from './operator-credits.ts';
import { ChainStatusItem, HoldItem } from './status.ts';

const Nullable = <T extends ReturnType<typeof Type.Integer> | ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const OperatorHold = Type.Composite([
  HoldItem,
  Type.Object({ heldCallbacks: Type.Integer({ description: 'Confirmed callbacks of the chain held now: sent when the chain is released.' }) }),
]);
const OperatorChain = Type.Object({
  blockchain: Type.String(),
  network: Type.String(),
  state: ChainStatusItem.properties.state,
  headHeight: Nullable(Type.Integer({ description: "The node's head height when last asked." })),
  processedHeight: Nullable(Type.Integer()),
  lagBlocks: Nullable(Type.Integer()),
  lagSeconds: Nullable(Type.Integer()),
  stoppedReason: Nullable(
    Type.String({
      description:
        'Why following stopped (state stopped): reset the chain once the cause is understood; or, state no-node, how many active subscriptions wait for a node of the chain.',
    }),
  ),
  reorganisations: Type.Integer({ description: 'Reorganisations followed in the last 24 hours.' }),
  hold: Type.Union([OperatorHold, Type.Null()], {
    description:
      'The deep-reorganisation breaker (state held): why, how deep, the blocks involved and how many callbacks wait; null when not held. Release with POST .../release.',
  }),
  nodes: ChainStatusItem.properties.nodes,
});
/** 1 minute to 7 days (the history kept). */
const MinutesQuery = Type.Object(
  {
    context: Type.Optional(Context),
    minutes: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10_080, default: 60, description: 'Minutes back, the current one included (1 to 10080, default 60).' }),
    ),
  },
  { additionalProperties: false },
);
const ChainParams = chainParams(BLOCKCHAINS);
type ChainParamsT = { blockchain: Blockchain; network: Network };

export function operatorChainRoutes(app: FastifyInstance, common: Common): void {
  app.get(
    '/operator/chains',
    {
      config: { operator: true },
      schema: {
        tags: ['operator'],
        summary:
          'Every followed chain, and every chain with subscriptions but no node: state, heights, lag, stop reason, reorganisations of the last 24 h, nodes',
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ items: Type.Array(OperatorChain) })) },
      },
    },
    async (request, reply) => {
      const items = (await monitoring.chains(common, new Date())).map((c) => ({
        blockchain: c.blockchain,
        network: c.network,
        state: c.state,
        headHeight: c.nodeHeight,
        processedHeight: c.processedHeight,
        lagBlocks: c.lagBlocks,
        lagSeconds: c.lagSeconds,
        stoppedReason: c.stopReason,
        reorganisations: c.reorganisations,
        hold: c.hold,
        nodes: c.nodes,
      }));
      return sendData(request, reply, 200, { items }, NO_CREDITS);
    },
  );

  app.get<{ Params: ChainParamsT; Querystring: { minutes: number } }>(
    '/operator/chains/:blockchain/:network/lag',
    {
      config: { operator: true, chains: BLOCKCHAINS },
      schema: {
        tags: ['operator'],
        summary: "A chain's lag, one sample per minute (kept 7 days), oldest first; a minute without a sample has no item",
        params: ChainParams,
        querystring: MinutesQuery,
        response: {
          200: envelope(
            Type.Object({
              items: Type.Array(
                Type.Object({
                  timestamp: Type.Integer({ description: 'The minute (Unix seconds).' }),
                  lagBlocks: Nullable(Type.Integer()),
                  lagSeconds: Nullable(Type.Integer()),
                }),
              ),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const { blockchain, network } = request.params;
      const samples = await monitoring.lag(common, { blockchain, network }, request.query.minutes, new Date());
      const items = samples.map((s) => ({ timestamp: unixSeconds(s.minute), lagBlocks: s.lagBlocks, lagSeconds: s.lagSeconds }));
      return sendData(request, reply, 200, { items }, NO_CREDITS);
    },
  );

  /**
   * POST /operator/chains/:blockchain/:network/<action>: `act` does it and says what it did, the fields
   * of `answer`; the item answered names the chain first.
   */
  function chainAction<F extends TProperties>(
    action: string,
    summary: string,
    answer: F,
    act: (chain: ChainKey, request: FastifyRequest) => Promise<Static<TObject<F>>>,
  ): void {
    app.post<{ Params: ChainParamsT }>(
      `/operator/chains/:blockchain/:network/${action}`,
      {
        config: { operator: true, chains: BLOCKCHAINS },
        schema: {
          tags: ['operator'],
          summary,
          params: ChainParams,
          querystring: ContextQuery,
          response: { 200: envelope(Type.Object({ item: Type.Object({ blockchain: Type.String(), network: Type.String(), ...answer }) })) },
        },
      },
      async (request, reply) => {
        const { blockchain, network } = request.params;
        const item = { blockchain, network, ...(await act({ blockchain, network }, request)) };
        return sendData(request, reply, 200, { item }, NO_CREDITS);
      },
    );
  }

  chainAction(
    'reset',
    "Forget where the chain's following stands (herald chains reset): it starts again at its startHeight or the node head; events of the blocks skipped are not sent",
    {
      forgottenHeight: Nullable(Type.Integer({ description: 'The cursor forgotten; null when the chain had no following state.' })),
      pendingEventsDeleted: Type.Integer(),
      callbacksCancelled: Type.Integer(),
    },
    async (chain, request) => {
      const removed = await resetChain(common.db, chain);
      request.log.warn({ operator: request.operator, ...chain, ...removed }, 'chain reset by an operator');
      return { forgottenHeight: removed.cursor?.height ?? null, pendingEventsDeleted: removed.pendingDeleted, callbacksCancelled: removed.callbacksCancelled };
    },
  );

  chainAction(
    'release',
    'Release a chain held by the deep-reorganisation breaker (herald chains release): its held confirmed callbacks are due now; a chain not held is left as it is (released false)',
    {
      released: Type.Boolean({ description: 'false: the chain was not held (released already, or never held): nothing changed.' }),
      callbacksReleased: Type.Integer({ description: 'Held callbacks made due now (each is sent once).' }),
      hold: Type.Union([HoldItem, Type.Null()], { description: 'The hold released; null when the chain was not held.' }),
    },
    async (chain, request) => {
      const released = await releaseChain(common.db, chain);
      request.log.warn(
        { operator: request.operator, ...chain, released: released.hold !== undefined, callbacks: released.callbacksReleased },
        'chain released by an operator',
      );
      return { released: released.hold !== undefined, callbacksReleased: released.callbacksReleased, hold: released.hold ? holdItem(released.hold) : null };
    },
  );

  app.get<{ Querystring: { minutes: number } }>(
    '/operator/delivery',
    {
      config: { operator: true },
      schema: {
        tags: ['operator'],
        summary: 'Callbacks due, the oldest due age, attempts per minute by outcome (kept 7 days), the 10 slowest destinations of the last hour',
        querystring: MinutesQuery,
        response: {
          200: envelope(
            Type.Object({
              item: Type.Object({
                due: Type.Integer({
                  description:
                    'Callbacks due now: exact below 1,000 per destination, a destination with more as of its last count (the herald_callbacks_due gauge).',
                }),
                oldestDueAgeSeconds: Type.Integer({ description: 'How long the oldest due callback has been waiting (exact).' }),
                attemptsPerMinute: Type.Array(
                  Type.Object({
                    timestamp: Type.Integer({ description: 'The minute (Unix seconds) the attempts started in.' }),
                    delivered: Type.Integer(),
                    failed: Type.Integer({ description: 'Attempts after which the callback failed for good (410, or retries exhausted).' }),
                    retried: Type.Integer({ description: 'Failed attempts with another one scheduled.' }),
                  }),
                  { description: 'Every minute of the window, oldest first (0 when none).' },
                ),
                slowestDestinations: Type.Array(
                  Type.Object({
                    host: Type.String({ description: 'host[:port] of the callback URLs.' }),
                    attempts: Type.Integer(),
                    failures: Type.Integer({ description: 'Attempts without a 2xx answer.' }),
                    p50Ms: Type.Number(),
                    p95Ms: Type.Number(),
                  }),
                ),
              }),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const d = await monitoring.delivery(common, request.query.minutes, new Date());
      const item = {
        due: d.due,
        oldestDueAgeSeconds: d.oldestDueAgeSeconds,
        attemptsPerMinute: d.perMinute.map((m) => ({ timestamp: unixSeconds(m.minute), delivered: m.delivered, failed: m.failed, retried: m.retried })),
        slowestDestinations: d.slowest.map((s) => ({
          host: new URL(s.destination).host,
          attempts: s.attempts,
          failures: s.failures,
          p50Ms: s.p50Ms,
          p95Ms: s.p95Ms,
        })),
      };
      return sendData(request, reply, 200, { item }, NO_CREDITS);
    },
  );
}

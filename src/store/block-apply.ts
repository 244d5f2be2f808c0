/**
 * The follower's per-block statements, few and multi-table: applying a block used to take about 24
 * statements (one per table and purpose), each a round trip that waits for PostgreSQL to be scheduled,
 * and on a small machine shared with the node that was where catch-up time went. Here a block is:
 *
 *   1. readBlockState: the cursor, the running backfills, the matched subscriptions' callback targets and
 *      the watched addresses among those the block touches (one SELECT);
 *   2. takeBlockDue: the pending events due now and the ledger entries now confirmed (one statement of
 *      data-modifying CTEs: DELETE ... RETURNING, UPDATE ... RETURNING), with the token balance rows
 *      those entries will change;
 *   3. callbacks.ts insertCallbacks when there are callbacks;
 *   4. writeBlock: the window row, pending events, the block's callback records, the new callbacks'
 *      numbering, ledger entries, the outputs the ledger records (UTXO chains), balance changes, the cursor and the pruning of what fell out of the
 *      window (one statement of CTEs).
 *
 * All of it inside the follower's one transaction per block, under the chain's lock (chain-state.ts
 * lockChain), so a block's effects still commit atomically with the cursor. The CTEs of one statement
 * see the same snapshot and none sees another's rows, so each touches rows no other CTE of the same
 * statement touches (the comments say why they are disjoint). The single-table functions of
 * chain-state.ts and ledger.ts remain for the other paths (reorganisations, backfills, tests).
 */
import type { ChainKey, EventType } from '../domain/chains.ts';
import { FINALIZED_DUE_HEIGHT } from '../domain/confirmations.ts';
import type { BlockCallback, CallbackTargetRow, PendingEvent } from '../domain/events.ts';
import { CALLBACKS_CHANNEL, type CallbackNumbering, dueOrHeldSql, numberingCtes, numberingParameters } from './callbacks.ts';
import { type ChainCursor, lockChainStatement } from './chain-state.ts';
import type { Queryable } from './db.ts';
import { REINSTATED_CTE } from './event-stream.ts';
import { type CoinTotals, type LedgerEntry, ledgerEntryColumns, type NftHolding, type StoredLedgerEntry, type TokenDelta, type WatchedRow } from './ledger.ts';

/**
 * Sent with the block transaction's BEGIN, in the same round trip: the chain's lock, and a commit that
 * does not wait for its WAL to reach the disk. Why that loses nothing: a block's transaction is
 * acknowledged to no one. A crash can forget the last blocks committed (at most a few hundred
 * milliseconds of them), and the follower then finds its cursor before them and applies them again from
 * the node, with the same callbacks (same idempotency keys) and ledger entries. Nothing of a forgotten
 * block can have left the database either: delivery claims a callback by an UPDATE whose commit waits for
 * the WAL up to it, which holds the block's commit before it (the WAL is one sequence), and every other
 * transaction that acts on a block's rows (an API change, a resend, a recovery) likewise commits
 * synchronously after it.
 */
export function blockTransactionPrelude(chain: ChainKey): string {
  return `SET LOCAL synchronous_commit = off; ${lockChainStatement(chain)}`;
}

export interface BlockState {
  cursor: ChainCursor | undefined;
  /** Subscriptions with a running backfill on this chain (store/block-jobs.ts). */
  backfilling: string[];
  targets: Map<string, CallbackTargetRow>;
  /** The watched rows of the candidates, and every watched address of the chain above the follower's id bound (`added`). */
  watched: WatchedRow[];
}

type StateRow = {
  height: string | null;
  hash: string | null;
  state: 'following' | 'stopped' | null;
  stop_reason: string | null;
  backfilling: string[];
  targets: [string, string, EventType, string, string, boolean, string | null][];
  watched: [string, string, boolean, boolean][];
};

type TakeRow = {
  due: [string, string, number, string, number, string, string, string, EventType][];
  confirmed: [
    number,
    string,
    string,
    'coin' | 'token' | 'nft',
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    number,
    number,
    number,
    string | null,
  ][];
};

/** The running backfills of the chain ($1, $2) as a uuid array. */
const BACKFILLING = `ARRAY(SELECT j.subscription_id FROM block_jobs j WHERE j.blockchain = $1 AND j.network = $2 AND j.kind = 'backfill' AND j.state = 'running')`;

/**
 * readBlockState's columns, given the parameter references ($n) of the subscription ids, the candidate
 * addresses and the follower's id bound of watched addresses; FROM STATE_SOURCE (one row, the cursor's
 * columns null when there is none).
 */
function stateColumns(subscriptionIds: string, candidates: string, since: string): string {
  // The watched rows of the candidates by a semi-join on the unnested array, not `= ANY (...)`: once the prepared
  // statement goes generic, PostgreSQL no longer hashes the array and compares each row with each address.
  // The candidates go as one text, a line each, not as a text[]: node-postgres quotes and escapes every element
  // of an array parameter. No address has a line break (a text that had one would be looked up in two pieces,
  // and a piece matches no address the block moves). The rows above the bound are the addresses added since the
  // follower's set last learnt (wallets/watched-set.ts): found by the primary key, a few or none.
  return `c.height, c.hash, c.state, c.stop_reason, ${BACKFILLING} AS backfilling,
       (SELECT coalesce(json_agg(json_build_array(s.id, s.customer_id::text, s.event_type, s.callback_url, s.api_version, s.is_active,
            coalesce(s.address, s.transaction_id))), '[]')
          FROM subscriptions s WHERE s.id = ANY (${subscriptionIds}::uuid[])) AS targets,
       (SELECT coalesce(json_agg(json_build_array(w.id::text, w.normalized_address, w.added, w.derived)), '[]') FROM (
          SELECT a.id, a.normalized_address, false AS added, a.wallet_xpub_id IS NOT NULL AS derived FROM wallet_addresses a
            WHERE a.blockchain = $1 AND a.network = $2 AND a.normalized_address IN (SELECT unnest(string_to_array(${candidates}::text, E'\\n')))
          UNION ALL
          SELECT a.id, a.normalized_address, true, a.wallet_xpub_id IS NOT NULL FROM wallet_addresses a
            WHERE a.id > ${since}::bigint AND a.blockchain = $1 AND a.network = $2) w) AS watched`;
}

const STATE_SOURCE = 'FROM (SELECT 1) one LEFT JOIN chain_cursors c ON c.blockchain = $1 AND c.network = $2';

function parseState(row: StateRow | undefined): BlockState {
  const cursor =
    row && row.height !== null && row.hash !== null && row.state !== null
      ? { height: Number(row.height), hash: row.hash, state: row.state, stopReason: row.stop_reason }
      : undefined;
  const targets = new Map<string, CallbackTargetRow>();
  for (const [id, customerId, eventType, callbackUrl, apiVersion, isActive, subscribedAs] of row?.targets ?? []) {
    targets.set(id, { id, customerId, eventType, callbackUrl, apiVersion, isActive, subscribedAs });
  }
  return {
    cursor,
    backfilling: row?.backfilling ?? [],
    targets,
    watched: (row?.watched ?? []).map(([id, address, added, derived]) => (derived ? { id, address, added, derived } : { id, address, added })),
  };
}

/** What a block's statement looks up: the matched subscriptions, the candidate watched addresses and the follower's id bound (wallets/watched-set.ts). */
export interface BlockLookups {
  subscriptionIds: string[];
  candidates: readonly string[];
  since: number;
}

/** Read under the chain's lock: what applying a block needs to know before it decides anything. */
export async function readBlockState(q: Queryable, chain: ChainKey, wanted: BlockLookups): Promise<BlockState> {
  const [row] = await q.query<StateRow>('block:read-state', `SELECT ${stateColumns('$3', '$4', '$5')} ${STATE_SOURCE}`, [
    chain.blockchain,
    chain.network,
    wanted.subscriptionIds,
    wanted.candidates.join('\n'),
    wanted.since,
  ]);
  return parseState(row);
}

/** A confirmed ledger entry with the amount of its token balance row (tokens only; null: no row yet). */
export interface TakenEntry extends StoredLedgerEntry {
  tokenAmount: bigint | null;
}

export interface BlockDue {
  due: PendingEvent[];
  confirmed: TakenEntry[];
}

/**
 * takeBlockDue's CTEs (due, dropped, confirmed), given the parameter references ($n) of the height, the
 * confirmed height, the subscriptions left out and the chain's finalized height (-1 when none): the events
 * waiting for finality (due_height FINALIZED_DUE_HEIGHT, docs/concepts/confirmations-and-reorganisations.md#finality)
 * are due once their block is at or below it. The literal due height (not a parameter) is what lets
 * the planner use the partial index of the waiting ones (migration 060) for that arm of the OR.
 */
function takeCtes(height: string, confirmedHeight: string, except: string, finalized: string): string {
  return `due AS (
       DELETE FROM pending_events WHERE blockchain = $1 AND network = $2
         AND (due_height <= ${height} OR (due_height = ${FINALIZED_DUE_HEIGHT} AND block_height <= ${finalized}::bigint)) AND subscription_id <> ALL (${except})
       RETURNING subscription_id, customer_id, block_height, block_hash, due_height, idempotency_key, body, callback_url, event_type, position),
     dropped AS (
       DELETE FROM ledger_entries e USING wallet_addresses a
       WHERE e.blockchain = $1 AND e.network = $2 AND NOT e.applied AND e.block_height <= ${confirmedHeight}
         AND a.id = e.wallet_address_id AND (a.watched_from_block IS NULL OR e.block_height <= a.watched_from_block)),
     confirmed AS (
       UPDATE ledger_entries e SET applied = true FROM wallet_addresses a
       WHERE e.blockchain = $1 AND e.network = $2 AND NOT e.applied AND e.block_height <= ${confirmedHeight}
         AND a.id = e.wallet_address_id AND a.watched_from_block IS NOT NULL AND e.block_height > a.watched_from_block
       RETURNING e.block_height, e.wallet_address_id, a.normalized_address, e.kind, e.identifier, e.token_id, e.received, e.spent, e.delta,
         e.symbol, e.token_type, e.decimals, e.incoming_count, e.outgoing_count)`;
}

/** What takeCtes took, as two JSON columns. */
const TAKE_COLUMNS = `(SELECT coalesce(json_agg(json_build_array(subscription_id, customer_id::text, block_height, block_hash, due_height, idempotency_key, body,
            callback_url, event_type) ORDER BY block_height, position), '[]') FROM due) AS due,
       (SELECT coalesce(json_agg(json_build_array(c.block_height, c.wallet_address_id::text, c.normalized_address, c.kind, c.identifier, c.token_id,
            c.received::text, c.spent::text, c.delta::text, c.symbol, c.token_type, c.decimals, c.incoming_count, c.outgoing_count, b.amount::text)
            ORDER BY c.block_height), '[]')
          FROM confirmed c LEFT JOIN wallet_token_balances b ON c.kind = 'token' AND b.wallet_address_id = c.wallet_address_id AND b.identifier = c.identifier)
         AS confirmed`;

function parseTake(row: TakeRow | undefined): BlockDue {
  const due = (row?.due ?? []).map(([subscriptionId, customerId, blockHeight, blockHash, dueHeight, idempotencyKey, body, callbackUrl, eventType]) => ({
    subscriptionId,
    customerId,
    blockHeight: Number(blockHeight),
    blockHash,
    dueHeight: Number(dueHeight),
    idempotencyKey,
    body,
    callbackUrl,
    eventType,
  }));
  const confirmed = (row?.confirmed ?? []).map(
    ([blockHeight, walletAddressId, address, kind, identifier, tokenId, received, spent, delta, symbol, tokenType, decimals, incoming, outgoing, amount]) => ({
      blockHeight: Number(blockHeight),
      walletAddressId,
      address,
      kind,
      identifier,
      tokenId,
      received: BigInt(received),
      spent: BigInt(spent),
      delta: BigInt(delta),
      symbol,
      tokenType,
      decimals,
      incoming,
      outgoing,
      tokenAmount: amount === null ? null : BigInt(amount),
    }),
  );
  return { due, confirmed };
}

/**
 * The pending events of blocks at or below `finalizedHeight` that wait for finality, except those of
 * subscriptions being backfilled, deleted and returned in block order, then match order: what the
 * follower sends when the chain's finalized height moves while no block is applied (a ChainLock arriving
 * after its block).
 */
export async function takeFinalizedPending(tx: Queryable, chain: ChainKey, finalizedHeight: number): Promise<PendingEvent[]> {
  const [row] = await tx.query<Pick<TakeRow, 'due'>>(
    'block:take-finalized',
    `WITH due AS (
       DELETE FROM pending_events WHERE blockchain = $1 AND network = $2 AND due_height = ${FINALIZED_DUE_HEIGHT} AND block_height <= $3
         AND subscription_id <> ALL (${BACKFILLING})
       RETURNING subscription_id, customer_id, block_height, block_hash, due_height, idempotency_key, body, callback_url, event_type, position)
     SELECT (SELECT coalesce(json_agg(json_build_array(subscription_id, customer_id::text, block_height, block_hash, due_height, idempotency_key, body,
            callback_url, event_type) ORDER BY block_height, position), '[]') FROM due) AS due`,
    [chain.blockchain, chain.network, finalizedHeight],
  );
  return parseTake({ due: row?.due ?? [], confirmed: [] }).due;
}

/**
 * Takes what becomes due at `height`: the pending events due (due_height <= height) except those of
 * subscriptions in `except` (held for their backfill), deleted and returned in block order, then match
 * order; and the ledger entries of blocks up to `confirmedHeight` not yet applied: those after their
 * address's watchedFromBlock are marked applied and returned (block order), the others (at or before it,
 * or of an address not yet anchored) deleted, since the opening balance holds them. The two ledger CTEs
 * take complementary rows.
 */
export async function takeBlockDue(
  tx: Queryable,
  chain: ChainKey,
  at: { height: number; confirmedHeight: number; except: string[]; finalizedHeight?: number },
): Promise<BlockDue> {
  const [row] = await tx.query<TakeRow>('block:take-due', `WITH ${takeCtes('$3', '$4', '$5::uuid[]', '$6')} SELECT ${TAKE_COLUMNS}`, [
    chain.blockchain,
    chain.network,
    at.height,
    at.confirmedHeight,
    at.except,
    at.finalizedHeight ?? -1,
  ]);
  return parseTake(row);
}

/**
 * readBlockState and takeBlockDue in one statement (one round trip), the subscriptions being backfilled
 * left out of the take as read by the same statement. Only for a block none of whose own ledger entries
 * is confirmed at once (confirmedHeight below its height): those must be in the table before the take.
 * The caller checks the cursor it returns and rolls the transaction back when it is not the one expected,
 * since the take has already happened.
 */
export async function readAndTakeBlock(
  tx: Queryable,
  chain: ChainKey,
  at: BlockLookups & { height: number; confirmedHeight: number; finalizedHeight?: number },
): Promise<BlockState & BlockDue> {
  if (at.confirmedHeight >= at.height) throw new Error("readAndTakeBlock: the block's own entries are confirmed now; read, insert them, then take");
  const [row] = await tx.query<StateRow & TakeRow>(
    'block:read-and-take',
    `WITH ${takeCtes('$5', '$6', BACKFILLING, '$8')} SELECT ${stateColumns('$3', '$4', '$7')}, ${TAKE_COLUMNS} ${STATE_SOURCE}`,
    [chain.blockchain, chain.network, at.subscriptionIds, at.candidates.join('\n'), at.height, at.confirmedHeight, at.since, at.finalizedHeight ?? -1],
  );
  return { ...parseState(row), ...parseTake(row) };
}

export interface BlockWrite {
  block: { height: number; hash: string; parentHash: string; timestamp: number };
  /** The node's head seen in the same step (status endpoint). */
  nodeHead: number;
  /** Window rows, callback records and applied ledger entries below this height are dropped. */
  pruneBelow: number;
  pending: PendingEvent[];
  /** The numbering of the callbacks this transaction inserted (callbacks.ts insertCallbacks). */
  numbering: CallbackNumbering;
  /** The callbacks just enqueued, by the block their event was mined in; one a reorganisation had cancelled is put back to pending. */
  blockCallbacks: BlockCallback[];
  /** This block's ledger entries. */
  entries: LedgerEntry[];
  /** UTXO chains: this block's outputs paid to watched or coin-subscribed addresses (wallets/ledger.ts blockEntries). */
  outputs: { outpoint: string; address: string; value: bigint }[];
  coins: CoinTotals[];
  tokens: TokenDelta[];
  emptiedTokens: { walletAddressId: string; identifier: string }[];
  nfts: NftHolding[];
  /** Wake the delivery workers at commit (callbacks were enqueued without their own notification). */
  notify: boolean;
}

/**
 * Everything the block writes, in one statement, the cursor included. Why the CTEs touch disjoint rows:
 * the window insert is at `height`, the prune below `pruneBelow`; the pending events inserted are due
 * after `height` (or held for a backfill), none of them taken by takeBlockDue before; the coin totals go to
 * addresses with a watchedFromBlock (takeBlockDue returns no other) while the anchoring sets it where it
 * is null; the new ledger entries are unapplied, the prune drops applied ones; the token rows updated and
 * deleted are told apart by confirmedChanges; an NFT is either held or gone; the numbering updates callbacks this
 * transaction inserted (pending), the revival only cancelled ones, and nothing else touches callback_sequences;
 * no other CTE touches ledger_outputs.
 */
export async function writeBlock(tx: Queryable, chain: ChainKey, w: BlockWrite): Promise<void> {
  const { block, pending, blockCallbacks: records, entries, outputs, coins, tokens, emptiedTokens, nfts } = w;
  const held = nfts.filter((h) => h.held);
  const gone = nfts.filter((h) => !h.held);
  await tx.query(
    'block:write',
    `WITH window_row AS (
       INSERT INTO chain_blocks (blockchain, network, height, hash, parent_hash, timestamp) VALUES ($1, $2, $3, $4, $5, $6)),
     pending AS (
       INSERT INTO pending_events (blockchain, network, subscription_id, customer_id, block_height, block_hash, due_height, idempotency_key,
         body, callback_url, event_type, position)
       SELECT $1, $2, * FROM unnest($9::uuid[], $10::bigint[], $11::bigint[], $12::text[], $13::bigint[], $14::text[], $15::text[], $16::text[], $17::text[])
         WITH ORDINALITY
       ON CONFLICT (subscription_id, idempotency_key) DO NOTHING),
     records AS (
       INSERT INTO chain_block_callbacks (blockchain, network, block_height, subscription_id, idempotency_key)
       SELECT $1, $2, * FROM unnest($18::bigint[], $19::uuid[], $20::text[]) ON CONFLICT DO NOTHING),
     revived AS (
       UPDATE callbacks c SET status = CASE WHEN c.callback_url IS NULL THEN 'cancelled' ELSE 'pending' END,
         outcome = CASE WHEN c.callback_url IS NULL THEN 'pull_only' END, finished_at = CASE WHEN c.callback_url IS NULL THEN clock_timestamp() END,
         next_attempt_at = CASE WHEN c.callback_url IS NULL THEN clock_timestamp() ELSE ${dueOrHeldSql('c.event_type', 'clock_timestamp()', '$1', '$2')} END
       FROM unnest($19::uuid[], $20::text[]) AS k (subscription_id, idempotency_key)
       WHERE c.subscription_id = k.subscription_id AND c.idempotency_key = k.idempotency_key
         AND c.status = 'cancelled' AND c.outcome = 'reorganised'
       RETURNING c.id, c.customer_id, c.stream_xid),
     ${REINSTATED_CTE},
     entries AS (
       INSERT INTO ledger_entries (blockchain, network, block_height, wallet_address_id, kind, identifier, token_id, received, spent, delta, symbol,
         token_type, decimals, incoming_count, outgoing_count)
       SELECT $1, $2, $3, * FROM unnest($21::bigint[], $22::text[], $23::text[], $24::text[], $25::numeric[], $26::numeric[], $27::numeric[], $28::text[],
         $29::text[], $30::int[], $31::int[], $32::int[])),
     coins AS (
       UPDATE wallet_addresses a SET confirmed_balance = a.confirmed_balance + t.received - t.spent,
         total_received = a.total_received + t.received, total_spent = a.total_spent + t.spent,
         incoming_transactions = a.incoming_transactions + t.incoming, outgoing_transactions = a.outgoing_transactions + t.outgoing
       FROM unnest($33::bigint[], $34::numeric[], $35::numeric[], $36::int[], $37::int[]) AS t (id, received, spent, incoming, outgoing) WHERE a.id = t.id),
     tokens AS (
       INSERT INTO wallet_token_balances AS b (wallet_address_id, identifier, symbol, token_type, decimals, amount)
       SELECT * FROM unnest($38::bigint[], $39::text[], $40::text[], $41::text[], $42::int[], $43::numeric[])
       ON CONFLICT (wallet_address_id, identifier) DO UPDATE SET amount = b.amount + EXCLUDED.amount),
     emptied AS (
       DELETE FROM wallet_token_balances b USING unnest($44::bigint[], $45::text[]) AS k (id, identifier)
       WHERE b.wallet_address_id = k.id AND b.identifier = k.identifier),
     nft_gone AS (
       DELETE FROM wallet_nfts n USING unnest($46::bigint[], $47::text[], $48::text[]) AS k (id, identifier, token_id)
       WHERE n.wallet_address_id = k.id AND n.identifier = k.identifier AND n.token_id = k.token_id),
     nft_held AS (
       INSERT INTO wallet_nfts (wallet_address_id, identifier, token_id, symbol, token_type)
       SELECT * FROM unnest($49::bigint[], $50::text[], $51::text[], $52::text[], $53::text[]) ON CONFLICT DO NOTHING),
     recorded_outputs AS (
       INSERT INTO ledger_outputs (blockchain, network, outpoint, address, value, block_height, from_opening)
       SELECT $1, $2, o.*, $3, false FROM unnest($61::text[], $62::text[], $63::numeric[]) AS o
       ON CONFLICT DO NOTHING),
     anchored AS (
       UPDATE wallet_addresses SET watched_from_block = $3 WHERE blockchain = $1 AND network = $2 AND watched_from_block IS NULL),
     cursor AS (
       INSERT INTO chain_cursors AS c (blockchain, network, height, hash, state, block_timestamp, node_head, node_head_seen_at)
       VALUES ($1, $2, $3, $4, 'following', $6, $7, clock_timestamp())
       ON CONFLICT (blockchain, network) DO UPDATE SET height = EXCLUDED.height, hash = EXCLUDED.hash, updated_at = clock_timestamp(),
         state = 'following', stop_reason = NULL, block_timestamp = EXCLUDED.block_timestamp,
         node_head = EXCLUDED.node_head, node_head_seen_at = EXCLUDED.node_head_seen_at),
     pruned_blocks AS (DELETE FROM chain_blocks WHERE blockchain = $1 AND network = $2 AND height < $8),
     pruned_records AS (DELETE FROM chain_block_callbacks WHERE blockchain = $1 AND network = $2 AND block_height < $8),
     pruned_entries AS (DELETE FROM ledger_entries WHERE blockchain = $1 AND network = $2 AND block_height < $8 AND applied),
     ${numberingCtes('$55', '$56', '$57', '$58', '$59', '$60')}
     SELECT CASE WHEN $54::boolean THEN pg_notify('${CALLBACKS_CHANNEL}', '') END`,
    [
      chain.blockchain,
      chain.network,
      block.height,
      block.hash,
      block.parentHash,
      block.timestamp,
      w.nodeHead,
      w.pruneBelow,
      pending.map((e) => e.subscriptionId),
      pending.map((e) => e.customerId),
      pending.map((e) => e.blockHeight),
      pending.map((e) => e.blockHash),
      pending.map((e) => e.dueHeight),
      pending.map((e) => e.idempotencyKey),
      pending.map((e) => e.body),
      pending.map((e) => e.callbackUrl),
      pending.map((e) => e.eventType),
      records.map((c) => c.blockHeight),
      records.map((c) => c.subscriptionId),
      records.map((c) => c.idempotencyKey),
      ...ledgerEntryColumns(entries),
      coins.map((t) => t.walletAddressId),
      coins.map((t) => t.received.toString()),
      coins.map((t) => t.spent.toString()),
      coins.map((t) => t.incoming),
      coins.map((t) => t.outgoing),
      tokens.map((d) => d.walletAddressId),
      tokens.map((d) => d.identifier),
      tokens.map((d) => d.symbol),
      tokens.map((d) => d.tokenType),
      tokens.map((d) => d.decimals),
      tokens.map((d) => d.delta.toString()),
      emptiedTokens.map((k) => k.walletAddressId),
      emptiedTokens.map((k) => k.identifier),
      gone.map((h) => h.walletAddressId),
      gone.map((h) => h.identifier),
      gone.map((h) => h.tokenId),
      held.map((h) => h.walletAddressId),
      held.map((h) => h.identifier),
      held.map((h) => h.tokenId),
      held.map((h) => h.symbol),
      held.map((h) => h.tokenType),
      w.notify,
      ...numberingParameters(w.numbering),
      outputs.map((o) => o.outpoint),
      outputs.map((o) => o.address),
      outputs.map((o) => o.value.toString()),
    ],
  );
}

/**
 * Issue 14 points 2 and 3 end to end on a REAL litecoind (regtest): a coin subscription created with
 * fromBlockHeight 50 blocks back receives exactly the deposits of those blocks, then the live ones, in
 * block order, across a restart of herald in the middle of the backfill (the job resumes from its
 * persisted progress; nothing is lost and no key is queued twice); then a replay of the range equals
 * what was first sent (dry run and the callbacks sent again: keys and bodies).
 *
 * The backfill is slowed down (one block fetched at a time, two per batch) and the range is 50 blocks
 * among 150 evaluated so that the restart lands mid-way; the test says where it landed.
 */
import { expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { formatUnits } from '../src/domain/amounts.ts';
import type { Callback } from './support/follow-helpers.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-backfill-litecoin';
const CONFIRMATIONS = 2;
const BACK = 50;

describeWithRealNode('backfill from a height and replay on a real litecoind (regtest)', litecoind, () => {
  const f = useFollowedApp(() => startLitecoinDriver({ addressType: 'bech32' }), {
    chain: { confirmations: CONFIRMATIONS },
    app: { blockJobs: { ...loadConfig({}, {}).blockJobs, concurrency: 1, batchBlocks: 2 } },
    secret: SECRET,
  });
  const { processed, subscribe, callbacksOf } = f;

  const heightOf = (cb: Callback) => (cb.json.data.item.minedInBlock as { height: number }).height;
  const sequenceOf = (cb: Callback) => Number(cb.headers['x-callback-sequence']);
  /** Deposit block height -> amount (base units). */
  const deposits = new Map<number, bigint>();
  let address: string;
  let referenceId: string;
  let from: number;
  let to: number;

  async function deposit(amount: bigint): Promise<number> {
    await f.node.send(address, amount);
    const height = await f.node.mine(1);
    deposits.set(height, amount);
    return height;
  }

  it('a coin subscription created with fromBlockHeight 50 blocks back gets exactly those blocks’ deposits, then the live ones, in block order, across a restart mid-backfill', async () => {
    address = await f.node.newAddress();
    // A deposit 5 blocks before the range (never sent), then 10 deposits among 50 blocks, 100 quiet blocks before them.
    await f.node.mine(100);
    await deposit(1_000_001n);
    await f.node.mine(4);
    for (let i = 0; i < 10; i++) {
      await deposit(2_000_000n + BigInt(i));
      await f.node.mine(4);
    }
    to = await f.node.height();
    from = to - BACK + 1;
    await processed(to);
    const created = await subscribe('address-coins-transactions-confirmed', { address, receiveCallbackOn: CONFIRMATIONS, fromBlockHeight: from }, 'coins');
    referenceId = created.referenceId;
    expect(created.item.backfill).toEqual({ fromBlockHeight: from, toBlockHeight: to, processedHeight: from - 1, state: 'running' });

    // Restart while the backfill runs: the job resumes from the progress it persisted.
    const progress = await until('the backfill to make progress', async () => {
      const r = await f.t.request('GET', `/blockchain-events/subscriptions/${referenceId}`, { key: f.c.key });
      const b = r.body.data.item.backfill;
      return (b === undefined || b.processedHeight >= from) && (b ?? { processedHeight: to, state: 'done' });
    });
    await f.t.restart();
    console.info(`litecoin backfill: herald restarted with the backfill at ${progress.processedHeight} of ${from}..${to} (${progress.state})`);

    const live = [await deposit(3_000_001n), await deposit(3_000_002n)];
    const last = (await f.node.mine(CONFIRMATIONS)) as number;
    await processed(last);
    await until(
      'the backfill to finish',
      async () => (await f.t.request('GET', `/blockchain-events/subscriptions/${referenceId}`, { key: f.c.key })).body.data.item.backfill === undefined,
      30_000,
    );
    const expected = [...deposits.keys()].filter((h) => h >= from).sort((a, b) => a - b);
    expect(expected).toHaveLength(12);
    expect(live.every((h) => expected.includes(h))).toBe(true);
    await until('every callback', async () => new Set(callbacksOf(referenceId).map((cb) => cb.json.idempotencyKey)).size >= expected.length, 30_000);
    await f.t.app.worker?.settled();
    const received = callbacksOf(referenceId);
    // No key twice beyond at-least-once: a key sent twice (a send in flight at the restart) carries the same number.
    const byKey = new Map<string, Callback>();
    for (const cb of received) {
      const seen = byKey.get(cb.json.idempotencyKey);
      if (seen) expect(sequenceOf(cb)).toBe(sequenceOf(seen));
      byKey.set(cb.json.idempotencyKey, cb);
    }
    const unique = [...byKey.values()].sort((a, b) => sequenceOf(a) - sequenceOf(b));
    expect(unique.map(sequenceOf)).toEqual(expected.map((_, i) => i + 1));
    expect(unique.map(heightOf)).toEqual(expected);
    for (const cb of unique) {
      const item = cb.json.data.item as { direction: string; amount: string };
      expect(item.direction).toBe('incoming');
      expect(item.amount).toBe(formatUnits(deposits.get(heightOf(cb)) as bigint, 8));
    }
  }, 120_000);

  it('a replay of the range equals what was first sent: the dry run lists the same keys and bodies, the replay sends them again byte for byte', async () => {
    const first = new Map<string, Callback>();
    for (const cb of callbacksOf(referenceId)) if (heightOf(cb) <= to) first.set(cb.json.idempotencyKey, cb);
    const ordered = [...first.values()].sort((a, b) => sequenceOf(a) - sequenceOf(b));
    expect(ordered).toHaveLength(10);
    const request = (dryRun: boolean) =>
      f.t.request('POST', `/blockchain-events/subscriptions/${referenceId}/replay`, {
        key: f.c.key,
        body: { data: { item: { fromBlockHeight: from, toBlockHeight: to, dryRun } } },
      });
    const dry = await request(true);
    expect(dry.status, dry.text).toBe(200);
    const listed = dry.body.data.item.callbacks as { idempotencyKey: string; body: unknown; blockHeight: number; transactionId: string }[];
    expect(listed.map((l) => l.idempotencyKey)).toEqual(ordered.map((cb) => cb.json.idempotencyKey));
    expect(listed.map((l) => l.body)).toEqual(ordered.map((cb) => cb.json));
    expect(listed.map((l) => l.transactionId)).toEqual(ordered.map((cb) => cb.json.data.item.transactionId));

    const before = callbacksOf(referenceId).length;
    const started = await request(false);
    expect(started.status, started.text).toBe(202);
    await until('the replayed callbacks', async () => callbacksOf(referenceId).length >= before + ordered.length, 30_000);
    await f.t.app.worker?.settled();
    const again = callbacksOf(referenceId).slice(before);
    expect(again).toHaveLength(ordered.length);
    for (const cb of again) expect(cb.rawBody.equals(first.get(cb.json.idempotencyKey)?.rawBody as Buffer)).toBe(true);
    const job = await until('the replay to finish', async () => {
      const item = (await f.t.request('GET', `/blockchain-events/replays/${started.body.data.item.replayId}`, { key: f.c.key })).body.data.item;
      return item.state !== 'running' && item;
    });
    // 5 credits per callback, and costs.replayPerBlock per block read.
    expect(job).toMatchObject({
      state: 'done',
      queued: ordered.length,
      creditsConsumed: 5 * ordered.length + (to - from + 1) * f.t.config.costs.replayPerBlock,
    });
  }, 60_000);
});

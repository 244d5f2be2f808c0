/**
 * The deep-reorganisation breaker (issue 33, section 4; docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker)
 * end to end on a REAL litecoind (regtest): breaker depth 3, a reorganisation of 7 blocks (invalidateblock,
 * then a longer branch mined with generateblock).
 *
 * - Before: S1 (to A, mined in the block that stays the common ancestor), O1 (to B) and S2 (to C) in the
 *   first block of the 7 orphaned ones; none of them has reached its confirmations yet.
 * - The reorganisation drops O1 (never mined again: the new branch leaves it out) and mines S2 again.
 *   The breaker trips: the chain is held (status, a `chain.held` alert through the alert webhook); S1 and S2
 *   reach their confirmations on the new branch and are queued held; nothing confirmed is sent, while
 *   TRANSACTION_MINED (not a confirmed event) still is.
 * - While held: O2 (to D, confirmed at once) is queued held, then a shallow reorganisation (1 block, below the
 *   breaker) drops it: its held callback is cancelled. herald is restarted: still held, nothing sent.
 * - `herald chains release` (the CLI, as an operator runs it): S1 and S2 are sent, each exactly once; O1 and O2
 *   never; the chain is `following` again and a `chain.recovered` alert follows.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { type Callback, followHelpers } from './support/follow-helpers.ts';
import { type FollowedApp, startFollowedApp } from './support/followed-app.ts';
import { type LitecoinDriver, litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const run = promisify(execFile);
const SECRET = 'breaker-secret';
const AMOUNT = 10_000_000n;

describeWithRealNode('the deep-reorganisation breaker on a real litecoind (regtest)', litecoind, () => {
  let f: FollowedApp<LitecoinDriver>;
  const h = followHelpers(() => ({ t: f.t, customer: f.c, receiver: f.receiver, blockchain: 'litecoin', network: 'testnet' }), SECRET);

  beforeAll(async () => {
    f = await startFollowedApp(() => startLitecoinDriver({ fundingCoins: 10 }), {
      chain: { confirmations: 2, reorgBreakerDepth: 3 },
      app: {
        alerts: {
          ...loadConfig({}, {}).alerts,
          webhookUrl: 'https://localhost:1/alerts',
          secret: `whsec_${randomBytes(24).toString('base64')}`,
          intervalSeconds: 0.1,
          holdSeconds: 0,
        },
      },
    });
    // The alerts go to the same receiver (its URL was not known before it started).
    f.t.config.alerts.webhookUrl = `${f.receiver.url}/alerts`;
    await f.t.restart();
  }, 60_000);
  afterAll(async () => {
    await f?.close();
  });

  const alerts = () =>
    f.receiver.received
      .filter((r) => r.path === '/alerts')
      .map((r) => JSON.parse(r.rawBody.toString('utf8')) as { type: string; data: Record<string, unknown> });
  const status = async () => {
    const res = await f.t.request('GET', '/blockchain-events/status', { key: f.c.key });
    return res.body.data.items.find((i: { blockchain: string }) => i.blockchain === 'litecoin');
  };
  const transactionsOf = (id: string) => h.callbacksOf(id).map((c: Callback) => c.json.data.item.transactionId as string);
  const heldRows = async () =>
    await f.t.app.database.db.query<{ idempotency_key: string; status: string; outcome: string | null; held: boolean }>(
      'test:held',
      `SELECT idempotency_key, status, outcome, next_attempt_at = 'infinity' AS held FROM callbacks WHERE event_type = 'ADDRESS_COINS_TRANSACTION_CONFIRMED' ORDER BY created_at`,
    );

  it('a 7-block reorganisation over a breaker of 3 holds every confirmed callback until `herald chains release`; orphaned events are never sent, the others exactly once', async () => {
    const { node } = f;
    const [a, b, c, d] = [await node.newAddress(), await node.newAddress(), await node.newAddress(), await node.newAddress()];
    const subA = (await h.subscribe('address-coins-transactions-confirmed', { address: a, receiveCallbackOn: 9 }, 'a')).referenceId;
    const subB = (await h.subscribe('address-coins-transactions-confirmed', { address: b, receiveCallbackOn: 8 }, 'b')).referenceId;
    const subC = (await h.subscribe('address-coins-transactions-confirmed', { address: c, receiveCallbackOn: 8 }, 'c')).referenceId;
    const subD = (await h.subscribe('address-coins-transactions-confirmed', { address: d, receiveCallbackOn: 1 }, 'd')).referenceId;
    await h.indexed();

    const s1 = await node.send(a, AMOUNT);
    const ancestor = await f.mineAndProcess(1);
    const o1 = await node.send(b, AMOUNT);
    const s2 = await node.send(c, AMOUNT);
    const minedS2 = await h.subscribeMined(s2, 'mined');
    await h.indexed();
    const tip = await f.mineAndProcess(7);
    expect(tip).toBe(ancestor + 7);
    // S1 has 8 confirmations (9 asked), O1 and S2 7 (8 asked): nothing confirmed yet.
    expect([...h.callbacksOf(subA), ...h.callbacksOf(subB), ...h.callbacksOf(subC)]).toEqual([]);
    expect(h.callbacksOf(minedS2)).toHaveLength(1);

    // The reorganisation: 7 blocks dropped, 8 mined; O1 left out for good, S2 mined again in the first new block.
    const newTip = await node.reorg(7, { drop: [o1] });
    expect(newTip).toBe(ancestor + 8);
    const held = await until('the chain held', async () => {
      const item = await status();
      return item?.state === 'held' && item.processedHeight >= newTip && item;
    });
    expect(held.hold).toMatchObject({
      reason: 'reorganisation',
      depth: 7,
      breakerDepth: 3,
      ancestorHeight: ancestor,
      ancestorHash: await node.blockHash(ancestor),
    });
    expect(held.hold.blocks).toHaveLength(7);
    expect(held.hold.blocks[0]).toMatchObject({ height: ancestor + 1, newHash: await node.blockHash(ancestor + 1) });
    const alert = await until('the chain.held alert', async () => alerts().find((x) => x.type === 'chain.held'));
    expect(alert.data).toMatchObject({ blockchain: 'litecoin', network: 'testnet', state: 'held', hold: { depth: 7, breakerDepth: 3 } });

    // S1 (confirmation 9) and S2 (8, in its new block) are due now: queued held. TRANSACTION_MINED is not held.
    await until('S1 and S2 queued held', async () => {
      const rows = await heldRows();
      return rows.filter((r) => r.status === 'pending' && r.held).length === 2;
    });
    await until('TRANSACTION_MINED of S2 in its new block', async () => h.callbacksOf(minedS2).length === 2);
    await f.t.app.worker?.settled();
    expect([...h.callbacksOf(subA), ...h.callbacksOf(subB), ...h.callbacksOf(subC)]).toEqual([]);

    // While held: O2 is confirmed at once (queued held), then a 1-block reorganisation (below the breaker) drops it.
    const o2 = await node.send(d, AMOUNT);
    await f.mineAndProcess(1);
    await until('O2 queued held', async () => (await heldRows()).filter((r) => r.status === 'pending' && r.held).length === 3);
    const afterShallow = await node.reorg(1, { drop: [o2] });
    await h.processed(afterShallow);
    const rows = await heldRows();
    expect(rows.filter((r) => r.status === 'cancelled' && r.outcome === 'reorganised')).toHaveLength(1);
    expect(rows.filter((r) => r.status === 'pending' && r.held)).toHaveLength(2);
    expect((await status()).hold).toMatchObject({ depth: 7, trips: 1 });

    // A restart while held changes nothing.
    await f.t.restart();
    await f.mineAndProcess(1);
    expect((await status()).state).toBe('held');
    expect((await f.t.request('GET', '/metrics')).text).toContain('herald_chain_held{blockchain="litecoin",network="testnet"} 1');
    expect([...h.callbacksOf(subA), ...h.callbacksOf(subB), ...h.callbacksOf(subC), ...h.callbacksOf(subD)]).toEqual([]);

    // The operator releases the chain, on the command line.
    const { stdout } = await run('node', ['bin/herald.js', 'chains', 'release', '--blockchain', 'litecoin', '--network', 'testnet', '--json'], {
      env: { ...process.env, DATABASE_URL: f.t.config.databaseUrl, HERALD_LOG_LEVEL: 'warn' },
    });
    expect(JSON.parse(stdout)).toMatchObject({ released: true, callbacksReleased: 2, hold: { depth: 7, reason: 'reorganisation' } });
    await until('S1 and S2 sent', async () => h.callbacksOf(subA).length === 1 && h.callbacksOf(subC).length === 1);
    await f.mineAndProcess(2);
    await f.t.app.worker?.settled();
    expect(transactionsOf(subA)).toEqual([s1]);
    expect(transactionsOf(subC)).toEqual([s2]);
    expect(h.callbacksOf(subC)[0]?.json.data.item.minedInBlock).toMatchObject({ height: ancestor + 1, hash: await node.blockHash(ancestor + 1) });
    expect(h.callbacksOf(subB)).toEqual([]);
    expect(h.callbacksOf(subD)).toEqual([]);
    h.expectSigned(h.callbacksOf(subA)[0]);
    expect((await status()).state).not.toBe('held');
    expect((await f.t.request('GET', '/metrics')).text).toContain('herald_chain_held{blockchain="litecoin",network="testnet"} 0');
    await until('the chain.recovered alert', async () => alerts().find((x) => x.type === 'chain.recovered'));
    // Released, it is not held again by the same reorganisation, and a second release has nothing to do.
    const again = await run('node', ['bin/herald.js', 'chains', 'release', '--blockchain', 'litecoin', '--network', 'testnet'], {
      env: { ...process.env, DATABASE_URL: f.t.config.databaseUrl, HERALD_LOG_LEVEL: 'warn' },
    });
    expect(again.stdout).toContain('was not held');
  }, 60_000);
});

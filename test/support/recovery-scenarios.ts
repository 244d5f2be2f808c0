/**
 * Issue 14's recovery and rotation checks as shared scenarios, run on the real nodes (the EVM test node
 * in test/recovery-evm.test.ts, litecoind in test/recovery-litecoin.test.ts; test/recovery.test.ts has
 * the fuller set on a fake Bitcoin Core). Delivery retries once after 1 s, so "down for a window" takes
 * seconds.
 *
 * - Recovery: a block subscription and a coin subscription (a real payment mined into the window), the
 *   receiver down while blocks are mined; each subscription is deactivated by its first exhausted
 *   callback. Back up, the block subscription is activated with recoverSince = the window's start and the
 *   coin one activated and recovered with POST /callbacks/recover since then: every callback of the window
 *   arrives once (at least once, and here no more: nothing delivered twice), with its idempotencyKey,
 *   the bytes of its first attempt and its x-callback-sequence; live delivery goes on with the next number.
 * - Rotation: a receiver that knows either secret verifies every callback during the overlap (both
 *   signatures present); after it, only the new secret's.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ChainDriver } from './chain-driver.ts';
import { type Callback, sequenceOf } from './follow-helpers.ts';
import { useFollowedApp } from './followed-app.ts';
import type { ReceivedRequest } from './receiver.ts';
import { until } from './wait.ts';

const SECRET = 'whsec-recovery-scenarios-old';
const NEW_SECRET = 'whsec-recovery-scenarios-new';

export interface RecoveryScenarioOptions {
  /** The chain's confirmations (coin callbacks wait for them). */
  confirmations: number;
  /** Base units of the payment mined into the outage. */
  amount: bigint;
  timeoutMs?: number;
}

interface LogEntry {
  idempotencyKey: string;
  status: string;
  sequence: number | null;
  attempts: unknown[];
}

export function describeRecoveryScenarios(title: string, start: () => Promise<ChainDriver>, options: RecoveryScenarioOptions): void {
  const timeout = options.timeoutMs ?? 60_000;
  describe(title, () => {
    const f = useFollowedApp(start, {
      chain: { confirmations: options.confirmations },
      delivery: {
        // Two attempts, 1 s apart, then failed (and the subscriptions of the URL deactivated).
        retryScheduleSeconds: [1],
        retryJitter: 0,
      },
      secret: SECRET,
      timeoutMs: timeout,
    });
    const { subscribe, indexed, callbacksOf, expectSigned } = f;
    const up = (hook: string) => f.receiver.byPath(`/hooks/${hook}`, { kind: 'status', status: 200 });
    const down = (hook: string) => f.receiver.byPath(`/hooks/${hook}`, { kind: 'status', status: 503 });
    const nowSeconds = () => Math.floor(Date.now() / 1000);

    async function log(referenceId: string): Promise<LogEntry[]> {
      const r = await f.t.request('GET', `/blockchain-events/subscriptions/${referenceId}/callbacks`, { key: f.c.key });
      expect(r.status, r.text).toBe(200);
      return r.body.data.items;
    }

    /** Waits until the subscription is inactive and each of its `count` callbacks was attempted; gives its log. */
    async function afterOutage(referenceId: string, count: number): Promise<LogEntry[]> {
      let last: LogEntry[] = [];
      await until(
        'the outage to deactivate the subscription',
        async () => {
          const item = (await f.t.request('GET', `/blockchain-events/subscriptions/${referenceId}`, { key: f.c.key })).body.data.item;
          last = await log(referenceId);
          return !item.isActive && last.length === count && last.some((e) => e.status === 'failed') && last.every((e) => e.attempts.length > 0);
        },
        20_000,
      ).catch((error) => {
        throw new Error(`${(error as Error).message}; the log: ${JSON.stringify(last)}`);
      });
      await f.t.app.worker?.settled();
      return await log(referenceId);
    }

    /** The recovery job once every callback it queued is delivered. */
    async function recoveryDone(id: string, delivered: number) {
      return await until(
        'the recovery delivered',
        async () => {
          const r = await f.t.request('GET', `/blockchain-events/recoveries/${id}`, { key: f.c.key });
          expect(r.status, r.text).toBe(200);
          return r.body.data.item.delivered === delivered && r.body.data.item;
        },
        30_000,
      );
    }

    it(
      'a receiver down for a window, then recover since its start: every missed callback arrives once, with its key, first bytes and number',
      async () => {
        up('outage-blocks');
        up('outage-coins');
        const address = await f.node.newAddress();
        const blocks = (await subscribe('block-mined', {}, 'outage-blocks')).referenceId;
        const coins = (await subscribe('address-coins-transactions-confirmed', { address, receiveCallbackOn: options.confirmations }, 'outage-coins'))
          .referenceId;
        await indexed();
        await f.mineAndProcess(1);
        await until('the block before the outage', async () => callbacksOf(blocks).length === 1);

        // The window: the receiver answers 503; a payment and a few blocks are mined.
        down('outage-blocks');
        down('outage-coins');
        const windowStart = nowSeconds();
        const transactionId = await f.node.send(address, options.amount);
        await f.mineAndProcess(options.confirmations + 2);
        const blockLog = await afterOutage(blocks, options.confirmations + 3);
        const coinLog = await afterOutage(coins, 1);
        const missed = { [blocks]: blockLog.filter((e) => e.status !== 'delivered'), [coins]: coinLog };
        expect(missed[blocks]).toHaveLength(options.confirmations + 2);

        // Back up: the block subscription with activate?recoverSince, the coin one with POST /callbacks/recover.
        const upAt = Date.now();
        up('outage-blocks');
        up('outage-coins');
        const activated = await f.t.request('POST', `/blockchain-events/subscriptions/${blocks}/activate?recoverSince=${windowStart}`, { key: f.c.key });
        expect(activated.status, activated.text).toBe(201);
        expect((await f.t.request('POST', `/blockchain-events/subscriptions/${coins}/activate`, { key: f.c.key })).status).toBe(201);
        const byUrl = await f.t.request('POST', '/blockchain-events/callbacks/recover', {
          key: f.c.key,
          body: { data: { item: { callbackUrl: `${f.receiver.url}/hooks/outage-coins`, since: windowStart } } },
        });
        expect(byUrl.status, byUrl.text).toBe(202);
        expect(byUrl.body.data.item.found).toBe(1);
        f.t.app.recoveries?.wake();
        const failedBlocks = missed[blocks]?.filter((e) => e.status === 'failed').length;
        expect(await recoveryDone(activated.body.data.recoveryId, failedBlocks as number)).toMatchObject({ state: 'done', found: failedBlocks, failed: 0 });
        expect(await recoveryDone(byUrl.body.data.item.recoveryId, 1)).toMatchObject({ state: 'done', found: 1, queued: 1, creditsConsumed: 5 });
        for (const id of [blocks, coins]) {
          await until('every callback delivered', async () => (await log(id)).every((e) => e.status === 'delivered'), 30_000);
        }
        await f.t.app.worker?.settled();

        for (const id of [blocks, coins]) {
          const all = callbacksOf(id);
          const afterUp = all.filter((r) => r.receivedAt >= upAt);
          // Every missed callback once (each was delivered once: nothing twice), and nothing else.
          expect(afterUp.map((r) => r.json.idempotencyKey).sort()).toEqual((missed[id] as LogEntry[]).map((e) => e.idempotencyKey).sort());
          for (const r of afterUp) {
            const first = all.find((a) => a.json.idempotencyKey === r.json.idempotencyKey) as Callback;
            expect(first.receivedAt, 'first attempted during the outage').toBeLessThan(upAt);
            expect(r.rawBody.equals(first.rawBody)).toBe(true);
            expect(sequenceOf(r)).toBe(sequenceOf(first));
            expectSigned(r);
          }
        }
        expect(callbacksOf(coins).at(-1)?.json.data.item).toMatchObject({ address, transactionId, direction: 'incoming' });
        // The block subscription's numbers: 1..n without a gap, in block order.
        const numbered = [...new Map(callbacksOf(blocks).map((r) => [sequenceOf(r), r.json.data.item.height as number])).entries()].sort((a, b) => a[0] - b[0]);
        expect(numbered.map(([n]) => n)).toEqual(numbered.map((_, i) => i + 1));
        expect(numbered.map(([, h]) => h)).toEqual(numbered.map(([, h]) => h).sort((a, b) => a - b));

        // Live again: the next block's callback carries the next number.
        const count = callbacksOf(blocks).length;
        await f.mineAndProcess(1);
        const next = await until('the next live callback', async () => callbacksOf(blocks).length === count + 1 && callbacksOf(blocks));
        expect(sequenceOf(next.at(-1) as Callback)).toBe(numbered.length + 1);
      },
      timeout,
    );

    it(
      'secret rotation: during the overlap a receiver that knows either secret verifies each callback; after it only the new one',
      async () => {
        const hex = (secret: string, body: Buffer) => createHmac('sha256', secret).update(body).digest('hex');
        const standard = (secret: string, r: ReceivedRequest) =>
          `v1,${createHmac('sha256', secret).update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.`).update(r.rawBody).digest('base64')}`;
        /** A receiver's check with one secret configured: any v1 entry of webhook-signature verifies. */
        const verifies = (secret: string, r: ReceivedRequest) => String(r.headers['webhook-signature']).split(' ').includes(standard(secret, r));

        up('rotate');
        const { referenceId } = await subscribe('block-mined', {}, 'rotate');
        await indexed();
        const rotated = await f.t.request('POST', `/blockchain-events/subscriptions/${referenceId}/rotate-secret`, {
          key: f.c.key,
          // Long enough for a block to be mined, processed and delivered on a loaded machine.
          body: { data: { item: { callbackSecretKey: NEW_SECRET, overlapSeconds: 6 } } },
        });
        expect(rotated.status, rotated.text).toBe(200);
        const overlapEnds = rotated.body.data.item.previousSecretValidUntil as number;

        await f.mineAndProcess(1);
        const [during] = await until('the callback during the overlap', async () => callbacksOf(referenceId).length === 1 && callbacksOf(referenceId));
        const d = during as Callback;
        expect(d.headers['x-signature']).toBe(hex(NEW_SECRET, d.rawBody));
        expect(d.headers['x-signature-previous']).toBe(hex(SECRET, d.rawBody));
        expect(verifies(SECRET, d) && verifies(NEW_SECRET, d)).toBe(true);
        expect(verifies('some-other-secret', d)).toBe(false);

        await until('the overlap to end', async () => Date.now() / 1000 > overlapEnds + 1.1, 15_000);
        await f.mineAndProcess(1);
        const after = (
          await until('the callback after the overlap', async () => callbacksOf(referenceId).length === 2 && callbacksOf(referenceId))
        )[1] as Callback;
        expect(after.headers['x-signature']).toBe(hex(NEW_SECRET, after.rawBody));
        expect(after.headers['x-signature-previous']).toBeUndefined();
        expect(verifies(NEW_SECRET, after)).toBe(true);
        expect(verifies(SECRET, after)).toBe(false);
        expect([sequenceOf(d), sequenceOf(after)]).toEqual([1, 2]);
      },
      timeout,
    );
  });
}

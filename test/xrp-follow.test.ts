/**
 * XRP chain following end to end: the service follows xrp/testnet on the fake rippled
 * (test/support/fake-rippled.ts), delivers to a real HTTPS receiver, and keeps the wallet ledger.
 *
 * What is particular to XRP: only validated ledgers count. A closed ledger that is not validated yet
 * fires nothing, and when the network validates another ledger at its index (replaceUnvalidated), its
 * transactions fire from the replacing ledger only; one left out never fires. XRP amounts come from the
 * metadata: a partial payment counts what it delivered, not its Amount, and a failed (tec) transaction
 * only its fee.
 *
 * The shared scenarios (test/support/follow-scenarios.ts) run on the same driver, without the
 * reorganisation one: the validated chain herald follows cannot reorganise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type FakeRippled, type FakeXrpDriver, FEE_DROPS, RIPPLE_EPOCH_OFFSET, startFakeXrpDriver } from './support/fake-rippled.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { DEFAULT_SCENARIOS, describeFollowScenarios } from './support/follow-scenarios.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const XRP = 1_000_000n;

describeFollowScenarios('XRP follow scenarios (xrp/testnet on the fake rippled)', () => startFakeXrpDriver(), {
  confirmations: 2,
  amount: 25n * XRP,
  opening: 'read', // account_info at the ledger the address is watched from
  reorgs: false,
  scenarios: [...DEFAULT_SCENARIOS, 'coins-each'],
});

const SECRET = 'whsec-xrp-follow';
const CONFIRMATIONS = 3;

let driver: FakeXrpDriver;
let fake: FakeRippled;
let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;

beforeAll(async () => {
  const ca = await createTestCa();
  [driver, receiver] = await Promise.all([startFakeXrpDriver(), startReceiver({ ca })]);
  fake = driver.fake;
  t = await startTestApp({
    chains: [
      {
        blockchain: 'xrp',
        network: 'testnet',
        rpcUrl: driver.rpcUrl,
        ...driver.chainConfig,
        pollIntervalMs: 50,
        confirmations: CONFIRMATIONS,
        concurrency: 8,
        requestTimeoutMs: 5000,
      },
    ],
    delivery: receiverDelivery(writeCaFile(ca.caPem)),
  });
  c = await t.customer({ domains: ['localhost'] });
  await processed(fake.validatedIndex);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await driver?.close();
});

// --- helpers -------------------------------------------------------------------------------------

async function status() {
  const res = await t.request('GET', '/blockchain-events/status', { key: c.key });
  return res.body?.data?.items?.find((i: { blockchain: string; network: string }) => i.blockchain === 'xrp' && i.network === 'testnet');
}

async function processed(height: number) {
  let last: { processedHeight?: number } | undefined;
  try {
    return await until(`the follower to process ledger ${height}`, async () => {
      last = await status();
      return (last?.processedHeight ?? -1) >= height && last;
    });
  } catch (error) {
    throw new Error(`${(error as Error).message}; last status: ${JSON.stringify(last)}`);
  }
}

/** Closes and validates `count` ledgers, waits until they are processed and their callbacks are out. */
async function mineAndProcess(count = 1): Promise<number> {
  const height = await driver.mine(count);
  await processed(height);
  await t.app.worker?.settled();
  return height;
}

const { subscribe, subscribeMined, callbacksOf, expectSigned } = followHelpers(
  () => ({ t, customer: c, receiver, blockchain: 'xrp', network: 'testnet' }),
  SECRET,
);

function minedIn(height: number) {
  const ledger = fake.ledger(height);
  if (!ledger) throw new Error(`no ledger ${height}`);
  return { height, hash: ledger.hash, timestamp: ledger.closeTime + RIPPLE_EPOCH_OFFSET };
}

const formatXrp = (drops: bigint) => formatUnits(drops, 6);

// --- tests ---------------------------------------------------------------------------------------

describe('XRP chain following (xrp/testnet on the fake rippled)', () => {
  it('TRANSACTION_MINED: nothing while the ledger is closed but not validated; a replaced ledger fires only what its replacement holds, with the exact body', async () => {
    const to = await driver.newAddress();
    const kept = await driver.send(to, 25n * XRP);
    const dropped = await driver.send(to, 30n * XRP);
    const keptId = await subscribeMined(kept, 'kept');
    const droppedId = await subscribeMined(dropped, 'dropped');
    await t.app.ingest?.settled();

    const closed = await driver.closeUnvalidated(1);
    expect(fake.transaction(kept)?.ledgerIndex).toBe(closed);
    expect(fake.transaction(dropped)?.ledgerIndex).toBe(closed);
    // The follower asks the node for its head after the close, and the validated head has not moved.
    const seen = fake.requests.length;
    await until('the follower to poll the validated head after the close', async () =>
      fake.requests.slice(seen).some((r) => r.method === 'ledger' && r.params.ledger_index === 'validated'),
    );
    await t.app.worker?.settled();
    expect(await status()).toMatchObject({ nodeHeight: closed - 1, processedHeight: closed - 1 });
    expect(callbacksOf(keptId)).toHaveLength(0);
    expect(callbacksOf(droppedId)).toHaveLength(0);

    // The network validated another ledger at that index, without `dropped`.
    const replacedHash = fake.ledger(closed)?.hash;
    await driver.replaceUnvalidated({ drop: [dropped] });
    expect(fake.ledger(closed)?.hash).not.toBe(replacedHash);
    expect(fake.transaction(dropped)).toBeUndefined();
    // Until now the follower never asked for the ledger at that index: it was not validated.
    expect(fake.requests.filter((r) => r.method === 'ledger' && r.params.ledger_index === closed)).toEqual([]);
    expect(await driver.validate()).toBe(closed);
    await processed(closed);
    await t.app.worker?.settled();

    const [cb] = await until('the mined callback', async () => callbacksOf(keptId).length === 1 && callbacksOf(keptId));
    expectSigned(cb);
    expect(cb?.json).toEqual({
      apiVersion: '2021-03-20',
      referenceId: keptId,
      idempotencyKey: expect.stringMatching(/^[0-9a-f]{64}$/),
      data: {
        product: 'BLOCKCHAIN_EVENTS',
        event: 'TRANSACTION_MINED',
        item: { blockchain: 'xrp', network: 'testnet', transactionId: kept, minedInBlock: minedIn(closed) },
      },
    });
    expect(minedIn(closed).hash).not.toBe(replacedHash);

    await mineAndProcess(2);
    expect(callbacksOf(keptId)).toHaveLength(1);
    expect(callbacksOf(droppedId)).toHaveLength(0);
  });

  it('the wallet ledger in XRP: the opening balance from account_info, a partial payment counts what it delivered, a failed payment only its fee; their coin callbacks say so (amount delivered, safety partial-payment; failed)', async () => {
    const watched = await driver.newAddress();
    const other = await driver.newAddress();
    await driver.send(watched, 40n * XRP); // before watching: only the opening balance sees it
    await mineAndProcess();

    const wallet = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: 'xrp' } } } });
    const walletId = wallet.body.data.item.walletId as string;
    const added = await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/xrp/testnet/addresses`, {
      key: c.key,
      body: { data: { item: { address: watched } } },
    });
    expect(added.status, added.text).toBe(201);
    expect(added.body.data.item.watchedFromBlock).toBe(fake.validatedIndex);

    const deposit = await driver.send(watched, 20n * XRP);
    const partial = await driver.sendPartial(watched, 30n * XRP, 5n * XRP); // asks 30 XRP, delivers 5
    const failed = fake.pay(watched, other, 1_000n * XRP); // more than it has: tecUNFUNDED_PAYMENT
    const paid = fake.pay(watched, other, 7n * XRP);
    const failedSub = await subscribeMined(failed, 'failed');
    const coinsSub = (await subscribe('address-coins-transactions-confirmed', { address: watched, receiveCallbackOn: 1 })).referenceId;
    await t.app.ingest?.settled();
    const height = await mineAndProcess();
    expect(fake.transaction(partial)?.meta).toMatchObject({ TransactionResult: 'tesSUCCESS', delivered_amount: String(5n * XRP) });
    expect(fake.transaction(failed)?.result).toBe('tecUNFUNDED_PAYMENT');
    expect(fake.transaction(paid)?.result).toBe('tesSUCCESS');

    // A tec transaction is final (its fee is burnt): it is mined.
    const [failedCb] = await until('the mined callback of the failed payment', async () => callbacksOf(failedSub).length === 1 && callbacksOf(failedSub));
    expect(failedCb?.json.data.item).toEqual({ blockchain: 'xrp', network: 'testnet', transactionId: failed, minedInBlock: minedIn(height) });
    // The partial payment's callback says what arrived (delivered_amount, 5 XRP), never its Amount (30), and is flagged.
    const coinItems = await until('the coin callbacks', async () => callbacksOf(coinsSub).length === 4 && callbacksOf(coinsSub).map((cb) => cb.json.data.item));
    const byTx = Object.fromEntries(coinItems.map((i) => [i.transactionId, { amount: i.amount, direction: i.direction, safety: i.safety }]));
    const ok = { verdict: 'ok', flags: [] };
    expect(byTx).toEqual({
      [partial]: { amount: '5', direction: 'incoming', safety: { verdict: 'review', flags: ['partial-payment'] } },
      [failed]: { amount: formatXrp(FEE_DROPS), direction: 'outgoing', safety: { verdict: 'review', flags: ['failed'] } },
      [paid]: { amount: formatXrp(7n * XRP + FEE_DROPS), direction: 'outgoing', safety: ok },
      [deposit]: { amount: '20', direction: 'incoming', safety: ok },
    });

    const coins = async () => {
      const res = await t.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: c.key });
      expect(res.status, res.text).toBe(200);
      return res.body.data.items.find((i: { walletId: string }) => i.walletId === walletId).coins;
    };
    for (let confirmations = 1; confirmations < CONFIRMATIONS; confirmations++) {
      expect((await coins())[0]).toMatchObject({ totalReceived: '0', totalSpent: '0' }); // not confirmed enough yet
      await mineAndProcess();
    }
    const received = 20n * XRP + 5n * XRP;
    const spent = 7n * XRP + 2n * FEE_DROPS;
    const balance = 40n * XRP + received - spent;
    expect(balance).toBe(fake.balance(watched, height)); // the node's own view at the confirmed ledger
    expect(await driver.balance(watched)).toBe(balance);
    expect(await coins()).toEqual([
      expect.objectContaining({
        blockchain: 'xrp',
        network: 'testnet',
        unit: 'XRP',
        confirmedBalance: formatXrp(balance),
        totalReceived: formatXrp(received),
        totalSpent: formatXrp(spent),
      }),
    ]);
    expect(formatXrp(spent)).toBe('7.000024'); // six decimals: drops
    expect(formatXrp(balance)).toBe('57.999976');
  });
});

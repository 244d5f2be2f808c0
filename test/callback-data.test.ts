/**
 * The Callback Data reads (docs/reference/api.md#callback-data-reads) end to end: herald with every role, following a real
 * EVM node (EDR) as ethereum/goerli and the fake Bitcoin-family nodes (Bitcoin Core, Bitcoin Cash Node,
 * Dogecoin, Dash, zcashd) as their testnets; the reads answered from the nodes through the API role's
 * own adapters, and the address read from herald's wallet ledger. Access (docs/reference/api.md#settled-callback-data-reads), credits (#settled-statuses-chains-and-prices), the
 * error answers and a fuzz of malformed path values.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { destinationOf, enqueueCallbacks, recordOutcomes } from '../src/store/callbacks.ts';
import { creditBalance } from '../src/store/customers.ts';
import { SAMPLE, startTestApp, type TestApp, type TestResponse } from './harness.ts';
import { checkUtxoReads } from './support/callback-data-checks.ts';
import { sendEth } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { type FakeXrpDriver, GENESIS_ADDRESS, startFakeXrpDriver } from './support/fake-rippled.ts';
import { FEES, startFakeTronDriver, type TronDriver } from './support/fake-tron-node.ts';
import { type FakeUtxoNode, startFakeUtxoDriver, type UtxoDialect } from './support/fake-utxo-node.ts';
import { until } from './support/wait.ts';

type Driver = Awaited<ReturnType<typeof startFakeUtxoDriver>>;
// biome-ignore lint/suspicious/noExplicitAny: node answers are arbitrary JSON
type Json = any;

const DIALECTS: { dialect: UtxoDialect; amount: bigint }[] = [
  { dialect: 'bitcoin', amount: 10_000_000n },
  { dialect: 'bitcoin-cash', amount: 10_000_000n },
  { dialect: 'dogecoin', amount: 50_000_000_000n },
  { dialect: 'dash', amount: 10_000_000n },
  { dialect: 'zcash', amount: 10_000_000n },
];
const EVM = '/blockchain-events/ethereum/goerli';
const BTC = '/blockchain-events/bitcoin/testnet';

let t: TestApp;
let evm: EvmNode;
let xrp: FakeXrpDriver;
let tron: TronDriver;
const drivers = new Map<UtxoDialect, Driver>();

beforeAll(async () => {
  const started = await Promise.all([startEvmNode({ automine: true }), ...DIALECTS.map((d) => startFakeUtxoDriver(d.dialect))]);
  evm = started[0] as EvmNode;
  [xrp, tron] = await Promise.all([startFakeXrpDriver(), startFakeTronDriver()]);
  for (const [i, d] of DIALECTS.entries()) drivers.set(d.dialect, started[i + 1] as Driver);
  const follow = { confirmations: 1, pollIntervalMs: 20, concurrency: 4, requestTimeoutMs: 2000 };
  t = await startTestApp({
    chains: [
      { blockchain: 'ethereum', network: 'goerli', rpcUrl: evm.url, ...follow },
      { blockchain: 'xrp', network: 'testnet', rpcUrl: xrp.rpcUrl, ...xrp.chainConfig, ...follow },
      { blockchain: 'tron', network: 'nile', rpcUrl: tron.rpcUrl, ...tron.chainConfig, ...follow },
      ...[...drivers.values()].map((d) => ({ blockchain: d.blockchain, network: d.network, rpcUrl: d.rpcUrl, ...d.chainConfig, ...follow })),
    ],
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
  await evm?.close();
  await xrp?.close();
  await tron?.close();
  for (const d of drivers.values()) await d.close();
});

const codeOf = (r: TestResponse) => `${r.status} ${r.body?.error?.code}`;
const driver = (dialect: UtxoDialect) => drivers.get(dialect) as Driver;
const rpcOf = (node: FakeUtxoNode) => async (method: string, params: unknown[]) => node.rpc(method, params);

describe('EVM reads, on a real EVM node', () => {
  it('a block by height and by hash, and a transaction in it, as the node has them', async () => {
    const c = await t.customer();
    const to = `0x${randomBytes(20).toString('hex')}` as `0x${string}`;
    const value = 1_234_567_890_123_456_789n;
    const { hash, receipt } = await sendEth(evm, to, value);
    if (!receipt) throw new Error('no receipt');
    const height = Number(receipt.blockNumber);
    const raw: Json = await evm.request('eth_getBlockByNumber', [toHex(height), false]);
    const parent: Json = await evm.request('eth_getBlockByNumber', [toHex(height - 1), false]);

    const byHeight = await t.request('GET', `${EVM}/blocks/height/${height}`, { key: c.key });
    expect(byHeight.status, byHeight.text).toBe(200);
    expect(byHeight.headers.get('x-credits-consumed')).toBe('500');
    const block = byHeight.body.data.item;
    expect(Object.keys(block).sort()).toEqual(['blockchainSpecific', 'hash', 'height', 'previousBlockHash', 'timestamp', 'transactionsCount']);
    expect(block).toMatchObject({ hash: raw.hash, height, previousBlockHash: parent.hash, timestamp: Number(raw.timestamp), transactionsCount: 1 });
    const specific = block.blockchainSpecific;
    expect(Object.keys(specific).sort()).toEqual(
      ['difficulty', 'extraData', 'gasLimit', 'gasUsed', 'minedInSeconds', 'nonce', 'sha3Uncles', 'size', 'totalDifficulty', 'uncles'].sort(),
    );
    expect(specific).toMatchObject({
      gasLimit: BigInt(raw.gasLimit).toString(),
      gasUsed: BigInt(raw.gasUsed).toString(),
      extraData: raw.extraData,
      nonce: raw.nonce,
      sha3Uncles: raw.sha3Uncles,
      size: Number(raw.size),
      uncles: [],
      minedInSeconds: Number(raw.timestamp) - Number(parent.timestamp),
      difficulty: BigInt(raw.difficulty).toString(),
    });

    // By hash (any case): the same block, with the EVM fields at the top level too (docs/reference/api.md#block-by-hash).
    const byHash = await t.request('GET', `${EVM}/blocks/hash/0x${raw.hash.slice(2).toUpperCase()}`, { key: c.key });
    expect(byHash.status, byHash.text).toBe(200);
    const { blockchainSpecific, ...top } = byHash.body.data.item;
    expect(blockchainSpecific).toEqual(specific);
    expect(top).toEqual({ ...block, blockchainSpecific: undefined, ...specific });

    const read = await t.request('GET', `${EVM}/transactions/${hash}`, { key: c.key });
    expect(read.status, read.text).toBe(200);
    const tx = read.body.data.item;
    const fee = receipt.gasUsed * receipt.effectiveGasPrice;
    const from = evm.accounts[0]?.address.toLowerCase();
    expect(tx).toEqual({
      index: 0,
      isConfirmed: true,
      minedInBlockHash: raw.hash,
      minedInBlockHeight: height,
      recipients: [{ address: to, amount: formatUnits(value, 18) }],
      senders: [{ address: from, amount: formatUnits(value + fee, 18) }],
      timestamp: Number(raw.timestamp),
      transactionHash: hash,
      fee: { amount: formatUnits(fee, 18), unit: 'ETH' },
      blockchainSpecific: {
        contract: '',
        gasLimit: expect.stringMatching(/^\d+$/),
        gasPrice: { amount: formatUnits(receipt.effectiveGasPrice, 18), unit: 'ETH' },
        gasUsed: receipt.gasUsed.toString(),
        inputData: '0x',
        nonce: expect.any(Number),
        transactionStatus: '0x1',
      },
    });
  });

  it('what the node does not have is a 404, and nothing is charged', async () => {
    const c = await t.customer({ credits: 10_000n });
    const head = Number(await evm.request('eth_blockNumber', []));
    expect(codeOf(await t.request('GET', `${EVM}/blocks/height/${head + 1000}`, { key: c.key }))).toBe('404 blockchain_data_block_not_found');
    expect(codeOf(await t.request('GET', `${EVM}/blocks/hash/0x${'ab'.repeat(32)}`, { key: c.key }))).toBe('404 blockchain_data_block_not_found');
    expect(codeOf(await t.request('GET', `${EVM}/transactions/${SAMPLE.evmTx}`, { key: c.key }))).toBe('404 resource_not_found');
    // Pending: not mined yet, so not answered.
    await evm.setAutomine(false);
    try {
      const { hash } = await sendEth(evm, `0x${'11'.repeat(20)}`, 1n, { wait: false });
      const pending = await t.request('GET', `${EVM}/transactions/${hash}`, { key: c.key });
      expect(codeOf(pending)).toBe('404 resource_not_found');
      expect(pending.body.error.message).toMatch(/not mined/);
    } finally {
      await evm.setAutomine(true);
      await evm.mine(1);
    }
    expect(await creditBalance(t.app.database.db, c.id)).toBe(10_000n);
  });

  it('a node that does not answer is a 503 with Retry-After that names no URL, and charges nothing', async () => {
    const c = await t.customer({ credits: 10_000n });
    evm.down();
    try {
      const res = await t.request('GET', `${EVM}/blocks/height/1`, { key: c.key });
      expect(codeOf(res)).toBe('503 service_unavailable');
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.body.error.message).toMatch(/ethereum node/);
      expect(res.text).not.toContain('127.0.0.1');
      expect(res.text).not.toContain(new URL(evm.url).port);
    } finally {
      evm.up();
    }
    expect(await creditBalance(t.app.database.db, c.id)).toBe(10_000n);
    expect((await t.request('GET', `${EVM}/blocks/height/1`, { key: c.key })).status).toBe(200);
  });
});

describe('Bitcoin-family reads, on the fake nodes', () => {
  for (const { dialect, amount } of DIALECTS) {
    it(`${dialect}: blocks by height and hash, transactions with senders, fee and spent outputs`, async () => {
      const c = await t.customer();
      await checkUtxoReads(t, c, driver(dialect), amount, rpcOf(driver(dialect).node));
    });
  }

  it('zcash: the shielded parts of a transaction', async () => {
    const c = await t.customer();
    const d = driver('zcash');
    const a = await d.newAddress();
    await d.send(a, 50_000_000n);
    await d.mine(1);
    const shield = d.node.shield(a, 30_000_000n);
    await d.mine(1);
    const res = await t.request('GET', `/blockchain-events/zcash/testnet/transactions/${shield}`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    const specific = res.body.data.item.blockchainSpecific;
    const raw: Json = d.node.rpc('getrawtransaction', [shield, true]);
    expect(specific.vShieldedOutput).toHaveLength(raw.vShieldedOutput.length);
    expect(specific.vShieldedOutput.length).toBeGreaterThan(0);
    expect(Object.keys(specific.vShieldedOutput[0]).sort()).toEqual(['cmu', 'cv', 'encCipherText', 'ephemeralKey', 'outCipherText', 'proof']);
    expect(specific.vShieldedOutput[0].cmu).toBe(raw.vShieldedOutput[0].cmu);
    expect(specific.valueBalance).toBe('-0.3');
    expect(specific.overwintered).toBe(true);
    // The coins that went into the pool are not a fee: inputs = outputs + shielded + fee.
    const outputs = res.body.data.item.recipients.reduce((s: number, r: Json) => s + Number(r.amount), 0);
    expect(Number(res.body.data.item.fee.amount)).toBeCloseTo(0.5 - 0.3 - outputs, 8);
  });
});

describe('XRP reads, on the fake rippled', () => {
  const XRP = '/blockchain-events/xrp/testnet';

  it('a validated ledger by index and by hash, and a payment in it', async () => {
    const c = await t.customer();
    const to = await xrp.newAddress();
    const id = await xrp.send(to, 25_000_000n);
    const height = await xrp.mine(1);
    const hash = await xrp.blockHash(height);
    const ledger = xrp.fake.ledger(height);
    const byHeight = await t.request('GET', `${XRP}/blocks/height/${height}`, { key: c.key });
    expect(byHeight.status, byHeight.text).toBe(200);
    const block = byHeight.body.data.item;
    expect(block).toEqual({
      hash,
      height,
      previousBlockHash: xrp.fake.ledger(height - 1)?.hash,
      timestamp: (ledger?.closeTime ?? 0) + 946_684_800,
      transactionsCount: 1,
      blockchainSpecific: {
        totalCoins: { amount: formatUnits(ledger?.totalCoins ?? 0n, 6), unit: 'XRP' },
        totalFees: { amount: '0.000012', unit: 'XRP' },
      },
    });
    const byHash = await t.request('GET', `${XRP}/blocks/hash/${hash.toLowerCase()}`, { key: c.key });
    expect(byHash.body.data.item).toEqual(block);

    const read = await t.request('GET', `${XRP}/transactions/${id}`, { key: c.key });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data.item).toEqual({
      index: 0,
      isConfirmed: true,
      minedInBlockHash: hash,
      minedInBlockHeight: height,
      recipients: [{ address: to, amount: '25' }],
      senders: [{ address: GENESIS_ADDRESS, amount: '25.000012' }],
      timestamp: block.timestamp,
      transactionHash: id,
      fee: { amount: '0.000012', unit: 'XRP' },
      blockchainSpecific: {
        additionalData: '',
        offer: { amount: '0', unit: 'XRP' },
        receive: { amount: '0', unit: 'XRP' },
        sequence: expect.any(Number),
        status: 'tesSUCCESS',
        type: 'Payment',
        value: { amount: '25', unit: 'XRP' },
      },
    });
  });

  it('a closed ledger not validated yet, and a payment in it, are not answered', async () => {
    const c = await t.customer();
    const id = await xrp.send(await xrp.newAddress(), 30_000_000n);
    const closed = await xrp.closeUnvalidated(1);
    try {
      expect(codeOf(await t.request('GET', `${XRP}/blocks/height/${closed}`, { key: c.key }))).toBe('404 blockchain_data_block_not_found');
      expect(codeOf(await t.request('GET', `${XRP}/transactions/${id}`, { key: c.key }))).toBe('404 resource_not_found');
      expect(codeOf(await t.request('GET', `${XRP}/transactions/${'AB'.repeat(32)}`, { key: c.key }))).toBe('404 resource_not_found');
      expect(codeOf(await t.request('GET', `${XRP}/blocks/height/1`, { key: c.key }))).toBe('404 blockchain_data_block_not_found');
    } finally {
      await xrp.validate();
    }
    expect((await t.request('GET', `${XRP}/transactions/${id}`, { key: c.key })).status).toBe(200);
  });
});

describe('Tron reads, on the fake java-tron', () => {
  const TRON = '/blockchain-events/tron/nile';

  it('a block by height and by hash, a TRX transfer, a TRC-20 transfer and an internal transfer', async () => {
    const c = await t.customer();
    const to = await tron.newAddress();
    const id = await tron.send(to, 5_000_000n);
    const height = await tron.mine(1);
    const hash = await tron.blockHash(height);
    const byHeight = await t.request('GET', `${TRON}/blocks/height/${height}`, { key: c.key });
    expect(byHeight.status, byHeight.text).toBe(200);
    const block = byHeight.body.data.item;
    expect(block).toMatchObject({ hash, height, previousBlockHash: await tron.blockHash(height - 1), transactionsCount: 1 });
    expect(block.blockchainSpecific).toEqual({ bandwidthUsed: '0', burnedTrx: '1.1', energyUsed: '0', size: -1 });
    expect((await t.request('GET', `${TRON}/blocks/hash/${hash.toUpperCase()}`, { key: c.key })).body.data.item).toEqual(block);
    // A hash whose first 8 bytes name the height but is not the node's block there.
    const forged = `${hash.slice(0, 16)}${'0'.repeat(48)}`;
    expect(codeOf(await t.request('GET', `${TRON}/blocks/hash/${forged}`, { key: c.key }))).toBe('404 blockchain_data_block_not_found');

    const wallet = tron.node.wallet.address;
    const read = await t.request('GET', `${TRON}/transactions/${id}`, { key: c.key });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data.item).toEqual({
      index: 0,
      isConfirmed: true,
      minedInBlockHash: hash,
      minedInBlockHeight: height,
      recipients: [{ address: to, amount: '5' }],
      senders: [{ address: wallet, amount: '6.1' }],
      timestamp: block.timestamp,
      transactionHash: id,
      fee: { amount: '1.1', unit: 'TRX' },
      blockchainSpecific: {
        amount: '5',
        bandwidthUsed: { amount: '0', unit: 'BANDWIDTH' },
        contract: '',
        energyUsed: { amount: '0', unit: 'ENERGY' },
        hasInternalTransactions: false,
        hasTokenTransfers: 'false',
        input: '',
        recipients: to,
        senders: wallet,
        transactionStatus: 'SUCCESS',
      },
    });

    const tokenTx = await tron.transferToken(to, 1000n);
    const forwarded = await tron.forward(to, 2_000_000n);
    await tron.mine(1);
    const token = (await t.request('GET', `${TRON}/transactions/${tokenTx}`, { key: c.key })).body.data.item;
    expect(token.blockchainSpecific).toMatchObject({
      contract: tron.token.address,
      hasTokenTransfers: 'true',
      hasInternalTransactions: false,
      energyUsed: { amount: String(FEES.contractEnergy), unit: 'ENERGY' },
      input: expect.stringMatching(/^a9059cbb/),
    });
    const internal = (await t.request('GET', `${TRON}/transactions/${forwarded}`, { key: c.key })).body.data.item;
    expect(internal.blockchainSpecific).toMatchObject({ hasInternalTransactions: true, hasTokenTransfers: 'false', amount: '2' });
    expect(internal.index).toBe(1);
  });

  it('unknown and pending transactions, blocks beyond the head', async () => {
    const c = await t.customer();
    const pending = await tron.send(await tron.newAddress(), 1_000_000n);
    expect(codeOf(await t.request('GET', `${TRON}/transactions/${pending}`, { key: c.key }))).toBe('404 resource_not_found');
    expect(codeOf(await t.request('GET', `${TRON}/transactions/${'ab'.repeat(32)}`, { key: c.key }))).toBe('404 resource_not_found');
    expect(codeOf(await t.request('GET', `${TRON}/blocks/height/${tron.node.height() + 100}`, { key: c.key }))).toBe('404 blockchain_data_block_not_found');
    await tron.mine(1);
    expect((await t.request('GET', `${TRON}/transactions/${pending}`, { key: c.key })).status).toBe(200);
  });
});

describe('the address read (docs/reference/api.md#address-details and #settled-callback-data-reads)', () => {
  /** The chain's last processed block, as the status endpoint says. */
  const processed = async (key: string, blockchain: string): Promise<number | null> => {
    const s = await t.request('GET', '/blockchain-events/status', { key });
    return s.body.data.items.find((i: Json) => i.blockchain === blockchain)?.processedHeight ?? null;
  };
  const subscribe = async (key: string, base: string, event: string, address: string, more: Json = {}) => {
    const item = { address, callbackUrl: SAMPLE.callbackUrl, ...more };
    const sub = await t.request('POST', `${base}/subscriptions/${event}`, { key, body: { data: { item } } });
    expect([200, 201], sub.text).toContain(sub.status);
    return sub.body.data.item.referenceId as string;
  };
  const subscribedRows = async (customerId: string) =>
    (
      await t.app.database.db.query<{ n: number }>('test:subscribed-rows', 'SELECT count(*)::int AS n FROM wallet_addresses WHERE subscribed_by = $1', [
        customerId,
      ])
    )[0]?.n;
  /** The subscription deactivated as delivery does it: a callback's receiver answered 410 Gone (store/callbacks.ts recordOutcomes). */
  const goneByDelivery = async (customerId: string, subscriptionId: string) => {
    const db = t.app.database.db;
    const id = randomUUID();
    await db.transaction('test:enqueue', (tx) =>
      enqueueCallbacks(tx, [
        {
          id,
          customerId,
          subscriptionId,
          eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
          idempotencyKey: randomUUID(),
          body: '{}',
          callbackUrl: SAMPLE.callbackUrl,
        },
      ]),
    );
    const now = new Date();
    await recordOutcomes(
      db,
      [
        {
          callbackId: id,
          destination: destinationOf(SAMPLE.callbackUrl),
          probe: false,
          result: 'gone',
          nextAttemptAt: null,
          startedAt: now,
          durationMs: 3,
          httpStatus: 410,
          errorClass: null,
          errorMessage: null,
          responseBody: null,
        },
      ],
      now,
    );
  };

  it("answers for a subscribed address from the ledger that watches it from the subscription's creation, opening balance included (scantxoutset); 404 otherwise", async () => {
    const c = await t.customer();
    const other = await t.customer();
    const d = driver('bitcoin');
    const address = await d.newAddress();
    const path = `${BTC}/addresses/${address}`;
    // Coins the address holds before it is subscribed: the opening balance, not counted in the totals.
    await d.send(address, 10_000_000n);
    const before = await d.mine(1);
    await until('bitcoin followed to the payment', async () => (await processed(c.key, 'bitcoin')) === before, 60_000);
    expect(codeOf(await t.request('GET', path, { key: c.key }))).toBe('404 blockchain_data_address_event_subscription_not_found');

    const subscription = await subscribe(c.key, BTC, 'address-tokens-transactions-confirmed', address);
    // Answered at once, watched from the block herald had processed when the subscription was created.
    const first = await t.request('GET', path, { key: c.key });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.item).toMatchObject({ transactionsCount: 0, totalReceived: { amount: '0', unit: 'BTC' }, watchedFromBlock: before });
    // Another customer's subscription opens nothing, and the watch is no wallet of the customer.
    expect(codeOf(await t.request('GET', path, { key: other.key }))).toBe('404 blockchain_data_address_event_subscription_not_found');
    expect((await t.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: c.key })).body.data.total).toBe(0);

    await d.send(address, 25_000_000n);
    await d.mine(1);
    let item: Json;
    await until(
      'the ledger counted the payment and read the opening balance',
      async () => {
        item = (await t.request('GET', path, { key: c.key })).body.data.item;
        return item.totalReceived.amount === '0.25' && item.openingBalance === 'read';
      },
      60_000,
    );
    const res = await t.request('GET', `${path}?context=addr`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-credits-consumed')).toBe('500');
    expect(res.body.context).toBe('addr');
    expect(res.body.data.item).toEqual({
      incomingTransactionsCount: 1,
      outgoingTransactionsCount: 0,
      transactionsCount: 1,
      confirmedBalance: { amount: '0.35', unit: 'BTC' },
      totalReceived: { amount: '0.25', unit: 'BTC' },
      totalSpent: { amount: '0', unit: 'BTC' },
      watchedFromBlock: before,
      openingBalance: 'read',
    });

    // A deleted subscription no longer opens it, and the address is no longer watched for it.
    const del = await t.request('DELETE', `${BTC}/subscriptions/${subscription}`, { key: c.key });
    expect(del.status).toBe(200);
    expect(codeOf(await t.request('GET', path, { key: c.key }))).toBe('404 blockchain_data_address_event_subscription_not_found');
    expect(await subscribedRows(c.id)).toBe(0);
  }, 120_000);

  it('a node that cannot tell the opening balance (dogecoind, no scantxoutset): the balance counts what moved after watchedFromBlock, and says so', async () => {
    const c = await t.customer();
    const d = driver('dogecoin');
    const address = await d.newAddress();
    await d.send(address, 70_000_000_000n);
    const before = await d.mine(1);
    await until('dogecoin followed to the payment', async () => (await processed(c.key, 'dogecoin')) === before, 60_000);
    await subscribe(c.key, '/blockchain-events/dogecoin/testnet', 'address-coins-transactions-confirmed', address);
    await d.send(address, 50_000_000_000n);
    await d.mine(1);
    const path = `/blockchain-events/dogecoin/testnet/addresses/${address}`;
    let item: Json;
    await until(
      'the ledger counted the payment',
      async () => {
        item = (await t.request('GET', path, { key: c.key })).body.data.item;
        return item.totalReceived.amount === '500' && item.openingBalance !== 'pending';
      },
      60_000,
    );
    expect(item).toMatchObject({ confirmedBalance: { amount: '500', unit: 'DOGE' }, watchedFromBlock: before, openingBalance: 'unavailable' });
  }, 120_000);

  it('stays open while one active subscription names the address; deactivated by delivery it is a 404 and unwatched; activated again, watched from then (EVM, eth_getBalance opening)', async () => {
    const c = await t.customer();
    const address = toHex(randomBytes(20));
    const path = `${EVM}/addresses/${address}`;
    const funded = await sendEth(evm, address, 3n * 10n ** 15n);
    const before = Number(funded.receipt?.blockNumber);
    await until('ethereum followed to the payment', async () => (await processed(c.key, 'ethereum')) === before, 60_000);
    const tokens = await subscribe(c.key, EVM, 'address-tokens-transactions-confirmed', address);
    const internal = await subscribe(c.key, EVM, 'address-internal-transactions-confirmed', address, {
      callbackSecretKey: 'secret',
      allowDuplicates: false,
    });
    expect(await subscribedRows(c.id)).toBe(1); // one watch per address, whatever the number of subscriptions
    await sendEth(evm, address, 10n ** 15n);
    await until(
      'the ledger counted the payment and read the opening balance',
      async () => {
        const item = (await t.request('GET', path, { key: c.key })).body.data.item;
        return item.totalReceived.amount === formatUnits(10n ** 15n, 18) && item.openingBalance === 'read';
      },
      60_000,
    );
    expect((await t.request('GET', path, { key: c.key })).body.data.item).toMatchObject({
      confirmedBalance: { amount: formatUnits(4n * 10n ** 15n, 18), unit: 'ETH' },
      incomingTransactionsCount: 1,
      watchedFromBlock: before,
    });

    // One of the two ends: the other still opens the address, with the same figures.
    expect((await t.request('DELETE', `${EVM}/subscriptions/${tokens}`, { key: c.key })).status).toBe(200);
    const still = await t.request('GET', path, { key: c.key });
    expect(still.status, still.text).toBe(200);
    expect(still.body.data.item.watchedFromBlock).toBe(before);
    // The last one deactivated by delivery: 404, and the address is no longer watched.
    await goneByDelivery(c.id, internal);
    const gone = await t.request('GET', path, { key: c.key });
    expect(codeOf(gone)).toBe('404 blockchain_data_address_event_subscription_not_found');
    expect(await subscribedRows(c.id)).toBe(0);

    // Activated again: watched anew from the block processed then, its totals from there.
    const now = await processed(c.key, 'ethereum');
    const activated = await t.request('POST', `/blockchain-events/subscriptions/${internal}/activate`, { key: c.key });
    expect(activated.status, activated.text).toBe(201);
    const again = await t.request('GET', path, { key: c.key });
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.item).toMatchObject({ watchedFromBlock: now, totalReceived: { amount: '0', unit: 'ETH' }, transactionsCount: 0 });
  }, 120_000);

  it('matches an EVM address in any spelling', async () => {
    const c = await t.customer();
    const checksummed = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
    await subscribe(c.key, EVM, 'address-tokens-transactions-confirmed', checksummed);
    const res = await t.request('GET', `${EVM}/addresses/${SAMPLE.evmAddress}`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.item.confirmedBalance.unit).toBe('ETH');
  });
});

describe('access, credits and errors', () => {
  it('needs an API key, and a key restricted to other endpoints is refused', async () => {
    for (const path of [
      `${EVM}/blocks/height/1`,
      `${EVM}/blocks/hash/0x${'ab'.repeat(32)}`,
      `${EVM}/transactions/${SAMPLE.evmTx}`,
      `${EVM}/addresses/${SAMPLE.evmAddress}`,
    ]) {
      expect(codeOf(await t.request('GET', path))).toBe('401 missing_api_key');
      expect(codeOf(await t.request('GET', path, { key: 'hk_nope' }))).toBe('401 invalid_api_key');
    }
    const restricted = await t.customer({ allowedEndpoints: ['status'] });
    expect(codeOf(await t.request('GET', `${EVM}/blocks/height/1`, { key: restricted.key }))).toBe('403 endpoint_not_allowed_for_api_key');
    const allowed = await t.customer({ allowedEndpoints: ['callback-data'] });
    expect((await t.request('GET', `${EVM}/blocks/height/1`, { key: allowed.key })).status).toBe(200);
  });

  it('costs 500 credits per read; 402 and nothing taken when the credits do not cover it', async () => {
    const c = await t.customer({ credits: 1499n });
    const first = await t.request('GET', `${EVM}/blocks/height/1`, { key: c.key });
    expect(first.headers.get('x-credits-consumed')).toBe('500');
    expect(first.headers.get('x-credits-available')).toBe('999');
    await t.request('GET', `${BTC}/blocks/height/1`, { key: c.key });
    const poor = await t.request('GET', `${EVM}/blocks/height/1`, { key: c.key });
    expect(codeOf(poor)).toBe('402 insufficient_credits');
    expect(await creditBalance(t.app.database.db, c.id)).toBe(499n);
  });

  it('a chain not followed here, a chain not served, a plan without mainnets', async () => {
    const c = await t.customer();
    const notFollowed = await t.request('GET', '/blockchain-events/ethereum/mainnet/blocks/height/1', { key: c.key });
    expect(codeOf(notFollowed)).toBe('404 blockchain_data_block_not_found');
    expect(notFollowed.body.error.message).toMatch(/does not follow ethereum mainnet/);
    expect(codeOf(await t.request('GET', `/blockchain-events/litecoin/testnet/transactions/${'ab'.repeat(32)}`, { key: c.key }))).toBe(
      '404 resource_not_found',
    );
    // docs/reference/api.md#settled-statuses-chains-and-prices: the address read has no tron.
    const tronAddress = await t.request('GET', `/blockchain-events/tron/nile/addresses/${SAMPLE.tronAddress}`, { key: c.key });
    expect(codeOf(tronAddress)).toBe('400 uri_not_found');
    expect(tronAddress.body.error.details[0].attribute).toBe('blockchain');
    expect(codeOf(await t.request('GET', '/blockchain-events/tron/mainnet/blocks/height/1', { key: c.key }))).toBe('404 blockchain_data_block_not_found');
    expect(codeOf(await t.request('GET', '/blockchain-events/ethereum/testnet/blocks/height/1', { key: c.key }))).toBe('400 uri_not_found');
    const testnetOnly = await t.customer({ plan: { mainnetAllowed: false } });
    expect(codeOf(await t.request('GET', '/blockchain-events/bitcoin/mainnet/blocks/height/1', { key: testnetOnly.key }))).toBe(
      '403 feature_mainnets_not_allowed_for_plan',
    );
  });

  it('malformed path values are 409 invalid_data naming the attribute', async () => {
    const c = await t.customer();
    const cases: [string, string][] = [
      [`${EVM}/blocks/height/abc`, 'blockHeight'],
      [`${EVM}/blocks/height/-1`, 'blockHeight'],
      [`${EVM}/blocks/height/1.5`, 'blockHeight'],
      [`${EVM}/blocks/height/99999999999`, 'blockHeight'],
      [`${EVM}/blocks/hash/${'ab'.repeat(32)}`, 'blockHash'],
      [`${BTC}/blocks/hash/0x${'ab'.repeat(32)}`, 'blockHash'],
      [`${BTC}/blocks/hash/zz`, 'blockHash'],
      [`${EVM}/transactions/0x1234`, 'transactionId'],
      [`${BTC}/transactions/${'g'.repeat(64)}`, 'transactionId'],
      [`${EVM}/addresses/0x1234`, 'address'],
      [`${BTC}/addresses/not-an-address`, 'address'],
    ];
    for (const [path, attribute] of cases) {
      const res = await t.request('GET', path, { key: c.key });
      expect(codeOf(res), path).toBe('409 invalid_data');
      expect(res.body.error.details[0].attribute, path).toBe(attribute);
    }
    expect(await creditBalance(t.app.database.db, c.id)).toBe(100_000_000n);
  });

  it('fuzz: random path values never make a 500 and always answer in the envelope', async () => {
    const c = await t.customer();
    const alphabet = 'abcdefABCDEF0123456789xz-_.~%!$&()*+,;=:@ éü中\u0000\u00ff\u2028';
    const random = () => {
      const length = 1 + Math.floor(Math.random() * 90);
      let s = '';
      for (let i = 0; i < length; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
      return Math.random() < 0.3 ? `0x${randomBytes(Math.floor(Math.random() * 40)).toString('hex')}` : s;
    };
    for (let i = 0; i < 120; i++) {
      const base = i % 2 === 0 ? EVM : BTC;
      const tail = ['addresses', 'blocks/hash', 'blocks/height', 'transactions'][i % 4];
      const path = `${base}/${tail}/${encodeURIComponent(random())}`;
      const res = await t.request('GET', path, { key: c.key });
      expect(res.status, `${path}: ${res.text}`).toBeLessThan(500);
      expect(res.body?.error?.code ?? (res.status === 200 ? 'ok' : undefined), `${path}: ${res.text}`).toBeDefined();
    }
  });
});

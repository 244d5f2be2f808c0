/**
 * Omni Layer tokens (USDT's layer on bitcoin) followed end to end: the service follows bitcoin/testnet on
 * a fake Omni Core 0.12 (test/support/fake-utxo-node.ts: bitcoind plus the omni_* RPCs, Omni transactions
 * as class C OP_RETURN payloads whose validity the fake decides when their block is processed), delivers
 * to a real HTTPS receiver, and keeps the wallet ledger. Checked: ADDRESS_TOKENS_TRANSACTION_CONFIRMED
 * with tokenType OMNI and the exact token object of docs/reference/events/README.md#token-objects for incoming and outgoing
 * Simple Sends and a Send All, fired on exactly the receiveCallbackOn-th confirmation, never for invalid
 * Omni transactions; and the Omni balances of a watched address in the all-assets endpoint (fungible,
 * identifier = property id), opening balance included, against the node's own balances. And
 * ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED from Omni Core's pending transactions (omni_listpendingtransactions):
 * the same token object, once per transaction and direction, before any block.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type FakeUtxoNode, startFakeUtxoNode } from './support/fake-utxo-node.ts';
import { type Callback, followHelpers } from './support/follow-helpers.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-omni-follow';
/** The safety verdict of a callback nothing is wrong with (docs/concepts/deposit-safety.md). */
const OK = { verdict: 'ok', flags: [] };
const TOKEN = 100_000_000n; // one divisible token in base units
const BTC_FOR_FEES = 1_000_000n;

let node: FakeUtxoNode;
let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;
let issuer: string;
let dollar: { txid: string; propertyId: number };
let points: { txid: string; propertyId: number };

beforeAll(async () => {
  const ca = await createTestCa();
  [node, receiver] = await Promise.all([startFakeUtxoNode('omni'), startReceiver({ ca })]);
  issuer = node.newAddress();
  node.send(issuer, 10n * BTC_FOR_FEES);
  node.mine(1);
  dollar = node.createProperty(issuer, { name: 'Herald Dollar', category: 'Financial', amount: 1_000_000n * TOKEN });
  points = node.createProperty(issuer, { name: 'Herald Points', divisible: false, amount: 5_000n });
  node.mine(1);
  t = await startTestApp({
    chains: [
      {
        blockchain: 'bitcoin',
        network: 'testnet',
        rpcUrl: node.urlWithCredentials,
        chainId: node.params.chainName, // the fake's own chain (docs/reference/chains.md "Chain identity")
        confirmations: 2,
        pollIntervalMs: 50,
        mempoolPollIntervalMs: 50,
        concurrency: 8,
        requestTimeoutMs: 5000,
      },
    ],
    delivery: receiverDelivery(writeCaFile(ca.caPem)),
  });
  c = await t.customer({ domains: ['localhost'] });
  // The first block waits for the block worker thread to start: many seconds on a loaded machine.
  await processed(node.height(), 50_000);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await node?.close();
});

// --- helpers -------------------------------------------------------------------------------------

const follow = followHelpers(() => ({ t, customer: c, receiver, blockchain: 'bitcoin', network: 'testnet' }), SECRET);
const { processed, callbacksOf, expectSigned } = follow;

/** Mines one block and waits until it is processed and every callback it made due is out. */
async function mineAndProcess(): Promise<number> {
  node.mine(1);
  await processed(node.height());
  await t.app.worker?.settled();
  return node.height();
}

const subscribe = async (item: Record<string, unknown>): Promise<string> =>
  (await follow.subscribe('address-tokens-transactions-confirmed', item, 'omni')).referenceId;

function blockOf(height: number) {
  const block = node.chain.main[height];
  if (!block) throw new Error(`no block ${height}`);
  return { height, hash: block.hash, timestamp: block.header.time };
}

/** An address of the node's wallet with bitcoins for the fees of its Omni transactions. */
function fundedAddress(): string {
  const address = node.newAddress();
  node.send(address, BTC_FOR_FEES);
  return address;
}

const dollarToken = (transactionType: string, amount: string) => ({
  name: 'Herald Dollar',
  propertyId: String(dollar.propertyId),
  transactionType,
  createdByTransactionId: dollar.txid,
  amount,
});

// --- tests ---------------------------------------------------------------------------------------

describe('Omni tokens followed on a fake Omni Core', () => {
  it('ADDRESS_TOKENS_TRANSACTION_CONFIRMED: incoming and outgoing OMNI transfers on exactly the receiveCallbackOn-th confirmation; invalid Omni transactions never', async () => {
    const holder = fundedAddress();
    const carol = fundedAddress();
    const bob = node.newAddress();
    node.omniSend(issuer, carol, dollar.propertyId, 4n * TOKEN);
    await mineAndProcess();
    const id = await subscribe({ address: holder, receiveCallbackOn: 3 });
    await t.app.ingest?.settled();

    // One valid send to the holder, and three invalid ones that a naive reader of the OP_RETURN would count.
    // Omni Core applies a block's transactions in order: the holder's send comes before it has tokens.
    const nothingYet = node.omniSend(holder, bob, dollar.propertyId, TOKEN);
    const incoming = node.omniSend(issuer, holder, dollar.propertyId, 25n * TOKEN + TOKEN / 2n);
    const unknownProperty = node.omniSend(issuer, holder, 999, TOKEN);
    const overdrawn = node.omniSend(carol, holder, dollar.propertyId, 1_000n * TOKEN);
    const incomingAt = await mineAndProcess();
    for (const [txid, reason] of [
      [unknownProperty, 'Property does not exist'],
      [overdrawn, 'Sender has insufficient balance'],
      [nothingYet, 'Sender has insufficient balance'],
    ] as const) {
      expect(node.rpc('omni_gettransaction', [txid]), txid).toMatchObject({ valid: false, invalidreason: reason });
    }
    await mineAndProcess(); // 2 confirmations
    expect(callbacksOf(id)).toHaveLength(0);

    const outgoing = node.omniSend(holder, bob, dollar.propertyId, 5n * TOKEN);
    const outgoingAt = await mineAndProcess(); // 3rd confirmation of the incoming block
    const [first] = await until('the incoming OMNI callback', async () => callbacksOf(id).length === 1 && callbacksOf(id));
    expectSigned(first as Callback);
    expect(first?.json.data.item).toEqual({
      blockchain: 'bitcoin',
      network: 'testnet',
      address: holder,
      minedInBlock: blockOf(incomingAt),
      transactionId: incoming,
      tokenType: 'OMNI',
      token: dollarToken('Simple Send', '25.5'),
      direction: 'incoming',
      safety: OK,
    });

    const sendAll = node.omniSendAll(carol, holder); // carol's 4 dollars
    const sendAllAt = await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(1); // the outgoing block has 2 confirmations
    await mineAndProcess();
    const two = await until('the outgoing OMNI callback', async () => callbacksOf(id).length === 2 && callbacksOf(id));
    expect(two[1]?.json.data.item).toEqual({
      blockchain: 'bitcoin',
      network: 'testnet',
      address: holder,
      minedInBlock: blockOf(outgoingAt),
      transactionId: outgoing,
      tokenType: 'OMNI',
      token: dollarToken('Simple Send', '5'),
      direction: 'outgoing',
      safety: OK,
    });
    await mineAndProcess();
    const three = await until('the Send All callback', async () => callbacksOf(id).length === 3 && callbacksOf(id));
    expect(three[2]?.json.data.item).toEqual({
      blockchain: 'bitcoin',
      network: 'testnet',
      address: holder,
      minedInBlock: blockOf(sendAllAt),
      transactionId: sendAll,
      tokenType: 'OMNI',
      token: dollarToken('Send All', '4'),
      direction: 'incoming',
      safety: OK,
    });
    for (let i = 0; i < 3; i++) await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(3);
    expect(new Set(callbacksOf(id).map((cb) => cb.json.idempotencyKey)).size).toBe(3);
    expect(node.omniBalance(holder, dollar.propertyId)).toBe(24n * TOKEN + TOKEN / 2n);
  });

  it("the all-assets endpoint lists a watched address's Omni balances (opening included) as fungible tokens identified by property id", async () => {
    const owner = fundedAddress();
    node.omniSend(issuer, owner, dollar.propertyId, 10n * TOKEN); // before watching: the opening balance
    await mineAndProcess();
    const wallet = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: 'omni' } } } });
    const walletId = wallet.body.data.item.walletId as string;
    const added = await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/bitcoin/testnet/addresses`, {
      key: c.key,
      body: { data: { item: { address: owner } } },
    });
    expect(added.status, added.text).toBe(201);
    expect(added.body.data.item.watchedFromBlock).toBe(node.height());

    node.omniSend(issuer, owner, dollar.propertyId, 2n * TOKEN + TOKEN / 2n);
    node.omniSend(issuer, owner, points.propertyId, 7n);
    node.omniSend(issuer, owner, dollar.propertyId, 10_000_000n * TOKEN); // invalid: more than was issued
    await mineAndProcess();
    node.omniSend(owner, issuer, dollar.propertyId, TOKEN);
    await mineAndProcess();
    await mineAndProcess(); // 2 confirmations of the last block
    const item = (await t.request('GET', `/wallet-as-a-service/wallets/${walletId}`, { key: c.key })).body.data.item;
    expect(node.omniBalance(owner, dollar.propertyId)).toBe(11n * TOKEN + TOKEN / 2n);
    expect(node.omniBalance(owner, points.propertyId)).toBe(7n);
    expect([...item.fungibleTokens].sort((a: { identifier: string }, b: { identifier: string }) => Number(a.identifier) - Number(b.identifier))).toEqual([
      { blockchain: 'bitcoin', network: 'testnet', identifier: String(dollar.propertyId), symbol: '', type: 'OMNI', amount: '11.5' },
      { blockchain: 'bitcoin', network: 'testnet', identifier: String(points.propertyId), symbol: '', type: 'OMNI', amount: '7' },
    ]);
    // The bitcoins of the Omni transactions (reference outputs, fees) are in the coin ledger, as the node sees them.
    expect(item.coins).toEqual([expect.objectContaining({ blockchain: 'bitcoin', network: 'testnet', confirmedBalance: formatUnits(node.balance(owner), 8) })]);
  });

  it('ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED: pending OMNI transfers from omni_listpendingtransactions, incoming and outgoing, once each, before any block', async () => {
    const holder = fundedAddress();
    const bob = node.newAddress();
    node.omniSend(issuer, holder, dollar.propertyId, 3n * TOKEN);
    await mineAndProcess();
    const id = (await follow.subscribe('address-tokens-transactions-unconfirmed', { address: holder }, 'omni-pending')).referenceId;
    const coins = (await follow.subscribe('address-coins-transactions-unconfirmed', { address: holder }, 'omni-pending-coins')).referenceId;
    await follow.indexed();
    const height = node.height();

    const incoming = node.omniSend(issuer, holder, dollar.propertyId, 2n * TOKEN + TOKEN / 4n);
    const outgoing = node.omniSend(holder, bob, dollar.propertyId, TOKEN);
    // Neither can ever be a valid transfer or has tokens Omni Core lists before mining: no token event.
    node.omniSend(issuer, holder, 999, TOKEN); // a property that does not exist
    node.omniSendAll(issuer, holder); // Send All: subsends only once mined
    const payment = node.send(holder, 5_000n); // bitcoins only: the coin subscription's business
    const pendingList = node.rpc<{ txid: string; confirmations: number; valid?: boolean }[]>('omni_listpendingtransactions', []);
    expect(pendingList).toHaveLength(4);
    expect(pendingList.every((p) => p.confirmations === 0 && p.valid === undefined)).toBe(true);

    const two = await until('both pending OMNI callbacks', async () => callbacksOf(id).length === 2 && callbacksOf(id));
    expect(node.height()).toBe(height); // nothing mined
    for (const cb of two) expectSigned(cb);
    // The fake node's wallet signals BIP125 as Bitcoin Core's does since 23.0: unconfirmed, replaceable.
    const RBF = { verdict: 'review', flags: ['rbf'] };
    const items = two.map((cb) => cb.json.data.item).sort((a, b) => String(a.direction).localeCompare(String(b.direction)));
    expect(items).toEqual([
      {
        blockchain: 'bitcoin',
        network: 'testnet',
        address: holder,
        transactionId: incoming,
        tokenType: 'OMNI',
        token: dollarToken('Simple Send', '2.25'),
        direction: 'incoming',
        firstSeenInMempoolTimestamp: expect.any(Number),
        safety: RBF,
      },
      {
        blockchain: 'bitcoin',
        network: 'testnet',
        address: holder,
        transactionId: outgoing,
        tokenType: 'OMNI',
        token: dollarToken('Simple Send', '1'),
        direction: 'outgoing',
        firstSeenInMempoolTimestamp: expect.any(Number),
        safety: RBF,
      },
    ]);
    // The coin subscription of the same address heard the bitcoin payment (and the Omni transactions' bitcoins).
    await until('the pending bitcoin payment', async () => callbacksOf(coins).some((cb) => cb.json.data.item.transactionId === payment));

    // Listed poll after poll, then mined: never again.
    await new Promise((r) => setTimeout(r, 300));
    await mineAndProcess();
    await t.app.worker?.settled();
    expect(callbacksOf(id)).toHaveLength(2);
    expect(new Set(callbacksOf(id).map((cb) => cb.json.idempotencyKey)).size).toBe(2);
    expect(node.rpc('omni_listpendingtransactions', [])).toEqual([]);
  });
});

/**
 * The XRP adapter against the fake rippled (test/support/fake-rippled.ts) and against a scripted server
 * answering with the recorded rippled responses of test/fixtures/xrp re-wrapped the HTTP way. The
 * fake's own formats are checked against the recorded ones here too.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeRippled, GENESIS_ADDRESS, RIPPLE_EPOCH_OFFSET, startFakeRippled } from '../../../test/support/fake-rippled.ts';
import { rejection, type ScriptedServer, startScriptedServer } from '../../../test/support/scripted-http.ts';
import { createXrpAdapter, type XrpAdapter, XrpAdapterError } from './adapter.ts';
import { ledgerFromResponse, normalizeXrpLedger } from './normalize.ts';
import { XrpRpcError } from './rpc.ts';

type Json = Record<string, unknown>;

function recorded(rel: string): Json {
  return JSON.parse(readFileSync(resolve(process.cwd(), 'test/fixtures/xrp', rel), 'utf8')) as Json;
}

/** A recorded WebSocket answer as rippled's HTTP JSON-RPC sends it. */
function overHttp(ws: Json): Json {
  if (ws.status === 'error') {
    const { id: _id, type: _type, ...rest } = ws;
    return { result: rest };
  }
  return { result: { ...(ws.result as Json), status: 'success' } };
}

const thrown = (promise: Promise<unknown>) => rejection(promise, Error);

/** Sum of an address's movements in a block. */
const netOf = (block: { coinMovements: { address: string; delta: bigint }[] }, address: string) =>
  block.coinMovements.filter((m) => m.address === address).reduce((sum, m) => sum + m.delta, 0n);

/** POSTs one command to the fake, as rippled's clients do. */
async function call(fake: FakeRippled, method: string, params: Json = {}): Promise<Json> {
  const res = await fetch(fake.url, { method: 'POST', body: JSON.stringify({ method, params: [params] }) });
  return ((await res.json()) as { result: Json }).result;
}

const XRP = 1_000_000n;

describe('XRP adapter against the fake rippled', () => {
  let fake: FakeRippled;
  let adapter: XrpAdapter;
  const adapters: XrpAdapter[] = [];
  const make = (url: string, timeoutMs?: number) => {
    const a = createXrpAdapter({ network: 'testnet', rpcUrl: url, timeoutMs });
    adapters.push(a);
    return a;
  };

  beforeAll(async () => {
    fake = await startFakeRippled();
    adapter = make(fake.url);
  });
  afterAll(async () => {
    for (const a of adapters) await a.close();
    await fake.close();
  });

  it('getHead is the latest validated ledger, not the closed tip', async () => {
    const validated = fake.closeLedgers(1);
    expect(await adapter.getHead()).toBe(validated);
    fake.closeLedgers(2, { validate: false });
    expect(fake.closedIndex).toBe(validated + 2);
    expect(await adapter.getHead()).toBe(validated);
    expect(fake.requests.at(-1)).toEqual({ method: 'ledger', params: { ledger_index: 'validated' } });
    fake.validate();
    expect(await adapter.getHead()).toBe(validated + 2);
  });

  it('getBlock: header and movements of a validated ledger, checked against the ledger state the fake keeps', async () => {
    const alice = fake.newAccount();
    const bob = fake.newAccount();
    fake.pay(GENESIS_ADDRESS, alice, 50n * XRP);
    const before = fake.closeLedgers(1);

    const partial = fake.pay(GENESIS_ADDRESS, alice, 30n * XRP, { deliver: 5n * XRP }); // asks 30, delivers 5
    const unfunded = fake.pay(alice, bob, 1_000n * XRP); // tecUNFUNDED_PAYMENT: only the fee
    const creating = fake.pay(alice, bob, 7n * XRP); // creates bob
    const height = fake.closeLedgers(1);
    expect(fake.transaction(partial)?.result).toBe('tesSUCCESS');
    expect(fake.transaction(unfunded)?.result).toBe('tecUNFUNDED_PAYMENT');
    expect(fake.transaction(creating)?.result).toBe('tesSUCCESS');

    const block = await adapter.getBlock(height);
    const ledger = fake.ledger(height);
    expect(block).toMatchObject({
      height,
      hash: ledger?.hash,
      parentHash: fake.ledger(height - 1)?.hash,
      timestamp: (ledger?.closeTime ?? 0) + RIPPLE_EPOCH_OFFSET,
      tokenTransfers: [],
      internalTransfers: [],
    });
    // The offer the partial payment crosses is created in the same ledger: four transactions, listed by hash.
    expect(block.transactionIds).toHaveLength(4);
    expect(block.transactionIds).toEqual([...block.transactionIds].sort());
    expect(block.transactionIds).toEqual(expect.arrayContaining([partial, unfunded, creating]));

    // Every address's net movement is its balance change in the fake's state.
    for (const address of [alice, bob, GENESIS_ADDRESS]) {
      expect(netOf(block, address)).toBe((fake.balance(address, height) ?? 0n) - (fake.balance(address, before) ?? 0n));
    }
    const of = (txid: string) => block.coinMovements.filter((m) => m.transactionId === txid).map((m) => [m.address, m.delta]);
    expect(of(partial)).toEqual(
      expect.arrayContaining([
        [alice, 5n * XRP],
        [GENESIS_ADDRESS, -(5n * XRP + 12n)],
      ]),
    );
    expect(of(unfunded)).toEqual([[alice, -12n]]);
    expect(of(creating)).toEqual(
      expect.arrayContaining([
        [alice, -(7n * XRP + 12n)],
        [bob, 7n * XRP],
      ]),
    );
  });

  it('AccountDelete: the whole balance leaves the account, the destination gets it less the fee; the account is then not found (0)', async () => {
    const account = fake.newAccount();
    fake.pay(GENESIS_ADDRESS, account, 12n * XRP);
    const funded = fake.closeLedgers(1);
    const deletion = fake.deleteAccount(account, GENESIS_ADDRESS);
    const height = fake.closeLedgers(1);
    const rest = 12n * XRP - 200_000n; // AccountDelete's fee is the owner reserve
    expect(fake.transaction(deletion)?.meta).toMatchObject({ TransactionResult: 'tesSUCCESS', DeliveredAmount: String(rest), delivered_amount: String(rest) });
    const block = await adapter.getBlock(height);
    const movements = block.coinMovements.filter((m) => m.transactionId === deletion).map((m) => [m.address, m.delta]);
    expect(movements).toHaveLength(2);
    expect(movements).toEqual(
      expect.arrayContaining([
        [account, -12n * XRP],
        [GENESIS_ADDRESS, rest],
      ]),
    );
    expect(await adapter.getCoinBalance(account, funded)).toBe(12n * XRP);
    expect(await adapter.getCoinBalance(account, height)).toBe(0n);
  });

  it('getBlock refuses a closed ledger that is not validated yet (even the one the follower asks for next), and reads it once validated', async () => {
    const account = fake.newAccount();
    const txid = fake.pay(GENESIS_ADDRESS, account, 20n * XRP);
    const height = fake.closeLedgers(1, { validate: false });
    const error = await thrown(adapter.getBlock(height));
    expect(error).toBeInstanceOf(XrpAdapterError);
    expect(error.message).toContain(`ledger ${height}`);
    expect(error.message).toContain('not validated');
    // The open ledger (the current index) is refused as well.
    expect(await thrown(adapter.getBlock(fake.currentIndex))).toBeInstanceOf(XrpAdapterError);

    // The network validated another ledger at that index: the closed one is replaced, the payment kept.
    const replacedHash = fake.ledger(height)?.hash;
    fake.replaceUnvalidated();
    fake.validate();
    const block = await adapter.getBlock(height);
    expect(block.hash).toBe(fake.ledger(height)?.hash);
    expect(block.hash).not.toBe(replacedHash);
    expect(block.transactionIds).toEqual([txid]);
  });

  it('lgrNotFound is thrown (the follower retries): a ledger above the closed tip, one below the history', async () => {
    const ahead = await thrown(adapter.getBlock(fake.closedIndex + 5));
    expect(ahead).toBeInstanceOf(XrpRpcError);
    expect(ahead).toMatchObject({ kind: 'rippled', code: 'lgrNotFound' });
    expect(await thrown(adapter.getBlock(fake.firstAvailable - 1))).toMatchObject({ code: 'lgrNotFound' });
  });

  it('findTransaction: validated gives the ledger (its hash asked from the ledger: API v1 tx answers carry none); not validated, pending or unknown give undefined', async () => {
    const account = fake.newAccount();
    const validatedTx = fake.pay(GENESIS_ADDRESS, account, 20n * XRP);
    const height = fake.closeLedgers(1);
    const seen = fake.requests.length;
    expect(await adapter.findTransaction(validatedTx)).toEqual({ height, hash: fake.ledger(height)?.hash });
    expect(await adapter.findTransaction(validatedTx.toLowerCase())).toEqual({ height, hash: fake.ledger(height)?.hash });
    expect(fake.requests.slice(seen).map((r) => r.method)).toEqual(['tx', 'ledger', 'tx', 'ledger']);

    const closedTx = fake.pay(GENESIS_ADDRESS, account, XRP);
    const closedAt = fake.closeLedgers(1, { validate: false });
    expect(fake.transaction(closedTx)?.ledgerIndex).toBe(closedAt);
    expect(await adapter.findTransaction(closedTx)).toBeUndefined();
    const pendingTx = fake.pay(GENESIS_ADDRESS, account, XRP);
    expect(await adapter.findTransaction(pendingTx)).toBeUndefined();
    expect(await adapter.findTransaction('AB'.repeat(32))).toBeUndefined();
    fake.closeLedgers(1);
    expect(await adapter.findTransaction(closedTx)).toEqual({ height: closedAt, hash: fake.ledger(closedAt)?.hash });
  });

  it('getCoinBalance: historical balances in drops; an account that did not exist yet is 0; a deleted ledger cannot tell; a ledger not reached is thrown', async () => {
    const account = fake.newAccount();
    const empty = fake.closeLedgers(1);
    fake.pay(GENESIS_ADDRESS, account, 25n * XRP);
    const funded = fake.closeLedgers(1);
    fake.pay(GENESIS_ADDRESS, account, 1_500_001n);
    const later = fake.closeLedgers(1);
    expect(await adapter.getCoinBalance(account, empty)).toBe(0n);
    expect(await adapter.getCoinBalance(account, funded)).toBe(25n * XRP);
    expect(await adapter.getCoinBalance(account, later)).toBe(26_500_001n);
    expect(await adapter.getCoinBalance(GENESIS_ADDRESS, later)).toBe(fake.balance(GENESIS_ADDRESS, later));

    // A ledger the node has, closed but not validated: thrown, never read as final.
    const unvalidated = fake.closeLedgers(1, { validate: false });
    expect(await thrown(adapter.getCoinBalance(account, unvalidated))).toBeInstanceOf(XrpAdapterError);
    fake.validate();
    expect(await thrown(adapter.getCoinBalance(account, fake.closedIndex + 3))).toMatchObject({ code: 'lgrNotFound' });
    await expect(adapter.getCoinBalance('not-an-address', later)).rejects.toThrow(TypeError);
  });

  it('node faults are thrown: timeout, HTTP 500 and 503, garbage, a JSON answer that is not rippled, the node down; it works again after', async () => {
    const quick = make(fake.url, 200);
    fake.injectFault('hang');
    expect(await thrown(quick.getHead())).toMatchObject({ kind: 'timeout' });
    for (const fault of ['http500', 'http503', 'garbage', 'not-rippled'] as const) {
      fake.injectFault(fault, { method: 'ledger' });
      expect(await thrown(quick.getBlock(fake.validatedIndex))).toMatchObject({ kind: 'http' });
    }
    await fake.down();
    expect(await thrown(quick.getHead())).toMatchObject({ kind: 'network' });
    await fake.up();
    expect(await quick.getHead()).toBe(fake.validatedIndex);
  });

  it('history deleted (online_delete): balances there are unknown, blocks and transactions there are not found', async () => {
    const account = fake.newAccount();
    const txid = fake.pay(GENESIS_ADDRESS, account, 30n * XRP);
    const old = fake.closeLedgers(1);
    fake.closeLedgers(2);
    fake.deleteHistoryBefore(old + 1);
    expect(await adapter.getCoinBalance(account, old)).toBeUndefined();
    expect(await adapter.getCoinBalance(account, old + 1)).toBe(30n * XRP);
    expect(await thrown(adapter.getBlock(old))).toMatchObject({ code: 'lgrNotFound' });
    expect(await adapter.findTransaction(txid)).toBeUndefined();
  });
});

describe('XRP adapter against a server answering in API v2 (numeric ledger_index, tx_json + meta)', () => {
  let v1: FakeRippled;
  let v2: FakeRippled;
  let a1: XrpAdapter;
  let a2: XrpAdapter;
  beforeAll(async () => {
    [v1, v2] = await Promise.all([startFakeRippled({ apiVersion: 1 }), startFakeRippled({ apiVersion: 2 })]);
    a1 = createXrpAdapter({ network: 'testnet', rpcUrl: v1.url });
    a2 = createXrpAdapter({ network: 'testnet', rpcUrl: v2.url });
  });
  afterAll(async () => {
    await Promise.all([a1.close(), a2.close(), v1.close(), v2.close()]);
  });

  it('the same payments give the same movements; findTransaction takes the ledger hash from the tx answer', async () => {
    const ids: string[] = [];
    for (const fake of [v1, v2]) {
      const account = fake.newAccount();
      fake.pay(GENESIS_ADDRESS, account, 40n * XRP);
      fake.pay(GENESIS_ADDRESS, account, 9n * XRP, { deliver: 2n * XRP });
      ids.push(fake.pay(account, GENESIS_ADDRESS, 500n * XRP)); // unfunded
      fake.closeLedgers(1);
    }
    const [b1, b2] = await Promise.all([a1.getBlock(v1.validatedIndex), a2.getBlock(v2.validatedIndex)]);
    const raw = await call(v2, 'ledger', { ledger_index: v2.validatedIndex, transactions: true, expand: true });
    expect(typeof (raw.ledger as Json).ledger_index).toBe('number');
    expect(((raw.ledger as Json).transactions as Json[])[0]).toHaveProperty('tx_json');
    const amounts = (b: typeof b1) => b.coinMovements.map((m) => m.delta).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    expect(amounts(b2)).toEqual(amounts(b1));
    expect(b2.transactionIds).toHaveLength(4);

    const seen = v2.requests.length;
    expect(await a2.findTransaction(ids[1] as string)).toEqual({ height: v2.validatedIndex, hash: b2.hash });
    expect(v2.requests.slice(seen).map((r) => r.method)).toEqual(['tx']);
  });
});

describe('XRP adapter on the recorded rippled answers', () => {
  let server: ScriptedServer;
  let adapter: XrpAdapter;
  /** (method, params) → HTTP JSON-RPC body. */
  let answer: (method: string, params: Json) => Json = () => ({});

  beforeAll(async () => {
    server = await startScriptedServer((_req, body) => {
      const { method, params } = JSON.parse(body) as { method: string; params: Json[] };
      return [200, answer(method, params[0] ?? {})];
    });
    adapter = createXrpAdapter({ network: 'mainnet', rpcUrl: `${server.base}/` });
  });
  afterAll(async () => {
    await adapter.close();
    await server.close();
  });
  afterEach(() => {
    answer = () => ({});
  });

  it('ledger 22420574 (validated, with a partial payment): the normalised recorded ledger; validated false: refused', async () => {
    const file = recorded('xrpl.js-historical/ledgerWithPartialPayment.json');
    answer = (method, params) => (method === 'ledger' && params.ledger_index === 22420574 && params.expand === true ? overHttp(file) : {});
    const block = await adapter.getBlock(22420574);
    expect(block).toEqual(normalizeXrpLedger(ledgerFromResponse(file).ledger, { network: 'mainnet' }));
    expect(block.hash).toBe('4F6C0495378FF68A15749C0D51D097EB638DA70319FDAC7A97A27CE63E0BFFED');
    expect(block.transactionIds).toHaveLength(6);

    answer = () => {
      const http = overHttp(file);
      return { result: { ...(http.result as Json), validated: false } };
    };
    expect(await thrown(adapter.getBlock(22420574))).toBeInstanceOf(XrpAdapterError);
  });

  it('getHead from the recorded validated ledger answer; lgrNotFound recorded is thrown with its code', async () => {
    answer = () => overHttp(recorded('xrpl.js/ledger.json'));
    expect(await adapter.getHead()).toBe(9038214);
    answer = () => overHttp(recorded('xrpl.js-historical/ledgerNotFound.json'));
    expect(await thrown(adapter.getBlock(34))).toMatchObject({ kind: 'rippled', code: 'lgrNotFound' });
  });

  it('findTransaction on the recorded tx answers: txnNotFound and validated false give undefined; v1 and v2 validated ones are located', async () => {
    answer = () => overHttp(recorded('xrpl.js-historical/tx_notFound.json'));
    expect(await adapter.findTransaction('E08D6E9754025CA2534A78707605E0601F03ACE063687A0CA1BDDACFCD1698C7')).toBeUndefined();
    answer = () => overHttp(recorded('xrpl.js-historical/tx_notValidated.json'));
    expect(await adapter.findTransaction('4FB3ADF22F3C605E23FAEFAA185F3BD763C4692CAC490D9819D117CD33BFAA10')).toBeUndefined();

    // No ledger_hash in these tx answers: the adapter asks the ledger, which must list the transaction.
    const ledgerHash = 'C0'.repeat(32);
    const ledgerAnswer = (index: number, txids: string[]) => ({
      result: {
        ledger: {
          closed: true,
          close_time: 490233540,
          ledger_hash: ledgerHash,
          ledger_index: String(index),
          parent_hash: 'B1'.repeat(32),
          transactions: txids,
        },
        ledger_hash: ledgerHash,
        ledger_index: index,
        validated: true,
        status: 'success',
      },
    });
    const trustSet = '635A0769BD94710A1F6A76CDE65A3BC661B20B798807D1BBBDADCEA26420538D';
    answer = (method, params) =>
      method === 'tx' ? overHttp(recorded('xrpl.js-historical/tx_trustSet.json')) : params.ledger_index === 14640523 ? ledgerAnswer(14640523, [trustSet]) : {};
    expect(await adapter.findTransaction(trustSet)).toEqual({ height: 14640523, hash: ledgerHash });
    // A ledger that does not list it: the node contradicts itself, thrown.
    answer = (method) => (method === 'tx' ? overHttp(recorded('xrpl.js-historical/tx_trustSet.json')) : ledgerAnswer(14640523, ['AA'.repeat(32)]));
    expect(await thrown(adapter.findTransaction(trustSet))).toBeInstanceOf(XrpAdapterError);

    const payment = 'F4AB442A6D4CBB935D66E1DA7309A5FC71C7143ED4049053EC14E3875B0CF9BF'; // API v2: ledger_index inside tx_json
    answer = (method) => (method === 'tx' ? overHttp(recorded('xrpl.js/tx_payment.json')) : ledgerAnswer(348860, [payment]));
    expect(await adapter.findTransaction(payment)).toEqual({ height: 348860, hash: ledgerHash });
  });
});

describe('the fake rippled speaks the recorded formats', () => {
  let fake: FakeRippled;
  beforeAll(async () => {
    fake = await startFakeRippled();
  });
  afterAll(() => fake.close());

  /** Every key of `real` is in `ours`, with a value of the same JSON type. */
  function expectKeysOf(ours: unknown, real: unknown, where: string) {
    const type = (v: unknown) => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);
    expect(type(ours), where).toBe('object');
    for (const [key, value] of Object.entries(real as Json)) {
      expect(ours, `${where}.${key}`).toHaveProperty([key]);
      // Amounts: drops strings or issued-currency objects, whichever the transaction has.
      if (key === 'TakerGets' || key === 'TakerPays' || key === 'Amount') continue;
      expect(type((ours as Json)[key]), `${where}.${key}`).toBe(type(value));
    }
  }

  it('ledger with expanded transactions: ledger object, Payment, metaData, AccountRoot nodes, partial-payment metadata', async () => {
    const account = fake.newAccount();
    fake.pay(GENESIS_ADDRESS, account, 100n * XRP);
    fake.closeLedgers(1);
    const partial = fake.pay(GENESIS_ADDRESS, account, 10n * XRP, { deliver: 4_456n });
    const full = fake.pay(GENESIS_ADDRESS, account, 3n * XRP);
    const height = fake.closeLedgers(1);
    const ours = await call(fake, 'ledger', { ledger_index: height, transactions: true, expand: true });
    const real = overHttp(recorded('xrpl.js-historical/ledgerWithPartialPayment.json')).result as Json;
    const { transactions: realTxs, ...realLedger } = real.ledger as Json;
    const { ledger: _ledger, ...realResult } = real;
    expectKeysOf(ours, realResult, 'result');
    expectKeysOf(ours.ledger, realLedger, 'ledger');
    expect(typeof ours.ledger_index).toBe('number');

    const txs = (ours.ledger as Json).transactions as Json[];
    const realPayment = (realTxs as Json[]).find((t) => t.TransactionType === 'Payment') as Json;
    const ourFull = txs.find((t) => t.hash === full) as Json;
    const { metaData: realMeta, ...realFields } = realPayment;
    const { DeliveredAmount: _d, ...realPlainMeta } = realMeta as Json;
    expectKeysOf(ourFull, realFields, 'payment');
    expectKeysOf(ourFull.metaData, realPlainMeta, 'payment.metaData');
    const realNode = ((realMeta as Json).AffectedNodes as Json[]).find((n) => (n.ModifiedNode as Json | undefined)?.LedgerEntryType === 'AccountRoot') as Json;
    const ourNode = ((ourFull.metaData as Json).AffectedNodes as Json[]).find((n) => n.ModifiedNode !== undefined) as Json;
    expectKeysOf(ourNode.ModifiedNode, realNode.ModifiedNode, 'ModifiedNode');
    expectKeysOf((ourNode.ModifiedNode as Json).FinalFields, (realNode.ModifiedNode as Json).FinalFields, 'FinalFields');

    // The partial payment as in the recorded stream message: DeliveredAmount and delivered_amount, the sender's offer crossed.
    const stream = recorded('xrpl.js/streams_partialPaymentTransaction.json');
    const ourPartial = txs.find((t) => t.hash === partial) as Json;
    const { date: _date, ...streamFields } = stream.transaction as Json;
    expectKeysOf(ourPartial, streamFields, 'partial payment');
    expectKeysOf(ourPartial.metaData, stream.meta, 'partial payment metaData');
    expect(ourPartial.metaData).toMatchObject({ DeliveredAmount: '4456', delivered_amount: '4456', TransactionResult: 'tesSUCCESS' });
    expect(ourPartial.Flags).toBe(131072);
    const kinds = ((ourPartial.metaData as Json).AffectedNodes as Json[]).map((n) => `${Object.keys(n)[0]} ${(Object.values(n)[0] as Json).LedgerEntryType}`);
    expect(kinds.sort()).toEqual(['ModifiedNode AccountRoot', 'ModifiedNode AccountRoot', 'ModifiedNode Offer']);
  });

  it('tx, server_info and the error answers', async () => {
    const account = fake.newAccount();
    const txid = fake.pay(GENESIS_ADDRESS, account, 20n * XRP);
    fake.closeLedgers(1);
    const ours = await call(fake, 'tx', { transaction: txid });
    const real = overHttp(recorded('xrpl.js-historical/tx_trustSet.json')).result as Json;
    const { LimitAmount: _l, QualityIn: _i, QualityOut: _o, meta: realMeta, ...realTx } = real;
    expectKeysOf(ours, realTx, 'tx');
    expectKeysOf(ours.meta, realMeta, 'tx.meta');

    const info = await call(fake, 'server_info');
    const realInfo = (overHttp(recorded('xrpl.js/serverInfo.json')).result as Json).info as Json;
    expectKeysOf(info.info, realInfo, 'server_info.info');
    expectKeysOf((info.info as Json).validated_ledger, realInfo.validated_ledger, 'validated_ledger');
    expect((info.info as Json).complete_ledgers).toBe(`${fake.firstAvailable}-${fake.validatedIndex}`);

    const { status: _s, ...realError } = overHttp(recorded('xrpl.js-historical/ledgerNotFound.json')).result as Json;
    const lgr = await call(fake, 'ledger', { ledger_index: fake.closedIndex + 10 });
    expectKeysOf(lgr, realError, 'lgrNotFound');
    expect(lgr).toMatchObject({ error: 'lgrNotFound', error_message: 'ledgerNotFound', status: 'error' });
    const tx = await call(fake, 'tx', { transaction: 'E08D6E9754025CA2534A78707605E0601F03ACE063687A0CA1BDDACFCD1698C7' });
    expectKeysOf(tx, overHttp(recorded('xrpl.js-historical/tx_notFound.json')).result, 'txnNotFound');
  });
});

/**
 * Omni transfers from omni_gettransaction answers (the recorded ones of test/fixtures/omni, and the
 * Send All / Send To Many / Crowdsale Purchase / DEx Purchase shapes Omni Core's rpctxobject.cpp prints),
 * and the Omni reader against a stub Omni Core over real HTTP: batching, validity, block checks, balances.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type StubReply, startUtxoRpcStub, type UtxoRpcStub } from '../../../test/support/utxo-rpc-stub.ts';
import { UtxoAdapterError } from './errors.ts';
import { createOmniReader, MAX_BALANCE_WALK_BLOCKS, OmniFormatError, type OmniTransaction, omniAmount, omniTransfers } from './omni.ts';
import { createUtxoRpcClient, type UtxoRpcClient } from './rpc.ts';

const FIXTURES = path.resolve(process.cwd(), 'test/fixtures');
const fixture = <T>(rel: string): T => JSON.parse(readFileSync(path.join(FIXTURES, rel), 'utf8')) as T;

/** omniexplorer's answer = omni_gettransaction plus `propertyname` and `flags` (fixtures README). */
const SIMPLE_SEND = fixture<OmniTransaction>('omni/mainnet/issues/omniexplorer_tx_fc0368b2_simple_send_usdt.json');
const CREATE_31 = fixture<OmniTransaction>('omni/mainnet/issues/omni_gettransaction_5ed3694e_create_property_31_tetherus.json');
const TXID = (n: number) => n.toString(16).padStart(64, '0');

describe('omniTransfers: one answer → token transfers', () => {
  it('the recorded USDT Simple Send: 202.52 USDT (divisible: 20252000000 base units) from sender to reference address', () => {
    expect(omniTransfers(SIMPLE_SEND, 7, 'mainnet')).toEqual([
      {
        transactionId: 'fc0368b2fa1c7659fafe85ce033d0e07184197306634773a1548ae483af7e729',
        logIndex: 7000,
        tokenType: 'OMNI',
        contract: '31',
        from: '1Xe46GzxiHosTqEimAd8qHSWvod1dQ9ek',
        to: '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7',
        amount: 20252000000n,
      },
    ]);
  });

  it('the recorded property creation (type 54) moves no tokens from a sender to a receiver: none', () => {
    expect(CREATE_31.type_int).toBe(54);
    expect(omniTransfers(CREATE_31, 0, 'mainnet')).toEqual([]);
  });

  it('Send All (type 4): one transfer per subsend, each with its property and divisibility; none without subsends', () => {
    const sendAll: OmniTransaction = {
      txid: TXID(4),
      sendingaddress: '1Xe46GzxiHosTqEimAd8qHSWvod1dQ9ek',
      referenceaddress: '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7',
      type_int: 4,
      type: 'Send All',
      ecosystem: 'main',
      subsends: [
        { propertyid: 1, divisible: true, amount: '0.00000001' },
        { propertyid: 31, divisible: true, amount: '1000000.12345678' },
        { propertyid: 57, divisible: false, amount: '3' },
      ],
      valid: true,
    };
    expect(omniTransfers(sendAll, 2, 'mainnet').map((t) => [t.logIndex, t.contract, t.amount, t.from, t.to])).toEqual([
      [2000, '1', 1n, '1Xe46GzxiHosTqEimAd8qHSWvod1dQ9ek', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7'],
      [2001, '31', 100000012345678n, '1Xe46GzxiHosTqEimAd8qHSWvod1dQ9ek', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7'],
      [2002, '57', 3n, '1Xe46GzxiHosTqEimAd8qHSWvod1dQ9ek', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7'],
    ]);
    const { subsends: _s, ...none } = sendAll;
    expect(omniTransfers(none, 2, 'mainnet')).toEqual([]);
  });

  it('Send To Many (type 7, Omni Core 0.12 `receivers[]` with output, address, amount): one transfer per receiver', () => {
    const stm: OmniTransaction = {
      txid: TXID(7),
      sendingaddress: '1Xe46GzxiHosTqEimAd8qHSWvod1dQ9ek',
      type_int: 7,
      type: 'Send To Many',
      propertyid: 31,
      divisible: true,
      receivers: [
        { output: 1, address: '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', amount: '1.00000000' },
        { output: 2, address: 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4', amount: '0.25000000' },
      ],
      totalamount: '1.25000000',
      valid: true,
    };
    expect(omniTransfers(stm, 0, 'mainnet').map((t) => [t.logIndex, t.to, t.amount])).toEqual([
      [0, '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 100000000n],
      // Addresses normalised as subscriptions are (bech32 lower case).
      [1, 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 25000000n],
    ]);
  });

  it('a Crowdsale Purchase is still type 0: the sent tokens go to the reference address', () => {
    const purchase = { ...SIMPLE_SEND, type: 'Crowdsale Purchase', purchasedpropertyid: 99, purchasedtokens: '10' };
    expect(omniTransfers(purchase, 0, 'mainnet')).toHaveLength(1);
  });

  it('other types give none: DEx Purchase (no type_int), Send To Owners (3), grants (55), revocations (56), MetaDEx (25)', () => {
    const dexPurchase = { txid: TXID(9), type: 'DEx Purchase', sendingaddress: '1Xe46GzxiHosTqEimAd8qHSWvod1dQ9ek', purchases: [] };
    expect(omniTransfers(dexPurchase, 0, 'mainnet')).toEqual([]);
    for (const type_int of [3, 25, 55, 56]) expect(omniTransfers({ ...SIMPLE_SEND, type_int }, 0, 'mainnet')).toEqual([]);
  });

  it('malformed answers are errors, never a guessed amount', () => {
    expect(() => omniTransfers({ ...SIMPLE_SEND, divisible: undefined }, 0, 'mainnet')).toThrow(OmniFormatError);
    expect(() => omniTransfers({ ...SIMPLE_SEND, referenceaddress: undefined }, 0, 'mainnet')).toThrow(/reference/);
    expect(() => omniTransfers({ ...SIMPLE_SEND, propertyid: 'x' }, 0, 'mainnet')).toThrow(/propertyid/);
    expect(() => omniTransfers({ ...SIMPLE_SEND, txid: 'nope' }, 0, 'mainnet')).toThrow(/txid/);
    expect(() => omniTransfers({ ...SIMPLE_SEND, type_int: 7 }, 0, 'mainnet')).toThrow(/receivers/);
  });

  it('omniAmount: exact decimal strings; 8 decimals at most; indivisible amounts are whole', () => {
    expect(omniAmount('92233720368.54775807', true, 'x')).toBe(9223372036854775807n);
    expect(omniAmount('9223372036854775807', false, 'x')).toBe(9223372036854775807n);
    expect(omniAmount('0.00000000', true, 'x')).toBe(0n);
    expect(() => omniAmount('0.000000001', true, 'x')).toThrow(/decimals/);
    expect(() => omniAmount('1.5', false, 'x')).toThrow(/whole/);
    expect(() => omniAmount('-1.0', true, 'x')).toThrow(/negative/);
    expect(() => omniAmount(undefined, true, 'x')).toThrow(/no amount/);
  });
});

// ---------------------------------------------------------------------------------------------------------------

const stubs: UtxoRpcStub[] = [];
const clients: UtxoRpcClient[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(stubs.map((s) => s.close()));
});

/** An Omni Core stub: `txs` by height (each a full omni_gettransaction answer), a tip, balances. */
async function omniCore(txs: Map<number, OmniTransaction[]>, state: { tip: number; balance?: string; pending?: unknown }) {
  const byId = new Map([...txs.values()].flat().map((t) => [t.txid as string, t]));
  const stub = await startUtxoRpcStub((method, params): StubReply => {
    switch (method) {
      case 'omni_getinfo':
        return { result: { omnicoreversion: '0.12.0', block: state.tip } };
      case 'getblockcount':
        return { result: state.tip };
      case 'omni_listblocktransactions':
        return { result: (txs.get(params[0] as number) ?? []).map((t) => t.txid) };
      case 'omni_gettransaction': {
        const tx = byId.get(params[0] as string);
        return tx ? { result: tx } : { error: { code: -5, message: 'Not a Master Protocol transaction' } };
      }
      case 'omni_getproperty':
        return params[0] === 31
          ? { result: { propertyid: 31, name: 'TetherUS', divisible: true, creationtxid: CREATE_31.txid } }
          : { error: { code: -8, message: 'Property identifier does not exist' } };
      case 'omni_listpendingtransactions':
        return { result: state.pending ?? [] };
      case 'omni_getbalance':
        return { result: { balance: state.balance ?? '0.00000000', reserved: '0.00000000', frozen: '0.00000000' } };
      default:
        return { error: { code: -32601, message: 'Method not found' } };
    }
  });
  stubs.push(stub);
  const rpc = createUtxoRpcClient({ url: stub.url });
  clients.push(rpc);
  const logger = { info: vi.fn(), warn: vi.fn() };
  const reader = createOmniReader({ rpc, network: 'mainnet', concurrency: 2, logger, log: {} });
  return { stub, reader, logger };
}

const send = (n: number, block: number, amount: string, to = '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', valid = true): OmniTransaction => ({
  ...SIMPLE_SEND,
  txid: TXID(n),
  block,
  blockhash: TXID(1_000_000 + block),
  amount,
  referenceaddress: to,
  valid,
  ...(valid ? {} : { invalidreason: 'Sender has insufficient balance' }),
});

describe('the Omni reader against Omni Core', () => {
  it('a block of 120 Omni transactions: omni_gettransaction in batches of 50, valid ones only, in list order', async () => {
    const txs = Array.from({ length: 120 }, (_, i) => send(i + 1, 10, `${i + 1}.00000000`, undefined, i % 3 !== 0));
    const { stub, reader } = await omniCore(new Map([[10, txs]]), { tip: 10 });
    const transfers = await reader.blockTransfers(10, TXID(1_000_010));
    expect(transfers.map((t) => t.logIndex)).toEqual(txs.flatMap((t, i) => (t.valid ? [i * 1000] : [])));
    expect(transfers[0]?.amount).toBe(200000000n);
    const batches = stub.calls.filter((c) => c.method === 'omni_gettransaction');
    expect(batches).toHaveLength(120);
    expect(batches.every((c) => c.batched)).toBe(true);
    expect(reader.support()).toBe('supported');
  });

  it('an answer for another block, or not the transaction asked, is thrown', async () => {
    const { reader } = await omniCore(new Map([[10, [send(1, 11, '1.0')]]]), { tip: 11 });
    await expect(reader.blockTransfers(10)).rejects.toThrow(UtxoAdapterError);
    const other = await omniCore(new Map([[10, [send(1, 10, '1.0')]]]), { tip: 10 });
    await expect(other.reader.blockTransfers(10, TXID(5))).rejects.toThrow(/reorganised/);
    expect(await other.reader.blockTransfers(10, TXID(1_000_010))).toHaveLength(1);
  });

  it('tokenMetadata of another token type, or of a property that does not exist: undefined', async () => {
    const { reader } = await omniCore(new Map(), { tip: 1 });
    const t = { transactionId: TXID(1), logIndex: 0, tokenType: 'OMNI' as const, contract: '999', from: 'a', to: 'b', amount: 1n };
    expect(await reader.tokenMetadata(t)).toBeUndefined();
    expect(await reader.tokenMetadata({ ...t, tokenType: 'ERC-20', contract: '31' })).toBeUndefined();
  });

  it('pendingTransfers: the asked entries of omni_listpendingtransactions; mined, unreadable (warned) and unknown-property ones left out; no list is thrown', async () => {
    // Omni Core's unconfirmed shape: no valid, invalidreason, block, blockhash, blocktime, positioninblock.
    const {
      valid: _v,
      block: _b,
      blockhash: _h,
      blocktime: _t,
      positioninblock: _p,
      propertyname: _n,
      flags: _f,
      ...bare
    } = SIMPLE_SEND as Record<string, unknown>;
    const pendingSend = (n: number, fields: Record<string, unknown> = {}) => ({ ...bare, txid: TXID(n).toUpperCase(), confirmations: 0, ...fields });
    const state = {
      tip: 5,
      pending: [
        pendingSend(1),
        pendingSend(2, { amount: undefined }), // unreadable
        pendingSend(3, { block: 5, blockhash: TXID(9), confirmations: 1 }), // mined meanwhile
        pendingSend(4, { propertyid: 999 }), // no such property
        pendingSend(5), // not asked
      ] as unknown,
    };
    const { stub, reader, logger } = await omniCore(new Map(), state);
    const transfers = await reader.pendingTransfers(new Set([1, 2, 3, 4].map(TXID)));
    expect(transfers).toEqual([{ ...omniTransfers(SIMPLE_SEND, 0, 'mainnet')[0], transactionId: TXID(1) }]);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(await reader.tokenMetadata(transfers[0] as (typeof transfers)[0])).toMatchObject({ name: 'TetherUS', transactionType: 'Simple Send' });
    expect(stub.count('omni_gettransaction')).toBe(0); // the type came with the pending entry
    expect(await reader.pendingTransfers(new Set())).toEqual([]);
    expect(stub.count('omni_listpendingtransactions')).toBe(1);
    state.pending = { error: 'not a list' };
    await expect(reader.pendingTransfers(new Set([TXID(1)]))).rejects.toThrow(UtxoAdapterError);
  });

  it(`getTokenBalance: more than ${MAX_BALANCE_WALK_BLOCKS} blocks to take back is unknown (warned); a negative result is unknown`, async () => {
    const far = await omniCore(new Map(), { tip: 5000, balance: '1.00000000' });
    expect(await far.reader.getTokenBalance('31', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 5000 - MAX_BALANCE_WALK_BLOCKS - 1)).toBeUndefined();
    expect(far.logger.warn).toHaveBeenCalledTimes(1);
    expect(far.stub.count('omni_listblocktransactions')).toBe(0);
    const negative = await omniCore(new Map([[12, [send(1, 12, '5.0')]]]), { tip: 12, balance: '1.00000000' });
    expect(await negative.reader.getTokenBalance('31', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 11)).toBeUndefined();
  });

  it('getTokenBalance: a block mined while walking makes it read again', async () => {
    const state = { tip: 12, balance: '7.00000000' };
    const { stub, reader } = await omniCore(new Map([[12, [send(1, 12, '2.0')]]]), state);
    const original = stub.handle;
    let mined = false;
    stub.handle = (method, params) => {
      // Block 13 (no Omni transactions) is mined while the first walk reads block 12.
      if (method === 'omni_listblocktransactions' && !mined) {
        mined = true;
        state.tip = 13;
      }
      return original(method, params);
    };
    expect(await reader.getTokenBalance('31', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 11)).toBe(500000000n);
    expect(stub.count('omni_getbalance')).toBe(2);
  });
});

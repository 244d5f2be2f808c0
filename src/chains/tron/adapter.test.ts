/**
 * The Tron adapter over real HTTP: against recorded java-tron answers (test/fixtures/tron, served
 * through the fake node's intercept hook) and against the fake java-tron node's live chain
 * (test/support/fake-tron-node.ts), whose state the normalised blocks and balances must agree with.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openMigratedTestDatabase } from '../../../test/harness.ts';
import { abiString, type FakeReply, type FakeTronNode, FEES, startFakeTronNode, toBase58, toHex } from '../../../test/support/fake-tron-node.ts';
import { TRON_BLOCK_100 } from '../../../test/support/recorded-blocks.ts';
import type { Db } from '../../store/db.ts';
import { tokenMetadataCache } from '../../store/token-metadata.ts';
import type { NormalizedBlock, TokenTransfer } from '../types.ts';
import { createTronAdapter, type TronAdapter, TronAdapterError } from './adapter.ts';
import { TronRpcError } from './rpc.ts';
import type { TronBlock, TronTransactionInfo } from './rpc-types.ts';

/** A recorded java-tron answer; a missing file throws (the test fails, never skips). Plain JSON, no envelope. */
function fixture<T>(rel: string): T {
  return JSON.parse(readFileSync(resolve(process.cwd(), 'test/fixtures/tron', rel), 'utf8')) as T;
}

const nodes: FakeTronNode[] = [];
const adapters: TronAdapter[] = [];
afterAll(async () => {
  await Promise.all(adapters.map((a) => a.close()));
  await Promise.all(nodes.map((n) => n.close()));
});

async function fakeNode(options: Parameters<typeof startFakeTronNode>[0] = {}): Promise<FakeTronNode> {
  const node = await startFakeTronNode(options);
  nodes.push(node);
  return node;
}

function adapterFor(node: FakeTronNode, options: Partial<Parameters<typeof createTronAdapter>[0]> = {}): TronAdapter {
  const adapter = createTronAdapter({ network: 'nile', rpcUrl: node.url, logger: { warn: vi.fn(), info: vi.fn() }, ...options });
  adapters.push(adapter);
  return adapter;
}

/** A node answering `recorded` by path (java-tron's `{}` for anything else). */
async function recordedNode(recorded: Record<string, (body: Record<string, unknown>) => unknown>): Promise<FakeTronNode> {
  const node = await fakeNode();
  node.intercept = (path, body) => ({ json: recorded[path]?.(body) ?? {} });
  return node;
}

const BASE58 = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;
/** Every address of a normalised block, to check they are all base58. */
const addressesOf = (b: NormalizedBlock): string[] => [
  ...b.tokenTransfers.flatMap((t) => [t.contract, t.from, t.to]),
  ...b.internalTransfers.flatMap((t) => [t.from, t.to]),
  ...b.coinMovements.map((m) => m.address),
];

// ---------------------------------------------------------------------------------------------------------------
// Recorded answers
// ---------------------------------------------------------------------------------------------------------------

const BLOCK_100 = fixture<TronBlock>('mainnet/issues/walletsolidity_getblockbynum_100.json');
const NILE_BLOCK = fixture<TronBlock>('nile/documentation-en/getblockbynum_66987565_header_only.json');
const NILE_INFOS = fixture<TronTransactionInfo[]>('nile/documentation-en/gettransactioninfobyblocknum_66987565_first2of4.json');
const USDT_INFO = fixture<TronTransactionInfo>('mainnet/issues/gettransactioninfobyid_efde2ab4_trc20_usdt_transfer.json');
const USDT_OWNER = '41796258bfbd23d238a304fb54dbb835b7714b8130';
const USDT_HEIGHT = 29129143;
/** java-tron block ids start with the height; no block 29129143 was recorded, so its tail is a stand-in. */
const standInId = (height: number, fill: string) => `${height.toString(16).padStart(16, '0')}${fill.repeat(48)}`;

/** Block 29129143 holding the recorded USDT transfer: the transaction as its info and the fixtures README describe it. */
const USDT_BLOCK: TronBlock = {
  blockID: standInId(USDT_HEIGHT, 'a'),
  block_header: { raw_data: { number: USDT_HEIGHT, parentHash: standInId(USDT_HEIGHT - 1, 'b'), timestamp: USDT_INFO.blockTimeStamp } },
  transactions: [
    {
      ret: [{ contractRet: 'SUCCESS' }],
      txID: USDT_INFO.id,
      raw_data: {
        contract: [
          {
            type: 'TriggerSmartContract',
            parameter: {
              value: {
                owner_address: USDT_OWNER,
                contract_address: USDT_INFO.contract_address,
                data: `a9059cbb00000000000000000000000088bb8fcadbf29ee90dffbc8c7fd1e02a485fbeff${(1_000_000).toString(16).padStart(64, '0')}`,
              },
              type_url: 'type.googleapis.com/protocol.TriggerSmartContract',
            },
          },
        ],
      },
    },
  ],
};

describe('getBlock on recorded java-tron answers', () => {
  it('an empty block (no `transactions` key, infos []): header from the recorded block 100', async () => {
    const node = await recordedNode({ 'wallet/getblockbynum': () => BLOCK_100, 'wallet/gettransactioninfobyblocknum': () => [] });
    const block = await adapterFor(node).getBlock(100);
    expect(block).toEqual(TRON_BLOCK_100);
    expect(node.requests.map((r) => [r.path, r.body])).toEqual([
      ['wallet/getblockbynum', { num: 100 }],
      ['wallet/gettransactioninfobyblocknum', { num: 100 }],
    ]);
  });

  it('the recorded USDT transfer: a TRC-20 transfer in base58, the fee burnt from the sender', async () => {
    const node = await recordedNode({ 'wallet/getblockbynum': () => USDT_BLOCK, 'wallet/gettransactioninfobyblocknum': () => [USDT_INFO] });
    const block = await adapterFor(node, { network: 'mainnet' }).getBlock(USDT_HEIGHT);
    expect(block.tokenTransfers).toEqual([
      {
        transactionId: 'efde2ab4d7522f67c5bd3c5bf546d2112a4004fe76d45db2d5b94334b8077878',
        logIndex: 0,
        tokenType: 'TRC-20',
        contract: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t',
        from: 'TM32aWxTekCu39YWZhh5JcP5mckzqvgDFe',
        to: toBase58('4188bb8fcadbf29ee90dffbc8c7fd1e02a485fbeff'),
        amount: 1_000_000n,
      },
    ]);
    expect(block.coinMovements).toEqual([{ transactionId: USDT_INFO.id, address: 'TM32aWxTekCu39YWZhh5JcP5mckzqvgDFe', delta: -1_231_300n }]);
    expect(addressesOf(block).every((a) => BASE58.test(a))).toBe(true);
  });

  it('infos of transactions the block does not have (the recorded Nile infos against its header-only block): thrown', async () => {
    const node = await recordedNode({ 'wallet/getblockbynum': () => NILE_BLOCK, 'wallet/gettransactioninfobyblocknum': () => NILE_INFOS });
    const error = await adapterFor(node)
      .getBlock(66987565)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TronAdapterError);
    expect((error as Error).message).toMatch(/block 66987565 \(0000000003fe262d.*belongs to no transaction of block 66987565/);
  });

  it('an info made at another time than the block (the node switched branches between the calls): thrown', async () => {
    const moved = { ...USDT_INFO, blockTimeStamp: (USDT_INFO.blockTimeStamp as number) + 3000 };
    const node = await recordedNode({ 'wallet/getblockbynum': () => USDT_BLOCK, 'wallet/gettransactioninfobyblocknum': () => [moved] });
    await expect(adapterFor(node).getBlock(USDT_HEIGHT)).rejects.toThrow(/reorganised under us/);
  });

  it('a block of another height, a missing block, garbage: thrown', async () => {
    const node = await recordedNode({
      'wallet/getblockbynum': (b) => (b.num === 101 ? BLOCK_100 : b.num === 102 ? { blockID: 'zz', block_header: {} } : {}),
      'wallet/gettransactioninfobyblocknum': () => [],
    });
    const adapter = adapterFor(node);
    await expect(adapter.getBlock(101)).rejects.toThrow(/asked .* for block 101, got block 100/);
    await expect(adapter.getBlock(102)).rejects.toThrow(TronAdapterError);
    await expect(adapter.getBlock(103)).rejects.toThrow(/block 103 is not on the node .* \(yet\)/);
  });

  it('findTransaction: the recorded info gives the height, the block its hash; {} gives undefined', async () => {
    const node = await recordedNode({
      'wallet/gettransactioninfobyid': (b) => (b.value === USDT_INFO.id ? USDT_INFO : {}),
      'wallet/getblockbynum': (b) => (b.num === USDT_HEIGHT ? USDT_BLOCK : {}),
    });
    const adapter = adapterFor(node);
    expect(await adapter.findTransaction(USDT_INFO.id as string)).toEqual({ height: USDT_HEIGHT, hash: USDT_BLOCK.blockID });
    expect(await adapter.findTransaction('ab'.repeat(32))).toBeUndefined();
    // The block at that height no longer holds it: the node moved between the two calls.
    node.intercept = (path, body) => ({
      json:
        path === 'wallet/gettransactioninfobyid'
          ? USDT_INFO
          : path === 'wallet/getblockbynum' && body.num === USDT_HEIGHT
            ? { ...USDT_BLOCK, transactions: [] }
            : {},
    });
    await expect(adapter.findTransaction(USDT_INFO.id as string)).rejects.toThrow(/does not hold transaction/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// A live chain
// ---------------------------------------------------------------------------------------------------------------

describe('getBlock on the fake node: what the node did, normalised', () => {
  let node: FakeTronNode;
  let adapter: TronAdapter;
  let height: number;
  const ids: Record<string, string> = {};
  let holder: string;
  let recipient: string;

  beforeAll(async () => {
    node = await fakeNode();
    adapter = adapterFor(node);
    holder = node.newAccount().address;
    recipient = node.newAccount().address;
    ids.trx = await node.sendTrx(node.wallet, holder, 50_000_000n);
    ids.token = await node.transferToken(node.wallet, holder, 2_500_000n);
    ids.forward = await node.callForwarder(node.wallet, recipient, 1_000_000n);
    ids.swallowed = await node.callForwarder(node.wallet, recipient, 7_000_000n, { swallow: true });
    await node.mine(1);
    // holder has TRX for fees but fewer tokens than it sends: the contract reverts, the fee is burnt anyway.
    ids.reverted = await node.transferToken(node.account(holder), recipient, 9_000_000n);
    ids.back = await node.sendTrx(node.account(holder), node.wallet.address, 1_000_000n);
    height = await node.mine(1);
  });

  it('transactions, hash and parent as the node has them; the token transfer, the internal transfer (not the rejected one)', async () => {
    const first = await adapter.getBlock(height - 1);
    expect(first.hash).toBe(node.blockHash(height - 1));
    expect(first.parentHash).toBe(node.blockHash(height - 2));
    expect(first.transactionIds).toEqual([ids.trx, ids.token, ids.forward, ids.swallowed]);
    expect(first.tokenTransfers).toEqual([
      { transactionId: ids.token, logIndex: 0, tokenType: 'TRC-20', contract: node.token.address, from: node.wallet.address, to: holder, amount: 2_500_000n },
    ]);
    expect(first.internalTransfers).toEqual([
      { parentTransactionId: ids.forward, operationId: 'internal_0', from: node.forwarder, to: recipient, amount: 1_000_000n },
    ]);
    const second = await adapter.getBlock(height);
    expect(second.tokenTransfers).toEqual([]); // reverted
    expect(
      addressesOf(first)
        .concat(addressesOf(second))
        .every((a) => BASE58.test(a)),
    ).toBe(true);
  });

  it("coin movements add up to the node's balance changes, fees included", async () => {
    for (const h of [height - 1, height]) {
      const block = await adapter.getBlock(h);
      const net = new Map<string, bigint>();
      for (const m of block.coinMovements) net.set(m.address, (net.get(m.address) ?? 0n) + m.delta);
      for (const address of [node.wallet.address, holder, recipient, node.forwarder, node.swallower]) {
        expect([h, address, net.get(address) ?? 0n]).toEqual([h, address, node.balance(address, h) - node.balance(address, h - 1)]);
      }
    }
    // The revert burnt the contract fee; the transfer back paid bandwidth.
    expect(node.balance(holder, height) - node.balance(holder, height - 1)).toBe(-(FEES.contractEnergyFee + FEES.contractNetFee) - 1_000_000n - FEES.transfer);
  });

  it('an empty block (no `transactions`, infos []), the genesis block (no number or time, infos {}), a block the node does not have yet', async () => {
    const empty = await node.mine(1);
    expect(node.blocks[empty]?.json.transactions).toBeUndefined();
    expect(await adapter.getBlock(empty)).toMatchObject({ height: empty, hash: node.blockHash(empty), transactionIds: [], coinMovements: [] });
    expect(await adapter.getBlock(0)).toMatchObject({ height: 0, timestamp: 0, hash: node.blockHash(0), transactionIds: [] });
    await expect(adapter.getBlock(empty + 1)).rejects.toThrow(/not on the node/);
  });

  it('getHead and findTransaction follow the chain; a pending or unknown transaction is undefined', async () => {
    expect(await adapter.getHead()).toBe(node.height());
    expect(await adapter.findTransaction(ids.token as string)).toEqual({ height: height - 1, hash: node.blockHash(height - 1) });
    expect(await adapter.findTransaction(`0x${(ids.back as string).toUpperCase()}`)).toEqual({ height, hash: node.blockHash(height) });
    const pending = await node.sendTrx(node.wallet, holder, 1n);
    expect(await adapter.findTransaction(pending)).toBeUndefined();
    expect(await adapter.findTransaction('cd'.repeat(32))).toBeUndefined();
    await expect(adapter.findTransaction('nope')).rejects.toThrow(TypeError);
    await node.mine(1);
  });

  it('one block call and one info call per block; capabilities', async () => {
    node.requests.length = 0;
    await adapter.getBlock(height);
    expect(node.requests.map((r) => r.path)).toEqual(['wallet/getblockbynum', 'wallet/gettransactioninfobyblocknum']);
    expect(adapter.capabilities()).toMatchObject({ blockTransactionInfos: 'supported', headWatching: 'none' });
  });
});

describe('getBlock: fallback and failures', () => {
  it('a node that does not serve gettransactioninfobyblocknum (404): the same block from gettransactioninfobyid per transaction', async () => {
    const node = await fakeNode();
    for (let i = 0; i < 3; i++) await node.sendTrx(node.wallet, node.newAccount().address, 1_000_000n + BigInt(i));
    await node.transferToken(node.wallet, node.newAccount().address, 5n);
    const h = await node.mine(1);
    const logger = { warn: vi.fn(), info: vi.fn() };
    const fast = adapterFor(node);
    const slow = adapterFor(node, { concurrency: 2, logger });
    const expected = [await fast.getBlock(h), await fast.getBlock(h - 1)];
    node.intercept = (path) => (path === 'wallet/gettransactioninfobyblocknum' ? { status: 404, body: '<html>HTTP ERROR 404</html>' } : undefined);
    node.requests.length = 0;
    expect(await slow.getBlock(h)).toEqual(expected[0]);
    expect(await slow.getBlock(h - 1)).toEqual(expected[1]);
    expect(node.count('wallet/gettransactioninfobyblocknum')).toBe(1); // tried once, then remembered
    expect(node.count('wallet/gettransactioninfobyid')).toBe(4);
    expect(slow.capabilities().blockTransactionInfos).toBe('unsupported');
    expect(logger.info).toHaveBeenCalledTimes(1);
    expect(logger.warn).not.toHaveBeenCalled();
  });

  it('timeouts, 5xx, {"Error"} and garbage are thrown (never taken as "unsupported"); the node recovers', async () => {
    const node = await fakeNode();
    const h = node.height();
    const adapter = adapterFor(node, { timeoutMs: 200 });
    const cases: [FakeReply, Record<string, unknown>][] = [
      ['hang', { kind: 'timeout', method: 'wallet/gettransactioninfobyblocknum' }],
      [
        { status: 500, body: 'java.lang.OutOfMemoryError' },
        { kind: 'http', status: 500 },
      ],
      [{ status: 200, body: '<html>not json' }, { kind: 'http' }],
      [{ json: { Error: 'class java.lang.NullPointerException : null' } }, { kind: 'node', nodeMessage: 'class java.lang.NullPointerException : null' }],
    ];
    for (const [reply, expected] of cases) {
      node.intercept = (path) => (path === 'wallet/gettransactioninfobyblocknum' ? reply : undefined);
      const error = await adapter.getBlock(h).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TronRpcError);
      expect(error).toMatchObject(expected);
      expect(adapter.capabilities().blockTransactionInfos).not.toBe('unsupported');
    }
    // Garbage where infos belong, and infos missing one transaction: thrown too.
    await node.sendTrx(node.wallet, node.newAccount().address, 1n);
    await node.sendTrx(node.wallet, node.newAccount().address, 2n);
    const withTxs = await node.mine(1);
    node.intercept = (path) => (path === 'wallet/gettransactioninfobyblocknum' ? { json: 'garbage' } : undefined);
    await expect(adapter.getBlock(withTxs)).rejects.toThrow(/transaction infos is not an array/);
    node.intercept = (path, body) => (path === 'wallet/gettransactioninfobyblocknum' ? { json: node.blocks[body.num as number]?.infos.slice(1) } : undefined);
    await expect(adapter.getBlock(withTxs)).rejects.toThrow(/no transaction info for 1 of 2 transactions/);
    node.intercept = undefined;
    expect((await adapter.getBlock(withTxs)).transactionIds).toHaveLength(2);
  });

  it('a node that is down: a network error naming the node without credentials; up again, it answers', async () => {
    const node = await fakeNode();
    const adapter = createTronAdapter({ network: 'nile', rpcUrl: node.url.replace('http://', 'http://u:secret@') });
    adapters.push(adapter);
    await node.down();
    const error = await adapter.getHead().catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'network', method: 'wallet/getnowblock' });
    expect((error as Error).message).toContain(`${node.url}/`);
    expect((error as Error).message).not.toContain('secret');
    await node.up();
    expect(await adapter.getHead()).toBe(node.height());
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Balances
// ---------------------------------------------------------------------------------------------------------------

describe('getCoinBalance (getaccountbalance, storage.balance.history.lookup)', () => {
  it('the balance after each block, as the node recorded it; an account never activated is 0', async () => {
    const node = await fakeNode();
    const adapter = adapterFor(node);
    const a = node.newAccount();
    const start = node.height();
    await node.sendTrx(node.wallet, a.address, 10_000_000n);
    await node.mine(1);
    await node.mine(1); // a untouched here: its last change is one block back
    await node.sendTrx(a, node.newAccount().address, 3_000_000n);
    const end = await node.mine(1);
    for (let h = start; h <= end; h++) expect([h, await adapter.getCoinBalance(a.address, h)]).toEqual([h, node.balance(a.address, h)]);
    expect(await adapter.getCoinBalance(a.hex, end)).toBe(10_000_000n - 3_000_000n - FEES.transferNewAccount);
    expect(await adapter.getCoinBalance(node.newAccount().address, end)).toBe(0n);
    // The funded wallet holds more than Number.MAX_SAFE_INTEGER sun: read exactly.
    expect(await adapter.getCoinBalance(node.wallet.address, end)).toBe(node.balance(node.wallet.address));
    expect(node.balance(node.wallet.address)).toBeGreaterThan(BigInt(Number.MAX_SAFE_INTEGER));
    expect(adapter.capabilities().balanceHistory).toBe('supported');
    const asked = node.requests.filter((r) => r.path === 'wallet/getaccountbalance').at(-1)?.body;
    expect(asked).toEqual({ account_identifier: { address: node.wallet.hex }, block_identifier: { hash: node.blockHash(end), number: end } });
    await expect(adapter.getCoinBalance('TNotAnAddress', end)).rejects.toThrow(TypeError);
  });

  it("a node without the lookup (it would answer 0 for everyone): undefined, told by getblockbalance's 'This block does not exist'", async () => {
    const node = await fakeNode({ balanceHistory: 'off' });
    const logger = { warn: vi.fn(), info: vi.fn() };
    const adapter = adapterFor(node, { logger });
    await node.sendTrx(node.wallet, node.newAccount().address, 1_000_000n);
    const h = await node.mine(1);
    expect(await adapter.getCoinBalance(node.wallet.address, h)).toBeUndefined();
    expect(await adapter.getCoinBalance(node.wallet.address, h - 1)).toBeUndefined();
    expect(node.count('wallet/getaccountbalance')).toBe(0);
    expect(adapter.capabilities().balanceHistory).toBe('unsupported');
    expect(logger.info).toHaveBeenCalledTimes(1);
    // What getaccountbalance itself says on such a node: a zero balance, no error (why it is not asked).
    const raw = await fetch(`${node.url}/wallet/getaccountbalance`, {
      method: 'POST',
      body: JSON.stringify({ account_identifier: { address: node.wallet.hex }, block_identifier: { hash: node.blockHash(h), number: h } }),
    });
    expect(await raw.json()).toEqual({ block_identifier: { hash: node.blockHash(h), number: h } });
  });

  it('a node with the lookup on since a later block: undefined before it, the balance after; a gateway without getblockbalance: undefined', async () => {
    const node = await fakeNode({ balanceHistory: { fromHeight: 5 } });
    const adapter = adapterFor(node);
    const a = node.newAccount();
    await node.mine(1);
    await node.sendTrx(node.wallet, a.address, 4_000_000n);
    const h = await node.mine(1);
    expect(h).toBe(5);
    expect(await adapter.getCoinBalance(a.address, 4)).toBeUndefined();
    expect(await adapter.getCoinBalance(a.address, 5)).toBe(4_000_000n);
    node.intercept = (path) => (path === 'wallet/getblockbalance' ? { status: 404, body: 'Not Found' } : undefined);
    expect(await adapter.getCoinBalance(a.address, 5)).toBeUndefined();
  });

  it('node trouble and a block that changed under us are thrown', async () => {
    const node = await fakeNode();
    const adapter = adapterFor(node);
    const h = node.height();
    node.intercept = (path) => (path === 'wallet/getblockbalance' ? { status: 502, body: 'Bad Gateway' } : undefined);
    await expect(adapter.getCoinBalance(node.wallet.address, h)).rejects.toMatchObject({ kind: 'http', status: 502 });
    node.intercept = (path) =>
      path === 'wallet/getaccountbalance' ? { json: { Error: 'class java.lang.IllegalArgumentException : number and hash do not match' } } : undefined;
    await expect(adapter.getCoinBalance(node.wallet.address, h)).rejects.toMatchObject({ kind: 'node' });
    node.intercept = (path) => (path === 'wallet/getaccountbalance' ? { json: { balance: 'lots' } } : undefined);
    await expect(adapter.getCoinBalance(node.wallet.address, h)).rejects.toThrow(TronAdapterError);
    node.intercept = undefined;
    await expect(adapter.getCoinBalance(node.wallet.address, h + 1)).rejects.toThrow(/not on the node/);
  });
});

describe('getTokenBalance (balanceOf through triggerconstantcontract: the current state only)', () => {
  it("at the node's head: the balance; any other height: undefined; not a contract: undefined", async () => {
    const node = await fakeNode();
    const adapter = adapterFor(node);
    const a = node.newAccount();
    await node.transferToken(node.wallet, a.address, 1_234_567n);
    const h = await node.mine(1);
    expect(await adapter.getTokenBalance(node.token.address, a.address, h)).toBe(1_234_567n);
    expect(await adapter.getTokenBalance(node.token.hex, a.hex, h)).toBe(1_234_567n);
    expect(await adapter.getTokenBalance(node.token.address, a.address, h - 1)).toBeUndefined();
    expect(await adapter.getTokenBalance(node.token.address, a.address, h + 1)).toBeUndefined();
    expect(await adapter.getTokenBalance(node.newAccount().address, a.address, h)).toBeUndefined();
    const call = node.requests.find((r) => r.path === 'wallet/triggerconstantcontract')?.body;
    expect(call).toMatchObject({ contract_address: node.token.hex, function_selector: 'balanceOf(address)', parameter: a.hex.slice(2).padStart(64, '0') });
    // A head that moved during the call (block h first, h + 1 after it): the state read may be of h + 1.
    await node.mine(1);
    let heads = 0;
    node.intercept = (path) => (path === 'wallet/getnowblock' && ++heads === 1 ? { json: node.blocks[h]?.json } : undefined);
    expect(await adapter.getTokenBalance(node.token.address, a.address, h)).toBeUndefined();
    expect(heads).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Token metadata
// ---------------------------------------------------------------------------------------------------------------

const hexWord = (n: bigint | number) => BigInt(n).toString(16).padStart(64, '0');
const bytes32 = (s: string) => Buffer.from(s, 'utf8').toString('hex').padEnd(64, '0');

describe('tokenMetadata (name, symbol, decimals through triggerconstantcontract)', () => {
  let node: FakeTronNode;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    node = await fakeNode();
    const answers = (name: unknown, symbol: unknown, decimals: unknown) => (signature: string) => {
      const pick = { 'name()': name, 'symbol()': symbol, 'decimals()': decimals }[signature] ?? { revert: '' };
      return pick as { return: string };
    };
    tokens.bytes32 = node.addContract('bytes32', answers({ return: bytes32('Maker') }, { return: bytes32('MKR') }, { return: hexWord(18) }));
    tokens.reverts = node.addContract('reverts', answers({ revert: `08c379a0${abiString('nope')}` }, { revert: '' }, { revert: '' }));
    tokens.garbage = node.addContract(
      'garbage',
      answers({ return: '0102030405' }, { return: `${hexWord(2n ** 255n)}${hexWord(3)}` }, { return: 'ff'.repeat(32) }),
    );
    tokens.hostile = node.addContract(
      'hostile',
      answers({ runtime: 'CPU timeout for 0x1 operation executing' }, { other: 'class org.tron.core.vm.OutOfTimeException' }, { return: '' }),
    );
    tokens.dirty = node.addContract(
      'dirty',
      answers({ return: abiString(`  Bad\u0007 ${'Token'.repeat(100)}\u0000`) }, { return: bytes32(' BT ') }, { return: hexWord(6) }),
    );
  });

  const transfer = (contract: string, tokenType: TokenTransfer['tokenType'] = 'TRC-20'): TokenTransfer => ({
    transactionId: '01'.repeat(32),
    logIndex: 0,
    tokenType,
    contract,
    from: node.wallet.address,
    to: node.wallet.address,
    amount: 1n,
  });

  it('ABI strings, bytes32, reverts, runtime errors, garbage, no contract at all; TRC-721 decimals 0; cached in memory', async () => {
    const adapter = adapterFor(node);
    node.requests.length = 0;
    expect(await adapter.tokenMetadata(transfer(node.token.address))).toEqual({ name: 'Herald Tether', symbol: 'HUSDT', decimals: 6 });
    expect(await adapter.tokenMetadata(transfer(tokens.bytes32 as string))).toEqual({ name: 'Maker', symbol: 'MKR', decimals: 18 });
    expect(await adapter.tokenMetadata(transfer(tokens.reverts as string))).toEqual({ name: '', symbol: '', decimals: 0 });
    expect(await adapter.tokenMetadata(transfer(tokens.garbage as string))).toEqual({ name: '', symbol: '', decimals: 0 });
    expect(await adapter.tokenMetadata(transfer(tokens.hostile as string))).toEqual({ name: '', symbol: '', decimals: 0 });
    const dirty = await adapter.tokenMetadata(transfer(tokens.dirty as string));
    expect(dirty?.symbol).toBe('BT');
    expect(dirty?.name).toHaveLength(256);
    expect(dirty?.name.startsWith('Bad TokenToken')).toBe(true);
    expect(await adapter.tokenMetadata(transfer(node.newAccount().address))).toEqual({ name: '', symbol: '', decimals: 0 });
    expect(await adapter.tokenMetadata(transfer(tokens.bytes32 as string, 'TRC-721'))).toEqual({ name: 'Maker', symbol: 'MKR', decimals: 0 });
    expect(node.count('wallet/triggerconstantcontract')).toBe(7 * 3);
    expect(node.requests[0]?.body).toEqual({
      owner_address: node.token.hex,
      contract_address: node.token.hex,
      function_selector: 'name()',
      parameter: '',
      visible: false,
    });
  });

  it('concurrent lookups share the calls; a 41-hex contract is the same token', async () => {
    const adapter = adapterFor(node);
    node.requests.length = 0;
    await Promise.all([node.token.address, node.token.hex, node.token.address].map((c) => adapter.tokenMetadata(transfer(c))));
    expect(node.count('wallet/triggerconstantcontract')).toBe(3);
  });

  it('node trouble is thrown and not cached; a node with constant calls off is thrown, not taken as a token without metadata', async () => {
    const adapter = adapterFor(node);
    node.intercept = (path) => (path === 'wallet/triggerconstantcontract' ? { status: 503, body: 'overloaded' } : undefined);
    await expect(adapter.tokenMetadata(transfer(node.token.address))).rejects.toMatchObject({ kind: 'http', status: 503 });
    const off = Buffer.from('this node does not support constant').toString('hex');
    node.intercept = (path) =>
      path === 'wallet/triggerconstantcontract' ? { json: { result: { code: 'CONTRACT_VALIDATE_ERROR', message: off } } } : undefined;
    await expect(adapter.tokenMetadata(transfer(node.token.address))).rejects.toThrow(/does not support constant/);
    node.intercept = (path) => (path === 'wallet/triggerconstantcontract' ? { json: { result: { result: true }, constant_result: ['xyz'] } } : undefined);
    await expect(adapter.tokenMetadata(transfer(node.token.address))).rejects.toThrow(/not hex/);
    node.intercept = undefined;
    expect(await adapter.tokenMetadata(transfer(node.token.address))).toEqual({ name: 'Herald Tether', symbol: 'HUSDT', decimals: 6 });
  });

  describe('database cache', () => {
    let db: Db;
    beforeAll(async () => {
      db = await openMigratedTestDatabase();
    });
    afterAll(async () => {
      await db?.close();
    });

    it('a second adapter reads the database, not the node; rows keyed by the base58 contract', async () => {
      const first = adapterFor(node, { tokenMetadataCache: tokenMetadataCache(db) });
      expect(await first.tokenMetadata(transfer(toHex(tokens.bytes32 as string)))).toEqual({ name: 'Maker', symbol: 'MKR', decimals: 18 });
      node.requests.length = 0;
      const second = adapterFor(node, { tokenMetadataCache: tokenMetadataCache(db) });
      expect(await second.tokenMetadata(transfer(tokens.bytes32 as string))).toEqual({ name: 'Maker', symbol: 'MKR', decimals: 18 });
      expect(node.count('wallet/triggerconstantcontract')).toBe(0);
      expect(
        await db.query('test:tron-token-metadata', 'SELECT blockchain, network, contract, name, symbol, decimals, token_type FROM token_metadata'),
      ).toEqual([{ blockchain: 'tron', network: 'nile', contract: tokens.bytes32, name: 'Maker', symbol: 'MKR', decimals: 18, token_type: 'TRC-20' }]);
      // Mainnet does not see nile's row.
      await adapterFor(node, { tokenMetadataCache: tokenMetadataCache(db), network: 'mainnet' }).tokenMetadata(transfer(tokens.bytes32 as string));
      expect(node.count('wallet/triggerconstantcontract')).toBe(3);
    });
  });
});

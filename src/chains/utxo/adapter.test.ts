/**
 * The Bitcoin-family adapter against stub nodes speaking Core's JSON-RPC over real HTTP, answering with
 * the recorded responses of test/fixtures (bitcoin 50000–50002 and the getrawtransaction answers of the
 * outputs block 50001 spends; zcash, dogecoin and bitcoin-cash blocks for their dialects). What a dialect
 * does with a verbosity it does not serve is the node's real answer (see blocks.ts for the sources).
 *
 * Derived, not recorded (no such recording exists): the verbosity-3 form of block 50001 (its inputs' prevout
 * built from the recorded getrawtransaction answers of the funding transactions; their heights computed from
 * their `confirmations` and the tip the 5000x blocks were recorded at), the verbosity-1 form of the 5000x
 * blocks (txids) with getrawtransaction answers equal to the verbosity-2 transaction objects plus blockhash
 * (Core documents verbosity 2 as "as given by getrawtransaction"), and scantxoutset answers.
 */

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase } from '../../../test/harness.ts';
import { startFakeUtxoNode } from '../../../test/support/fake-utxo-node.ts';
import { withoutAddresses } from '../../../test/support/utxo-blocks.ts';
import { type StubReply, startUtxoRpcStub, type UtxoRpcStub } from '../../../test/support/utxo-rpc-stub.ts';
import { callbackItem } from '../../matching/identity.ts';
import { createDb, type Db } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { tokenMetadataCache } from '../../store/token-metadata.ts';
import type { NormalizedBlock, TokenTransfer, UnspentOutputs } from '../types.ts';
import { createUtxoAdapter, type UtxoAdapter, UtxoAdapterError, type UtxoAdapterOptions } from './adapter.ts';
import { normalizeUtxoBlock, type UtxoBlockchain } from './normalize.ts';
import { UtxoRpcError } from './rpc.ts';
import type { RpcBlock, RpcTransaction } from './rpc-types.ts';
import { MAX_ADD_BACK_BLOCKS } from './unspent.ts';

/** The outputs of a getUnspentOutputs answer (its tipHeight is checked where it matters). */
const outputsOf = async (answer: Promise<UnspentOutputs | undefined>) => (await answer)?.outputs;

// ---------------------------------------------------------------------------------------------------------------
// Recorded data
// ---------------------------------------------------------------------------------------------------------------

const FIXTURES = path.resolve(process.cwd(), 'test/fixtures');

/** A recorded file without its JSON-RPC envelope; a missing file throws (the test fails, never skips). */
function fixture<T>(rel: string): T {
  const json = JSON.parse(readFileSync(path.join(FIXTURES, rel), 'utf8')) as unknown;
  if (json !== null && typeof json === 'object' && !Array.isArray(json) && 'result' in json) return (json as { result: T }).result;
  return json as T;
}

type Tx = RpcTransaction & { txid: string; vin: NonNullable<RpcTransaction['vin']>; vout: NonNullable<RpcTransaction['vout']> };
type Block = Omit<RpcBlock, 'tx'> & { hash: string; height: number; tx: Tx[]; confirmations?: number };

const BTC = 'bitcoin/mainnet/bitcoin-etl/';
const BTC_BLOCKS: Record<number, Block> = {
  50000: fixture<Block>(`${BTC}getblock_2_height50000_000000001aeae195.json`),
  50001: fixture<Block>(`${BTC}getblock_2_height50001_000000001c920d49.json`),
  50002: fixture<Block>(`${BTC}getblock_2_height50002_000000002066d7f9.json`),
};
const FUNDING = ['0d37522b', '0dd0394c', '76a8d70a'].map((id) =>
  fixture<Tx & { confirmations: number; blockhash: string }>(`${BTC}getrawtransaction_true_${id}.json`),
);
/** The tip when the 5000x blocks were recorded: 50000 + its confirmations - 1 (the same for 50001 and 50002). */
const RECORDED_TIP = 50000 + (BTC_BLOCKS[50000]?.confirmations as number) - 1;

/** Block 50001 as Core >= 25 prints it at verbosity 3: each input's prevout from the funding transaction. */
function withPrevouts(block: Block): Block {
  const byTxid = new Map(FUNDING.map((t) => [t.txid, t]));
  return {
    ...block,
    tx: block.tx.map((tx) => ({
      ...tx,
      vin: tx.vin.map((v) => {
        const funding = v.txid ? byTxid.get(v.txid) : undefined;
        if (!funding) return v;
        const out = funding.vout[v.vout as number];
        return { ...v, prevout: { generated: true, height: RECORDED_TIP - funding.confirmations + 1, value: out?.value, scriptPubKey: out?.scriptPubKey } };
      }),
    })),
  };
}

const txids = (block: Block): RpcBlock => ({ ...block, tx: block.tx.map((t) => t.txid) });
const rawTransaction = (block: Block, tx: Tx) => ({
  ...tx,
  blockhash: block.hash,
  confirmations: block.confirmations,
  time: block.time,
  blocktime: block.time,
});

const CORE_OUT_OF_RANGE = { code: -8, message: 'Verbosity value out of range' };
const ZCASH_OUT_OF_RANGE = { code: -8, message: 'Verbosity must be in range from 0 to 2' };
/** Dogecoin 1.14 (Core 0.14): `verbose` is read with get_bool() (dogecoin/dogecoin#1625). */
const NOT_BOOLEAN = { code: -1, message: 'JSON value is not a boolean as expected' };
/** Core 0.14's getrawtransaction given a third argument: the runtime_error with its help text, as -1. */
const RAW_TX_USAGE = {
  code: -1,
  message:
    'getrawtransaction "txid" ( verbose )\n\nNOTE: By default this function only works for mempool transactions. If the -txindex option is\nenabled, it also works for blockchain transactions.',
};

// ---------------------------------------------------------------------------------------------------------------
// Stub node: one chain of blocks, in a dialect
// ---------------------------------------------------------------------------------------------------------------

interface Dialect {
  /** What the node answers to a getblock verbosity it does not serve (above maxVerbosity). */
  badVerbosity?: { code: number; message: string };
  maxVerbosity: 1 | 2 | 3;
  /** Core 0.15–24: verbosity 3 answered as 2. */
  threeAsTwo?: boolean;
  /** Only `true`/`false` accepted (Dogecoin 1.14). */
  booleanOnly?: boolean;
  /** getrawtransaction takes a blockhash argument (Core >= 0.16). */
  rawTxBlockHash?: boolean;
  /** getrawtransaction of mined transactions works without blockhash (-txindex). */
  txindex?: boolean;
}

const CORE_25: Dialect = { maxVerbosity: 3, rawTxBlockHash: true };
const CORE_21: Dialect = { maxVerbosity: 2, threeAsTwo: true, rawTxBlockHash: true };

interface Node {
  stub: UtxoRpcStub;
  blocks: Map<number, Block>;
  /** Extra handlers by method (scantxoutset, omni_*, overrides). */
  extra: Map<string, (params: unknown[]) => StubReply>;
  tip: number;
}

const stubs: UtxoRpcStub[] = [];
const adapters: UtxoAdapter[] = [];
afterAll(async () => {
  await Promise.all(adapters.map((a) => a.close()));
  await Promise.all(stubs.map((s) => s.close()));
});

function verbosityOf(param: unknown, dialect: Dialect): number | StubReply {
  if (param === undefined || param === true) return 1;
  if (param === false) return 0;
  if (typeof param !== 'number') return { error: { code: -1, message: 'JSON value is not an integer as expected' } };
  if (dialect.booleanOnly) return { error: NOT_BOOLEAN };
  return param;
}

async function startNode(dialect: Dialect, blocks: Block[], credentials?: string): Promise<Node> {
  const node: Node = { stub: undefined as unknown as UtxoRpcStub, blocks: new Map(blocks.map((b) => [b.height, b])), extra: new Map(), tip: 0 };
  node.tip = Math.max(...blocks.map((b) => b.height));
  const byHash = () => new Map([...node.blocks.values()].map((b) => [b.hash, b]));
  node.stub = await startUtxoRpcStub((method, params) => {
    const extra = node.extra.get(method);
    if (extra) return extra(params);
    switch (method) {
      case 'getblockcount':
        return { result: node.tip };
      case 'getblockhash': {
        const b = node.blocks.get(params[0] as number);
        return b ? { result: b.hash } : { error: { code: -8, message: 'Block height out of range' } };
      }
      case 'getblock': {
        const b = byHash().get(params[0] as string);
        if (!b) return { error: { code: -5, message: 'Block not found' } };
        const v = verbosityOf(params[1], dialect);
        if (typeof v !== 'number') return v;
        if (v === 1) return { result: txids(b) };
        if (v === 2 && dialect.maxVerbosity >= 2) return { result: b };
        if (v === 3 && dialect.maxVerbosity >= 3) return { result: withPrevouts(b) };
        if (v === 3 && dialect.threeAsTwo) return { result: b };
        return { error: dialect.badVerbosity ?? CORE_OUT_OF_RANGE };
      }
      case 'getrawtransaction': {
        if (params.length > 2 && !dialect.rawTxBlockHash) return { error: RAW_TX_USAGE };
        const inBlock = params.length > 2 ? byHash().get(params[2] as string) : undefined;
        if (params.length > 2 && !inBlock) return { error: { code: -5, message: 'Block hash not found' } };
        for (const b of inBlock ? [inBlock] : node.blocks.values()) {
          const tx = b.tx.find((t) => t.txid === params[0]);
          if (tx && (inBlock || dialect.txindex)) return { result: rawTransaction(b, tx) };
        }
        if (inBlock) return { error: { code: -5, message: 'No such transaction found in the provided block. Use gettransaction for wallet transactions.' } };
        return {
          error: {
            code: -5,
            message: dialect.txindex
              ? 'No such mempool or blockchain transaction. Use gettransaction for wallet transactions.'
              : 'No such mempool transaction. Use -txindex to enable blockchain transaction queries. Use gettransaction for wallet transactions.',
          },
        };
      }
      case 'getblockheader': {
        const b = byHash().get(params[0] as string);
        if (!b) return { error: { code: -5, message: 'Block not found' } };
        return { result: { hash: b.hash, confirmations: node.tip - b.height + 1, height: b.height, previousblockhash: b.previousblockhash, time: b.time } };
      }
      default:
        return { error: { code: -32601, message: 'Method not found' } };
    }
  }, credentials);
  stubs.push(node.stub);
  return node;
}

/** Block worker threads of the adapters made by adapterFor (set per describe). */
let blockWorkers = 0;

function adapterFor(node: Node, options: Partial<UtxoAdapterOptions> = {}): UtxoAdapter {
  const adapter = createUtxoAdapter({ blockchain: 'bitcoin', network: 'mainnet', rpcUrl: node.stub.url, blockWorkers, ...options });
  adapters.push(adapter);
  return adapter;
}

function logger() {
  return { info: vi.fn(), warn: vi.fn() };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

const getblockCalls = (node: Node) => node.stub.calls.filter((c) => c.method === 'getblock').map((c) => c.params[1]);
const btcBlocks = () => [50000, 50001, 50002].map((h) => BTC_BLOCKS[h] as Block);
const BTC_MAIN = { blockchain: 'bitcoin', network: 'mainnet' } as const;

// ---------------------------------------------------------------------------------------------------------------

/**
 * Blocks are read on the calling thread (blockWorkers 0, the adapter's default) or in a worker thread (the
 * service's default): the same blocks, the same errors (revived as their own class), the same detection.
 */
describe.each([
  { path: 'in process', blockWorkers: 0 },
  { path: 'in a block worker', blockWorkers: 1 },
])('getBlock $path', ({ blockWorkers: workers }) => {
  beforeAll(() => {
    blockWorkers = workers;
  });
  afterAll(() => {
    blockWorkers = 0;
  });

  describe('getblock verbosity, detected per node', () => {
    it('Core >= 25: verbosity 3 resolves every spending inline (50001 debits the funding addresses, no spends left)', async () => {
      const node = await startNode(CORE_25, btcBlocks());
      const adapter = adapterFor(node);
      expect(adapter.capabilities().blockVerbosity).toBe('unknown');
      const b50000 = await adapter.getBlock(50000);
      // A coinbase-only block cannot tell whether verbosity 3 is honoured.
      expect(adapter.capabilities().blockVerbosity).toBe('unknown');
      expect(withoutAddresses(b50000)).toEqual(normalizeUtxoBlock({ block: BTC_BLOCKS[50000] as Block }, BTC_MAIN));
      const b = await adapter.getBlock(50001);
      expect(adapter.capabilities().blockVerbosity).toBe(3);
      expect(getblockCalls(node)).toEqual([3, 3]);
      expect(node.stub.count('getrawtransaction')).toBe(0);
      expect(b.utxo?.spends).toEqual([]);
      const [, tx1, tx2] = b.transactionIds as [string, string, string];
      expect(b.coinMovements.filter((m) => m.transactionId === tx1)).toEqual([
        { transactionId: tx1, address: '1DoQeKfU3dYhN9bxMpFFcVUnufCPDqSPae', delta: -5000000000n },
        { transactionId: tx1, address: '1PZMgkF2x161qvfP7dhoWSEEU3SjnQE1m9', delta: -5000000000n },
        { transactionId: tx1, address: '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ', delta: 10000000000n },
      ]);
      expect(b.coinMovements.filter((m) => m.transactionId === tx2).map((m) => m.address)).toEqual([
        '18dxbN6m8zxieN8F9BchXmhbeXUdFLr8fD',
        '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ',
      ]);
      expect(b.hash).toBe(fixture<string>(`${BTC}getblockhash_50001.json`));
      expect(b.parentHash).toBe(b50000.hash);
    });

    it('Core 0.21–24 (and Litecoin 0.21, Dash) answer verbosity 3 as 2: detected from the first block with inputs, then 2 is asked', async () => {
      const node = await startNode(CORE_21, btcBlocks());
      const log = logger();
      const adapter = adapterFor(node, { logger: log });
      const b = await adapter.getBlock(50001);
      expect(adapter.capabilities().blockVerbosity).toBe(2);
      expect(withoutAddresses(b)).toEqual(normalizeUtxoBlock({ block: BTC_BLOCKS[50001] as Block }, BTC_MAIN));
      expect(b.utxo?.spends.map((s) => s.outpoint)).toEqual([
        '76a8d70a757be5055f60be076b683897cadaad6b7bdf78c43e39b9d59cb4a6ea:0',
        '0dd0394c6240355f4e4b3c88028f678ed746cebee3b3e8509620733f018914c9:0',
        '0d37522b89f991f8433b80f709ad31862a54435cd003f25732fe405e9db93216:0',
      ]);
      await adapter.getBlock(50002);
      expect(getblockCalls(node)).toEqual([3, 2]);
      expect(log.info.mock.calls.map((c) => c[1]).filter((m) => /verbosity/.test(String(m)))).toEqual(['node does not serve getblock verbosity 3; using 2']);
    });

    it('litecoin 0.21 (MWEB era, 4 consecutive recorded blocks): read at verbosity 2 after one verbosity-3 answer', async () => {
      const names = ['2383206_7b3479a720700cbf', '2383207_84da0de24f1f7007', '2383208_d01b594f05404576', '2383209_0e6ab03c6ffc04a9'];
      const blocks = names.map((n) => fixture<Block>(`litecoin/mainnet/vivita/getblock_2_height${n}.json`));
      const node = await startNode(CORE_21, blocks);
      const adapter = adapterFor(node, { blockchain: 'litecoin' });
      const chain = { blockchain: 'litecoin', network: 'mainnet' } as const;
      let parent: NormalizedBlock | undefined;
      for (const block of blocks) {
        const b = await adapter.getBlock(block.height);
        expect(withoutAddresses(b)).toEqual(normalizeUtxoBlock({ block }, chain));
        if (parent) expect(b.parentHash).toBe(parent.hash);
        parent = b;
      }
      expect(getblockCalls(node)).toEqual([3, 2, 2, 2]);
    });

    it('zcashd: -8 "Verbosity must be in range from 0 to 2" → 2, valueZat amounts, shielded parts ignored', async () => {
      const blocks = [
        fixture<Block>('zcash/mainnet/bitcoin-etl/getblock_2_height508_000000124b0ed07b.json'),
        fixture<Block>('zcash/mainnet/bitcoin-etl/getblock_2_height462085_00000000010678b8.json'),
      ];
      const node = await startNode({ maxVerbosity: 2, badVerbosity: ZCASH_OUT_OF_RANGE }, blocks);
      const log = logger();
      const adapter = adapterFor(node, { blockchain: 'zcash', logger: log });
      const chain = { blockchain: 'zcash', network: 'mainnet' } as const;
      const b508 = await adapter.getBlock(508);
      expect(b508.hash).toBe(fixture<string>('zcash/mainnet/bitcoin-etl/getblockhash_508.json'));
      expect(withoutAddresses(b508)).toEqual(normalizeUtxoBlock({ block: blocks[0] as Block }, chain));
      expect(withoutAddresses(await adapter.getBlock(462085))).toEqual(normalizeUtxoBlock({ block: blocks[1] as Block }, chain));
      expect(getblockCalls(node)).toEqual([3, 2, 2]);
      expect(adapter.capabilities().blockVerbosity).toBe(2);
      expect(log.info.mock.calls[0]?.[0]).toMatchObject({ answer: ZCASH_OUT_OF_RANGE.message, blockchain: 'zcash' });
    });

    it('a node serving verbosity 1 only: getblock true + one batch of getrawtransaction <txid> true <blockhash> = the verbosity-2 result', async () => {
      const node = await startNode({ maxVerbosity: 1, rawTxBlockHash: true }, btcBlocks());
      const adapter = adapterFor(node);
      const b = await adapter.getBlock(50001);
      expect(withoutAddresses(b)).toEqual(normalizeUtxoBlock({ block: BTC_BLOCKS[50001] as Block }, BTC_MAIN));
      expect(getblockCalls(node)).toEqual([3, 2, true]);
      const raw = node.stub.calls.filter((c) => c.method === 'getrawtransaction');
      expect(raw.map((c) => c.params)).toEqual((BTC_BLOCKS[50001] as Block).tx.map((t) => [t.txid, true, (BTC_BLOCKS[50001] as Block).hash]));
      expect(raw.every((c) => c.batched)).toBe(true);
      expect(adapter.capabilities()).toMatchObject({ blockVerbosity: 1, rawTransactionBlockHash: 'supported' });
      await adapter.getBlock(50002);
      expect(getblockCalls(node).slice(3)).toEqual([true]);
    });

    it('bitcoin-cash 91722 (recorded getblock true + getrawtransaction): the output in cashaddr', async () => {
      const block = fixture<RpcBlock & { hash: string; height: number; tx: string[] }>(
        'bitcoin-cash/mainnet/bitcoin-etl/getblock_true_height91722_00000000000271a2.json',
      );
      const tx = fixture<Tx & { blockhash: string }>('bitcoin-cash/mainnet/bitcoin-etl/getrawtransaction_true_e3bf3d07.json');
      // The recording was made without the blockhash argument and shows the duplicate's later block (91880, BIP30);
      // asked with the blockhash, the node names the block asked.
      const stub = await startUtxoRpcStub((method, params) => {
        if (method === 'getblockhash') return { result: block.hash };
        if (method === 'getblock') return params[1] === true ? { result: block } : { error: CORE_OUT_OF_RANGE };
        if (method === 'getrawtransaction') return { result: { ...tx, blockhash: params[2] } };
        return { error: { code: -32601, message: 'Method not found' } };
      });
      stubs.push(stub);
      const adapter = createUtxoAdapter({ blockchain: 'bitcoin-cash', network: 'mainnet', rpcUrl: stub.url });
      adapters.push(adapter);
      const b = await adapter.getBlock(91722);
      expect(b.coinMovements).toEqual([{ transactionId: tx.txid, address: 'bitcoincash:qzkddwa6hgh03skr4qsrygk7e087zjydxgqkpjnsw7', delta: 5000000000n }]);
      expect(b.utxo?.outputs.map((o) => o.address)).toEqual(['bitcoincash:qzkddwa6hgh03skr4qsrygk7e087zjydxgqkpjnsw7']);
    });

    it('dogecoin 1.14 (boolean verbose, getrawtransaction without blockhash, -txindex): recorded block 2 and its coinbase', async () => {
      const block = fixture<RpcBlock & { hash: string; height: number; tx: string[] }>(
        'dogecoin/mainnet/bitcoin-etl/getblock_true_height2_ea5380659e02a68c.json',
      );
      const tx = fixture<Tx>('dogecoin/mainnet/bitcoin-etl/getrawtransaction_true_3b14b76d.json');
      const stub = await startUtxoRpcStub((method, params) => {
        if (method === 'getblockhash') return { result: fixture<string>('dogecoin/mainnet/bitcoin-etl/getblockhash_2.json') };
        if (method === 'getblock') return typeof params[1] === 'boolean' ? { result: block } : { error: NOT_BOOLEAN };
        if (method === 'getrawtransaction') return params.length > 2 ? { error: RAW_TX_USAGE } : { result: tx };
        return { error: { code: -32601, message: 'Method not found' } };
      });
      stubs.push(stub);
      const log = logger();
      const adapter = createUtxoAdapter({ blockchain: 'dogecoin', network: 'mainnet', rpcUrl: stub.url, logger: log });
      adapters.push(adapter);
      const b = await adapter.getBlock(2);
      expect(b.coinMovements).toEqual([{ transactionId: tx.txid, address: 'DPsvwvYRgt66ntxno9mMuBfwhg9nAMmGrD', delta: 72975200000000n }]);
      expect(stub.calls.filter((c) => c.method === 'getblock').map((c) => c.params[1])).toEqual([3, 2, true]);
      expect(stub.calls.filter((c) => c.method === 'getrawtransaction').map((c) => c.params.length)).toEqual([3, 2]);
      expect(adapter.capabilities()).toMatchObject({ blockVerbosity: 1, rawTransactionBlockHash: 'unsupported' });
      await adapter.getBlock(2);
      expect(stub.calls.filter((c) => c.method === 'getrawtransaction').map((c) => c.params.length)).toEqual([3, 2, 2]);
      expect(log.info.mock.calls.map((c) => c[1])).toEqual([
        'node does not serve getblock verbosity 3; using 2',
        'node does not serve getblock verbosity 2; using 1',
        'node takes no blockhash in getrawtransaction; looking transactions up without it (needs -txindex)',
      ]);
    });

    it('dogecoin 1.14 without -txindex: a clear error naming -txindex, thrown (never an empty block)', async () => {
      const node = await startNode({ maxVerbosity: 1, booleanOnly: true, rawTxBlockHash: false, txindex: false }, btcBlocks());
      const adapter = adapterFor(node, { blockchain: 'dogecoin' });
      const e = await rejection(adapter.getBlock(50001));
      expect(e).toBeInstanceOf(UtxoAdapterError);
      expect(e.message).toMatch(/-txindex=1/);
    });
  });

  describe('node trouble is thrown, never a downgrade', () => {
    it('HTTP 500 garbage, a timeout, or another RPC error at getblock 3 leave the verbosity alone', async () => {
      const node = await startNode(CORE_25, btcBlocks());
      const adapter = adapterFor(node, { timeoutMs: 300 });
      node.extra.set('getblock', () => ({ status: 500, body: '<html>oops</html>' }));
      expect(await rejection(adapter.getBlock(50001))).toMatchObject({ kind: 'http' });
      node.extra.set('getblock', () => ({ hang: true }));
      expect(await rejection(adapter.getBlock(50001))).toMatchObject({ kind: 'timeout' });
      node.extra.set('getblock', () => ({ error: { code: -1, message: 'Block not available (pruned data)' } }));
      expect(await rejection(adapter.getBlock(50001))).toMatchObject({ kind: 'rpc', code: -1 });
      node.extra.set('getblock', () => ({ status: 200, body: '{"result":{"hash":"00","tx":[]},"error":null,"id":0}' }));
      expect(await rejection(adapter.getBlock(50001))).toBeInstanceOf(UtxoRpcError); // id mismatch / not a block
      expect(getblockCalls(node).every((v) => v === 3)).toBe(true);
      expect(adapter.capabilities().blockVerbosity).toBe('unknown');
      node.extra.delete('getblock');
      expect((await adapter.getBlock(50001)).utxo?.spends).toEqual([]);
      expect(adapter.capabilities().blockVerbosity).toBe(3);
    });

    it('a getrawtransaction batch that fails (HTTP 500) fails the block', async () => {
      const node = await startNode({ maxVerbosity: 1, rawTxBlockHash: true }, btcBlocks());
      const adapter = adapterFor(node);
      node.extra.set('getrawtransaction', () => ({ status: 503, body: 'Work queue depth exceeded' }));
      expect(await rejection(adapter.getBlock(50001))).toMatchObject({ kind: 'http', status: 503 });
    });
  });

  describe('the block is the one asked, on the main chain', () => {
    it('getblockhash answering another height, a block of another hash, confirmations -1: thrown', async () => {
      const node = await startNode(CORE_25, btcBlocks());
      const adapter = adapterFor(node);
      const b50001 = BTC_BLOCKS[50001] as Block;
      node.extra.set('getblockhash', () => ({ result: b50001.hash }));
      expect((await rejection(adapter.getBlock(50002))).message).toMatch(/asked .* for block 50002 .*got block 50001/);
      node.extra.set('getblockhash', () => ({ result: (BTC_BLOCKS[50002] as Block).hash }));
      node.extra.set('getblock', () => ({ result: withPrevouts(b50001) }));
      expect(await rejection(adapter.getBlock(50002))).toBeInstanceOf(UtxoAdapterError);
      node.extra.delete('getblockhash');
      node.extra.set('getblock', () => ({ result: { ...withPrevouts(b50001), confirmations: -1 } }));
      expect((await rejection(adapter.getBlock(50001))).message).toMatch(/left the main chain/);
      node.extra.delete('getblock');
      expect((await adapter.getBlock(50001)).height).toBe(50001);
    });

    it('a height the node does not have yet (-8 "Block height out of range") is an adapter error', async () => {
      const node = await startNode(CORE_25, btcBlocks());
      const e = await rejection(adapterFor(node).getBlock(50003));
      expect(e).toBeInstanceOf(UtxoAdapterError);
      expect(e.message).toMatch(/not on the node .*Block height out of range/);
    });

    it('verbosity 1: a transaction the node places in another block (reorganised between calls) is thrown', async () => {
      const node = await startNode({ maxVerbosity: 1, rawTxBlockHash: true }, btcBlocks());
      const adapter = adapterFor(node);
      node.extra.set('getrawtransaction', (params) => ({
        result: { ...rawTransaction(BTC_BLOCKS[50001] as Block, (BTC_BLOCKS[50001] as Block).tx[0] as Tx), txid: params[0], blockhash: 'ab'.repeat(32) },
      }));
      expect((await rejection(adapter.getBlock(50001))).message).toMatch(/reorganised/);
      node.extra.set('getrawtransaction', () => ({
        error: { code: -5, message: 'No such transaction found in the provided block. Use gettransaction for wallet transactions.' },
      }));
      expect(await rejection(adapter.getBlock(50001))).toMatchObject({ kind: 'rpc', code: -5 });
    });
  });
});

describe('getHead and findTransaction', () => {
  it('getHead is getblockcount; garbage is thrown', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    const adapter = adapterFor(node);
    expect(await adapter.getHead()).toBe(50002);
    node.extra.set('getblockcount', () => ({ result: 'many' }));
    expect(await rejection(adapter.getHead())).toBeInstanceOf(UtxoAdapterError);
  });

  it('a mined transaction: getrawtransaction (recorded) → getblockheader → height and hash', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    const recorded = FUNDING[0] as Tx & { blockhash: string; confirmations: number };
    const fundingHeight = RECORDED_TIP - recorded.confirmations + 1;
    node.extra.set('getrawtransaction', (params) =>
      params[0] === recorded.txid
        ? { result: recorded }
        : { error: { code: -5, message: 'No such mempool or blockchain transaction. Use gettransaction for wallet transactions.' } },
    );
    node.extra.set('getblockheader', (params) =>
      params[0] === recorded.blockhash
        ? { result: { hash: recorded.blockhash, height: fundingHeight, confirmations: recorded.confirmations } }
        : { error: { code: -5, message: 'Block not found' } },
    );
    const adapter = adapterFor(node);
    expect(await adapter.findTransaction(recorded.txid)).toEqual({ height: 49627, hash: recorded.blockhash });
    expect(node.stub.calls.find((c) => c.method === 'getrawtransaction')?.params).toEqual([recorded.txid, true]);
    expect(await adapter.findTransaction('ab'.repeat(32))).toBeUndefined();
  });

  it('in the mempool (no blockhash), in a block off the main chain, or node trouble', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    const adapter = adapterFor(node);
    const recorded = FUNDING[1] as Tx & { blockhash: string };
    const { blockhash: _b, confirmations: _c, blocktime: _t, ...mempool } = recorded as Tx & { blockhash: string; confirmations: number; blocktime: number };
    node.extra.set('getrawtransaction', () => ({ result: mempool }));
    expect(await adapter.findTransaction(recorded.txid)).toBeUndefined();
    node.extra.set('getrawtransaction', () => ({ result: recorded }));
    node.extra.set('getblockheader', () => ({ result: { hash: recorded.blockhash, height: 49588, confirmations: -1 } }));
    expect(await adapter.findTransaction(recorded.txid)).toBeUndefined();
    node.extra.set('getrawtransaction', () => ({ status: 500, body: 'garbage' }));
    expect(await rejection(adapter.findTransaction(recorded.txid))).toMatchObject({ kind: 'http' });
  });

  it('findTransactions: one batch of getrawtransaction, one of getblockheader per distinct block; another error than -5 is thrown', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    const recorded = FUNDING[0] as Tx & { blockhash: string; confirmations: number };
    const broken = 'cd'.repeat(32);
    node.extra.set('getrawtransaction', (params) =>
      params[0] === recorded.txid
        ? { result: recorded }
        : params[0] === broken
          ? { error: { code: -8, message: 'parameter 1 must be hexadecimal' } }
          : { error: { code: -5, message: 'No such mempool or blockchain transaction. Use gettransaction for wallet transactions.' } },
    );
    node.extra.set('getblockheader', () => ({ result: { hash: recorded.blockhash, height: 49627, confirmations: recorded.confirmations } }));
    const adapter = adapterFor(node);
    const before = node.stub.calls.length;
    const location = { height: 49627, hash: recorded.blockhash };
    expect(await adapter.findTransactions([recorded.txid, 'ab'.repeat(32), recorded.txid])).toEqual([location, undefined, location]);
    const calls = node.stub.calls.slice(before);
    expect(calls.map((c) => [c.method, c.batched])).toEqual([
      ['getrawtransaction', true],
      ['getrawtransaction', true],
      ['getrawtransaction', true],
      ['getblockheader', true],
    ]);
    expect(await rejection(adapter.findTransactions([recorded.txid, broken]))).toMatchObject({ kind: 'rpc', code: -8 });
  });
});

describe('getUnspentOutputs: scantxoutset, with the outputs spent after the height added back on verbosity-3 nodes', () => {
  const BLOCK_50001 = BTC_BLOCKS[50001] as Block;
  const BLOCK_50002 = BTC_BLOCKS[50002] as Block;
  /** The address whose recorded coinbase output (0d37522b:0, block 49627) block 50001 spends. */
  const SPENDER = '18dxbN6m8zxieN8F9BchXmhbeXUdFLr8fD';
  const OLD_UNSPENT = '11'.repeat(32);

  /** Core's scantxoutset answer at the tip (50002): one old output of SPENDER still unspent, one created in 50001. */
  function scanAnswer(unspents: { txid: string; vout: number; amount: string; height: number }[], height = 50002): StubReply {
    const entries = unspents.map(
      (u) => `{"txid":"${u.txid}","vout":${u.vout},"scriptPubKey":"76a914","desc":"addr(x)#00000000","amount":${u.amount},"height":${u.height}}`,
    );
    return {
      resultText: `{"success":true,"txouts":1234,"height":${height},"bestblock":"${BLOCK_50002.hash}","unspents":[${entries.join(',')}],"total_amount":0}`,
    };
  }

  it('verbosity 3: the unspent outputs up to the height, plus the ones spent in the blocks after it (walked at verbosity 3)', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    node.extra.set('scantxoutset', () =>
      scanAnswer([
        { txid: OLD_UNSPENT, vout: 1, amount: '0.00012345', height: 40000 },
        { txid: BLOCK_50001.tx[2]?.txid as string, vout: 0, amount: '50.00000000', height: 50001 },
      ]),
    );
    const adapter = adapterFor(node);
    const outputs = await outputsOf(adapter.getUnspentOutputs(SPENDER, 50000));
    expect(node.stub.calls.find((c) => c.method === 'scantxoutset')?.params).toEqual(['start', [`addr(${SPENDER})`]]);
    expect(outputs).toEqual([
      { outpoint: `${OLD_UNSPENT}:1`, value: 12345n, height: 40000 },
      // Created at 49627, spent by block 50001 (after the height): added back.
      { outpoint: '0d37522b89f991f8433b80f709ad31862a54435cd003f25732fe405e9db93216:0', value: 5000000000n, height: 49627 },
    ]);
    expect(getblockCalls(node)).toEqual([3, 3]);
    // At 50001 the spending is before the height: only the old output, and only block 50002 is walked.
    node.stub.calls.length = 0;
    expect(await outputsOf(adapter.getUnspentOutputs(SPENDER, 50001))).toEqual([
      { outpoint: `${OLD_UNSPENT}:1`, value: 12345n, height: 40000 },
      { outpoint: `${BLOCK_50001.tx[2]?.txid}:0`, value: 5000000000n, height: 50001 },
    ]);
    expect(getblockCalls(node)).toEqual([3]);
    expect(adapter.capabilities().scanTxOutSet).toBe('supported');
  });

  it('the balance the ledger ends with is exact: opening at 50000 plus block 50001 (verbosity 3 debits inline) = the unspent set after 50001', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    node.extra.set('scantxoutset', () => scanAnswer([{ txid: OLD_UNSPENT, vout: 1, amount: '0.00012345', height: 40000 }]));
    const adapter = adapterFor(node);
    const opening = (await outputsOf(adapter.getUnspentOutputs(SPENDER, 50000))) ?? [];
    const block = await adapter.getBlock(50001);
    const moved = block.coinMovements.filter((m) => m.address === SPENDER).reduce((s, m) => s + m.delta, 0n);
    const after = opening.reduce((s, u) => s + u.value, 0n) + moved;
    expect(after).toBe(12345n);
  });

  it('verbosity 2: no add-back (the ledger cannot resolve those spendings either), the unspent outputs up to the height', async () => {
    const node = await startNode(CORE_21, btcBlocks());
    node.extra.set('scantxoutset', () => scanAnswer([{ txid: OLD_UNSPENT, vout: 1, amount: '0.00012345', height: 40000 }]));
    const adapter = adapterFor(node);
    await adapter.getBlock(50001); // the node's verbosity is known: 2
    node.stub.calls.length = 0;
    expect(await outputsOf(adapter.getUnspentOutputs(SPENDER, 50000))).toEqual([{ outpoint: `${OLD_UNSPENT}:1`, value: 12345n, height: 40000 }]);
    expect(getblockCalls(node)).toEqual([]);
  });

  it('verbosity unknown yet on a verbosity-2 node: the walk finds out and adds nothing back', async () => {
    const node = await startNode(CORE_21, btcBlocks());
    node.extra.set('scantxoutset', () => scanAnswer([]));
    expect(await outputsOf(adapterFor(node).getUnspentOutputs(SPENDER, 50000))).toEqual([]);
  });

  it('a node without scantxoutset (-32601: zcashd, Dogecoin 1.14) cannot tell: undefined, asked once', async () => {
    const node = await startNode({ maxVerbosity: 2, badVerbosity: ZCASH_OUT_OF_RANGE }, btcBlocks());
    const log = logger();
    const adapter = adapterFor(node, { blockchain: 'zcash', logger: log });
    expect(await outputsOf(adapter.getUnspentOutputs('t1Hsc1LR8yKnbbe3twRp88p6vFfC5t7DLbs', 50000))).toBeUndefined();
    expect(await outputsOf(adapter.getUnspentOutputs('t1Hsc1LR8yKnbbe3twRp88p6vFfC5t7DLbs', 50000))).toBeUndefined();
    expect(node.stub.count('scantxoutset')).toBe(1);
    expect(adapter.capabilities().scanTxOutSet).toBe('unsupported');
    expect(log.info).toHaveBeenCalledTimes(1);
  });

  it(`more than ${MAX_ADD_BACK_BLOCKS} blocks between the height and the scan: undefined and a warning`, async () => {
    const node = await startNode(CORE_25, btcBlocks());
    node.extra.set('scantxoutset', () => scanAnswer([], 50002 + MAX_ADD_BACK_BLOCKS));
    const log = logger();
    expect(await outputsOf(adapterFor(node, { logger: log }).getUnspentOutputs(SPENDER, 50001))).toBeUndefined();
    expect(log.warn).toHaveBeenCalledTimes(1);
    expect(getblockCalls(node)).toEqual([]);
  });

  it('scans run one at a time; "Scan already in progress" (another client) is waited for', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    let running = 0;
    let most = 0;
    let refusals = 1;
    const busy: StubReply = { error: { code: -8, message: 'Scan already in progress, use action "abort" or "status"' } };
    const original = node.stub.handle;
    node.stub.handle = async (method, params) => {
      if (method !== 'scantxoutset') return (original as UtxoRpcStub['handle'])(method, params);
      if (refusals-- > 0) return busy;
      running++;
      most = Math.max(most, running);
      // The scan takes a while: a second scan sent meanwhile would overlap this one.
      await new Promise((r) => setTimeout(r, 50));
      running--;
      return scanAnswer([], 50001);
    };
    const adapter = adapterFor(node);
    const [a, b] = await Promise.all([
      outputsOf(adapter.getUnspentOutputs(SPENDER, 50001)),
      outputsOf(adapter.getUnspentOutputs('1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ', 50001)),
    ]);
    expect([a, b]).toEqual([[], []]);
    // Asked in the same turn: one scan for both addresses (refused once as busy, then run).
    const scans = node.stub.calls.filter((c) => c.method === 'scantxoutset').map((c) => c.params[1]);
    const both = [`addr(${SPENDER})`, 'addr(1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ)'];
    expect(scans).toEqual([both, both]);
    // A request made while a scan runs waits for it: scans never overlap.
    const third = outputsOf(adapter.getUnspentOutputs(SPENDER, 50001));
    await new Promise((r) => setTimeout(r, 10));
    const fourth = outputsOf(adapter.getUnspentOutputs('1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ', 50001));
    expect(await Promise.all([third, fourth])).toEqual([[], []]);
    expect(node.stub.count('scantxoutset')).toBe(4);
    expect(most).toBe(1);
  });

  it('several addresses in one scan: outputs told apart by the addr() descriptor the node matched; without it, one scan per address', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    const OTHER = '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ';
    const unspent = (txid: string, desc: string | undefined, amount: string) =>
      `{"txid":"${txid}","vout":0,"scriptPubKey":"76a914",${desc === undefined ? '' : `"desc":"${desc}",`}"amount":${amount},"height":40000}`;
    let described = true;
    node.extra.set('scantxoutset', (params) => {
      const objects = params[1] as string[];
      const entries = objects.flatMap((o) => {
        const address = /^addr\((.+)\)$/.exec(o)?.[1] as string;
        const mine = address === SPENDER ? [OLD_UNSPENT, '0.5'] : ['ab'.repeat(32), '0.25'];
        return [unspent(mine[0] as string, described ? `addr(${address})#abcdefgh` : undefined, mine[1] as string)];
      });
      return { resultText: `{"success":true,"height":50002,"bestblock":"${BLOCK_50002.hash}","unspents":[${entries.join(',')}],"total_amount":0}` };
    });
    const adapter = adapterFor(node);
    const ask = () => Promise.all([outputsOf(adapter.getUnspentOutputs(SPENDER, 50002)), outputsOf(adapter.getUnspentOutputs(OTHER, 50002))]);
    const expected = [
      [{ outpoint: `${OLD_UNSPENT}:0`, value: 50_000_000n, height: 40000 }],
      [{ outpoint: `${'ab'.repeat(32)}:0`, value: 25_000_000n, height: 40000 }],
    ];
    expect(await ask()).toEqual(expected);
    expect(node.stub.count('scantxoutset')).toBe(1);
    described = false; // an older node: no desc, so the batch is scanned again address by address
    expect(await ask()).toEqual(expected);
    expect(node.stub.count('scantxoutset')).toBe(1 + 3);
  });

  it('the tip changed after the scan (best block differs), or the node is below the height: thrown', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    const adapter = adapterFor(node);
    node.extra.set('scantxoutset', () => ({ result: { success: true, height: 50002, bestblock: 'cd'.repeat(32), unspents: [] } }));
    expect((await rejection(adapter.getUnspentOutputs(SPENDER, 50000))).message).toMatch(/changed after scantxoutset/);
    node.extra.set('scantxoutset', () => ({ result: { success: true, height: 49999, bestblock: 'cd'.repeat(32), unspents: [] } }));
    expect(await rejection(adapter.getUnspentOutputs(SPENDER, 50000))).toBeInstanceOf(UtxoAdapterError);
  });

  it('Core < 0.20 (no height in the answer): the tip read before and after the scan', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    node.extra.set('scantxoutset', () => ({ result: { success: true, unspents: [{ txid: OLD_UNSPENT, vout: 0, amount: '1', height: 50002 }] } }));
    const adapter = adapterFor(node);
    expect(await outputsOf(adapter.getUnspentOutputs(SPENDER, 50002))).toEqual([{ outpoint: `${OLD_UNSPENT}:0`, value: 100000000n, height: 50002 }]);
    expect(node.stub.count('getblockcount')).toBe(2);
  });

  it('bitcoin-cash: the address goes to the node in cashaddr form with its prefix, whatever spelling was given', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    node.extra.set('scantxoutset', () => scanAnswer([], 50002));
    const adapter = adapterFor(node, { blockchain: 'bitcoin-cash' });
    await adapter.getUnspentOutputs('qzkddwa6hgh03skr4qsrygk7e087zjydxgqkpjnsw7', 50002);
    expect(node.stub.calls.find((c) => c.method === 'scantxoutset')?.params[1]).toEqual(['addr(bitcoincash:qzkddwa6hgh03skr4qsrygk7e087zjydxgqkpjnsw7)']);
  });
});

describe('authentication through the adapter', () => {
  it('auth user/password reaches the node; refused credentials are a clear thrown error', async () => {
    const node = await startNode(CORE_25, btcBlocks(), 'herald:pw');
    expect(await adapterFor(node, { auth: { user: 'herald', password: 'pw' } }).getHead()).toBe(50002);
    const e = await rejection(adapterFor(node, { auth: { user: 'herald', password: 'nope' } }).getHead());
    expect(e).toMatchObject({ kind: 'auth' });
    expect(e.message).toMatch(/rpcUser\/rpcPassword or rpcCookieFile/);
    // Logged and thrown URLs never carry credentials.
    const withUrlCredentials = adapterFor(node, { rpcUrl: node.stub.url.replace('http://', 'http://herald:pw@') });
    expect(await withUrlCredentials.getHead()).toBe(50002);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Omni through the adapter
// ---------------------------------------------------------------------------------------------------------------

const OMNI_SEND = fixture<Record<string, unknown>>('omni/mainnet/issues/omniexplorer_tx_fc0368b2_simple_send_usdt.json');
const OMNI_CREATE = fixture<Record<string, unknown>>('omni/mainnet/issues/omni_gettransaction_5ed3694e_create_property_31_tetherus.json');

/**
 * Omni Core's answers for block 50001: the recorded USDT Simple Send and property creation placed on two of
 * the block's transactions, an invalid send, and a Send All in Omni Core's format (rpctxobject.cpp).
 */
function omniFor(block: Block) {
  const [coinbase, tx1, tx2] = block.tx.map((t) => t.txid) as [string, string, string];
  const at = { block: block.height, blockhash: block.hash, confirmations: 1 };
  const answers: Record<string, Record<string, unknown>> = {
    [tx1]: { ...OMNI_SEND, ...at, txid: tx1 },
    [tx2]: {
      txid: tx2,
      fee: '0.00010000',
      sendingaddress: '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ',
      referenceaddress: '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7',
      ismine: false,
      version: 0,
      type_int: 4,
      type: 'Send All',
      ecosystem: 'main',
      subsends: [
        { propertyid: 31, divisible: true, amount: '0.50000000' },
        { propertyid: 3, divisible: false, amount: '12' },
      ],
      valid: true,
      ...at,
      positioninblock: 2,
    },
    [coinbase]: { ...OMNI_CREATE, ...at, txid: coinbase },
  };
  const invalid = { ...OMNI_SEND, ...at, txid: 'ee'.repeat(32), valid: false, invalidreason: 'Sender has insufficient balance' };
  return { list: [tx1, coinbase, 'ee'.repeat(32), tx2], answers: { ...answers, [invalid.txid]: invalid } };
}

async function omniNode(block: Block) {
  const node = await startNode(CORE_25, btcBlocks());
  const omni = omniFor(block);
  node.extra.set('omni_getinfo', () => ({ result: { omnicoreversion: '0.12.0', block: node.tip } }));
  node.extra.set('omni_listblocktransactions', (params) => ({ result: params[0] === block.height ? omni.list : [] }));
  node.extra.set('omni_gettransaction', (params) => {
    const tx = omni.answers[params[0] as string];
    return tx ? { result: tx } : { error: { code: -5, message: 'Not a Master Protocol transaction' } };
  });
  node.extra.set('omni_getproperty', (params) =>
    params[0] === 31
      ? { result: { propertyid: 31, name: 'TetherUS', divisible: true, issuer: '32TLn1WLcu8LtfvweLzYUYU6ubc2YV9eZs', creationtxid: OMNI_CREATE.txid } }
      : params[0] === 3
        ? { result: { ...fixture<object>('omni/testnet/issues/omni_getproperty_31_testnet3.json'), propertyid: 3 } }
        : { error: { code: -8, message: 'Property identifier does not exist' } },
  );
  return node;
}

describe('Omni transfers in bitcoin blocks', () => {
  const block = BTC_BLOCKS[50001] as Block;
  const [, tx1, tx2] = block.tx.map((t) => t.txid) as [string, string, string];

  it('valid Simple Send and Send All transfers are appended in Omni order; invalid ones and property creations give none', async () => {
    const node = await omniNode(block);
    const adapter = adapterFor(node);
    const b = await adapter.getBlock(50001);
    expect(b.tokenTransfers).toEqual([
      {
        transactionId: tx1,
        logIndex: 0,
        tokenType: 'OMNI',
        contract: '31',
        from: '1Xe46GzxiHosTqEimAd8qHSWvod1dQ9ek',
        to: '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7',
        amount: 20252000000n,
      },
      {
        transactionId: tx2,
        logIndex: 3000,
        tokenType: 'OMNI',
        contract: '31',
        from: '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ',
        to: '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7',
        amount: 50000000n,
      },
      {
        transactionId: tx2,
        logIndex: 3001,
        tokenType: 'OMNI',
        contract: '3',
        from: '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ',
        to: '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7',
        amount: 12n,
      },
    ]);
    // The coin side is untouched.
    expect(b.coinMovements).toEqual(normalizeUtxoBlock({ block: withPrevouts(block) }, BTC_MAIN).coinMovements);
  });

  it('metadata: omni_getproperty once per property, the transfer transaction type, divisibility; the callback item renders it', async () => {
    const node = await omniNode(block);
    let db: Db | undefined;
    try {
      db = createDb(await createTestDatabase(), { poolSize: 2 });
      await migrate(db);
      const adapter = adapterFor(node, { tokenMetadataCache: tokenMetadataCache(db) });
      const b = await adapter.getBlock(50001);
      const [send, sendAll31, sendAll3] = b.tokenTransfers as [TokenTransfer, TokenTransfer, TokenTransfer];
      const meta = await adapter.tokenMetadata?.(send);
      expect(meta).toEqual({ name: 'TetherUS', symbol: '', decimals: 8, createdByTransactionId: OMNI_CREATE.txid, transactionType: 'Simple Send' });
      expect(await adapter.tokenMetadata?.(sendAll31)).toMatchObject({ name: 'TetherUS', transactionType: 'Send All' });
      expect(await adapter.tokenMetadata?.(sendAll3)).toEqual({
        name: 'tokenmagic.com',
        symbol: '',
        decimals: 0,
        createdByTransactionId: '9588ab12ef040767b1e9fe4181e294409da6cab9792f89ccc55bc621b47e2563',
        transactionType: 'Send All',
      });
      expect(node.stub.count('omni_getproperty')).toBe(2);
      const item = callbackItem(
        { eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', transfer: send, address: send.to, direction: 'incoming' } as never,
        b,
        { blockchain: 'bitcoin', network: 'mainnet' },
        meta,
      );
      expect(item.token).toEqual({
        name: 'TetherUS',
        propertyId: '31',
        transactionType: 'Simple Send',
        createdByTransactionId: OMNI_CREATE.txid,
        amount: '202.52',
      });
      const rows = await db.query<{ contract: string; name: string; decimals: number; token_type: string }>(
        'test',
        'SELECT contract, name, decimals, token_type, created_by_transaction_id FROM token_metadata WHERE blockchain = $1 ORDER BY contract',
        ['bitcoin'],
      );
      expect(rows).toEqual([
        {
          contract: '3',
          name: 'tokenmagic.com',
          decimals: 0,
          token_type: 'OMNI',
          created_by_transaction_id: '9588ab12ef040767b1e9fe4181e294409da6cab9792f89ccc55bc621b47e2563',
        },
        { contract: '31', name: 'TetherUS', decimals: 8, token_type: 'OMNI', created_by_transaction_id: OMNI_CREATE.txid },
      ]);
      // A restart with the database: the property comes from token_metadata, not from the node.
      const cached = adapterFor(node, { tokenMetadataCache: tokenMetadataCache(db) });
      node.stub.calls.length = 0;
      expect(await cached.tokenMetadata?.(sendAll3)).toEqual({
        name: 'tokenmagic.com',
        symbol: '',
        decimals: 0,
        createdByTransactionId: '9588ab12ef040767b1e9fe4181e294409da6cab9792f89ccc55bc621b47e2563',
        transactionType: 'Send All',
      });
      expect(node.stub.calls.map((c) => c.method)).toEqual(['omni_gettransaction']);
      // A new adapter without the database: property and transaction type are asked from the node.
      const restarted = adapterFor(node);
      node.stub.calls.length = 0;
      expect(await restarted.tokenMetadata?.(sendAll3)).toMatchObject({ transactionType: 'Send All', decimals: 0 });
      expect(node.stub.calls.map((c) => c.method).sort()).toEqual(['omni_getproperty', 'omni_gettransaction']);
    } finally {
      await db?.close();
    }
  });

  it('a plain bitcoind (omni_getinfo -32601): no transfers, said once at info, not asked again', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    const log = logger();
    const adapter = adapterFor(node, { logger: log });
    await adapter.getBlock(50000);
    await adapter.getBlock(50001);
    expect(node.stub.count('omni_getinfo')).toBe(1);
    expect(node.stub.count('omni_listblocktransactions')).toBe(0);
    expect(adapter.capabilities().omni).toBe('unsupported');
    expect(log.info.mock.calls.filter((c) => /Omni/.test(String(c[1])))).toHaveLength(1);
    expect(await adapter.getTokenBalance?.('31', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 50001)).toBeUndefined();
  });

  it('other chains never ask Omni and have no token methods', async () => {
    const node = await startNode(CORE_25, btcBlocks());
    const adapter = adapterFor(node, { blockchain: 'litecoin' as UtxoBlockchain });
    await adapter.getBlock(50001);
    expect(node.stub.calls.some((c) => c.method.startsWith('omni_'))).toBe(false);
    expect(adapter.tokenMetadata).toBeUndefined();
    expect(adapter.getTokenBalance).toBeUndefined();
    expect(adapter.capabilities().omni).toBe('unsupported');
  });

  it('Omni Core placing a transaction in another block (reorganised between calls), or omni_getinfo failing: thrown', async () => {
    const node = await omniNode(block);
    const adapter = adapterFor(node);
    const original = node.extra.get('omni_gettransaction') as (p: unknown[]) => StubReply;
    node.extra.set('omni_gettransaction', (params) => {
      const reply = original(params) as { result: Record<string, unknown> };
      return { result: { ...reply.result, blockhash: 'ab'.repeat(32) } };
    });
    expect((await rejection(adapter.getBlock(50001))).message).toMatch(/reorganised/);
    node.extra.set('omni_gettransaction', original);
    const fresh = adapterFor(node);
    node.extra.set('omni_getinfo', () => ({ status: 500, body: 'oops' }));
    expect(await rejection(fresh.getBlock(50001))).toMatchObject({ kind: 'http' });
    expect(fresh.capabilities().omni).toBe('unknown');
  });

  it('getTokenBalance: omni_getbalance (available + reserved) minus the transfers after the height', async () => {
    const node = await omniNode(block);
    node.extra.set('omni_getbalance', (params) =>
      params[0] === '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7' && params[1] === 31
        ? { resultText: '{"balance":"300.00000000","reserved":"1.50000000","frozen":"0.00000000"}' }
        : { resultText: '{"balance":"0.00000000","reserved":"0.00000000","frozen":"0.00000000"}' },
    );
    const adapter = adapterFor(node);
    // Tip 50002; block 50001 brought 202.52 + 0.5 of property 31 to the address.
    expect(await adapter.getTokenBalance?.('31', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 50000)).toBe(30150000000n - 20302000000n);
    expect(await adapter.getTokenBalance?.('31', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 50001)).toBe(30150000000n);
    expect(node.stub.calls.filter((c) => c.method === 'omni_getbalance').map((c) => c.params)).toEqual([
      ['1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 31],
      ['1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 31],
    ]);
    // Indivisible property 3: whole units.
    node.extra.set('omni_getbalance', () => ({ resultText: '{"balance":"20","reserved":"0","frozen":"0"}' }));
    expect(await adapter.getTokenBalance?.('3', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 50000)).toBe(8n);
    expect(await adapter.getTokenBalance?.('999', '1PXC1aiZGXy4j81wt16g2rrUAsYVGUbuA7', 50000)).toBeUndefined();
  });
});

describe('pending Omni transfers: the mempool reader on a fake Omni Core', () => {
  const TOKEN = 100_000_000n;

  it("omni_listpendingtransactions once per batch read: the batch's pending Simple Sends; Send All, unknown properties, other batches and mined ones give none", async () => {
    const node = await startFakeUtxoNode('omni');
    try {
      const adapter = createUtxoAdapter({ blockchain: 'bitcoin', network: 'testnet', rpcUrl: node.urlWithCredentials });
      adapters.push(adapter);
      const mempool = adapter.mempool;
      const issuer = node.newAddress();
      node.send(issuer, 10_000_000n);
      node.mine(1);
      const { propertyId, txid: created } = node.createProperty(issuer, { name: 'Pending Dollar', amount: 1_000n * TOKEN });
      node.mine(1);
      const holder = node.newAddress();
      const send = node.omniSend(issuer, holder, propertyId, TOKEN + TOKEN / 2n);
      const unknown = node.omniSend(issuer, holder, 999, 1n);
      const all = node.omniSendAll(issuer, holder);
      const ids = await mempool.newTransactionIds();
      expect([...ids].sort()).toEqual([send, unknown, all].sort());

      const read = await mempool.readPending(ids);
      expect(read.tokenTransfers).toEqual([
        { transactionId: send, logIndex: 0, tokenType: 'OMNI', contract: String(propertyId), from: issuer, to: holder, amount: TOKEN + TOKEN / 2n },
      ]);
      expect(await adapter.tokenMetadata?.(read.tokenTransfers[0] as TokenTransfer)).toEqual({
        name: 'Pending Dollar',
        symbol: '',
        decimals: 8,
        createdByTransactionId: created,
        transactionType: 'Simple Send',
      });
      // The coin side is read as before (the Omni transactions' bitcoins).
      expect(read.transactionIds.sort()).toEqual([send, unknown, all].sort());
      // Another batch: the send is not its transaction.
      expect((await mempool.readPending([unknown, all])).tokenTransfers).toEqual([]);
      expect(node.calls.get('omni_listpendingtransactions')).toBe(2);
      // Mined since listed: not pending any more, and Omni Core is not asked.
      node.mine(1);
      expect(await mempool.readPending(ids)).toMatchObject({ transactionIds: [], tokenTransfers: [] });
      expect(node.calls.get('omni_listpendingtransactions')).toBe(2);
    } finally {
      await node.close();
    }
  });

  it('a plain bitcoind (no omni_* methods): pending coins as before, no token transfers, Omni asked once', async () => {
    const node = await startFakeUtxoNode('bitcoin');
    try {
      const log = logger();
      const adapter = createUtxoAdapter({ blockchain: 'bitcoin', network: 'testnet', rpcUrl: node.urlWithCredentials, logger: log });
      adapters.push(adapter);
      const payee = node.newAddress();
      const txid = node.send(payee, 5_000n);
      const ids = await adapter.mempool.newTransactionIds();
      expect(ids).toEqual([txid]);
      const read = await adapter.mempool.readPending(ids);
      expect(read.tokenTransfers).toEqual([]);
      expect(read.coinMovements).toContainEqual({ transactionId: txid, address: payee, delta: 5_000n });
      await adapter.mempool.readPending(ids);
      expect(adapter.capabilities().omni).toBe('unsupported');
      expect(log.info.mock.calls.filter((c) => /Omni/.test(String(c[1])))).toHaveLength(1);
    } finally {
      await node.close();
    }
  });
});

/**
 * The EVM adapter against fake JSON-RPC nodes over real HTTP (node:http) and WebSocket (ws), serving the
 * recorded mainnet responses of test/fixtures/evm/ethereum-mainnet in the JSON-RPC envelope.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocketServer } from 'ws';
import { openMigratedTestDatabase } from '../../../test/harness.ts';
import { ETHEREUM_BLOCK_483920_HEADER } from '../../../test/support/recorded-blocks.ts';
import { mapLimit } from '../../lib/concurrency.ts';
import type { Db } from '../../store/db.ts';
import { tokenMetadataCache } from '../../store/token-metadata.ts';
import { decodeDecimals, decodeText } from '../token-text.ts';
import type { NormalizedBlock, TokenTransfer } from '../types.ts';
import { createEvmAdapter } from './adapter.ts';
import { EvmAdapterError } from './node.ts';
import { EvmRpcError } from './rpc.ts';
import type { CallFrame, CallTraceEntry, ParityTrace, RpcBlock, RpcReceipt, RpcTransaction } from './rpc-types.ts';

// ---------------------------------------------------------------------------------------------------------------
// Recorded data
// ---------------------------------------------------------------------------------------------------------------

const ETL = 'ethereum-mainnet/ethereum-etl/';

/** A recorded file without its JSON-RPC envelope; a missing file throws (the test fails, never skips). */
function fixture<T>(rel: string): T {
  const json = JSON.parse(readFileSync(new URL(`../../../test/fixtures/evm/${rel}`, import.meta.url), 'utf8')) as unknown;
  if (json !== null && typeof json === 'object' && !Array.isArray(json) && 'result' in json) return (json as { result: T }).result;
  return json as T;
}

/** What a node knows about one block: the answers to the block-level methods. */
interface RecordedBlock {
  block: RpcBlock;
  receipts: RpcReceipt[];
  traces?: CallTraceEntry[];
}

/** Block 483920 (0x76250) and its 4 recorded receipts. No trace was recorded: the callTracer answer is built from the transactions (top frames, no inner calls, as these plain and token transfers have). */
function block483920(): RecordedBlock {
  const block = fixture<RpcBlock>(`${ETL}test_export_blocks_job__block_with_logs/eth_getBlockByNumber_0x76250_true.json`);
  const txs = block.transactions as RpcTransaction[];
  const receipts = txs.map((tx) => fixture<RpcReceipt>(`${ETL}test_export_receipts_job__receipts_with_logs/eth_getTransactionReceipt_${tx.hash}.json`));
  const traces = txs.map((tx) => ({ txHash: tx.hash, result: { type: 'CALL', from: tx.from, to: tx.to, value: tx.value, input: tx.input } }));
  return { block, receipts, traces };
}

/** The fields of a recorded trace_block entry these fixtures read, as recorded (rpc-types.ts has what a node may send). */
type RecordedParityTrace = {
  type: string;
  blockHash: string;
  blockNumber: number;
  transactionHash: string | null;
  traceAddress: number[];
  action: { from?: string; to?: string; value?: string; address?: string; refundAddress?: string; balance?: string };
  result: { gasUsed?: string } | null;
};

/**
 * Blocks 1000000 and 1011973: no eth_getBlockByNumber was recorded, but Parity's trace_block of the same
 * block gives its hash, number and each transaction's hash, sender, recipient and value; the recorded geth
 * callTracer answer goes with it. Parent hash and timestamp are not recorded (placeholders); receipts are
 * pre-Byzantium (no status), gasUsed from the trace.
 */
function blockFromParity(name: string, hexHeight: string, traces: CallTraceEntry[]): RecordedBlock {
  const parity = fixture<RecordedParityTrace[]>(`${ETL}test_export_traces_job__${name}/trace_block_${hexHeight}.json`);
  const tops = parity.filter((t) => t.transactionHash !== null && t.traceAddress.length === 0);
  const hash = tops[0]?.blockHash as string;
  const block: RpcBlock = {
    number: hexHeight,
    hash,
    parentHash: `0x${'00'.repeat(31)}01`,
    timestamp: '0x55ba467c',
    transactions: tops.map((t) => ({ hash: t.transactionHash, from: t.action.from, to: t.action.to, value: t.action.value, gasPrice: '0x1' })),
  };
  const receipts = tops.map((t) => ({ transactionHash: t.transactionHash, blockHash: hash, gasUsed: t.result?.gasUsed ?? '0x0', logs: [] }));
  return { block, receipts, traces };
}

function block1000000(): RecordedBlock {
  const traces = fixture<CallTraceEntry[]>(`${ETL}test_extract_geth_traces_job__block_with_subtraces/debug_traceBlockByNumber_0xf4240_tracer_calltracer.json`);
  return blockFromParity('block_with_subtraces', '0xf4240', traces);
}

/** Old geth printed the SELFDESTRUCT frame bare; it is completed from Parity's suicide trace, as modern geth prints it. */
function block1011973(): RecordedBlock {
  const traces = fixture<CallTraceEntry[]>(`${ETL}test_extract_geth_traces_job__block_with_suicide/debug_traceBlockByNumber_0xf7105_tracer_calltracer.json`);
  const parity = fixture<RecordedParityTrace[]>(`${ETL}test_export_traces_job__block_with_suicide/trace_block_0xf7105.json`);
  const suicide = parity.find((t) => t.type === 'suicide')?.action;
  const top = traces[0]?.result as CallFrame;
  const completed = [{ result: { ...top, calls: [{ type: 'SELFDESTRUCT', from: suicide?.address, to: suicide?.refundAddress, value: suicide?.balance }] } }];
  return blockFromParity('block_with_suicide', '0xf7105', completed);
}

const BLOCKS = [block483920(), block1000000(), block1011973()];

// ---------------------------------------------------------------------------------------------------------------
// Fake node
// ---------------------------------------------------------------------------------------------------------------

type Reply =
  | { result: unknown }
  | { error: { code: number; message: string; data?: unknown } }
  | { status: number; body: string }
  | { hangMs: number; reply: Reply };

interface FakeNode {
  url: string;
  calls: { method: string; params: unknown[] }[];
  count(method: string): number;
  /** Replaces the answering function (a node that recovers, or starts failing). */
  handle: (method: string, params: unknown[]) => Reply;
  close(): Promise<void>;
}

const servers: FakeNode[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function fakeNode(handle: FakeNode['handle']): Promise<FakeNode> {
  const node: FakeNode = {
    url: '',
    calls: [],
    count: (method) => node.calls.filter((c) => c.method === method).length,
    handle,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const send = async (res: ServerResponse, id: unknown, reply: Reply): Promise<void> => {
    if ('hangMs' in reply) {
      await new Promise((r) => setTimeout(r, reply.hangMs));
      return send(res, id, reply.reply);
    }
    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'text/plain' }).end(reply.body);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, ...reply }));
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const { id, method, params } = JSON.parse(body) as { id: unknown; method: string; params: unknown[] };
      node.calls.push({ method, params });
      void send(res, id, node.handle(method, params ?? [])).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  node.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const close = node.close;
  // Hanging requests and keep-alive sockets must not keep the server open after the test.
  node.close = () => {
    server.closeAllConnections();
    return close();
  };
  servers.push(node);
  return node;
}

const NOT_FOUND = (method: string): Reply => ({ error: { code: -32601, message: `the method ${method} does not exist/is not available` } });

/** A node serving `blocks`: block-level methods when `blockMethods`, per-transaction methods always. */
function recordedNode(blocks: RecordedBlock[], opts: { blockMethods: boolean; traces?: boolean; parity?: Map<string, unknown[]> }) {
  const byHeight = new Map(blocks.map((b) => [b.block.number as string, b]));
  const receipts = new Map(blocks.flatMap((b) => b.receipts.map((r) => [r.transactionHash as string, r])));
  const traces = new Map(
    blocks.flatMap((b) => (b.traces ?? []).map((t, i) => [(t.txHash ?? (b.block.transactions as RpcTransaction[])[i]?.hash) as string, t.result])),
  );
  return (method: string, params: unknown[]): Reply => {
    const b = byHeight.get(params[0] as string);
    const tracing = opts.traces !== false;
    switch (method) {
      case 'eth_getBlockByNumber':
        return { result: b?.block ?? null };
      case 'eth_getBlockReceipts':
        return opts.blockMethods ? { result: b?.receipts ?? null } : NOT_FOUND(method);
      case 'debug_traceBlockByNumber':
        return opts.blockMethods && tracing ? { result: b?.traces ?? [] } : NOT_FOUND(method);
      case 'trace_block':
        return opts.parity ? { result: opts.parity.get(params[0] as string) ?? null } : NOT_FOUND(method);
      case 'eth_getTransactionReceipt':
        return { result: receipts.get(params[0] as string) ?? null };
      case 'debug_traceTransaction':
        return tracing ? { result: traces.get(params[0] as string) } : NOT_FOUND(method);
      default:
        return NOT_FOUND(method);
    }
  };
}

const silentLogger = () => ({ warn: vi.fn(), info: vi.fn() });

// ---------------------------------------------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------------------------------------------

describe('getBlock, block-level methods (eth_getBlockReceipts, debug_traceBlockByNumber) on recorded mainnet blocks', () => {
  let node: FakeNode;
  const got: NormalizedBlock[] = [];
  let adapter: ReturnType<typeof createEvmAdapter>;

  beforeAll(async () => {
    node = await fakeNode(recordedNode(BLOCKS, { blockMethods: true }));
    adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url, logger: silentLogger() });
    for (const h of [483920, 1000000, 1011973]) got.push(await adapter.getBlock(h));
  });

  it('483920: header, transaction ids, ERC-20 transfers as recorded (eth_getFilterLogs), no internal transfers', () => {
    const n = got[0] as NormalizedBlock;
    expect(n).toMatchObject(ETHEREUM_BLOCK_483920_HEADER);
    expect(n.tokenTransfers.map((t) => [t.transactionId.slice(0, 10), t.logIndex, t.tokenType, t.from, t.to, t.amount])).toEqual([
      ['0x04cbcb23', 0, 'ERC-20', '0x1b63142628311395ceafeea5667e7c9026c862ca', '0xac4df82fe37ea2187bc8c011a23d743b4f39019a', 100000n],
      ['0xcea6f897', 1, 'ERC-20', '0x9b22a80d5c7b3374a05b446081f97d0a34079e7f', '0x66f183060253cfbe45beff1e6e7ebbe318c81e56', 200000n],
    ]);
    expect(n.tokenTransfers[0]?.contract).toBe('0xf4eced2f682ce333f96f2d8966c613ded8fc95dd');
    expect(n.internalTransfers).toEqual([]);
    // The fee of the first transaction: gasUsed 0xc6a5 × effectiveGasPrice 0xba43b7400 (recorded receipt).
    expect(n.coinMovements[0]).toEqual({
      transactionId: n.transactionIds[0],
      address: '0x1b63142628311395ceafeea5667e7c9026c862ca',
      delta: -(0xc6a5n * 0xba43b7400n),
    });
  });

  it('1000000: recorded old-geth traces attributed by position; the CALLCODE frame moves no value', () => {
    const n = got[1] as NormalizedBlock;
    expect(n.hash).toBe('0x8e38b4dbf6b11fcc3b9dee84fb7986e29ca0a02cecd8977c161ff7333329681e');
    expect(n.transactionIds).toEqual([
      '0xea1093d492a1dcb1bef708f771a99a96ff05dcab81ca76c31940300177fcf49f',
      '0xe9e91f1ee4b56c0df2e9f06c2b8c27c6076195a88a7b8537ba8313d80e6f124e',
    ]);
    expect(n.internalTransfers).toEqual([]);
  });

  it('1011973: the SELFDESTRUCT is internal transfer call_0 (Parity traceAddress [0])', () => {
    const n = got[2] as NormalizedBlock;
    expect(n.hash).toBe('0x3bedf784f81ff55e3a8c04f8b3b3a5e7421b2f5ba139d8e5696e4622bb37467b');
    expect(n.internalTransfers).toEqual([
      {
        parentTransactionId: '0x91acb43c5f141c393a189e091c190c9ffb20e4e8a502e4cc3087be9587bdbc89',
        operationId: 'call_0',
        from: '0x474faa5018639791952fae334e2911700ac7fe9b',
        to: '0x83973747eec131bf9a08ac64fb1a518e891bdf4b',
        amount: 0xb1a2bc2ec50000n,
      },
    ]);
  });

  it('one call per method per block; capabilities detected', () => {
    for (const m of ['eth_getBlockByNumber', 'eth_getBlockReceipts', 'debug_traceBlockByNumber']) expect(node.count(m)).toBe(3);
    expect(node.count('eth_getTransactionReceipt') + node.count('debug_traceTransaction')).toBe(0);
    expect(node.calls.find((c) => c.method === 'eth_getBlockByNumber')?.params).toEqual(['0x76250', true]);
    expect(node.calls.find((c) => c.method === 'debug_traceBlockByNumber')?.params).toEqual(['0x76250', { tracer: 'callTracer' }]);
    expect(adapter.capabilities()).toEqual({
      blockReceipts: 'supported',
      parityBlockTraces: 'unsupported',
      blockTraces: 'supported',
      transactionTraces: 'unknown',
      internalTransfers: 'block-traces',
      headWatching: 'none',
    });
    expect(adapter.watchHeads).toBeUndefined();
  });
});

describe("getBlock, Parity's trace_block (Erigon, Nethermind, reth, Anvil) before debug_traceBlockByNumber", () => {
  it('the same blocks as from the callTracer, internal transfers and operationIds included; debug_traceBlockByNumber never asked', async () => {
    // Recorded trace_block answers of 1000000 (a CALLCODE frame with value) and 1011973 (a suicide); 483920 has
    // none recorded: its top frames, built from its transactions as its callTracer answer is.
    const txs = block483920().block.transactions as RpcTransaction[];
    const parity = new Map<string, unknown[]>([
      [
        '0x76250',
        txs.map((tx) => ({
          type: 'call',
          transactionHash: tx.hash,
          traceAddress: [],
          action: { callType: 'call', from: tx.from, to: tx.to, value: tx.value },
        })),
      ],
      ['0xf4240', fixture<ParityTrace[]>(`${ETL}test_export_traces_job__block_with_subtraces/trace_block_0xf4240.json`)],
      ['0xf7105', fixture<ParityTrace[]>(`${ETL}test_export_traces_job__block_with_suicide/trace_block_0xf7105.json`)],
    ]);
    const callTracer = await fakeNode(recordedNode(BLOCKS, { blockMethods: true }));
    const parityNode = await fakeNode(recordedNode(BLOCKS, { blockMethods: true, parity }));
    const a = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: callTracer.url });
    const b = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: parityNode.url });
    const fromParity: NormalizedBlock[] = [];
    for (const h of [483920, 1000000, 1011973]) {
      const block = await b.getBlock(h);
      expect(block).toEqual(await a.getBlock(h));
      fromParity.push(block);
    }
    expect(fromParity[2]?.internalTransfers.map((t) => t.operationId)).toEqual(['call_0']);
    expect(parityNode.count('trace_block')).toBe(3);
    expect(parityNode.count('debug_traceBlockByNumber') + parityNode.count('debug_traceTransaction')).toBe(0);
    expect(b.capabilities()).toMatchObject({ parityBlockTraces: 'supported', blockTraces: 'unknown', internalTransfers: 'block-traces' });
  });

  it('a trace_block answer of null (the node has no traces of the block) is thrown, for the follower to fetch again', async () => {
    const node = await fakeNode(recordedNode(BLOCKS, { blockMethods: true, parity: new Map() }));
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
    await expect(adapter.getBlock(1011973)).rejects.toBeInstanceOf(EvmAdapterError);
    expect(node.count('debug_traceBlockByNumber')).toBe(0);
  });
});

describe('getBlock, per-transaction fallback', () => {
  it('a node answering -32601 for the block methods: same blocks from eth_getTransactionReceipt and debug_traceTransaction', async () => {
    const fast = await fakeNode(recordedNode(BLOCKS, { blockMethods: true }));
    const slow = await fakeNode(recordedNode(BLOCKS, { blockMethods: false }));
    const logger = silentLogger();
    const a = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: fast.url });
    const b = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: slow.url, concurrency: 2, logger });
    for (const h of [483920, 1000000, 1011973]) expect(await b.getBlock(h)).toEqual(await a.getBlock(h));
    // The block methods are tried once per node, then remembered; per-transaction calls cover 4 + 2 + 1 transactions.
    expect(slow.count('eth_getBlockReceipts')).toBe(1);
    expect(slow.count('debug_traceBlockByNumber')).toBe(1);
    expect(slow.count('eth_getTransactionReceipt')).toBe(7);
    expect(slow.count('debug_traceTransaction')).toBe(7);
    expect(b.capabilities()).toMatchObject({
      blockReceipts: 'unsupported',
      blockTraces: 'unsupported',
      transactionTraces: 'supported',
      internalTransfers: 'transaction-traces',
    });
    expect(logger.warn).not.toHaveBeenCalled();
  });

  it('a node without any trace method: no internal transfers, warned once, capabilities say none', async () => {
    const node = await fakeNode(recordedNode(BLOCKS, { blockMethods: true, traces: false }));
    const logger = silentLogger();
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url, logger });
    const first = await adapter.getBlock(1011973);
    await adapter.getBlock(483920);
    expect(first.internalTransfers).toEqual([]);
    expect(first.transactionIds).toHaveLength(1);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(node.count('debug_traceBlockByNumber')).toBe(1);
    expect(node.count('debug_traceTransaction')).toBe(1);
    expect(adapter.capabilities()).toMatchObject({
      blockReceipts: 'supported',
      blockTraces: 'unsupported',
      transactionTraces: 'unsupported',
      internalTransfers: 'none',
    });
  });

  it('"not supported" worded without -32601 (code -32000, Hardhat/EDR style) also falls back', async () => {
    const serve = recordedNode(BLOCKS, { blockMethods: true });
    const node = await fakeNode((method, params) =>
      method === 'eth_getBlockReceipts' ? { error: { code: -32000, message: 'Method eth_getBlockReceipts is not supported' } } : serve(method, params),
    );
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
    expect((await adapter.getBlock(483920)).tokenTransfers).toHaveLength(2);
    expect(node.count('eth_getTransactionReceipt')).toBe(4);
  });
});

describe('getBlock, failures are thrown, never taken as "unsupported"', () => {
  it('HTTP 500 on eth_getBlockReceipts: thrown; the node recovers and the block method is used', async () => {
    const serve = recordedNode(BLOCKS, { blockMethods: true });
    const node = await fakeNode((method, params) => (method === 'eth_getBlockReceipts' ? { status: 500, body: 'upstream exploded' } : serve(method, params)));
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
    const error = await adapter.getBlock(483920).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EvmRpcError);
    expect(error).toMatchObject({ method: 'eth_getBlockReceipts', kind: 'http', status: 500 });
    expect((error as Error).message).toContain('upstream exploded');
    expect(adapter.capabilities().blockReceipts).toBe('unknown');
    expect(node.count('eth_getTransactionReceipt')).toBe(0);
    node.handle = serve;
    await adapter.getBlock(483920);
    expect(adapter.capabilities().blockReceipts).toBe('supported');
    expect(node.count('eth_getTransactionReceipt')).toBe(0);
  });

  it('a 5xx whose body is a JSON-RPC "method not found" is still a server fault', async () => {
    const serve = recordedNode(BLOCKS, { blockMethods: true });
    const node = await fakeNode((method, params) =>
      method === 'debug_traceBlockByNumber'
        ? { status: 502, body: JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'method not found' } }) }
        : serve(method, params),
    );
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
    await expect(adapter.getBlock(483920)).rejects.toMatchObject({ method: 'debug_traceBlockByNumber', status: 502 });
    expect(adapter.capabilities().blockTraces).toBe('unknown');
  });

  it('a timeout on debug_traceBlockByNumber is thrown after timeoutMs, not retried, capability stays unknown', async () => {
    const serve = recordedNode(BLOCKS, { blockMethods: true });
    const node = await fakeNode((method, params) =>
      method === 'debug_traceBlockByNumber' ? { hangMs: 2_000, reply: serve(method, params) } : serve(method, params),
    );
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url, timeoutMs: 200 });
    const started = Date.now();
    await expect(adapter.getBlock(483920)).rejects.toMatchObject({ method: 'debug_traceBlockByNumber', kind: 'timeout' });
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(node.count('debug_traceBlockByNumber')).toBe(1);
    expect(node.count('debug_traceTransaction')).toBe(0);
    expect(adapter.capabilities().blockTraces).toBe('unknown');
  });

  it('a receipt from another block hash (the node reorganised between calls) throws', async () => {
    const serve = recordedNode(BLOCKS, { blockMethods: true });
    const node = await fakeNode((method, params) => {
      const reply = serve(method, params);
      if (method !== 'eth_getBlockReceipts' || !('result' in reply)) return reply;
      const receipts = reply.result as RpcReceipt[];
      return { result: [receipts[0], { ...receipts[1], blockHash: `0x${'ab'.repeat(32)}` }, ...receipts.slice(2)] };
    });
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
    await expect(adapter.getBlock(483920)).rejects.toThrow(EvmAdapterError);
    await expect(adapter.getBlock(483920)).rejects.toThrow(/reorganised under us.*0xabab/);
  });

  it('a block of another height, a missing block, a missing per-transaction receipt: thrown', async () => {
    const b = block483920();
    const node = await fakeNode((method, params) => {
      if (method === 'eth_getBlockByNumber') return { result: params[0] === '0x76251' ? b.block : null };
      return NOT_FOUND(method);
    });
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
    await expect(adapter.getBlock(483921)).rejects.toThrow(/asked .* for block 483921, got block 483920/);
    await expect(adapter.getBlock(483922)).rejects.toThrow(/not on the node/);
    node.handle = (method) =>
      method === 'eth_getBlockByNumber' ? { result: b.block } : method === 'eth_getTransactionReceipt' ? { result: null } : NOT_FOUND(method);
    await expect(adapter.getBlock(483920)).rejects.toThrow(/no receipt for transaction/);
  });

  it('an empty block needs no receipts or traces', async () => {
    const genesis = fixture<RpcBlock>(`${ETL}test_export_blocks_job__block_without_transactions/eth_getBlockByNumber_0x0_true.json`);
    const node = await fakeNode((method) => (method === 'eth_getBlockByNumber' ? { result: genesis } : NOT_FOUND(method)));
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
    expect((await adapter.getBlock(0)).hash).toBe('0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3');
    expect(node.calls.map((c) => c.method)).toEqual(['eth_getBlockByNumber']);
    expect(adapter.capabilities().internalTransfers).toBe('unknown');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------------------------------

describe('getHead, findTransaction, balances', () => {
  const holder = `0x${'1a'.repeat(20)}`;
  const token = `0x${'7c'.repeat(20)}`;
  let node: FakeNode;
  let adapter: ReturnType<typeof createEvmAdapter>;

  beforeAll(async () => {
    const receipt = block483920().receipts[2] as RpcReceipt;
    node = await fakeNode((method, params) => {
      switch (method) {
        case 'eth_blockNumber':
          return { result: '0x71993a' };
        case 'eth_getTransactionReceipt':
          return { result: params[0] === receipt.transactionHash ? receipt : null };
        case 'eth_getBalance':
          return params[1] === '0x10'
            ? { result: '0xde0b6b3a7640000' }
            : { error: { code: -32000, message: 'missing trie node 0123 (path ) state 0x0 is not available' } };
        case 'eth_call': {
          const call = params[0] as { to: string; data: string };
          if (call.to === token && call.data === `0x70a08231${'0'.repeat(24)}${holder.slice(2)}`) return { result: `0x${'0'.repeat(60)}2710` };
          return { error: { code: -32000, message: 'execution reverted' } };
        }
        default:
          return NOT_FOUND(method);
      }
    });
    adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
  });

  it('getHead is eth_blockNumber, not cached', async () => {
    expect(await adapter.getHead()).toBe(0x71993a);
    expect(await adapter.getHead()).toBe(0x71993a);
    expect(node.count('eth_blockNumber')).toBe(2);
  });

  it('findTransaction: the receipt gives height and block hash; unknown gives undefined', async () => {
    expect(await adapter.findTransaction('0x463d53f0ad57677a3b430a007c1c31d15d62c37fab5eee598551697c297c235c')).toEqual({
      height: 483920,
      hash: '0x246edb4b351d93c27926f4649bcf6c24366e2a7c7c718dc9158eea20c03bc6ae',
    });
    expect(await adapter.findTransaction(`0x${'99'.repeat(32)}`)).toBeUndefined();
  });

  it('findTransactions: a node that refuses batches is asked one by one, and no longer in batches', async () => {
    const mined = '0x463d53f0ad57677a3b430a007c1c31d15d62c37fab5eee598551697c297c235c';
    const location = { height: 483920, hash: '0x246edb4b351d93c27926f4649bcf6c24366e2a7c7c718dc9158eea20c03bc6ae' };
    const warnings: unknown[] = [];
    const own = createEvmAdapter({
      blockchain: 'ethereum',
      network: 'mainnet',
      rpcUrl: node.url,
      logger: { warn: (...args: unknown[]) => warnings.push(args), info: () => {} },
    });
    const before = node.calls.length;
    // This fake node reads a batch (a JSON array) as one request without a method: "method not found".
    expect(await own.findTransactions([`0x${'99'.repeat(32)}`, mined])).toEqual([undefined, location]);
    expect(node.calls.slice(before).map((c) => c.method)).toEqual([undefined, 'eth_getTransactionReceipt', 'eth_getTransactionReceipt']);
    expect(warnings).toHaveLength(1);
    expect(await own.findTransactions([mined, mined])).toEqual([location, location]);
    expect(node.calls.slice(before + 3).map((c) => c.method)).toEqual(['eth_getTransactionReceipt', 'eth_getTransactionReceipt']);
  });

  it('getCoinBalance at a height; pruned state gives undefined', async () => {
    expect(await adapter.getCoinBalance(holder, 16)).toBe(10n ** 18n);
    expect(node.calls.at(-1)?.params).toEqual([holder, '0x10']);
    expect(await adapter.getCoinBalance(holder, 17)).toBeUndefined();
  });

  it('getTokenBalance is balanceOf at the height; revert gives undefined', async () => {
    expect(await adapter.getTokenBalance(token, holder.toUpperCase().replace('0X', '0x'), 16)).toBe(10000n);
    expect(node.calls.at(-1)?.params[1]).toBe('0x10');
    expect(await adapter.getTokenBalance(`0x${'7d'.repeat(20)}`, holder, 16)).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Token metadata
// ---------------------------------------------------------------------------------------------------------------

const SEL = { name: '0x06fdde03', symbol: '0x95d89b41', decimals: '0x313ce567' };
const word = (n: bigint | number) => BigInt(n).toString(16).padStart(64, '0');
const abiString = (s: string) => {
  const hex = Buffer.from(s, 'utf8').toString('hex');
  return `0x${word(32)}${word(hex.length / 2)}${hex.padEnd(Math.ceil(hex.length / 64) * 64, '0')}`;
};
const bytes32 = (s: string) => `0x${Buffer.from(s, 'utf8').toString('hex').padEnd(64, '0')}`;
const REVERT: Reply = { error: { code: 3, message: 'execution reverted', data: '0x' } };

const TOKENS: Record<string, Record<string, Reply>> = {
  // Standard ERC-20: ABI strings.
  [`0x${'a1'.repeat(20)}`]: {
    [SEL.name]: { result: abiString('Tether USD') },
    [SEL.symbol]: { result: abiString('USDT') },
    [SEL.decimals]: { result: `0x${word(6)}` },
  },
  // MKR-style bytes32.
  [`0x${'b2'.repeat(20)}`]: { [SEL.name]: { result: bytes32('Maker') }, [SEL.symbol]: { result: bytes32('MKR') }, [SEL.decimals]: { result: `0x${word(18)}` } },
  // No code at the address: every call returns 0x.
  [`0x${'c3'.repeat(20)}`]: { [SEL.name]: { result: '0x' }, [SEL.symbol]: { result: '0x' }, [SEL.decimals]: { result: '0x' } },
  // Reverts: code 3 with data, and geth's -32000 without.
  [`0x${'d4'.repeat(20)}`]: { [SEL.name]: REVERT, [SEL.symbol]: { error: { code: -32000, message: 'execution reverted' } }, [SEL.decimals]: REVERT },
  // Garbage: odd bytes, an out-of-range string offset, a decimals word over 255.
  [`0x${'e5'.repeat(20)}`]: {
    [SEL.name]: { result: '0x0102030405' },
    [SEL.symbol]: { result: `0x${word(2n ** 255n)}${word(3)}` },
    [SEL.decimals]: { result: `0x${'ff'.repeat(32)}` },
  },
  // Gas burner: out of gas under the cap; a revert reason that reads like an unsupported method.
  [`0x${'0b'.repeat(20)}`]: {
    [SEL.name]: { error: { code: -32000, message: 'out of gas' } },
    [SEL.symbol]: { error: { code: -32000, message: 'execution reverted: method not found' } },
    [SEL.decimals]: { error: { code: -32000, message: 'execution aborted (timeout = 5s)' } },
  },
  // Control characters, NUL padding inside an ABI string, surrounding spaces.
  [`0x${'f6'.repeat(20)}`]: {
    [SEL.name]: { result: abiString('  Bad\u0007 Token\u0000\u0000') },
    [SEL.symbol]: { result: bytes32(' BT ') },
    [SEL.decimals]: REVERT,
  },
};

function tokenNode(method: string, params: unknown[]): Reply {
  if (method !== 'eth_call') return NOT_FOUND(method);
  const call = params[0] as { to: string; data: string };
  return TOKENS[call.to]?.[call.data] ?? REVERT;
}

const transfer = (contract: string, tokenType: TokenTransfer['tokenType'] = 'ERC-20'): TokenTransfer => ({
  transactionId: `0x${'01'.repeat(32)}`,
  logIndex: 0,
  tokenType,
  contract,
  from: `0x${'02'.repeat(20)}`,
  to: `0x${'03'.repeat(20)}`,
  amount: 1n,
});

describe('tokenMetadata: tolerant of non-standard tokens', () => {
  it('string, bytes32, empty, reverting, out-of-gas and garbage answers; NFT decimals 0; cached in memory', async () => {
    const node = await fakeNode(tokenNode);
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
    expect(await adapter.tokenMetadata(transfer(`0x${'A1'.repeat(20)}`))).toEqual({ name: 'Tether USD', symbol: 'USDT', decimals: 6 });
    expect(await adapter.tokenMetadata(transfer(`0x${'b2'.repeat(20)}`))).toEqual({ name: 'Maker', symbol: 'MKR', decimals: 18 });
    expect(await adapter.tokenMetadata(transfer(`0x${'c3'.repeat(20)}`))).toEqual({ name: '', symbol: '', decimals: 0 });
    expect(await adapter.tokenMetadata(transfer(`0x${'d4'.repeat(20)}`))).toEqual({ name: '', symbol: '', decimals: 0 });
    expect(await adapter.tokenMetadata(transfer(`0x${'e5'.repeat(20)}`))).toEqual({ name: '', symbol: '', decimals: 0 });
    expect(await adapter.tokenMetadata(transfer(`0x${'f6'.repeat(20)}`))).toEqual({ name: 'Bad Token', symbol: 'BT', decimals: 0 });
    expect(await adapter.tokenMetadata(transfer(`0x${'0b'.repeat(20)}`))).toEqual({ name: '', symbol: '', decimals: 0 });
    expect(await adapter.tokenMetadata(transfer(`0x${'a1'.repeat(20)}`, 'ERC-721'))).toEqual({ name: 'Tether USD', symbol: 'USDT', decimals: 0 });
    expect(node.count('eth_call')).toBe(7 * 3);
    // Latest state, lower-case contract, gas capped (a gas-burning contract fails fast as out of gas).
    expect(node.calls[0]?.params).toEqual([{ to: `0x${'a1'.repeat(20)}`, data: SEL.name, gas: '0xf4240' }, 'latest']);
  });

  it('concurrent lookups of one token share the calls', async () => {
    const node = await fakeNode(tokenNode);
    const adapter = createEvmAdapter({ blockchain: 'binance-smart-chain', network: 'mainnet', rpcUrl: node.url });
    await Promise.all([1, 2, 3].map(() => adapter.tokenMetadata(transfer(`0x${'a1'.repeat(20)}`, 'BEP-20'))));
    expect(node.count('eth_call')).toBe(3);
  });

  it('a node in trouble is thrown (not cached as a token without metadata); the next call tries again', async () => {
    const node = await fakeNode(() => ({ status: 503, body: 'overloaded' }));
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url });
    await expect(adapter.tokenMetadata(transfer(`0x${'a1'.repeat(20)}`))).rejects.toMatchObject({ method: 'eth_call', kind: 'http', status: 503 });
    node.handle = (method, params) =>
      method === 'eth_call' && (params[0] as { data: string }).data === SEL.symbol
        ? { error: { code: -32005, message: 'rate limit exceeded' } }
        : tokenNode(method, params);
    await expect(adapter.tokenMetadata(transfer(`0x${'a1'.repeat(20)}`))).rejects.toMatchObject({ kind: 'rpc', code: -32005 });
    node.handle = tokenNode;
    expect(await adapter.tokenMetadata(transfer(`0x${'a1'.repeat(20)}`))).toEqual({ name: 'Tether USD', symbol: 'USDT', decimals: 6 });
  });

  it('an unreachable node is thrown as a network error naming the node without credentials', async () => {
    const node = await fakeNode(tokenNode);
    await node.close();
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url.replace('http://', 'http://user:secret@') });
    const error = await adapter.tokenMetadata(transfer(`0x${'a1'.repeat(20)}`)).catch((e: unknown) => e);
    expect(error).toMatchObject({ method: 'eth_call', kind: 'network' });
    expect((error as Error).message).toContain(node.url);
    expect((error as Error).message).not.toContain('secret');
  });
});

describe('tokenMetadata: database cache', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openMigratedTestDatabase();
  });
  afterAll(async () => {
    await db?.close();
  });

  it('a second adapter instance reads from the database without calling the node', async () => {
    const node = await fakeNode(tokenNode);
    const options = { blockchain: 'ethereum', network: 'mainnet', rpcUrl: node.url, tokenMetadataCache: tokenMetadataCache(db) } as const;
    const first = createEvmAdapter(options);
    expect(await first.tokenMetadata(transfer(`0x${'B2'.repeat(20)}`))).toEqual({ name: 'Maker', symbol: 'MKR', decimals: 18 });
    expect(await first.tokenMetadata(transfer(`0x${'d4'.repeat(20)}`))).toEqual({ name: '', symbol: '', decimals: 0 });
    expect(node.count('eth_call')).toBe(6);

    const second = createEvmAdapter(options);
    expect(await second.tokenMetadata(transfer(`0x${'b2'.repeat(20)}`))).toEqual({ name: 'Maker', symbol: 'MKR', decimals: 18 });
    expect(await second.tokenMetadata(transfer(`0x${'d4'.repeat(20)}`, 'ERC-721'))).toEqual({ name: '', symbol: '', decimals: 0 });
    expect(node.count('eth_call')).toBe(6);

    const rows = await db.query(
      'test:token-metadata',
      'SELECT blockchain, network, contract, name, symbol, decimals, token_type FROM token_metadata ORDER BY contract',
    );
    expect(rows).toEqual([
      { blockchain: 'ethereum', network: 'mainnet', contract: `0x${'b2'.repeat(20)}`, name: 'Maker', symbol: 'MKR', decimals: 18, token_type: 'ERC-20' },
      { blockchain: 'ethereum', network: 'mainnet', contract: `0x${'d4'.repeat(20)}`, name: '', symbol: '', decimals: 0, token_type: 'ERC-20' },
    ]);

    // Another chain does not see them.
    const bsc = createEvmAdapter({ ...options, blockchain: 'binance-smart-chain' });
    await bsc.tokenMetadata(transfer(`0x${'b2'.repeat(20)}`, 'BEP-20'));
    expect(node.count('eth_call')).toBe(9);
  });
});

describe('decoders', () => {
  it('decodeText and decodeDecimals never throw', () => {
    for (const garbage of [undefined, '', '0x', '0xz', '0x1', 'hello', `0x${'ff'.repeat(64)}`, `0x${word(32)}${word(2n ** 200n)}`, `0x${word(64)}${word(1)}`]) {
      expect(decodeText(garbage)).toBe('');
      expect(decodeDecimals(garbage === `0x${'ff'.repeat(64)}` ? undefined : garbage)).toBeTypeOf('number');
    }
    expect(decodeText(abiString('x'.repeat(1000)))).toHaveLength(256);
    expect(decodeText(abiString('日本円'))).toBe('日本円');
    expect(decodeDecimals(`0x${word(255)}`)).toBe(255);
    expect(decodeDecimals(`0x${word(256)}`)).toBe(0);
  });

  it('mapLimit keeps order and bounds concurrency', async () => {
    let inFlight = 0;
    let most = 0;
    const out = await mapLimit([5, 1, 4, 2, 3], 2, async (n) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, n * 3));
      inFlight--;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30]);
    expect(most).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Head watching
// ---------------------------------------------------------------------------------------------------------------

describe('watchHeads (eth_subscribe newHeads over WebSocket)', () => {
  it('announces heads, reconnects after the node drops the connection, stops when asked', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => wss.once('listening', r));
    let connections = 0;
    let subscriptions = 0;
    wss.on('connection', (socket) => {
      connections++;
      socket.on('message', (raw) => {
        const req = JSON.parse(String(raw)) as { id: number; method: string; params: unknown[] };
        if (req.method !== 'eth_subscribe') return socket.send(JSON.stringify({ jsonrpc: '2.0', id: req.id, result: null }));
        subscriptions++;
        expect(req.params).toEqual(['newHeads']);
        const sub = `0x${subscriptions}`;
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: req.id, result: sub }));
        const head = 100 + subscriptions * 10;
        for (const n of [head, head + 1]) {
          socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: sub, result: { number: `0x${n.toString(16)}` } } }));
        }
      });
    });
    const port = (wss.address() as AddressInfo).port;
    const logger = silentLogger();
    const adapter = createEvmAdapter({
      blockchain: 'ethereum',
      network: 'mainnet',
      rpcUrl: 'http://127.0.0.1:1/',
      wsUrl: `ws://127.0.0.1:${port}`,
      reconnectDelayMs: 50,
      logger,
    });
    expect(adapter.capabilities().headWatching).toBe('websocket');
    const heads: number[] = [];
    const stop = adapter.watchHeads?.((h) => heads.push(h)) as () => void;
    await vi.waitFor(() => expect(heads).toEqual([110, 111]), { timeout: 5_000 });
    for (const client of wss.clients) client.terminate();
    await vi.waitFor(() => expect(heads).toEqual([110, 111, 120, 121]), { timeout: 5_000 });
    expect(connections).toBe(2);
    expect(logger.warn).toHaveBeenCalled();
    stop();
    await new Promise((r) => setTimeout(r, 200));
    expect(connections).toBe(2);
    expect([...wss.clients].every((c) => c.readyState !== c.OPEN)).toBe(true);
    await adapter.close();
    await new Promise((r) => wss.close(r));
  });

  it('keeps trying while the node is not there yet', async () => {
    const probe = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => probe.once('listening', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const adapter = createEvmAdapter({
      blockchain: 'ethereum',
      network: 'mainnet',
      rpcUrl: 'http://127.0.0.1:1/',
      wsUrl: `ws://127.0.0.1:${port}`,
      reconnectDelayMs: 20,
    });
    const heads: number[] = [];
    adapter.watchHeads?.((h) => heads.push(h));
    await new Promise((r) => setTimeout(r, 150));
    const wss = new WebSocketServer({ port, host: '127.0.0.1' });
    wss.on('connection', (socket) =>
      socket.on('message', (raw) => {
        const req = JSON.parse(String(raw)) as { id: number };
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: req.id, result: '0xabc' }));
        socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: '0xabc', result: { number: '0x2a' } } }));
      }),
    );
    await vi.waitFor(() => expect(heads).toEqual([42]), { timeout: 5_000 });
    await adapter.close();
    await new Promise((r) => wss.close(r));
  });
});

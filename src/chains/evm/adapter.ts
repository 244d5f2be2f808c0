/**
 * The ChainAdapter of the EVM chains (ethereum, ethereum-classic, binance-smart-chain): node RPC plus
 * the pure normaliser (normalize.ts). What the node offers is detected per node, lazily, on first use:
 *
 * - receipts: `eth_getBlockReceipts` (one call per block) when served, else `eth_getTransactionReceipt`
 *   per transaction with bounded concurrency;
 * - traces: Parity's `trace_block` when served (Erigon, Nethermind, reth, Besu, Anvil), else
 *   `debug_traceBlockByNumber` with callTracer (geth), else `debug_traceTransaction` per transaction; when
 *   none is served, blocks have no internal transfers (warned once, and visible in capabilities()).
 *   trace_block comes first because some nodes answer it from traces recorded when the block was executed
 *   while they re-execute the block for the callTracer (Anvil: about 1 ms against 0.5 to 1 s for a block of 50
 *   transactions); both give the same internal transfers and operationIds (parity-traces.ts).
 *
 * Only an answer that says "this method is not served" (EvmRpcError kind 'unsupported') switches to a
 * fallback; timeouts, 5xx and everything else are thrown, so the follower retries rather than silently
 * degrading because the node was busy.
 */

import type { Logger } from 'pino';
import type { Hex } from 'viem';
import type { Network } from '../../domain/chains.ts';
import type { Db } from '../../store/db.ts';
import { getTokenMetadata, putTokenMetadata, type StoredTokenMetadata } from '../../store/token-metadata.ts';
import { mapLimit } from '../concurrency.ts';
import { LookupCache } from '../lookup-cache.ts';
import { decodeDecimals, decodeText, firstWord } from '../token-text.ts';
import type { ChainAdapter, NodeHealth, NodeIdentity, NormalizedBlock, TokenMetadata, TokenTransfer, TransactionLocation } from '../types.ts';
import { createEvmDetailsReader } from './details.ts';
import { createEvmMempoolReader } from './mempool.ts';
import { type EvmBlockchain, type EvmBlockHeader, normalizeEvmBlock, normalizeEvmBlockHeader, parseQuantity } from './normalize.ts';
import { parityToCallTraces } from './parity-traces.ts';
import { createEvmRpcClient, EvmRpcError } from './rpc.ts';
import type { CallFrame, CallTraceEntry, ParityTrace, RpcBlock, RpcReceipt, RpcTransaction } from './rpc-types.ts';
import { createSubscription } from './subscription.ts';

export interface EvmAdapterOptions {
  blockchain: EvmBlockchain;
  network: Network;
  rpcUrl: string;
  /** Enables watchHeads (eth_subscribe newHeads); without it the follower polls. */
  wsUrl?: string;
  /** Token metadata is cached here too (table token_metadata); memory only without it. */
  db?: Db;
  /** Parallel per-transaction requests when the node lacks the block-level methods; default 8. */
  concurrency?: number;
  /** Per request; default 10 s. */
  timeoutMs?: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
  /** First delay before reconnecting the WebSocket; doubles up to 30 s. Default 1 s. */
  reconnectDelayMs?: number;
  /** With wsUrl: the pending transaction filter is polled at least this often (newPendingTransactions pushes); default 30 s. */
  mempoolPollIntervalMs?: number;
}

export type Support = 'unknown' | 'supported' | 'unsupported';

export interface EvmCapabilities {
  blockReceipts: Support;
  /** Parity's trace_block. */
  parityBlockTraces: Support;
  /** debug_traceBlockByNumber with callTracer. */
  blockTraces: Support;
  transactionTraces: Support;
  /** Where internal transfers come from; 'none': the node serves no trace method, blocks have none. */
  internalTransfers: 'unknown' | 'block-traces' | 'transaction-traces' | 'none';
  headWatching: 'websocket' | 'none';
}

export type EvmAdapter = Required<Omit<ChainAdapter, 'watchHeads' | 'getUnspentOutputs' | 'checkReorganisation' | 'reportInconsistency' | 'mempool'>> &
  Pick<ChainAdapter, 'mempool'> &
  Pick<ChainAdapter, 'watchHeads'> & {
    capabilities(): EvmCapabilities;
  };

/** A consistency check failed (the node answered, but not about the block asked): the follower retries. */
export class EvmAdapterError extends Error {
  override name = 'EvmAdapterError';
}

const CALL_TRACER = { tracer: 'callTracer' } as const;
const SELECTOR = { name: '0x06fdde03', symbol: '0x95d89b41', decimals: '0x313ce567', balanceOf: '0x70a08231' } as const;
/** Bounds the in-memory metadata cache (oldest dropped first); the database keeps them all. */
const MAX_CACHED_TOKENS = 100_000;
/**
 * Gas for token calls: name/symbol/decimals/balanceOf of any real token cost well under 100k. The cap makes
 * a hostile contract that burns gas fail fast with "out of gas" (a revert: metadata ''), rather than run
 * into the node's or our timeout, which would be thrown and retried forever by the follower.
 */
const TOKEN_CALL_GAS = 1_000_000n;
/** Answers of a node that cannot tell a balance at that height (pruned state, unknown block). */
const STATE_UNAVAILABLE = /missing trie node|header not found|historical state|state .*not available|pruned|unknown block/i;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export function createEvmAdapter(options: EvmAdapterOptions): EvmAdapter {
  const { blockchain, network, db, logger } = options;
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const rpc = createEvmRpcClient({ url: options.rpcUrl, timeoutMs: options.timeoutMs });
  const caps = {
    blockReceipts: 'unknown' as Support,
    parityBlockTraces: 'unknown' as Support,
    blockTraces: 'unknown' as Support,
    transactionTraces: 'unknown' as Support,
  };
  const metadataCache = new LookupCache<StoredTokenMetadata>(MAX_CACHED_TOKENS);
  // Contracts whose code may move value (always traced), and inert ones by the first height they were seen.
  const mayMoveValue = new Set<string>();
  const inertSince = new Map<string, number>();
  let codeLookups: Support = 'unknown';
  const linked: { chain: number; last?: { height: number; hash: string } } = { chain: 0 };
  /** Resolves when the block asked for before the current one has been linked. */
  let linkTurn: Promise<void> = Promise.resolve();
  const log = { blockchain, network, node: rpc.url };

  function markUnsupported(capability: keyof typeof caps, method: string, error: EvmRpcError): void {
    if (caps[capability] !== 'unsupported') logger?.info({ ...log, method, answer: error.nodeMessage }, `node does not serve ${method}; using the fallback`);
    caps[capability] = 'unsupported';
  }

  async function fetchReceipts(hexHeight: string, transactionIds: string[]): Promise<RpcReceipt[]> {
    if (caps.blockReceipts !== 'unsupported') {
      try {
        const receipts = await rpc.request<RpcReceipt[] | null>('eth_getBlockReceipts', [hexHeight]);
        caps.blockReceipts = 'supported';
        if (!Array.isArray(receipts)) throw new EvmAdapterError(`eth_getBlockReceipts ${hexHeight} at ${rpc.url} returned no receipts`);
        return receipts;
      } catch (error) {
        if (!isUnsupported(error)) throw error;
        markUnsupported('blockReceipts', 'eth_getBlockReceipts', error);
      }
    }
    return await mapLimit(transactionIds, concurrency, async (id) => {
      const receipt = await rpc.request<RpcReceipt | null>('eth_getTransactionReceipt', [id]);
      // The block lists it, so a mined receipt must exist: none means the node moved to another chain.
      if (receipt === null || typeof receipt !== 'object') throw new EvmAdapterError(`no receipt for transaction ${id} at ${rpc.url}`);
      return receipt;
    });
  }

  /** callTracer entries of the block; undefined when the node serves no trace method, or no transaction needs one. */
  async function fetchTraces(hexHeight: string, block: RpcBlock, header: EvmBlockHeader, chain: number): Promise<CallTraceEntry[] | undefined> {
    if (caps.parityBlockTraces !== 'unsupported') {
      try {
        const traces = await rpc.request<ParityTrace[]>('trace_block', [hexHeight]);
        caps.parityBlockTraces = 'supported';
        // A node that has no traces of the block (pruned) answers null: fetched again, as any other gap.
        if (!Array.isArray(traces)) throw new EvmAdapterError(`trace_block ${hexHeight} at ${rpc.url} returned no traces`);
        return parityToCallTraces(traces);
      } catch (error) {
        if (!isUnsupported(error)) throw error;
        markUnsupported('parityBlockTraces', 'trace_block', error);
      }
    }
    if (caps.blockTraces !== 'unsupported') {
      try {
        const traces = await rpc.request<CallTraceEntry[]>('debug_traceBlockByNumber', [hexHeight, CALL_TRACER]);
        caps.blockTraces = 'supported';
        return traces;
      } catch (error) {
        if (!isUnsupported(error)) throw error;
        markUnsupported('blockTraces', 'debug_traceBlockByNumber', error);
      }
    }
    if (caps.transactionTraces === 'unsupported') return undefined;
    const transactionIds = await transactionsToTrace(block, header, chain);
    // None can move value below its top frame: no traces, as from a node without tracing (none to read).
    if (transactionIds.length === 0) return undefined;
    const traceOne = async (txHash: string): Promise<CallTraceEntry> => ({
      txHash,
      result: await rpc.request<CallFrame | null>('debug_traceTransaction', [txHash, CALL_TRACER]),
    });
    let first: CallTraceEntry[] = [];
    let rest = transactionIds;
    if (caps.transactionTraces === 'unknown') {
      // Probe with one transaction, so a node without tracing costs one call, not one per transaction.
      try {
        first = [await traceOne(transactionIds[0] as string)];
        rest = transactionIds.slice(1);
        caps.transactionTraces = 'supported';
      } catch (error) {
        if (!isUnsupported(error)) throw error;
        markUnsupported('transactionTraces', 'debug_traceTransaction', error);
        logger?.warn(log, 'node serves neither debug_traceBlockByNumber nor debug_traceTransaction: blocks will have no internal transfers');
        return undefined;
      }
    }
    return [...first, ...(await mapLimit(rest, concurrency, traceOne))];
  }

  /**
   * Tracing transaction by transaction is what costs most on a node without debug_traceBlockByNumber (a
   * node re-executes the block up to the transaction for each trace), so the transactions that provably
   * move no value below their top frame are not traced (their trace would add no internal transfer):
   *
   * - a gas limit that leaves no gas to execute anything: at most 21,000 + 4 per calldata byte, a lower
   *   bound of the intrinsic gas in every fork (plain transfers are sent with exactly 21,000). Every
   *   instruction that can lead to a value-carrying frame costs gas, and an exceptional halt moves nothing;
   * - a call with calldata to a contract whose code can reach none of CALL, CALLCODE, DELEGATECALL, CREATE,
   *   CREATE2, SELFDESTRUCT (see codeMayMoveValue; a STATICCALL frame and those below it cannot carry
   *   value): its execution makes no child frame that carries value. Code that cannot self-destruct never
   *   changes, so the verdict holds from the first block where the address has it; the code is read at the
   *   block (by hash, EIP-1898) and at its parent, since before Cancun a contract could be destroyed and
   *   recreated with other code within one block. Verdicts are remembered per chain of linked blocks (see
   *   linkBlock): a block that does not extend the last one read forgets them, since on another branch the
   *   address may hold other code.
   *
   * Everything else is traced: contract creations, calls without calldata (plain value transfers with gas
   * to spare, which may run a receive function), calls to addresses without code at the block, and every
   * call when the node cannot tell a contract's code (eth_getCode answered "unsupported" or rejected the
   * block hash).
   */
  async function transactionsToTrace(block: RpcBlock, header: EvmBlockHeader, chain: number): Promise<string[]> {
    const txs = (Array.isArray(block.transactions) ? block.transactions : []) as (RpcTransaction | string)[];
    // Verdicts remembered on this block's chain only (a block read meanwhile on another branch cleared them).
    const remembered = chain === linked.chain ? inertSince : new Map<string, number>();
    const traced: string[] = [];
    const byContract = new Map<string, string[]>();
    for (const [i, tx] of txs.entries()) {
      const id = header.transactionIds[i] as string;
      if (typeof tx === 'string') {
        traced.push(id);
        continue;
      }
      const to = typeof tx.to === 'string' && ADDRESS.test(tx.to) ? tx.to.toLowerCase() : undefined;
      const input = typeof tx.input === 'string' && /^0x([0-9a-fA-F]{2})*$/.test(tx.input) ? tx.input : undefined;
      const gas = parseQuantity(tx.gas);
      if (to !== undefined && input !== undefined && gas !== undefined && gas <= 21_000n + 4n * BigInt((input.length - 2) / 2)) continue;
      if (to === undefined || input === undefined || input === '0x' || codeLookups === 'unsupported' || mayMoveValue.has(to)) {
        traced.push(id);
        continue;
      }
      const since = remembered.get(to);
      if (since !== undefined && since <= header.height) continue;
      byContract.set(to, [...(byContract.get(to) ?? []), id]);
    }
    if (byContract.size === 0) return traced;
    const verdicts = await mapLimit([...byContract.keys()], concurrency, (address) => codeVerdict(address, header, chain));
    [...byContract.values()].forEach((ids, k) => {
      if (verdicts[k] !== 'inert') traced.push(...ids);
    });
    const order = new Map(header.transactionIds.map((id, i) => [id, i]));
    return traced.sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
  }

  /** 'inert' (remembered), 'traced' (the code may move value, or there is none), or undefined when the node cannot tell. */
  async function codeVerdict(address: string, header: EvmBlockHeader, chain: number): Promise<'inert' | 'traced' | undefined> {
    let codes: string[];
    try {
      codes = await Promise.all([header.hash, header.parentHash].map((blockHash) => rpc.request<string>('eth_getCode', [address, { blockHash }])));
    } catch (error) {
      // "Unsupported", or a node that rejects the EIP-1898 block parameter (invalid params): trace everything.
      if (!(error instanceof EvmRpcError && (error.kind === 'unsupported' || (error.kind === 'rpc' && error.code === -32602)))) throw error;
      if (codeLookups !== 'unsupported')
        logger?.info({ ...log, answer: error.nodeMessage }, 'node cannot tell contract code by block hash: every call is traced');
      codeLookups = 'unsupported';
      return undefined;
    }
    const [atBlock, atParent] = codes.map((c) => (typeof c === 'string' ? c.toLowerCase() : '')) as [string, string];
    if (atBlock === '0x' || atBlock === '') return 'traced';
    if (codeMayMoveValue(atBlock)) {
      remember(mayMoveValue, address);
      return 'traced';
    }
    if (atParent !== '0x' && atParent !== atBlock) return 'traced';
    if (chain === linked.chain) remember(inertSince, address, header.height);
    return 'inert';
  }

  /**
   * Called for every block read, in the order they were asked for (readBlock takes turns): the blocks read
   * since the verdicts were last forgotten form one chain, each the child of the one before, so a verdict
   * learnt at height s holds for every later block read (s is its ancestor). A block that does not extend
   * the last one (a reorganisation, a retry, the follower walking back, a lookup of an old block) starts
   * a new chain: the verdicts are forgotten. Returns the block's chain number.
   */
  function linkBlock(header: EvmBlockHeader): number {
    const last = linked.last;
    if (!last || header.height !== last.height + 1 || header.parentHash !== last.hash) {
      linked.chain++;
      inertSince.clear();
    }
    linked.last = { height: header.height, hash: header.hash };
    return linked.chain;
  }

  async function readBlock(height: number): Promise<NormalizedBlock> {
    const hexHeight = `0x${height.toString(16)}`;
    const previous = linkTurn;
    let linkedNow!: () => void;
    linkTurn = new Promise((resolve) => {
      linkedNow = resolve;
    });
    let block: RpcBlock | null;
    let header: EvmBlockHeader;
    let chain: number;
    try {
      block = await rpc.request<RpcBlock | null>('eth_getBlockByNumber', [hexHeight, true]);
      if (block === null || typeof block !== 'object') throw new EvmAdapterError(`block ${height} is not on the node ${rpc.url} (yet)`);
      header = normalizeEvmBlockHeader(block);
      if (header.height !== height) throw new EvmAdapterError(`asked ${rpc.url} for block ${height}, got block ${header.height}`);
      await previous;
      chain = linkBlock(header);
    } finally {
      linkedNow();
    }
    const ids = header.transactionIds;
    const [receipts, traces] =
      ids.length === 0 ? [[], undefined] : await Promise.all([fetchReceipts(hexHeight, ids), fetchTraces(hexHeight, block, header, chain)]);
    // Receipts are asked by height too: one from another block means the node switched chains between
    // the two calls. Normalising would mix two blocks; throwing makes the follower fetch again.
    for (const receipt of receipts) {
      const hash = typeof receipt?.blockHash === 'string' ? receipt.blockHash.toLowerCase() : undefined;
      if (hash !== undefined && hash !== header.hash) {
        throw new EvmAdapterError(
          `node ${rpc.url} reorganised under us: receipt of ${String(receipt.transactionHash)} is from block ${hash}, not ${header.hash}`,
        );
      }
    }
    return normalizeEvmBlock({ block, receipts, traces }, { blockchain });
  }

  /** Where a receipt says its transaction was mined; undefined for none (not mined, or unknown to the node). */
  function receiptLocation(receipt: RpcReceipt | null): TransactionLocation | undefined {
    if (receipt === null || typeof receipt !== 'object') return undefined;
    const height = parseQuantity(receipt.blockNumber);
    const hash = typeof receipt.blockHash === 'string' && /^0x[0-9a-fA-F]{64}$/.test(receipt.blockHash) ? receipt.blockHash.toLowerCase() : undefined;
    return height === undefined || hash === undefined ? undefined : { height: Number(height), hash };
  }

  async function findTransaction(transactionId: string): Promise<TransactionLocation | undefined> {
    return receiptLocation(await rpc.request<RpcReceipt | null>('eth_getTransactionReceipt', [transactionId]));
  }

  /**
   * The receipts in one JSON-RPC batch. A node (or a gateway in front of it) that answers a batch with
   * anything but a batch answer is asked one by one (with the adapter's concurrency), and no longer in
   * batches once that worked: a refusal is for good, and a node that is down fails both ways.
   */
  let batchesServed = true;
  async function findTransactions(transactionIds: readonly string[]): Promise<(TransactionLocation | undefined)[]> {
    const oneByOne = () => mapLimit(transactionIds, concurrency, findTransaction);
    if (!batchesServed || transactionIds.length <= 1) return await oneByOne();
    let answers: Awaited<ReturnType<typeof rpc.batch<RpcReceipt | null>>>;
    try {
      answers = await rpc.batch<RpcReceipt | null>(transactionIds.map((id) => ({ method: 'eth_getTransactionReceipt', params: [id] })));
    } catch (error) {
      if (!(error instanceof EvmRpcError) || error.kind === 'timeout' || error.kind === 'network' || (error.status ?? 0) >= 500 || error.status === 429)
        throw error;
      const located = await oneByOne();
      batchesServed = false;
      logger?.warn({ url: rpc.url, err: error }, 'the node does not answer JSON-RPC batches: transactions are looked up one by one');
      return located;
    }
    return answers.map((answer) => {
      if (!answer.ok) throw answer.error;
      return receiptLocation(answer.result);
    });
  }

  async function getCoinBalance(address: string, height: number): Promise<bigint | undefined> {
    try {
      return await rpc.balance(requireAddress(address), height);
    } catch (error) {
      if (error instanceof EvmRpcError && error.kind === 'rpc' && STATE_UNAVAILABLE.test(error.nodeMessage)) return undefined;
      throw error;
    }
  }

  async function getTokenBalance(contract: string, address: string, height: number): Promise<bigint | undefined> {
    const data = await contractCall(
      requireAddress(contract),
      `${SELECTOR.balanceOf}${requireAddress(address).slice(2).toLowerCase().padStart(64, '0')}`,
      height,
    );
    const word = firstWord(data);
    return word === undefined ? undefined : BigInt(word);
  }

  /** eth_call result, or undefined when the call reverted or returned nothing. Node trouble is thrown. */
  async function contractCall(to: string, data: string, height?: number): Promise<Hex | undefined> {
    try {
      const result = await rpc.call({ to, data: data as Hex, height, gas: TOKEN_CALL_GAS });
      return result === '0x' ? undefined : result;
    } catch (error) {
      if (
        error instanceof EvmRpcError &&
        (error.kind === 'reverted' || (error.kind === 'rpc' && height !== undefined && STATE_UNAVAILABLE.test(error.nodeMessage)))
      ) {
        return undefined;
      }
      throw error;
    }
  }

  async function fetchMetadata(contract: string, tokenType: string): Promise<StoredTokenMetadata> {
    const key = { blockchain, network, contract };
    const stored = db ? await getTokenMetadata(db, key) : undefined;
    if (stored) return stored;
    // Latest state: the facts of a deployed token do not depend on the height.
    const [name, symbol, decimals] = await Promise.all([
      contractCall(contract, SELECTOR.name),
      contractCall(contract, SELECTOR.symbol),
      contractCall(contract, SELECTOR.decimals),
    ]);
    const metadata = { name: decodeText(name), symbol: decodeText(symbol), decimals: decodeDecimals(decimals), tokenType };
    if (db) await putTokenMetadata(db, key, metadata);
    return metadata;
  }

  async function tokenMetadata(transfer: TokenTransfer): Promise<TokenMetadata | undefined> {
    const contract = transfer.contract.toLowerCase();
    // Concurrent transfers of one token share one lookup; a failed one is tried again next time.
    const m = await metadataCache.get(contract, () => fetchMetadata(contract, transfer.tokenType));
    // An NFT's amount is a token id, never scaled: decimals 0 whatever the contract says.
    return { name: m.name, symbol: m.symbol, decimals: transfer.tokenType === 'ERC-721' ? 0 : m.decimals };
  }

  /** The header only (transaction hashes, not bodies): the follower's same-height head check. */
  async function getBlockHash(height: number): Promise<string> {
    const block = await rpc.request<RpcBlock | null>('eth_getBlockByNumber', [`0x${height.toString(16)}`, false]);
    if (block === null || typeof block !== 'object') throw new EvmAdapterError(`block ${height} is not on the node ${rpc.url} (yet)`);
    const header = normalizeEvmBlockHeader(block);
    if (header.height !== height) throw new EvmAdapterError(`asked ${rpc.url} for block ${height}, got block ${header.height}`);
    return header.hash;
  }

  /**
   * eth_syncing (false when in step with the network, else an object with currentBlock and highestBlock) and
   * the latest header, side by side. A node that answers eth_syncing with an object is catching up, whatever
   * its numbers say (geth keeps it until the state is healed too).
   */
  async function getNodeHealth(): Promise<NodeHealth> {
    const [syncing, latest] = await Promise.all([
      // A gateway that does not serve eth_syncing hides nothing we could act on: taken as in step.
      rpc.request<unknown>('eth_syncing', []).catch((error: unknown) => {
        if (isUnsupported(error)) return false;
        throw error;
      }),
      rpc.request<RpcBlock | null>('eth_getBlockByNumber', ['latest', false]),
    ]);
    if (latest === null || typeof latest !== 'object') throw new EvmAdapterError(`${rpc.url} answered no latest block`);
    const header = normalizeEvmBlockHeader(latest);
    if (syncing === false) return { height: header.height, hash: header.hash };
    const progress = syncing !== null && typeof syncing === 'object' ? (syncing as { currentBlock?: unknown; highestBlock?: unknown }) : {};
    const current = parseQuantity(progress.currentBlock);
    const highest = parseQuantity(progress.highestBlock);
    const detail = current !== undefined && highest !== undefined ? `: block ${current} of ${highest}` : '';
    return { height: header.height, hash: header.hash, syncing: `eth_syncing says the node is syncing${detail}` };
  }

  /** eth_chainId (EIP-695), in decimal. */
  async function getNodeIdentity(): Promise<NodeIdentity> {
    const id = await rpc.request<unknown>('eth_chainId', []);
    const chainId = parseQuantity(id);
    if (chainId === undefined) throw new EvmAdapterError(`eth_chainId at ${rpc.url} answered ${JSON.stringify(id)?.slice(0, 100)}, not a chain id`);
    return { chainId: String(chainId) };
  }

  const mempool = createEvmMempoolReader(
    rpc,
    blockchain,
    concurrency,
    options.wsUrl
      ? {
          wsUrl: options.wsUrl,
          pollIntervalMs: options.mempoolPollIntervalMs,
          timeoutMs: options.timeoutMs,
          reconnectDelayMs: options.reconnectDelayMs,
          logger,
          log,
        }
      : undefined,
  );

  const adapter: EvmAdapter = {
    getHead: () => rpc.blockNumber(),
    getNodeHealth,
    getNodeIdentity,
    // Reading ahead while the follower applies a block is the follower's job (src/ingest/prefetch.ts).
    getBlock: readBlock,
    getBlockHash,
    findTransaction,
    findTransactions,
    getCoinBalance,
    getTokenBalance,
    tokenMetadata,
    ...createEvmDetailsReader(rpc, blockchain),
    mempool,
    capabilities: () => ({
      ...caps,
      internalTransfers:
        caps.parityBlockTraces === 'supported' || caps.blockTraces === 'supported'
          ? 'block-traces'
          : caps.blockTraces === 'unsupported' && caps.transactionTraces === 'supported'
            ? 'transaction-traces'
            : caps.transactionTraces === 'unsupported'
              ? 'none'
              : 'unknown',
      headWatching: options.wsUrl ? 'websocket' : 'none',
    }),
    async close() {
      heads?.stop();
      await mempool.close?.();
      await rpc.close();
    },
  };

  const heads = options.wsUrl
    ? createSubscription({
        wsUrl: options.wsUrl,
        params: ['newHeads'],
        parse: (result) => {
          const height = parseQuantity((result as { number?: unknown } | undefined)?.number);
          return height === undefined ? undefined : Number(height);
        },
        keepAliveMs: 15_000,
        timeoutMs: options.timeoutMs,
        reconnectDelayMs: options.reconnectDelayMs,
        logger,
        log,
      })
    : undefined;
  if (heads) {
    adapter.watchHeads = (onHead) => heads.watch(onHead);
  }
  return adapter;
}

/** Bounds the contract verdict caches (oldest dropped first). */
const MAX_REMEMBERED_CONTRACTS = 100_000;

function remember(cache: Set<string> | Map<string, number>, address: string, height?: number): void {
  if (cache instanceof Set) cache.add(address);
  else cache.set(address, height as number);
  if (cache.size > MAX_REMEMBERED_CONTRACTS) cache.delete(cache.keys().next().value as string);
}

/** Opcodes after which execution does not fall through: STOP, JUMP, RETURN, REVERT, INVALID, SELFDESTRUCT. */
const TERMINATORS = new Set([0x00, 0x56, 0xf3, 0xfd, 0xfe, 0xff]);
/** CREATE, CALL, CALLCODE, DELEGATECALL, CREATE2, SELFDESTRUCT, and the 0xf6-0xfc range (never-activated or EOF-only calls). STATICCALL (0xfa) cannot carry value. */
const MAY_MOVE_VALUE = new Set([0xf0, 0xf1, 0xf2, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfb, 0xfc, 0xff]);

/**
 * Whether runtime code (hex) may execute an instruction that makes a value-carrying frame. Conservative:
 * true for EOF containers and EIP-7702 delegations (code starting with 0xef: what runs is elsewhere). The
 * instructions are read as the EVM does (PUSH data skipped: a jump can only land on a JUMPDEST that is an
 * instruction); one counts unless it is unreachable: after an instruction that does not fall through, and
 * before the next JUMPDEST. That leaves out the compiler's metadata after the code's final INVALID, whose
 * bytes would otherwise read as calls half of the time. Unknown opcodes are taken to fall through.
 */
export function codeMayMoveValue(code: string): boolean {
  const bytes = Buffer.from(code.startsWith('0x') ? code.slice(2) : code, 'hex');
  if (bytes[0] === 0xef) return true;
  let live = true;
  for (let pc = 0; pc < bytes.length; pc++) {
    const op = bytes[pc] as number;
    if (op === 0x5b) live = true;
    if (!live) {
      if (op >= 0x60 && op <= 0x7f) pc += op - 0x5f;
      continue;
    }
    if (MAY_MOVE_VALUE.has(op)) return true;
    if (op >= 0x60 && op <= 0x7f) pc += op - 0x5f;
    else if (TERMINATORS.has(op)) live = false;
  }
  return false;
}

function isUnsupported(error: unknown): error is EvmRpcError {
  return error instanceof EvmRpcError && error.kind === 'unsupported';
}

function requireAddress(address: string): string {
  if (!ADDRESS.test(address)) throw new TypeError(`not an EVM address: ${address}`);
  return address.toLowerCase();
}

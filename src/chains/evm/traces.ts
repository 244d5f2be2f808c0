/**
 * The internal transfers' raw material: call traces of a block. Parity's `trace_block` when served (Erigon,
 * Nethermind, reth, Besu, Anvil), else `debug_traceBlockByNumber` with callTracer (geth), else
 * `debug_traceTransaction` per transaction, of the transactions that may move value below their top
 * frame only; when none is served, blocks have no internal transfers (warned once, and visible in the
 * adapter's capabilities()). trace_block comes first because some nodes answer it from traces recorded
 * when the block was executed while they re-execute the block for the callTracer (Anvil: about 1 ms
 * against 0.5 to 1 s for a block of 50 transactions); both give the same internal transfers and
 * operationIds (parity-traces.ts).
 */
import { mapLimit } from '../../lib/concurrency.ts';
import { codeMayMoveValue } from './code-analysis.ts';
import { EvmAdapterError, type EvmNode, isUnsupported, type Support } from './node.ts';
import { type EvmBlockHeader, parseQuantity } from './normalize.ts';
import { parityToCallTraces } from './parity-traces.ts';
import { EvmRpcError } from './rpc.ts';
import type { CallFrame, CallTraceEntry, ParityTrace, RpcBlock, RpcTransaction } from './rpc-types.ts';

const CALL_TRACER = { tracer: 'callTracer' } as const;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export interface EvmTraceReader {
  /**
   * Called for every block read, in the order they were asked for (the block reader takes turns); returns
   * the block's chain number, which blockTraces takes.
   */
  linkBlock(header: EvmBlockHeader): number;
  /** callTracer entries of the block; undefined when the node serves no trace method, or no transaction needs one. */
  blockTraces(hexHeight: string, block: RpcBlock, header: EvmBlockHeader, chain: number): Promise<CallTraceEntry[] | undefined>;
}

export function createEvmTraceReader(node: EvmNode): EvmTraceReader {
  const { rpc, concurrency, support } = node;
  // Contracts whose code may move value (always traced), and inert ones by the first height they were seen.
  const mayMoveValue = new Set<string>();
  const inertSince = new Map<string, number>();
  let codeLookups: Support = 'unknown';
  const linked: { chain: number; last?: { height: number; hash: string } } = { chain: 0 };

  /** callTracer entries of the block; undefined when the node serves no trace method, or no transaction needs one. */
  async function blockTraces(hexHeight: string, block: RpcBlock, header: EvmBlockHeader, chain: number): Promise<CallTraceEntry[] | undefined> {
    if (support.parityBlockTraces !== 'unsupported') {
      try {
        const traces = await rpc.request<ParityTrace[]>('trace_block', [hexHeight]);
        support.parityBlockTraces = 'supported';
        // A node that has no traces of the block (pruned) answers null: fetched again, as any other gap.
        if (!Array.isArray(traces)) throw new EvmAdapterError(`trace_block ${hexHeight} at ${rpc.url} returned no traces`);
        return parityToCallTraces(traces);
      } catch (error) {
        if (!isUnsupported(error)) throw error;
        node.markUnsupported('parityBlockTraces', 'trace_block', error);
      }
    }
    if (support.blockTraces !== 'unsupported') {
      try {
        const traces = await rpc.request<CallTraceEntry[]>('debug_traceBlockByNumber', [hexHeight, CALL_TRACER]);
        support.blockTraces = 'supported';
        return traces;
      } catch (error) {
        if (!isUnsupported(error)) throw error;
        node.markUnsupported('blockTraces', 'debug_traceBlockByNumber', error);
      }
    }
    if (support.transactionTraces === 'unsupported') return undefined;
    const transactionIds = await transactionsToTrace(block, header, chain);
    // None can move value below its top frame: no traces, as from a node without tracing (none to read).
    if (transactionIds.length === 0) return undefined;
    const traceOne = async (txHash: string): Promise<CallTraceEntry> => ({
      txHash,
      result: await rpc.request<CallFrame | null>('debug_traceTransaction', [txHash, CALL_TRACER]),
    });
    let first: CallTraceEntry[] = [];
    let rest = transactionIds;
    if (support.transactionTraces === 'unknown') {
      // Probe with one transaction, so a node without tracing costs one call, not one per transaction.
      try {
        first = [await traceOne(transactionIds[0] as string)];
        rest = transactionIds.slice(1);
        support.transactionTraces = 'supported';
      } catch (error) {
        if (!isUnsupported(error)) throw error;
        node.markUnsupported('transactionTraces', 'debug_traceTransaction', error);
        node.logger?.warn(node.log, 'node serves neither debug_traceBlockByNumber nor debug_traceTransaction: blocks will have no internal transfers');
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
        node.logger?.info({ ...node.log, answer: error.nodeMessage }, 'node cannot tell contract code by block hash: every call is traced');
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
   * Called for every block read, in the order they were asked for (readBlock of blocks.ts takes turns): the blocks read
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

  return { linkBlock, blockTraces };
}

/** Bounds the contract verdict caches (oldest dropped first). */
const MAX_REMEMBERED_CONTRACTS = 100_000;

function remember(cache: Set<string> | Map<string, number>, address: string, height?: number): void {
  if (cache instanceof Set) cache.add(address);
  else cache.set(address, height as number);
  if (cache.size > MAX_REMEMBERED_CONTRACTS) cache.delete(cache.keys().next().value as string);
}

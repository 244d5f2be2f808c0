/**
 * Reads a block from a Bitcoin-family node in the richest form the node serves, detected per node, lazily,
 * from its answers:
 *
 * - `getblock <hash> 3` (Core >= 25): transactions with `vin[].prevout` (value, scriptPubKey, height), so
 *   every spending is resolved inline. Core 0.15 to 24 and the forks built on them (Litecoin 0.21, Dash)
 *   answer verbosity 3 as 2 (`verbosity >= 2`): an answer whose spending inputs carry no `prevout` says so.
 * - `getblock <hash> 2`: transaction objects without input amounts (the ledger resolves the spends).
 * - `getblock <hash> true` (verbosity 1: txids) + `getrawtransaction <txid> true <blockhash>` per transaction,
 *   batched (the blockhash argument, Core >= 0.16, works without -txindex). Nodes whose getrawtransaction
 *   takes no blockhash (Dogecoin 1.14, a Core 0.14 fork) get `getrawtransaction <txid> true`, which needs
 *   -txindex there. Verbosity 1 is asked as `true`: it is what boolean-only nodes accept, and every other
 *   node reads `true` as 1.
 *
 * A verbosity is given up only on the node's own "bad verbosity" answer: -8 "Verbosity value out of range"
 * (Core, Bitcoin Cash Node), -8 "Verbosity must be in range from 0 to 2" (zcashd), -1 "JSON value is not a
 * boolean as expected" (Dogecoin 1.14: `verbose` is a boolean). Timeouts, 5xx and every other error are
 * thrown, so a busy node is retried rather than read at a lower verbosity for good.
 */
import type { Logger } from 'pino';
import { mapLimit } from '../../lib/concurrency.ts';
import { UtxoAdapterError } from './errors.ts';
import { type UtxoRpcClient, UtxoRpcError } from './rpc.ts';
import type { RpcBlock, RpcTransaction } from './rpc-types.ts';

export type BlockVerbosity = 1 | 2 | 3;
export type Support = 'unknown' | 'supported' | 'unsupported';

export interface FetchedBlock {
  /** The getblock answer (verbosity 2/3: transaction objects; 1: txids). */
  block: RpcBlock;
  /** Verbosity 1: the getrawtransaction answers of the block's transactions, in block order. */
  transactions?: RpcTransaction[];
  /** 3 when the spending inputs carry their prevout (or the block has none), else what the answer holds. */
  verbosity: BlockVerbosity;
}

export interface BlockFetcher {
  /** The block `hash` (at `height`) as the node serves it best. */
  fetch(hash: string, height: number): Promise<FetchedBlock>;
  /** The verbosity in use; 'unknown' until a block with a spending input was read. */
  verbosity(): 'unknown' | BlockVerbosity;
  /** getrawtransaction's blockhash argument (verbosity-1 nodes only). */
  rawTransactionBlockHash(): Support;
}

export interface BlockFetcherOptions {
  rpc: UtxoRpcClient;
  /** Parallel getrawtransaction batches. */
  concurrency: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
  /** Fields of every log line (chain, redacted node URL). */
  log: Record<string, unknown>;
}

/** getrawtransaction calls per batch request (a batch is one HTTP request and one timeout). */
const RAW_TRANSACTION_BATCH = 50;

/** The node's answer to a verbosity it does not serve (see the module comment). */
export function isBadVerbosity(error: unknown): error is UtxoRpcError {
  if (!(error instanceof UtxoRpcError) || error.kind !== 'rpc') return false;
  return /verbosity/i.test(error.nodeMessage) || /not a boolean|expected type bool/i.test(error.nodeMessage);
}

/** Core 0.14-era getrawtransaction given a third argument: its usage text as a -1 error. */
function isNoBlockHashParameter(error: UtxoRpcError): boolean {
  return error.code === -1 && /^getrawtransaction\s+"?txid"?/i.test(error.nodeMessage);
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Whether the spending inputs of a transaction-object block carry `prevout`: 'all', 'none' (the node read
 * verbosity 3 as 2), or 'nothing' when the block has no spending input (only coinbase and MWEB inputs).
 */
export function prevoutPresence(block: RpcBlock): 'all' | 'none' | 'some' | 'nothing' {
  let with_ = 0;
  let without = 0;
  for (const tx of block.tx ?? []) {
    if (!isObject(tx)) continue;
    for (const vin of Array.isArray(tx.vin) ? tx.vin : []) {
      if (!isObject(vin) || vin.ismweb === true || (vin.coinbase !== undefined && vin.coinbase !== null)) continue;
      if (isObject(vin.prevout)) with_++;
      else without++;
    }
  }
  if (with_ === 0 && without === 0) return 'nothing';
  if (without === 0) return 'all';
  return with_ === 0 ? 'none' : 'some';
}

export function createBlockFetcher(options: BlockFetcherOptions): BlockFetcher {
  const { rpc, logger, log } = options;
  const concurrency = Math.max(1, options.concurrency);
  /** The verbosity to ask first; 'unknown' starts with 3. */
  let level: 'unknown' | BlockVerbosity = 'unknown';
  /** Verbosities the node answered "bad verbosity" to (or read as a lower one): never asked again. */
  let ceiling: BlockVerbosity = 3;
  let withBlockHash: Support = 'unknown';

  function lower(to: BlockVerbosity, from: BlockVerbosity, why: string): void {
    if (ceiling > to) {
      ceiling = to;
      logger?.info({ ...log, answer: why }, `node does not serve getblock verbosity ${from}; using ${to}`);
    }
    if (level === 'unknown' || level > to) level = to;
  }

  async function fetch(hash: string, height: number): Promise<FetchedBlock> {
    let ask: BlockVerbosity = level === 'unknown' ? ceiling : level;
    for (;;) {
      let answer: unknown;
      try {
        answer = await rpc.request<unknown>('getblock', [hash, ask === 1 ? true : ask]);
      } catch (error) {
        if (ask > 1 && isBadVerbosity(error)) {
          const next = (ask - 1) as BlockVerbosity;
          lower(next, ask, error.nodeMessage);
          ask = next;
          continue;
        }
        throw error;
      }
      if (!isObject(answer) || !Array.isArray(answer.tx) || answer.tx.length === 0)
        throw new UtxoAdapterError(`getblock ${hash} at ${rpc.url} answered no block with transactions`);
      const block = answer as RpcBlock;
      const txs = answer.tx as unknown[];
      if (txs.every((t) => typeof t === 'string')) {
        // Txids for verbosity 2 or 3: the node reads the number as `verbose=true`.
        if (ask === 3) {
          lower(2, 3, 'transaction ids only');
          ask = 2;
          continue;
        }
        if (ask === 2) lower(1, 2, 'transaction ids only');
        return { block, transactions: await fetchTransactions(txs as string[], hash, height), verbosity: 1 };
      }
      if (ask !== 3) {
        if (level === 'unknown') level = ask;
        return { block, verbosity: ask };
      }
      const presence = prevoutPresence(block);
      if (presence === 'none') {
        lower(2, 3, 'spending inputs without prevout (read as verbosity 2)');
        return { block, verbosity: 2 };
      }
      if (presence !== 'nothing') level = 3;
      return { block, verbosity: 3 };
    }
  }

  /** The getrawtransaction answers of `txids` (block `hash`), in order, in batches. */
  async function fetchTransactions(txids: string[], hash: string, height: number): Promise<RpcTransaction[]> {
    const chunks: string[][] = [];
    for (let i = 0; i < txids.length; i += RAW_TRANSACTION_BATCH) chunks.push(txids.slice(i, i + RAW_TRANSACTION_BATCH));
    for (;;) {
      const byHash = withBlockHash !== 'unsupported';
      try {
        return (await mapLimit(chunks, concurrency, (chunk) => fetchChunk(chunk, hash, height, byHash))).flat();
      } catch (error) {
        if (!(byHash && error instanceof UtxoRpcError && isNoBlockHashParameter(error))) throw error;
        withBlockHash = 'unsupported';
        logger?.info(
          { ...log, answer: error.nodeMessage.split('\n')[0] },
          'node takes no blockhash in getrawtransaction; looking transactions up without it (needs -txindex)',
        );
      }
    }
  }

  async function fetchChunk(txids: string[], hash: string, height: number, byHash: boolean): Promise<RpcTransaction[]> {
    const answers = await rpc.batch<unknown>(txids.map((id) => ({ method: 'getrawtransaction', params: byHash ? [id, true, hash] : [id, true] })));
    return answers.map((answer, i) => {
      const txid = txids[i] as string;
      if (!answer.ok) {
        const { error } = answer;
        if (isNoBlockHashParameter(error)) throw error;
        // Core never serves the genesis coinbase (it is in no UTXO set): its one output is unspendable.
        if (height === 0 && /genesis block coinbase/i.test(error.nodeMessage)) return { txid, vin: [{ coinbase: '' }], vout: [] };
        if (error.code === -5 && /txindex/i.test(error.nodeMessage))
          throw new UtxoAdapterError(
            `node ${rpc.url} cannot look up the transactions of block ${height}: its getblock lists only transaction ids and its getrawtransaction needs -txindex (start the node with -txindex=1): ${error.nodeMessage}`,
          );
        throw error;
      }
      const tx = answer.result;
      if (!isObject(tx) || typeof tx.txid !== 'string' || tx.txid.toLowerCase() !== txid.toLowerCase())
        throw new UtxoAdapterError(`getrawtransaction ${txid} at ${rpc.url} answered another transaction`);
      if (typeof tx.blockhash === 'string' && tx.blockhash.toLowerCase() !== hash.toLowerCase())
        throw new UtxoAdapterError(`transaction ${txid} of block ${height} (${hash}) is in block ${tx.blockhash} at ${rpc.url}: the node reorganised under us`);
      if (withBlockHash === 'unknown' && byHash) withBlockHash = 'supported';
      return tx as RpcTransaction;
    });
  }

  return {
    fetch,
    verbosity: () => level,
    rawTransactionBlockHash: () => withBlockHash,
  };
}

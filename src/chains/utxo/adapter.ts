/**
 * The ChainAdapter of the Bitcoin-family chains (bitcoin, bitcoin-cash, litecoin, dogecoin, dash, zcash):
 * Bitcoin Core's JSON-RPC (rpc.ts) plus the pure normaliser (normalize.ts). What the node offers is detected
 * per node, lazily, from its answers:
 *
 * - blocks: getblock verbosity 3 (spent outputs inline), else 2, else 1 + getrawtransaction (blocks.ts);
 * - opening balances: scantxoutset, with the outputs spent since the opening height added back on
 *   verbosity-3 nodes (unspent.ts);
 * - Omni tokens on bitcoin: Omni Core's omni_* methods (omni.ts).
 *
 * Blocks are read, parsed and normalised in worker threads when blockWorkers > 0 (block-workers.ts), else
 * on the calling thread; both paths check a block the same way (read-block.ts).
 *
 * Only the node's "not served" answers switch to a fallback; timeouts, 5xx, garbage and answers about
 * another block are thrown, so the follower retries rather than silently degrading.
 */
import type { Logger } from 'pino';
import type { Network } from '../../domain/chains.ts';
import type { ChainAdapter, MempoolReader, NodeHealth, NodeIdentity, NormalizedBlock, TokenMetadataCache, TransactionLocation } from '../types.ts';
import { createBlockWorkerPool } from './block-workers.ts';
import { type BlockVerbosity, createBlockFetcher, type Support } from './blocks.ts';
import { createUtxoDetailsReader } from './details.ts';
import { UtxoAdapterError } from './errors.ts';
import { createUtxoMempoolReader } from './mempool.ts';
import { normalizeUtxoBlock, type UtxoBlockchain } from './normalize.ts';
import { createOmniReader, type OmniReader } from './omni.ts';
import { createBlockReader } from './read-block.ts';
import { createUtxoRpcClient, type UtxoRpcAuth, UtxoRpcError } from './rpc.ts';
import { createUnspentReader } from './unspent.ts';
import { createZmqMempoolReader } from './zmq-mempool.ts';

export type { Support } from './blocks.ts';
export { UtxoAdapterError } from './errors.ts';

export interface UtxoAdapterOptions {
  blockchain: UtxoBlockchain;
  network: Network;
  /** May carry credentials (`http://user:pass@host:port`). */
  rpcUrl: string;
  /** rpcuser/rpcpassword, or the node's cookie file; wins over credentials in the URL. */
  auth?: UtxoRpcAuth;
  /** Omni property metadata is kept here too (the store's token_metadata). */
  tokenMetadataCache?: TokenMetadataCache;
  /** Parallel per-transaction requests (getrawtransaction, omni_gettransaction batches); default 8. */
  concurrency?: number;
  /** Per request; default 10 s (scantxoutset gets minutes). */
  timeoutMs?: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
  /** The node's ZMQ `rawtx` publisher (tcp://host:port): new mempool transactions pushed, polling kept as the safety net. */
  zmqUrl?: string;
  /** With zmqUrl: getrawmempool at least this often; default 30 s. */
  mempoolPollIntervalMs?: number;
  /**
   * Worker threads that read, parse and normalise blocks (block-workers.ts); 0 (the default here): on the
   * calling thread. The service passes the chain's blockWorkers setting (default 1).
   */
  blockWorkers?: number;
  /** The block workers' nice level (block-worker-protocol.ts): background adapters (backfill, replay) run theirs lower. */
  blockWorkerNice?: number;
}

export interface UtxoCapabilities {
  /** getblock verbosity in use: 3 (spent outputs inline), 2, 1 (+ getrawtransaction); 'unknown' until a block with inputs was read. */
  blockVerbosity: 'unknown' | BlockVerbosity;
  /** getrawtransaction's blockhash argument (asked on verbosity-1 nodes only; without it they need -txindex). */
  rawTransactionBlockHash: Support;
  /** scantxoutset (opening balances). */
  scanTxOutSet: Support;
  /** Omni Core; always 'unsupported' on the chains other than bitcoin. */
  omni: Support;
}

export type UtxoAdapter = Required<
  Pick<
    ChainAdapter,
    | 'getHead'
    | 'getNodeHealth'
    | 'getNodeIdentity'
    | 'getBlock'
    | 'getBlockHash'
    | 'findTransaction'
    | 'findTransactions'
    | 'getUnspentOutputs'
    | 'getBlockDetails'
    | 'getTransactionDetails'
    | 'mempool'
    | 'close'
  >
> &
  Pick<ChainAdapter, 'getTokenBalance' | 'tokenMetadata' | 'getFinalizedHeight'> & {
    capabilities(): UtxoCapabilities;
  };

const HASH = /^[0-9a-fA-F]{64}$/;
/** Blocks getFinalizedHeight reads back from the best block at most (a ChainLock follows its block within seconds). */
const CHAINLOCK_WALK = 24;
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Chains whose coin supply stays below 2^26 coins: a JSON number holds any of their amounts to the satoshi. */
const DOUBLE_EXACT_CHAINS: ReadonlySet<UtxoBlockchain> = new Set(['bitcoin', 'bitcoin-cash', 'dash', 'zcash']);

export function createUtxoAdapter(options: UtxoAdapterOptions): UtxoAdapter {
  const { blockchain, network, logger } = options;
  const chain = { blockchain, network };
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const exactAmounts = !DOUBLE_EXACT_CHAINS.has(options.blockchain);
  const rpc = createUtxoRpcClient({ url: options.rpcUrl, auth: options.auth, timeoutMs: options.timeoutMs, exactAmounts });
  const log = { blockchain, network, node: rpc.url };
  const blocks = createBlockFetcher({ rpc, concurrency, logger, log });
  const omni: OmniReader | undefined =
    blockchain === 'bitcoin' ? createOmniReader({ rpc, network, tokenMetadataCache: options.tokenMetadataCache, concurrency, logger, log }) : undefined;

  const reader = createBlockReader(rpc, blocks);
  const { blockHash, fetchBlock, readBlock } = reader;
  const workers =
    (options.blockWorkers ?? 0) > 0
      ? createBlockWorkerPool(
          options.blockWorkers as number,
          {
            blockchain,
            network,
            rpcUrl: options.rpcUrl,
            auth: options.auth,
            timeoutMs: options.timeoutMs,
            exactAmounts,
            concurrency,
            nice: options.blockWorkerNice,
            log,
          },
          logger,
        )
      : undefined;

  /** The block read, checked and normalised in process (blockWorkers 0) or in a worker thread. */
  async function normalizedBlock(height: number): Promise<NormalizedBlock> {
    if (workers) return await workers.getBlock(height);
    const { fetched } = await readBlock(height);
    return normalizeUtxoBlock({ block: fetched.block, transactions: fetched.transactions }, chain);
  }

  /** getblock verbosity in use: the workers' when they read blocks, else the in-process fetcher's. */
  const verbosity = () => (blocks.verbosity() === 'unknown' ? (workers?.dialect()?.verbosity ?? 'unknown') : blocks.verbosity());

  async function getBlock(height: number): Promise<NormalizedBlock> {
    if (!omni) return await normalizedBlock(height);
    // Omni Core is asked about the block by hash; a worker reads the block by height, so its hash is compared.
    const hash = await blockHash(height);
    const read = workers
      ? workers.getBlock(height)
      : fetchBlock(hash, height).then((fetched) => normalizeUtxoBlock({ block: fetched.block, transactions: fetched.transactions }, chain));
    const [normalized, omniTransfers] = await Promise.all([read, omni.blockTransfers(height, hash)]);
    if (normalized.hash !== hash) throw new UtxoAdapterError(`block ${height} changed from ${hash} to ${normalized.hash} at ${rpc.url} while being read`);
    if (omniTransfers.length > 0) {
      // Omni Core answered about the same block (checked by hash in omni.ts); its transactions must be in it.
      const ids = new Set(normalized.transactionIds);
      const stray = omniTransfers.find((t) => !ids.has(t.transactionId));
      if (stray) throw new UtxoAdapterError(`Omni transaction ${stray.transactionId} is not in block ${height} (${hash}) of ${rpc.url}`);
      normalized.tokenTransfers.push(...omniTransfers);
    }
    return normalized;
  }

  async function findTransaction(transactionId: string): Promise<TransactionLocation | undefined> {
    let tx: unknown;
    try {
      tx = await rpc.request<unknown>('getrawtransaction', [transactionId, true]);
    } catch (error) {
      // -5: not in the mempool nor (with -txindex) in a block; without -txindex a mined one is unknown too.
      if (error instanceof UtxoRpcError && error.kind === 'rpc' && error.code === -5) return undefined;
      throw error;
    }
    if (!isObject(tx)) throw new UtxoAdapterError(`getrawtransaction ${transactionId} at ${rpc.url} answered no transaction`);
    const blockhash = tx.blockhash;
    // In the mempool (no blockhash), or in a block off the main chain (confirmations 0).
    if (typeof blockhash !== 'string' || !HASH.test(blockhash)) return undefined;
    if (typeof tx.confirmations === 'number' && tx.confirmations < 1) return undefined;
    let header: unknown;
    try {
      header = await rpc.request<unknown>('getblockheader', [blockhash, true]);
    } catch (error) {
      if (error instanceof UtxoRpcError && error.kind === 'rpc' && error.code === -5) return undefined;
      throw error;
    }
    if (!isObject(header) || typeof header.height !== 'number' || typeof header.hash !== 'string' || !HASH.test(header.hash))
      throw new UtxoAdapterError(`getblockheader ${blockhash} at ${rpc.url} answered no header`);
    if (typeof header.confirmations === 'number' && header.confirmations < 1) return undefined;
    return { height: header.height, hash: header.hash.toLowerCase() };
  }

  /**
   * findTransaction for many: one batch of getrawtransaction, then one batch of getblockheader for the
   * distinct blocks found, whatever the number of transactions (the same answers as findTransaction).
   */
  async function findTransactions(transactionIds: readonly string[]): Promise<(TransactionLocation | undefined)[]> {
    const txs = await rpc.batch<unknown>(transactionIds.map((id) => ({ method: 'getrawtransaction', params: [id, true] })));
    const blockHashes = txs.map((answer, i) => {
      if (!answer.ok) {
        if (answer.code === -5) return undefined;
        throw answer.error;
      }
      const tx = answer.result;
      if (!isObject(tx)) throw new UtxoAdapterError(`getrawtransaction ${transactionIds[i]} at ${rpc.url} answered no transaction`);
      if (typeof tx.blockhash !== 'string' || !HASH.test(tx.blockhash)) return undefined;
      if (typeof tx.confirmations === 'number' && tx.confirmations < 1) return undefined;
      return tx.blockhash;
    });
    const distinct = [...new Set(blockHashes.filter((h) => h !== undefined))];
    const headers = await rpc.batch<unknown>(distinct.map((hash) => ({ method: 'getblockheader', params: [hash, true] })));
    const located = new Map<string, TransactionLocation | undefined>();
    for (const [i, blockhash] of distinct.entries()) {
      const answer = headers[i] as (typeof headers)[number];
      if (!answer.ok) {
        if (answer.code === -5) {
          located.set(blockhash, undefined);
          continue;
        }
        throw answer.error;
      }
      const header = answer.result;
      if (!isObject(header) || typeof header.height !== 'number' || typeof header.hash !== 'string' || !HASH.test(header.hash))
        throw new UtxoAdapterError(`getblockheader ${blockhash} at ${rpc.url} answered no header`);
      located.set(
        blockhash,
        typeof header.confirmations === 'number' && header.confirmations < 1 ? undefined : { height: header.height, hash: header.hash.toLowerCase() },
      );
    }
    return blockHashes.map((h) => (h === undefined ? undefined : located.get(h)));
  }

  async function getHead(): Promise<number> {
    const count = await rpc.request<unknown>('getblockcount', []);
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0)
      throw new UtxoAdapterError(`getblockcount at ${rpc.url} answered ${String(count)}`);
    return count;
  }

  /**
   * getblockchaininfo, one call: the best block (blocks, bestblockhash) and whether the node is in step with
   * its network. Core says initialblockdownload while it catches up; a node whose headers run ahead of its
   * blocks by more than a couple is still downloading blocks it already knows exist (zcashd and older forks
   * lack the flag, so the headers tell for them).
   */
  async function getNodeHealth(): Promise<NodeHealth> {
    const info = await rpc.request<unknown>('getblockchaininfo', []);
    if (!isObject(info) || typeof info.blocks !== 'number' || typeof info.bestblockhash !== 'string' || !HASH.test(info.bestblockhash))
      throw new UtxoAdapterError(`getblockchaininfo at ${rpc.url} answered no best block`);
    const health: NodeHealth = { height: info.blocks, hash: info.bestblockhash.toLowerCase() };
    const headers = typeof info.headers === 'number' ? info.headers : info.blocks;
    if (info.initialblockdownload === true) health.syncing = `initial block download (block ${info.blocks} of ${headers} headers)`;
    else if (headers > info.blocks + 2) health.syncing = `${headers - info.blocks} blocks behind its own headers (block ${info.blocks} of ${headers})`;
    return health;
  }

  /**
   * Dash: the highest ChainLocked block (docs/concepts/confirmations-and-reorganisations.md#finality), by
   * getblock's `chainlock` walking back from the best block: a ChainLock covers the block's ancestors, so
   * the walk stops at the first locked block, or at the last height found (finality only moves forward),
   * or after CHAINLOCK_WALK blocks (a node whose locks lag that far: the last height found stands).
   */
  let chainLocked: number | undefined;
  async function getFinalizedHeight(): Promise<number | undefined> {
    let hash = await rpc.request<unknown>('getbestblockhash', []);
    for (let i = 0; i < CHAINLOCK_WALK && typeof hash === 'string' && HASH.test(hash); i++) {
      const block = await rpc.request<unknown>('getblock', [hash, 1]);
      if (!isObject(block) || typeof block.height !== 'number') throw new UtxoAdapterError(`getblock ${hash} at ${rpc.url} answered no block`);
      if (chainLocked !== undefined && block.height <= chainLocked) break;
      if (block.chainlock === true) {
        chainLocked = block.height;
        break;
      }
      hash = block.previousblockhash;
    }
    return chainLocked;
  }

  /** getblockchaininfo's chain name ('main', 'test', 'regtest', ...) and the hash of block 0. */
  async function getNodeIdentity(): Promise<NodeIdentity> {
    const [info, genesisHash] = await Promise.all([rpc.request<unknown>('getblockchaininfo', []), blockHash(0)]);
    if (!isObject(info) || typeof info.chain !== 'string' || info.chain === '')
      throw new UtxoAdapterError(`getblockchaininfo at ${rpc.url} answered no chain name`);
    return { chainId: info.chain, genesisHash };
  }

  const polling = createUtxoMempoolReader(rpc, chain, concurrency, omni);
  const mempool: MempoolReader = options.zmqUrl
    ? createZmqMempoolReader({
        zmqUrl: options.zmqUrl,
        rpc,
        polling,
        pollIntervalMs: options.mempoolPollIntervalMs,
        logger,
        log: { ...log, zmq: options.zmqUrl },
      })
    : polling;

  const unspent = createUnspentReader({ rpc, chain, readBlock, verbosity, logger, log });

  const adapter: UtxoAdapter = {
    getHead,
    getNodeHealth,
    getNodeIdentity,
    getBlock,
    getBlockHash: blockHash,
    findTransaction,
    findTransactions,
    getUnspentOutputs: (address, height) => unspent.getUnspentOutputs(address, height),
    ...createUtxoDetailsReader(rpc, blockchain),
    mempool,
    capabilities: () => ({
      blockVerbosity: verbosity(),
      rawTransactionBlockHash:
        blocks.rawTransactionBlockHash() === 'unknown' ? (workers?.dialect()?.rawTransactionBlockHash ?? 'unknown') : blocks.rawTransactionBlockHash(),
      scanTxOutSet: unspent.support(),
      omni: omni ? omni.support() : 'unsupported',
    }),
    close: async () => {
      await mempool.close?.();
      await Promise.all([rpc.close(), workers?.close()]);
    },
  };
  if (blockchain === 'dash') adapter.getFinalizedHeight = getFinalizedHeight;
  if (omni) {
    adapter.tokenMetadata = (transfer) => omni.tokenMetadata(transfer);
    adapter.getTokenBalance = (contract, address, height) => omni.getTokenBalance(contract, address, height);
  }
  return adapter;
}

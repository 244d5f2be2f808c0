/**
 * The ChainAdapter of Tron (mainnet, nile): a java-tron full node's HTTP API (rpc.ts) plus the pure
 * normaliser (normalize.ts). What the node offers is detected per node, lazily, on first use:
 *
 * - transaction infos: `gettransactioninfobyblocknum` (one call per block) when served, else
 *   `gettransactioninfobyid` per transaction with bounded concurrency;
 * - historical TRX balances: `getaccountbalance` needs `storage.balance.history.lookup = true`, and a node
 *   without it does not say so: it answers a zero balance. So the block's balance trace is asked first
 *   (`getblockbalance`, which such a node answers "This block does not exist"); without one the balance
 *   is unknown (undefined). A node that turned the lookup on later has traces only of the blocks it
 *   processed since then, and of accounts changed since then (java-tron's own limit: an account untouched
 *   since reads as 0).
 *
 * Internal TRX transfers come from the infos' `internal_transactions`, which java-tron records only with
 * `vm.saveInternalTx = true`; a node without it answers none, which cannot be told from "there were none".
 *
 * Only an answer that says "this path is not served" (TronRpcError kind 'unsupported') switches to a
 * fallback; timeouts, 5xx, `{"Error": ...}` answers and garbage are thrown, so the follower retries
 * rather than silently degrading because the node was busy.
 */

import { sha256 } from '@noble/hashes/sha256';
import { createBase58check, hex } from '@scure/base';
import type { Logger } from 'pino';
import { validateAddress } from '../../domain/addresses.ts';
import { mapLimit } from '../../lib/concurrency.ts';
import { LookupCache } from '../lookup-cache.ts';
import { contractTokenMetadata } from '../token-text.ts';
import type {
  ChainAdapter,
  NodeHealth,
  NodeIdentity,
  NormalizedBlock,
  StoredTokenMetadata,
  TokenMetadata,
  TokenMetadataCache,
  TokenTransfer,
  TransactionLocation,
} from '../types.ts';
import { createTronDetailsReader } from './details.ts';
import { normalizeTronBlock, normalizeTronBlockHeader, parseTronInt, type TronBlockHeader, type TronNetwork, TronNormalizeError } from './normalize.ts';
import { createTronRpcClient, TronRpcError } from './rpc.ts';
import type { TronBlock, TronTransactionInfo } from './rpc-types.ts';

export interface TronAdapterOptions {
  network: TronNetwork;
  /** The node's HTTP API base, e.g. http://127.0.0.1:8090 (see rpc.ts for credentials and keys). */
  rpcUrl: string;
  /** Token metadata is cached here too (the store's token_metadata); memory only without it. */
  tokenMetadataCache?: TokenMetadataCache;
  /** Parallel gettransactioninfobyid requests when the node lacks gettransactioninfobyblocknum; default 8. */
  concurrency?: number;
  /** Per request; default 10 s. */
  timeoutMs?: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
}

export type Support = 'unknown' | 'supported' | 'unsupported';

export interface TronCapabilities {
  /** gettransactioninfobyblocknum; 'unsupported': gettransactioninfobyid per transaction. */
  blockTransactionInfos: Support;
  /**
   * Balance traces (storage.balance.history.lookup), as the last getCoinBalance found them: 'unsupported'
   * when the node had none for the block asked (the lookup is off, or was turned on after that block).
   */
  balanceHistory: Support;
  /** java-tron announces no new blocks: the follower polls. */
  headWatching: 'none';
}

/** A java-tron node whose head block is older than this is taken as syncing (getNodeHealth). */
const STALE_HEAD_SECONDS = 60;

// No findTransactions: Tron's HTTP API has no batches; the already-mined check asks findTransaction one by one.
export type TronAdapter = Required<
  Omit<ChainAdapter, 'watchHeads' | 'getUnspentOutputs' | 'checkReorganisation' | 'reportInconsistency' | 'mempool' | 'findTransactions'>
> & {
  capabilities(): TronCapabilities;
};

/** A consistency check failed (the node answered, but not about the block asked): the follower retries. */
export class TronAdapterError extends Error {
  override name = 'TronAdapterError';
}

/** Function selectors as triggerconstantcontract takes them (it hashes the signature itself). */
const SIGNATURE = { name: 'name()', symbol: 'symbol()', decimals: 'decimals()', balanceOf: 'balanceOf(address)' } as const;
/** Bounds the in-memory metadata cache (oldest dropped first); the database keeps them all. */
const MAX_CACHED_TOKENS = 100_000;
/** getblockbalance's answer for a block without a balance trace (java-tron's ItemNotFoundException). */
const NO_BALANCE_TRACE = /This block does not exist/;
/** triggerconstantcontract on a node with constant calls disabled (vm.supportConstant = false). */
const CONSTANT_CALLS_OFF = /does not support constant/i;
const b58check = createBase58check(sha256);

/** A Tron address (base58 T... or hex 41...) as java-tron's hex form (41 + 20 bytes); throws when it is neither. */
export function tronHexAddress(address: string, network: TronNetwork): string {
  const v = validateAddress('tron', network, address);
  if (!v.ok) throw new TypeError(v.message);
  return hex.encode(b58check.decode(v.normalized));
}

export function createTronAdapter(options: TronAdapterOptions): TronAdapter {
  const { network, tokenMetadataCache, logger } = options;
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const rpc = createTronRpcClient({ url: options.rpcUrl, timeoutMs: options.timeoutMs });
  const caps: { blockTransactionInfos: Support; balanceHistory: Support } = { blockTransactionInfos: 'unknown', balanceHistory: 'unknown' };
  const metadataCache = new LookupCache<StoredTokenMetadata>(MAX_CACHED_TOKENS);
  const log = { blockchain: 'tron', network, node: rpc.url };

  const isUnsupported = (error: unknown): error is TronRpcError => error instanceof TronRpcError && error.kind === 'unsupported';

  /** getblockbynum; undefined when the node does not have the block (`{}`). */
  async function blockByNum(height: number): Promise<TronBlock | undefined> {
    const block = await rpc.post<TronBlock>('wallet/getblockbynum', { num: height });
    if (block === null || typeof block !== 'object' || Array.isArray(block)) {
      throw new TronAdapterError(`getblockbynum ${height} at ${rpc.url} answered ${JSON.stringify(block)?.slice(0, 100)}, not a block`);
    }
    return Object.keys(block).length === 0 ? undefined : block;
  }

  /** The header of a block, its garbage thrown as a TronAdapterError naming the node. */
  function headerOf(block: TronBlock, what: string): TronBlockHeader {
    try {
      return normalizeTronBlockHeader(block);
    } catch (error) {
      if (error instanceof TronNormalizeError) throw new TronAdapterError(`${what} from ${rpc.url}: ${error.message}`, { cause: error });
      throw error;
    }
  }

  async function nowBlock(): Promise<TronBlockHeader> {
    const block = await rpc.post<TronBlock>('wallet/getnowblock');
    if (block === null || typeof block !== 'object' || Array.isArray(block) || Object.keys(block).length === 0) {
      throw new TronAdapterError(`getnowblock at ${rpc.url} answered no block`);
    }
    return headerOf(block, 'getnowblock');
  }

  async function getHead(): Promise<number> {
    return (await nowBlock()).height;
  }

  /**
   * The solidified block (docs/concepts/confirmations-and-reorganisations.md#finality): the solidity API's
   * getnowblock, in the same format as the full node's. TronGrid serves /walletsolidity on the node's URL;
   * a self-hosted java-tron on its solidity port (node.http.solidityPort, 8091), which the URL must reach.
   */
  async function getFinalizedHeight(): Promise<number | undefined> {
    const block = await rpc.post<TronBlock>('walletsolidity/getnowblock');
    if (block === null || typeof block !== 'object' || Array.isArray(block) || Object.keys(block).length === 0) return undefined;
    return headerOf(block, 'walletsolidity/getnowblock').height;
  }

  /**
   * java-tron says nothing as plain as eth_syncing over its HTTP API (getnodeinfo's peer counters do not
   * tell a node catching up from one in step), but its chain does: a block every 3 seconds, whether or not
   * anything happens. A head older than a minute (20 slots) is a node still syncing or cut off from its peers.
   */
  async function getNodeHealth(): Promise<NodeHealth> {
    const head = await nowBlock();
    const age = Math.floor(Date.now() / 1000) - head.timestamp;
    if (age <= STALE_HEAD_SECONDS) return { height: head.height, hash: head.hash };
    return { height: head.height, hash: head.hash, syncing: `its head block is ${age} s old (blocks come every 3 s): syncing or cut off from its peers` };
  }

  /** The id of the node's genesis block (getblockbynum 0): one per Tron network. */
  async function getNodeIdentity(): Promise<NodeIdentity> {
    const genesis = await blockByNum(0);
    if (!genesis) throw new TronAdapterError(`getblockbynum 0 at ${rpc.url} answered no genesis block`);
    return { chainId: headerOf(genesis, 'getblockbynum 0').hash };
  }

  /** The infos of the block's transactions: one call per block, or one per transaction when that is not served. */
  async function fetchInfos(height: number, block: Promise<TronBlock | undefined>): Promise<unknown> {
    if (caps.blockTransactionInfos !== 'unsupported') {
      try {
        const infos = await rpc.post('wallet/gettransactioninfobyblocknum', { num: height });
        caps.blockTransactionInfos = 'supported';
        return infos;
      } catch (error) {
        if (!isUnsupported(error)) throw error;
        logger?.info({ ...log, answer: error.nodeMessage }, 'node does not serve gettransactioninfobyblocknum; asking gettransactioninfobyid per transaction');
        caps.blockTransactionInfos = 'unsupported';
      }
    }
    const b = await block;
    if (b === undefined) return [];
    const ids = headerOf(b, `block ${height}`).transactionIds;
    return await mapLimit(ids, concurrency, async (id) => {
      const info = await rpc.post<TronTransactionInfo>('wallet/gettransactioninfobyid', { value: id });
      // The block lists it, so a mined info must exist: none means the node moved to another chain.
      if (info === null || typeof info !== 'object' || Object.keys(info).length === 0) {
        throw new TronAdapterError(`no transaction info for ${id} of block ${height} at ${rpc.url}`);
      }
      return info;
    });
  }

  async function getBlock(height: number): Promise<NormalizedBlock> {
    const blockRequest = blockByNum(height);
    // Both by height, at once: a node that switches chains between the two answers is caught below.
    const [block, infos] = await Promise.all([blockRequest, fetchInfos(height, blockRequest)]);
    if (block === undefined) throw new TronAdapterError(`block ${height} is not on the node ${rpc.url} (yet)`);
    const header = headerOf(block, `block ${height}`);
    if (header.height !== height) throw new TronAdapterError(`asked ${rpc.url} for block ${height}, got block ${header.height}`);
    // Infos carry no block hash, but their block's time: a block of another branch at this height was
    // made in another slot (Tron's DPoS gives each slot one producer), so its time differs.
    const blockMs = parseTronInt(block.block_header?.raw_data?.timestamp) ?? 0n;
    if (Array.isArray(infos)) {
      for (const info of infos as TronTransactionInfo[]) {
        const ms = info !== null && typeof info === 'object' ? info.blockTimeStamp : undefined;
        if (ms !== undefined && ms !== null && parseTronInt(ms) !== blockMs) {
          throw new TronAdapterError(
            `node ${rpc.url} reorganised under us: the info of ${String(info.id)} is from a block made at ${String(ms)}, block ${height} (${header.hash}) at ${blockMs}`,
          );
        }
      }
    }
    try {
      return normalizeTronBlock({ block, infos: infos as TronTransactionInfo[] }, { network });
    } catch (error) {
      // Infos of transactions the block does not have, or of another height: the node moved between the calls.
      if (error instanceof TronNormalizeError)
        throw new TronAdapterError(`block ${height} (${header.hash}) from ${rpc.url}: ${error.message}`, { cause: error });
      throw error;
    }
  }

  async function findTransaction(transactionId: string): Promise<TransactionLocation | undefined> {
    const id = transactionId.replace(/^0x/, '').toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(id)) throw new TypeError(`not a Tron transaction id: ${transactionId}`);
    const info = await rpc.post<TronTransactionInfo>('wallet/gettransactioninfobyid', { value: id });
    if (info === null || typeof info !== 'object' || Object.keys(info).length === 0) return undefined;
    const number = parseTronInt(info.blockNumber);
    if (number === undefined || number < 0n) return undefined;
    const height = Number(number);
    const block = await blockByNum(height);
    if (block === undefined) throw new TronAdapterError(`transaction ${id} is in block ${height}, which ${rpc.url} does not have`);
    const header = headerOf(block, `block ${height}`);
    // Asked one after the other: the block must still hold the transaction (else the node switched chains).
    if (header.height !== height || !header.transactionIds.includes(id)) {
      throw new TronAdapterError(`node ${rpc.url} reorganised under us: block ${height} (${header.hash}) does not hold transaction ${id}`);
    }
    return { height, hash: header.hash };
  }

  async function getCoinBalance(address: string, height: number): Promise<bigint | undefined> {
    const account = tronHexAddress(address, network);
    const block = await blockByNum(height);
    if (block === undefined) throw new TronAdapterError(`block ${height} is not on the node ${rpc.url} (yet)`);
    const { hash, height: got } = headerOf(block, `block ${height}`);
    if (got !== height) throw new TronAdapterError(`asked ${rpc.url} for block ${height}, got block ${got}`);
    try {
      await rpc.post('wallet/getblockbalance', { hash, number: height });
      caps.balanceHistory = 'supported';
    } catch (error) {
      const noTrace = error instanceof TronRpcError && error.kind === 'node' && NO_BALANCE_TRACE.test(error.nodeMessage);
      if (!noTrace && !isUnsupported(error)) throw error;
      if (caps.balanceHistory !== 'unsupported') {
        logger?.info(
          { ...log, height, answer: (error as TronRpcError).nodeMessage },
          'node keeps no balance history for the block (storage.balance.history.lookup off, or on since a later block): opening balances unknown',
        );
      }
      caps.balanceHistory = 'unsupported';
      return undefined;
    }
    const answer = await rpc.post<{ balance?: unknown; block_identifier?: unknown }>('wallet/getaccountbalance', {
      account_identifier: { address: account },
      block_identifier: { hash, number: height },
    });
    if (answer === null || typeof answer !== 'object' || typeof answer.block_identifier !== 'object' || answer.block_identifier === null) {
      throw new TronAdapterError(`getaccountbalance at ${rpc.url} answered ${JSON.stringify(answer)?.slice(0, 200)}`);
    }
    // Absent: protobuf JSON omits a zero (also an account never activated).
    const balance = answer.balance === undefined ? 0n : parseTronInt(answer.balance);
    if (balance === undefined || balance < 0n) throw new TronAdapterError(`getaccountbalance at ${rpc.url} answered balance ${String(answer.balance)}`);
    return balance;
  }

  /**
   * One triggerconstantcontract call: the returned data (0x hex), or undefined when the contract did not
   * answer (revert, runtime error, no such contract, out of time). Node trouble is thrown.
   */
  async function constantCall(contractHex: string, signature: string, parameter = ''): Promise<string | undefined> {
    const answer = await rpc.post<{
      result?: { result?: boolean; code?: string; message?: string };
      constant_result?: unknown;
      transaction?: { ret?: { ret?: string }[] };
    }>('wallet/triggerconstantcontract', {
      // Any valid address may call a view; the contract itself always is one.
      owner_address: contractHex,
      contract_address: contractHex,
      function_selector: signature,
      parameter,
      visible: false,
    });
    if (answer === null || typeof answer !== 'object' || typeof answer.result !== 'object' || answer.result === null) {
      throw new TronAdapterError(`triggerconstantcontract ${signature} at ${rpc.url} answered ${JSON.stringify(answer)?.slice(0, 200)}`);
    }
    const { result } = answer;
    if (result.result !== true) {
      const message = textOf(result.message);
      // A node configuration, not the contract's answer: thrown, so it is seen and fixed.
      if (CONSTANT_CALLS_OFF.test(message)) throw new TronAdapterError(`triggerconstantcontract at ${rpc.url}: ${message}`);
      // "Smart contract is not exist.", OutOfTimeException and the like: the contract's doing.
      return undefined;
    }
    // Reverts and runtime errors still say result true; the failure is on the transaction and in message.
    if (answer.transaction?.ret?.[0]?.ret === 'FAILED' || (result.message !== undefined && result.message !== '')) return undefined;
    const data = Array.isArray(answer.constant_result) ? answer.constant_result[0] : undefined;
    if (typeof data !== 'string' || !/^([0-9a-fA-F]{2})*$/.test(data)) {
      throw new TronAdapterError(`triggerconstantcontract ${signature} at ${rpc.url}: constant_result is not hex: ${String(data).slice(0, 100)}`);
    }
    return data === '' ? undefined : `0x${data}`;
  }

  /**
   * balanceOf through triggerconstantcontract, which runs on the node's current state only (java-tron has
   * no historical calls): the answer is the balance after block `height` only while `height` is the node's
   * head, checked before and after the call. Any other height (and a head that moved meanwhile) gives
   * undefined: the node cannot tell.
   */
  async function getTokenBalance(contract: string, address: string, height: number): Promise<bigint | undefined> {
    const contractHex = tronHexAddress(contract, network);
    const holder = tronHexAddress(address, network);
    if ((await getHead()) !== height) return undefined;
    const data = await constantCall(contractHex, SIGNATURE.balanceOf, holder.slice(2).padStart(64, '0'));
    if ((await getHead()) !== height) return undefined;
    return data === undefined || data.length < 66 ? undefined : BigInt(data.slice(0, 66));
  }

  /** Same decoding as the EVM tokens: an ABI string or a bytes32, anything else '' (capped, cleaned). */
  function fetchMetadata(contract: string, tokenType: string): Promise<StoredTokenMetadata> {
    const contractHex = tronHexAddress(contract, network);
    return contractTokenMetadata(tokenMetadataCache, { blockchain: 'tron', network, contract }, tokenType, (method) =>
      constantCall(contractHex, SIGNATURE[method]),
    );
  }

  async function tokenMetadata(transfer: TokenTransfer): Promise<TokenMetadata | undefined> {
    const v = validateAddress('tron', network, transfer.contract);
    if (!v.ok) throw new TypeError(v.message);
    const contract = v.normalized;
    // Concurrent transfers of one token share one lookup; a failed one is tried again next time.
    const m = await metadataCache.get(contract, () => fetchMetadata(contract, transfer.tokenType));
    // An NFT's amount is a token id, never scaled: decimals 0 whatever the contract says.
    return { name: m.name, symbol: m.symbol, decimals: transfer.tokenType === 'TRC-721' ? 0 : m.decimals };
  }

  /** getblockbynum alone (no transaction infos): the follower's same-height head check. */
  async function getBlockHash(height: number): Promise<string> {
    const block = await blockByNum(height);
    if (block === undefined) throw new TronAdapterError(`block ${height} is not on the node ${rpc.url} (yet)`);
    const header = headerOf(block, `block ${height}`);
    if (header.height !== height) throw new TronAdapterError(`asked ${rpc.url} for block ${height}, got block ${header.height}`);
    return header.hash;
  }

  return {
    getHead,
    getFinalizedHeight,
    getNodeHealth,
    getNodeIdentity,
    getBlockHash,
    // Reading ahead while the follower applies a block is the follower's job (src/ingest/prefetch.ts).
    getBlock,
    findTransaction,
    getCoinBalance,
    getTokenBalance,
    tokenMetadata,
    ...createTronDetailsReader(rpc, network, concurrency),
    capabilities: () => ({ ...caps, headWatching: 'none' }),
    close: () => rpc.close(),
  };
}

/** result.message of triggerconstantcontract: hex bytes with visible false (as asked), text otherwise. */
function textOf(message: unknown): string {
  if (typeof message !== 'string') return '';
  return /^([0-9a-fA-F]{2})+$/.test(message) ? Buffer.from(message, 'hex').toString('utf8') : message;
}

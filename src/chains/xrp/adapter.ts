/**
 * The ChainAdapter of the XRP Ledger: rippled JSON-RPC (rpc.ts) plus the pure normaliser (normalize.ts).
 *
 * Validated ledgers only. A closed ledger that is not validated yet may still be replaced by the one the
 * network validates; a validated ledger never changes. So the head is the latest validated ledger and
 * getBlock refuses anything else: the follower never sees a ledger that can be undone, and XRP has no
 * reorganisations to handle (its parent-hash check still runs, and never fires).
 *
 * Large ledgers: rippled's `ledger` command has no marker or limit for the transaction list (only
 * `ledger_data` pages, and `full`/`accounts` are admin-only); with `transactions` and `expand` it returns
 * every transaction of the ledger with its metadata in one answer. Nothing to page.
 *
 * The API version is not pinned: rippled answers in its default (v1 today), and the normaliser reads both
 * the v1 and the v2 shapes, so a server that changes its default keeps working.
 */
import type { Logger } from 'pino';
import { validateAddress } from '../../domain/addresses.ts';
import type { Network } from '../../domain/chains.ts';
import type { ChainAdapter, NodeHealth, NodeIdentity, NormalizedBlock, TransactionLocation } from '../types.ts';
import { createXrpDetailsReader } from './details.ts';
import { ledgerFromResponse, normalizeXrpLedger, normalizeXrpLedgerHeader } from './normalize.ts';
import { createRippledClient, isRippledError } from './rpc.ts';
import type { RpcLedgerResult, RpcTransactionFields } from './rpc-types.ts';

export interface XrpAdapterOptions {
  network: Network;
  rpcUrl: string;
  /** Per request; default 10 s. */
  timeoutMs?: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
}

export type XrpAdapter = Required<
  Pick<
    ChainAdapter,
    | 'getHead'
    | 'getNodeHealth'
    | 'getNodeIdentity'
    | 'getBlock'
    | 'getBlockHash'
    | 'findTransaction'
    | 'getCoinBalance'
    | 'getBlockDetails'
    | 'getTransactionDetails'
    | 'close'
  >
>;

/** The node answered, but not with what was asked (not validated yet, another ledger): the follower retries. */
export class XrpAdapterError extends Error {
  override name = 'XrpAdapterError';
}

/** `tx` result: API v1 has the transaction's fields at the top, v2 nests them in `tx_json`. */
interface RpcTxResult extends RpcTransactionFields {
  tx_json?: RpcTransactionFields & { ledger_index?: unknown };
  ledger_index?: unknown;
  /** v1 alias of ledger_index. */
  inLedger?: unknown;
  /** v2 (and some v1 servers): the hash of the ledger holding the transaction. */
  ledger_hash?: unknown;
  validated?: boolean;
}

/** `account_info` result. */
interface RpcAccountInfoResult {
  account_data?: { Balance?: unknown; Account?: unknown };
  ledger_index?: unknown;
  validated?: boolean;
}

const HASH = /^[0-9a-fA-F]{64}$/;
const DROPS = /^\d{1,20}$/;
/** rippled's server states in step with the network (server_info). */
const IN_SYNC_STATES = new Set(['full', 'validating', 'proposing']);

function ledgerIndex(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

export function createXrpAdapter(options: XrpAdapterOptions): XrpAdapter {
  const { network, logger } = options;
  const chain = { network };
  const rpc = createRippledClient({ url: options.rpcUrl, timeoutMs: options.timeoutMs });
  const log = { blockchain: 'xrp', network, node: rpc.url };

  /**
   * The latest validated ledger, from `ledger` with ledger_index "validated" rather than from server_info's
   * validated_ledger.seq: rippled refuses the shortcut (noNetwork / notSynced) when its last validated ledger
   * is too old (the server lost sync), where server_info would still print the stale number and leave the
   * staleness check to us; and Clio serves `ledger` with the same shape while its server_info differs.
   */
  async function getHead(): Promise<number> {
    const result = await rpc.request<RpcLedgerResult>('ledger', { ledger_index: 'validated' });
    const height = ledgerIndex(result.ledger_index) ?? ledgerIndex(result.ledger?.ledger_index);
    if (result.validated !== true || height === undefined) {
      throw new XrpAdapterError(`${rpc.url} answered ledger "validated" without a validated ledger index (validated: ${String(result.validated)})`);
    }
    return height;
  }

  /**
   * server_info's server_state beside the validated head. rippled is in step with the network in 'full',
   * 'validating' and 'proposing'; 'disconnected', 'connected', 'syncing' and 'tracking' are a server that
   * is still catching up or has lost it. A server without server_state (Clio) is taken at its head's word.
   */
  async function getNodeHealth(): Promise<NodeHealth> {
    const [info, head] = await Promise.allSettled([rpc.request<{ info?: Record<string, unknown> }>('server_info'), validatedHead()]);
    const state = info.status === 'fulfilled' ? info.value.info?.server_state : undefined;
    const syncing = typeof state === 'string' && !IN_SYNC_STATES.has(state) ? `server_state is '${state}'` : undefined;
    if (head.status === 'fulfilled') return syncing ? { ...head.value, syncing } : head.value;
    // No validated ledger (rippled refuses it while out of sync): the state says why, if it can.
    const validated = info.status === 'fulfilled' ? (info.value.info?.validated_ledger as { seq?: unknown; hash?: unknown } | undefined) : undefined;
    const seq = ledgerIndex(validated?.seq);
    if (syncing && seq !== undefined && typeof validated?.hash === 'string' && HASH.test(validated.hash))
      return { height: seq, hash: validated.hash.toUpperCase(), syncing };
    throw head.reason;
  }

  /**
   * server_info's network_id: rippled prints the [network_id] it was configured with (0 main, 1 testnet, 2
   * devnet, or a number), and nothing without one, which is the main network (its default peers).
   */
  async function getNodeIdentity(): Promise<NodeIdentity> {
    const result = await rpc.request<{ info?: Record<string, unknown> }>('server_info');
    if (typeof result?.info !== 'object' || result.info === null) throw new XrpAdapterError(`${rpc.url} answered server_info without info`);
    const id = result.info.network_id;
    if (id === undefined) return { chainId: '0' };
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0)
      throw new XrpAdapterError(`${rpc.url} answered server_info with network_id ${JSON.stringify(id)?.slice(0, 60)}, not a network id`);
    return { chainId: String(id) };
  }

  /** The latest validated ledger's index and hash (the header only: no transactions asked). */
  async function validatedHead(): Promise<{ height: number; hash: string }> {
    const result = await rpc.request<RpcLedgerResult>('ledger', { ledger_index: 'validated' });
    const height = ledgerIndex(result.ledger_index) ?? ledgerIndex(result.ledger?.ledger_index);
    const hash = result.ledger_hash ?? result.ledger?.ledger_hash ?? result.ledger?.hash;
    if (result.validated !== true || height === undefined || typeof hash !== 'string' || !HASH.test(hash))
      throw new XrpAdapterError(`${rpc.url} answered ledger "validated" without a validated ledger's index and hash`);
    return { height, hash: hash.toUpperCase() };
  }

  async function getBlock(height: number): Promise<NormalizedBlock> {
    // lgrNotFound (not there yet, or history deleted) and every other error are thrown: the follower retries.
    const result = await rpc.request('ledger', { ledger_index: height, transactions: true, expand: true });
    const { ledger, validated } = ledgerFromResponse(result);
    if (validated !== true) {
      throw new XrpAdapterError(`ledger ${height} at ${rpc.url} is not validated yet (a closed ledger may still be replaced); retrying later`);
    }
    const block = normalizeXrpLedger(ledger, chain);
    if (block.height !== height) throw new XrpAdapterError(`asked ${rpc.url} for ledger ${height}, got ledger ${block.height}`);
    return block;
  }

  /** Hash of validated ledger `height`, checked to hold `transactionId`. */
  async function validatedLedgerHolding(height: number, transactionId: string): Promise<string | undefined> {
    // Hashes only (no expand): a cheap answer that still lets us check the transaction is in it.
    const { ledger, validated } = ledgerFromResponse(await rpc.request('ledger', { ledger_index: height, transactions: true }));
    if (validated !== true) return undefined;
    const header = normalizeXrpLedgerHeader(ledger);
    if (header.height !== height) throw new XrpAdapterError(`asked ${rpc.url} for ledger ${height}, got ledger ${header.height}`);
    if (!header.transactionIds.includes(transactionId)) {
      throw new XrpAdapterError(`${rpc.url} says ${transactionId} is in validated ledger ${height}, but that ledger does not list it`);
    }
    return header.hash;
  }

  async function findTransaction(transactionId: string): Promise<TransactionLocation | undefined> {
    const id = transactionId.toUpperCase();
    let result: RpcTxResult;
    try {
      result = await rpc.request<RpcTxResult>('tx', { transaction: id, binary: false });
    } catch (error) {
      if (isRippledError(error, 'txnNotFound')) return undefined;
      throw error;
    }
    // Not validated: pending, or in a closed ledger that may still be replaced. The follower reports it
    // once its ledger is validated.
    if (result.validated !== true) return undefined;
    const hash = typeof result.hash === 'string' ? result.hash : result.tx_json?.hash;
    if (typeof hash !== 'string' || hash.toUpperCase() !== id) throw new XrpAdapterError(`asked ${rpc.url} for transaction ${id}, got ${String(hash)}`);
    const height = ledgerIndex(result.ledger_index) ?? ledgerIndex(result.tx_json?.ledger_index) ?? ledgerIndex(result.inLedger);
    if (height === undefined) throw new XrpAdapterError(`${rpc.url} says transaction ${id} is validated but gives no ledger index`);
    // API v1 answers carry no ledger hash: the ledger is asked for it.
    const ledgerHash =
      typeof result.ledger_hash === 'string' && HASH.test(result.ledger_hash) ? result.ledger_hash.toUpperCase() : await validatedLedgerHolding(height, id);
    return ledgerHash === undefined ? undefined : { height, hash: ledgerHash };
  }

  async function getCoinBalance(address: string, height: number): Promise<bigint | undefined> {
    const checked = validateAddress('xrp', network, address);
    if (!checked.ok) throw new TypeError(checked.message);
    let result: RpcAccountInfoResult;
    try {
      result = await rpc.request<RpcAccountInfoResult>('account_info', { account: checked.normalized, ledger_index: height });
    } catch (error) {
      // The account did not exist at that ledger: its balance was zero (final once the ledger is validated).
      if (isRippledError(error, 'actNotFound') && error.answer?.validated !== false) return 0n;
      if (isRippledError(error, 'lgrNotFound')) return await missingLedger(height, error);
      throw error;
    }
    if (result.validated !== true) throw new XrpAdapterError(`account_info at ledger ${height} from ${rpc.url} is not from a validated ledger`);
    const answered = ledgerIndex(result.ledger_index);
    if (answered !== height) throw new XrpAdapterError(`asked ${rpc.url} for account_info at ledger ${height}, got ledger ${String(answered)}`);
    const balance = result.account_data?.Balance;
    if (typeof balance !== 'string' || !DROPS.test(balance))
      throw new XrpAdapterError(`account_info from ${rpc.url} has no balance in drops: ${String(balance)}`);
    return BigInt(balance);
  }

  /**
   * lgrNotFound for a balance lookup. Below the node's validated head the ledger will not come back
   * (history deleted by online_delete, or never fetched): the balance cannot be told. Above it the node is
   * behind (e.g. another server of a pool): thrown, so the lookup is retried.
   */
  async function missingLedger(height: number, error: Error): Promise<undefined> {
    const head = await getHead();
    if (height > head) throw error;
    logger?.warn({ ...log, height, validatedHead: head }, 'the node no longer has this ledger (history deleted?): balance unknown');
    return undefined;
  }

  /** Transaction hashes only, no expansion; validated ledgers are final, so this rarely tells anything new. */
  async function getBlockHash(height: number): Promise<string> {
    const { ledger, validated } = ledgerFromResponse(await rpc.request('ledger', { ledger_index: height, transactions: true }));
    if (validated !== true) throw new XrpAdapterError(`ledger ${height} at ${rpc.url} is not validated yet; retrying later`);
    const header = normalizeXrpLedgerHeader(ledger);
    if (header.height !== height) throw new XrpAdapterError(`asked ${rpc.url} for ledger ${height}, got ledger ${header.height}`);
    return header.hash;
  }

  return {
    getHead,
    getNodeHealth,
    getNodeIdentity,
    getBlock,
    getBlockHash,
    findTransaction,
    getCoinBalance,
    ...createXrpDetailsReader(rpc),
    close: () => rpc.close(),
  };
}

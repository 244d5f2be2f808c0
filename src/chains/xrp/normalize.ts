/**
 * Pure XRP Ledger normaliser: turns a rippled `ledger` result (`transactions: true, expand: true`) into the
 * chain-independent NormalizedBlock. No I/O.
 *
 * Rules (see also section 5 of the recorded fixtures' README and docs/reference/events/README.md):
 * - Header: height = `ledger_index` (a string in API v1, a number in API v2; both accepted), hash =
 *   `ledger_hash` (or `hash`; both present and different throws), parentHash = `parent_hash`, timestamp =
 *   `close_time` + 946684800 (Ripple epoch 2000-01-01 → Unix seconds). Hashes and transaction ids are
 *   upper-case hex, as rippled prints them and as validateTransactionId normalises XRP ids. An open
 *   ledger (`closed: false`), a malformed header, a hash-only ledger given to normalizeXrpLedger or a
 *   transaction without metadata throws XrpNormalizeError: the caller should refetch (normalising half a
 *   ledger would lose ledger entries).
 * - transactionIds: every transaction of the ledger, in the node's order (rippled lists them in
 *   transaction-tree order, i.e. by hash, not by TransactionIndex), whatever its result. A validated
 *   ledger holds only `tesSUCCESS` and `tec…` transactions; a `tec…` transaction is final (its fee is
 *   burnt, its sequence consumed, it can never be applied again), so it is "mined" for TRANSACTION_MINED,
 *   as a reverted EVM transaction is.
 * - coinMovements (drops): derived from the metadata, not from the transaction type: every AccountRoot
 *   entry in `AffectedNodes` whose `Balance` changed gives `FinalFields.Balance − PreviousFields.Balance`
 *   (CreatedNode: `NewFields.Balance` from 0; a DeletedNode's final balance is in its FinalFields). One net
 *   entry per address and transaction, zero nets omitted, in the order the addresses first appear in
 *   `AffectedNodes`. This is exact for every transaction type, including the ones a type-based rule gets
 *   wrong: cross-currency payments bridged through XRP, offers crossing XRP, payment-channel claims,
 *   escrows, account deletion, AMM; it uses what a Payment really delivered (partial payments, even where
 *   `delivered_amount` is "unavailable"), and it includes the fee, which the sending account pays for every
 *   transaction in the ledger whatever its result (rippled claims the fee for `tec…` results too). The
 *   type-based rule (fee from Account; on `tesSUCCESS` an XRP Payment moves the delivered amount from
 *   Account to Destination) is xrpPaymentRuleChanges, kept as an independent cross-check for the tests.
 *   Only AccountRoot balances count: XRP held by escrows and payment channels is in no account until it
 *   is released, so a ledger's movements sum to −fees only when no escrow or channel changed.
 * - tokenTransfers and internalTransfers are always empty: issued currencies (IOUs) are none of the
 *   contract's token types, and XRP has no internal transactions.
 * - Unknown transaction types never throw: the metadata rule does not look at the type.
 */

import type { Network } from '../../domain/chains.ts';
import type { CoinMovement, NormalizedBlock } from '../types.ts';
import type {
  RpcAffectedNodeBody,
  RpcAmount,
  RpcLedger,
  RpcLedgerEntryFields,
  RpcLedgerResult,
  RpcLedgerTransaction,
  RpcTransactionFields,
  RpcTransactionMeta,
} from './rpc-types.ts';

/** Seconds between the Unix epoch and the Ripple epoch (2000-01-01T00:00:00Z). */
export const RIPPLE_EPOCH_OFFSET = 946_684_800;

/** Payment flag: the payment may deliver less than `Amount`; only `delivered_amount` tells what arrived. */
export const TF_PARTIAL_PAYMENT = 0x0002_0000;

export interface XrpChain {
  network: Network;
}

export class XrpNormalizeError extends Error {
  override name = 'XrpNormalizeError';
}

/** An error answer of rippled (`lgrNotFound`, `txnNotFound`, `noNetwork`, ...), with its code. */
export class RippledError extends Error {
  override name = 'RippledError';
  constructor(
    /** rippled's error token, e.g. `lgrNotFound`. */
    readonly code: string,
    /** rippled's numeric error code, when given. */
    readonly errorCode: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

const HASH = /^[0-9a-fA-F]{64}$/;
const DROPS = /^\d{1,20}$/;
const INDEX = /^\d{1,16}$/;

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject => value !== null && typeof value === 'object' && !Array.isArray(value);

function shown(value: unknown): string {
  const s = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

function rippledError(body: JsonObject): RippledError {
  const err = body.error;
  if (isObject(err)) {
    // JSON-RPC 2.0 style error object, as some hosted gateways send.
    const code = typeof err.code === 'number' || typeof err.code === 'string' ? String(err.code) : 'error';
    return new RippledError(code, typeof err.code === 'number' ? err.code : undefined, `rippled error ${code}: ${shown(err.message ?? err)}`);
  }
  const code = typeof err === 'string' ? err : 'error';
  const errorCode = typeof body.error_code === 'number' ? body.error_code : undefined;
  const detail = typeof body.error_message === 'string' ? body.error_message : typeof body.error_exception === 'string' ? body.error_exception : '';
  return new RippledError(code, errorCode, `rippled error ${code}${errorCode === undefined ? '' : ` (${errorCode})`}${detail ? `: ${detail}` : ''}`);
}

const isErrorBody = (body: JsonObject): boolean => body.status === 'error' || body.error !== undefined;

/**
 * The `result` of a rippled answer, whichever way it came: WebSocket `{id, status, type, result}`, HTTP
 * JSON-RPC `{result: {..., status}}`, or an already bare result object (returned as is). Error answers
 * (`status: "error"`, an `error` field, at either level) throw RippledError with rippled's code (e.g.
 * `lgrNotFound`); anything that is not a JSON object throws XrpNormalizeError.
 */
export function unwrapRippledResult<T extends object = JsonObject>(json: unknown): T {
  if (!isObject(json)) throw new XrpNormalizeError(`rippled answer is not a JSON object: ${shown(json)}`);
  if (isErrorBody(json)) throw rippledError(json);
  if ('result' in json) {
    const result = json.result;
    if (!isObject(result)) throw new XrpNormalizeError(`rippled answer has a result that is not an object: ${shown(result)}`);
    if (isErrorBody(result)) throw rippledError(result);
    return result as T;
  }
  if (json.type === 'response') throw new XrpNormalizeError('rippled response has no result');
  return json as T;
}

/**
 * The ledger object of a `ledger` answer (any envelope of unwrapRippledResult, or the bare ledger object)
 * and whether the node called it validated (undefined when the answer does not say, e.g. a bare ledger).
 * Only a validated ledger is final on the XRP Ledger.
 */
export function ledgerFromResponse(json: unknown): { ledger: RpcLedger; validated: boolean | undefined } {
  const result = unwrapRippledResult<RpcLedgerResult>(json);
  if ('ledger' in result) {
    if (!isObject(result.ledger)) throw new XrpNormalizeError(`ledger result has a ledger that is not an object: ${shown(result.ledger)}`);
    return { ledger: result.ledger, validated: typeof result.validated === 'boolean' ? result.validated : undefined };
  }
  if ('ledger_index' in result && ('ledger_hash' in result || 'hash' in result) && 'parent_hash' in result) {
    return { ledger: result as RpcLedger, validated: typeof result.validated === 'boolean' ? result.validated : undefined };
  }
  throw new XrpNormalizeError('rippled answer is neither a ledger result nor a ledger object');
}

function requireHash(value: unknown, what: string): string {
  if (typeof value !== 'string' || !HASH.test(value)) throw new XrpNormalizeError(`${what} is not a 32-byte hex hash: ${shown(value)}`);
  return value.toUpperCase();
}

/** A ledger index or other unsigned integer, as a number or a decimal string. */
function requireIndex(value: unknown, what: string): number {
  const n = typeof value === 'string' && INDEX.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new XrpNormalizeError(`${what} is not an unsigned integer: ${shown(value)}`);
  return n;
}

/** Drops (a decimal string) → bigint. */
function parseDrops(value: unknown, what: string): bigint {
  if (typeof value !== 'string' || !DROPS.test(value)) throw new XrpNormalizeError(`${what} is not an amount of drops: ${shown(value)}`);
  return BigInt(value);
}

export interface XrpLedgerHeader {
  height: number;
  hash: string;
  parentHash: string;
  /** Unix seconds. */
  timestamp: number;
  transactionIds: string[];
}

/** Header part of a ledger object; accepts `transactions` as hashes (`expand: false`) or expanded. */
export function normalizeXrpLedgerHeader(ledger: RpcLedger): XrpLedgerHeader {
  if (!isObject(ledger)) throw new XrpNormalizeError('ledger is not an object');
  if (ledger.closed === false) throw new XrpNormalizeError('ledger is not closed (an open ledger has no final contents)');
  const hash = requireHash(ledger.ledger_hash ?? ledger.hash, 'ledger hash');
  if (ledger.ledger_hash !== undefined && ledger.hash !== undefined && requireHash(ledger.hash, 'ledger hash') !== hash) {
    throw new XrpNormalizeError(`ledger has two different hashes: ledger_hash ${shown(ledger.ledger_hash)}, hash ${shown(ledger.hash)}`);
  }
  const closeTime = requireIndex(ledger.close_time, 'ledger close_time');
  const txs = ledger.transactions;
  if (!Array.isArray(txs)) throw new XrpNormalizeError('ledger has no transactions array (request it with transactions: true)');
  const transactionIds = txs.map((tx, i) => requireHash(typeof tx === 'string' ? tx : transactionHash(tx), `transaction ${i} hash`));
  if (new Set(transactionIds).size !== transactionIds.length) throw new XrpNormalizeError('ledger lists a transaction twice');
  return {
    height: requireIndex(ledger.ledger_index, 'ledger_index'),
    hash,
    parentHash: requireHash(ledger.parent_hash, 'ledger parent_hash'),
    timestamp: closeTime + RIPPLE_EPOCH_OFFSET,
    transactionIds,
  };
}

function transactionHash(entry: unknown): unknown {
  if (!isObject(entry)) return undefined;
  return entry.hash ?? (isObject(entry.tx_json) ? entry.tx_json.hash : undefined);
}

/** One transaction with its metadata, read from any of rippled's shapes. */
export interface XrpTransaction {
  /** Upper-case hex hash. */
  id: string;
  type: string;
  account: string;
  /** Drops burnt, whatever the result. */
  fee: bigint;
  /** `tesSUCCESS` or a `tec…` code. */
  result: string;
  /** The transaction's own fields (Amount, Destination, Flags, ...). */
  fields: RpcTransactionFields;
  meta: RpcTransactionMeta;
}

/**
 * Reads one transaction with its metadata from: an expanded ledger's element (API v1: fields + `metaData`;
 * API v2: `tx_json` + `meta` + `hash`), a `tx` result (v1: fields + `meta`; v2: `tx_json` + `meta`), a
 * `transaction_entry` result (`tx_json` + `metadata`), an `account_tx` element (`tx` + `meta`) or a
 * `transaction` stream message (`transaction` + `meta`). Throws XrpNormalizeError when the hash, the
 * account, the fee, the type, the result or the metadata is missing or malformed.
 */
export function readXrpTransaction(entry: RpcLedgerTransaction | JsonObject): XrpTransaction {
  if (!isObject(entry)) throw new XrpNormalizeError('transaction is not an object');
  const nested = [entry.tx_json, entry.tx, entry.transaction].find(isObject);
  const fields = (nested ?? entry) as RpcTransactionFields;
  const id = requireHash(entry.hash ?? fields.hash, 'transaction hash');
  const meta = [entry.meta, entry.metaData, entry.metadata].find(isObject) as RpcTransactionMeta | undefined;
  if (meta === undefined) throw new XrpNormalizeError(`transaction ${id} has no metadata (fetch the ledger with expand: true and binary: false)`);
  if (!Array.isArray(meta.AffectedNodes)) throw new XrpNormalizeError(`metadata of ${id} has no AffectedNodes array`);
  const result = meta.TransactionResult;
  if (typeof result !== 'string' || result === '') throw new XrpNormalizeError(`metadata of ${id} has no TransactionResult`);
  const type = fields.TransactionType;
  if (typeof type !== 'string' || type === '') throw new XrpNormalizeError(`transaction ${id} has no TransactionType`);
  const account = requireAddress(fields.Account, `Account of ${id}`);
  const fee = parseDrops(fields.Fee, `Fee of ${id}`);
  return { id, type, account, fee, result, fields, meta };
}

/** A classic address in the XRP base58 alphabet (r..., 25 to 35 characters). */
const CLASSIC_ADDRESS = /^r[1-9A-HJ-NP-Za-km-z]{24,34}$/;

/**
 * An account of a validated ledger. Its shape is checked, its checksum is not: rippled printed it from the
 * account id, and a full check (base58 decode, two SHA-256) costs ~9 µs, most of the time of normalising a
 * 1,000-transaction ledger. A classic address is its own normalised form (validateAddress keeps it as given).
 */
function requireAddress(value: unknown, what: string): string {
  if (typeof value === 'string' && CLASSIC_ADDRESS.test(value)) return value;
  throw new XrpNormalizeError(`${what} is not a classic XRP address: ${shown(value)}`);
}

function accountRootChange(kind: string, node: RpcAffectedNodeBody, where: string): { account: unknown; delta: bigint } | undefined {
  if (kind === 'CreatedNode') {
    const fields: RpcLedgerEntryFields | undefined = node.NewFields;
    if (!isObject(fields)) throw new XrpNormalizeError(`${where}: created AccountRoot without NewFields`);
    return { account: fields.Account, delta: parseDrops(fields.Balance ?? '0', `${where} Balance`) };
  }
  // A ModifiedNode without FinalFields changed only its threading fields (PreviousTxnID): no balance change.
  const final = node.FinalFields;
  const previous = isObject(node.PreviousFields) ? node.PreviousFields.Balance : undefined;
  if (final === undefined && previous === undefined) return undefined;
  if (!isObject(final)) throw new XrpNormalizeError(`${where}: FinalFields is missing or not an object`);
  if (previous === undefined) return undefined;
  const delta = parseDrops(final.Balance, `${where} final Balance`) - parseDrops(previous, `${where} previous Balance`);
  return { account: final.Account, delta };
}

const NODE_KINDS = ['CreatedNode', 'ModifiedNode', 'DeletedNode'] as const;

/**
 * XRP balance changes of one transaction, from its metadata: address → drops (zero changes omitted, in
 * order of first appearance). Includes the fee. Non-AccountRoot entries (offers, trust lines, escrows, ...)
 * are ignored; a malformed AccountRoot entry throws XrpNormalizeError.
 */
export function xrpBalanceChanges(meta: RpcTransactionMeta): Map<string, bigint> {
  if (!isObject(meta) || !Array.isArray(meta.AffectedNodes)) throw new XrpNormalizeError('metadata has no AffectedNodes array');
  const changes = new Map<string, bigint>();
  meta.AffectedNodes.forEach((affected, i) => {
    if (!isObject(affected)) throw new XrpNormalizeError(`AffectedNodes[${i}] is not an object`);
    const kind = NODE_KINDS.find((k) => k in affected);
    const node = kind === undefined ? undefined : affected[kind];
    if (kind === undefined || !isObject(node)) throw new XrpNormalizeError(`AffectedNodes[${i}] is not a Created, Modified or DeletedNode`);
    if (node.LedgerEntryType !== 'AccountRoot') return;
    const where = `AffectedNodes[${i}] (${kind} AccountRoot)`;
    const change = accountRootChange(kind, node, where);
    if (change === undefined || change.delta === 0n) return;
    const address = requireAddress(change.account, `${where} Account`);
    changes.set(address, (changes.get(address) ?? 0n) + change.delta);
  });
  for (const [address, delta] of changes) if (delta === 0n) changes.delete(address);
  return changes;
}

const isDrops = (amount: unknown): amount is string => typeof amount === 'string' && DROPS.test(amount);

/**
 * Drops an XRP Payment delivered: `delivered_amount` (or the stored `DeliveredAmount`) when the metadata
 * has it, else `Amount` (`DeliverMax` in API v2) unless the partial-payment flag is set (then unknown).
 * Undefined for non-Payments, issued-currency payments and failed (`tec…`) payments.
 */
export function xrpDeliveredDrops(fields: RpcTransactionFields, meta: RpcTransactionMeta): bigint | undefined {
  if (fields.TransactionType !== 'Payment' || meta.TransactionResult !== 'tesSUCCESS') return undefined;
  const amount: RpcAmount | undefined = fields.Amount ?? fields.DeliverMax;
  if (!isDrops(amount)) return undefined;
  const delivered = meta.delivered_amount !== undefined && meta.delivered_amount !== 'unavailable' ? meta.delivered_amount : meta.DeliveredAmount;
  if (delivered !== undefined) return isDrops(delivered) ? BigInt(delivered) : undefined;
  const flags = typeof fields.Flags === 'number' ? fields.Flags : 0;
  return (flags & TF_PARTIAL_PAYMENT) !== 0 ? undefined : BigInt(amount);
}

/**
 * The type-based rule, for cross-checks: Account pays the fee for every transaction; a successful XRP
 * Payment moves what it delivered from Account to Destination; nothing else moves XRP. Exact for fee-only
 * transactions and direct XRP payments, wrong for everything that moves XRP otherwise (see the header).
 * Throws when a partial XRP payment does not say what it delivered.
 */
export function xrpPaymentRuleChanges(tx: XrpTransaction): Map<string, bigint> {
  const changes = new Map<string, bigint>();
  const add = (address: string, delta: bigint) => changes.set(address, (changes.get(address) ?? 0n) + delta);
  add(tx.account, -tx.fee);
  const amount = tx.fields.Amount ?? tx.fields.DeliverMax;
  if (tx.type === 'Payment' && tx.result === 'tesSUCCESS' && isDrops(amount)) {
    const delivered = xrpDeliveredDrops(tx.fields, tx.meta);
    if (delivered === undefined) throw new XrpNormalizeError(`partial payment ${tx.id} does not say what it delivered`);
    add(tx.account, -delivered);
    add(requireAddress(tx.fields.Destination, `Destination of ${tx.id}`), delivered);
  }
  for (const [address, delta] of changes) if (delta === 0n) changes.delete(address);
  return changes;
}

/**
 * A ledger object of `ledger` with `transactions: true, expand: true` (see the file header for the rules).
 * `_chain` is taken like every family's normaliser takes its chain; nothing here depends on the network
 * (classic addresses are spelled the same on both).
 */
export function normalizeXrpLedger(ledger: RpcLedger, _chain: XrpChain): NormalizedBlock {
  const header = normalizeXrpLedgerHeader(ledger);
  const coinMovements: CoinMovement[] = [];
  const failed: string[] = [];
  const partial: string[] = [];
  (ledger.transactions ?? []).forEach((entry) => {
    if (typeof entry === 'string') throw new XrpNormalizeError('ledger must be fetched with expanded transactions (transactions: true, expand: true)');
    const tx = readXrpTransaction(entry);
    for (const [address, delta] of xrpBalanceChanges(tx.meta)) coinMovements.push({ transactionId: tx.id, address, delta });
    // A tec… result claimed the fee only; a partial payment's movements above are what it delivered, never its Amount.
    if (tx.result !== 'tesSUCCESS') failed.push(tx.id);
    else if (tx.type === 'Payment' && typeof tx.fields.Flags === 'number' && (tx.fields.Flags & TF_PARTIAL_PAYMENT) !== 0) partial.push(tx.id);
  });
  const block: NormalizedBlock = { ...header, tokenTransfers: [], internalTransfers: [], coinMovements };
  if (failed.length > 0) block.failedTransactionIds = failed;
  if (partial.length > 0) block.partialPaymentIds = partial;
  return block;
}

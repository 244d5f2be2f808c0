/**
 * Shapes of the rippled results the XRP normaliser reads, as they arrive from JSON (every field may be
 * missing or of the wrong type on a misbehaving node, so the normaliser checks what it uses). Only the
 * fields that matter are named; rippled adds others (`account_hash`, `total_coins`, `Memos`, ...), which
 * are ignored.
 */

/** XRP in drops as a decimal string (`"1000000"` = 1 XRP), or an issued-currency (IOU) amount object. */
export type RpcAmount = string | RpcIssuedAmount;

export interface RpcIssuedAmount {
  currency?: string;
  issuer?: string;
  value?: string;
  [key: string]: unknown;
}

/** Fields of a ledger entry as printed in `FinalFields`, `PreviousFields` or `NewFields`. */
export interface RpcLedgerEntryFields {
  Account?: string;
  /** AccountRoot: XRP balance in drops (a string); RippleState: an IOU amount object. */
  Balance?: RpcAmount;
  [key: string]: unknown;
}

/** The one value of an `AffectedNodes` element, whichever of the three keys holds it. */
export interface RpcAffectedNodeBody {
  LedgerEntryType?: string;
  LedgerIndex?: string;
  /** ModifiedNode / DeletedNode: the fields after the transaction. Absent when only threading fields changed. */
  FinalFields?: RpcLedgerEntryFields;
  /** ModifiedNode / DeletedNode: the previous values of the fields that changed. */
  PreviousFields?: RpcLedgerEntryFields;
  /** CreatedNode: the fields of the new entry. */
  NewFields?: RpcLedgerEntryFields;
  [key: string]: unknown;
}

export interface RpcAffectedNode {
  CreatedNode?: RpcAffectedNodeBody;
  ModifiedNode?: RpcAffectedNodeBody;
  DeletedNode?: RpcAffectedNodeBody;
}

/** Transaction metadata (`metaData` in `ledger` v1, `meta` in `tx`/v2, `metadata` in `transaction_entry`). */
export interface RpcTransactionMeta {
  AffectedNodes?: RpcAffectedNode[];
  /** `tesSUCCESS`, or a `tec…` code for a transaction that failed but was included (its fee is burnt). */
  TransactionResult?: string;
  /** Position of the transaction in the ledger's execution order. */
  TransactionIndex?: number;
  /** Synthetic field added by rippled (`tx`, `account_tx`, newer `ledger`): what a Payment really delivered. */
  delivered_amount?: RpcAmount | 'unavailable';
  /** Binary field stored in the ledger for partial payments (since 2014); `ledger` responses of older servers have only this. */
  DeliveredAmount?: RpcAmount;
  [key: string]: unknown;
}

/** The transaction's own fields (common fields plus the type-specific ones this code reads). */
export interface RpcTransactionFields {
  TransactionType?: string;
  Account?: string;
  /** Drops, as a string. */
  Fee?: string;
  Flags?: number;
  hash?: string;
  /** Payment: the amount asked for (API v1 name). */
  Amount?: RpcAmount;
  /** Payment: API v2 name of `Amount`. */
  DeliverMax?: RpcAmount;
  Destination?: string;
  [key: string]: unknown;
}

/**
 * One element of an expanded ledger's `transactions`: API v1 has the transaction's fields at the top
 * with `metaData`; API v2 nests them in `tx_json` next to `meta` and `hash`.
 */
export interface RpcLedgerTransaction extends RpcTransactionFields {
  metaData?: RpcTransactionMeta;
  meta?: RpcTransactionMeta;
  tx_json?: RpcTransactionFields;
}

/** The `ledger` object of a rippled `ledger` result (`transactions: true`, `expand` true or false). */
export interface RpcLedger {
  /** String in API v1 (`"7501326"`), number in API v2. */
  ledger_index?: string | number;
  ledger_hash?: string;
  /** Same value as `ledger_hash` in some servers' output. */
  hash?: string;
  parent_hash?: string;
  /** Seconds since 2000-01-01T00:00:00Z (the Ripple epoch). */
  close_time?: number;
  closed?: boolean;
  /** Transaction hashes (`expand: false`) or transactions with their metadata (`expand: true`). */
  transactions?: (RpcLedgerTransaction | string)[];
  [key: string]: unknown;
}

/** The `result` of a rippled `ledger` call. */
export interface RpcLedgerResult {
  ledger?: RpcLedger;
  ledger_hash?: string;
  ledger_index?: number;
  validated?: boolean;
  status?: string;
  [key: string]: unknown;
}

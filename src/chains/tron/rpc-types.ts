/**
 * Shapes of the java-tron HTTP API results the Tron normaliser reads, as they arrive from JSON (every
 * field may be missing or of the wrong type on a misbehaving node, so the normaliser checks what it
 * uses). Only the fields that matter are named; java-tron prints others (`witness_signature`,
 * `raw_data_hex`, `signature`, ...), which are ignored.
 *
 * java-tron prints protobuf as JSON: fields with their default value (0, "", false, empty list, enum
 * value 0) are omitted, so an absent number means 0 and an absent `receipt.result` means DEFAULT.
 * Addresses are hex with the 0x41 prefix (21 bytes) unless the request asked `"visible": true`, in
 * which case they are base58 (`T...`); log addresses are 20-byte hex without the prefix.
 */

/**
 * An int64 as printed by java-tron: a JSON number. A client that parses big integers losslessly may pass
 * a decimal string or a bigint instead; a number beyond Number.MAX_SAFE_INTEGER is refused (precision lost).
 */
export type TronInt = number | string | bigint;

/** `raw_data.contract[]` entry. `parameter.value` depends on `type`. */
export interface TronContract {
  /** e.g. TransferContract, TransferAssetContract (TRC-10), TriggerSmartContract, FreezeBalanceV2Contract, VoteWitnessContract. */
  type?: string | null;
  parameter?: {
    type_url?: string | null;
    value?: TronContractValue | null;
    [key: string]: unknown;
  } | null;
  [key: string]: unknown;
}

/** Union of the `parameter.value` fields the normaliser reads. */
export interface TronContractValue {
  owner_address?: string | null;
  /** TransferContract, TransferAssetContract. */
  to_address?: string | null;
  /** TransferContract (sun), TransferAssetContract (TRC-10 units). */
  amount?: TronInt | null;
  /** TransferAssetContract: the TRC-10 token id (or, on old chains, its hex name). */
  asset_name?: string | null;
  /** TriggerSmartContract. */
  contract_address?: string | null;
  /** TriggerSmartContract: TRX sent with the call, in sun. */
  call_value?: TronInt | null;
  /** TriggerSmartContract: TRC-10 sent with the call. */
  call_token_value?: TronInt | null;
  token_id?: TronInt | null;
  data?: string | null;
  /** CreateSmartContract. */
  new_contract?: { call_value?: TronInt | null; [key: string]: unknown } | null;
  [key: string]: unknown;
}

/** One element of a block's `transactions` (or `gettransactionbyid`). */
export interface TronTransaction {
  txID?: string | null;
  /** `[{ contractRet: "SUCCESS" | "REVERT" | "OUT_OF_ENERGY" | ... }]`. */
  ret?: { contractRet?: string | null; [key: string]: unknown }[] | null;
  raw_data?: {
    contract?: TronContract[] | null;
    timestamp?: TronInt | null;
    [key: string]: unknown;
  } | null;
  [key: string]: unknown;
}

/** `POST /wallet/getblockbynum {"num": n}` / `getnowblock` / `getblockbyid`. `{}` when not found. */
export interface TronBlock {
  /** Block hash, 64 hex, no 0x; its first 8 bytes are the height. */
  blockID?: string | null;
  block_header?: {
    raw_data?: {
      number?: TronInt | null;
      parentHash?: string | null;
      /** Milliseconds. */
      timestamp?: TronInt | null;
      witness_address?: string | null;
      [key: string]: unknown;
    } | null;
    [key: string]: unknown;
  } | null;
  /** Absent on an empty block. */
  transactions?: TronTransaction[] | null;
  [key: string]: unknown;
}

/** One entry of a transaction info's `log`. */
export interface TronLog {
  /** 20-byte hex without the 41 prefix (base58 with `visible: true`). */
  address?: string | null;
  /** 32-byte hex words without 0x. */
  topics?: string[] | null;
  /** Hex without 0x; absent when empty. */
  data?: string | null;
  [key: string]: unknown;
}

export interface TronCallValueInfo {
  /** Sun (or TRC-10 units when `tokenId` is set); absent means 0. */
  callValue?: TronInt | null;
  /** TRC-10 token id; absent means TRX. */
  tokenId?: string | null;
  [key: string]: unknown;
}

/** One entry of a transaction info's `internal_transactions` (only with `vm.saveInternalTx = true`). */
export interface TronInternalTransaction {
  hash?: string | null;
  caller_address?: string | null;
  transferTo_address?: string | null;
  callValueInfo?: TronCallValueInfo[] | null;
  /** Hex of an ASCII word: "call", "create", "suicide", or a TVM stake operation ("freezeBalanceV2ForEnergy", ...). */
  note?: string | null;
  /** true when the frame was reverted. */
  rejected?: boolean | null;
  [key: string]: unknown;
}

/** `gettransactioninfobyid` result / one element of `gettransactioninfobyblocknum`. */
export interface TronTransactionInfo {
  /** = txID. */
  id?: string | null;
  /** Total TRX burnt from the owner (bandwidth, energy, account creation, multi-sign, ...), sun. */
  fee?: TronInt | null;
  blockNumber?: TronInt | null;
  blockTimeStamp?: TronInt | null;
  contractResult?: string[] | null;
  contract_address?: string | null;
  receipt?: {
    /** Smart contracts only: SUCCESS, REVERT, OUT_OF_ENERGY, ...; absent (DEFAULT) for other contracts. */
    result?: string | null;
    energy_fee?: TronInt | null;
    net_fee?: TronInt | null;
    [key: string]: unknown;
  } | null;
  /** "FAILED" on failure; absent (SUCESS, the enum default) otherwise. */
  result?: string | null;
  /** Hex of the failure message. */
  resMessage?: string | null;
  log?: TronLog[] | null;
  internal_transactions?: TronInternalTransaction[] | null;
  [key: string]: unknown;
}

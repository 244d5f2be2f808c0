/**
 * Shapes of the Bitcoin-family JSON-RPC results the normaliser reads (Bitcoin Core and its forks: Bitcoin
 * Cash Node, Litecoin, Dogecoin, Dash, zcashd), as they arrive from JSON: every field may be missing or of
 * the wrong type on a misbehaving node, so the normaliser checks what it uses. Only the fields that matter
 * are named; the forks add others (Litecoin `mweb`, Dogecoin `auxpow`, Dash `extraPayload`, Zcash
 * `vjoinsplit`, ...), which are ignored.
 *
 * Coin amounts (`value`) are JSON numbers with up to 8 decimals (coins, not satoshis). Once parsed by
 * `JSON.parse` they are doubles; the normaliser reads them through their shortest decimal string form. A
 * client that keeps the raw text may pass the decimal string instead.
 */

/** A coin amount as printed by the node: a JSON number (coins, up to 8 decimals) or its decimal string. */
export type RpcAmount = number | string;

/** `scriptPubKey` of an output (and of `vin[].prevout` with verbosity 3). */
export interface RpcScriptPubKey {
  /** Core >= 22: the one address of a standard script (absent for nulldata, bare multisig, pubkey, nonstandard). */
  address?: string | null;
  /** Core <= 0.21 and the forks: one address, or several for bare multisig (then none is used). */
  addresses?: string[] | null;
  /** `pubkeyhash`, `scripthash`, `witness_v0_keyhash`, `nulldata`, `witness_mweb_hogaddr`, ... */
  type?: string | null;
  hex?: string | null;
  [key: string]: unknown;
}

/** `vin[].prevout` of `getblock <hash> 3` (Core >= 25). */
export interface RpcPrevout {
  value?: RpcAmount | null;
  scriptPubKey?: RpcScriptPubKey | null;
  [key: string]: unknown;
}

/** One input. A coinbase input has `coinbase` and no `txid`/`vout`; a Litecoin MWEB input has `ismweb: true`. */
export interface RpcInput {
  coinbase?: string | null;
  txid?: string | null;
  vout?: number | null;
  prevout?: RpcPrevout | null;
  ismweb?: boolean | null;
  [key: string]: unknown;
}

/** One output. Zcash adds `valueZat`, Dash `valueSat` (integers in base units); Litecoin MWEB outputs have `ismweb: true`. */
export interface RpcOutput {
  value?: RpcAmount | null;
  valueZat?: number | string | null;
  valueSat?: number | string | null;
  n?: number | null;
  scriptPubKey?: RpcScriptPubKey | null;
  ismweb?: boolean | null;
  [key: string]: unknown;
}

/** One transaction of `getblock <hash> 2`, or a `getrawtransaction <txid> true` result. */
export interface RpcTransaction {
  /** The transaction id (use this). */
  txid?: string | null;
  /** The wtxid (differs from `txid` for segwit transactions); never used as the id. */
  hash?: string | null;
  vin?: RpcInput[] | null;
  vout?: RpcOutput[] | null;
  [key: string]: unknown;
}

/** `getblock <hash> 2` (transaction objects) or `getblock <hash> 1` (txid strings). */
export interface RpcBlock {
  hash?: string | null;
  height?: number | null;
  /** Absent on the genesis block. */
  previousblockhash?: string | null;
  /** Unix seconds (miner clock). */
  time?: number | null;
  tx?: (RpcTransaction | string)[] | null;
  [key: string]: unknown;
}

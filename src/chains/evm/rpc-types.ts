/**
 * Shapes of the EVM JSON-RPC results the normaliser reads, as they arrive from JSON (every field may be
 * missing or of the wrong type on a misbehaving node, so the normaliser checks what it uses). Only the
 * fields that matter are named; nodes add others (Parity's `creates`, `raw`, ...), which are ignored.
 */

/** A hex quantity (`0x1a`) or hex data (`0x…`) as printed by the node. */
export type Hex = string;

/** One transaction object of `eth_getBlockByNumber <n> true`. */
export interface RpcTransaction {
  hash?: Hex | null;
  from?: Hex | null;
  /** null for a contract creation. */
  to?: Hex | null;
  value?: Hex | null;
  gasPrice?: Hex | null;
  input?: Hex | null;
  [key: string]: unknown;
}

/** `eth_getBlockByNumber <n> true` (full transactions). `false` gives hash strings, accepted only for the header. */
export interface RpcBlock {
  number?: Hex | null;
  hash?: Hex | null;
  parentHash?: Hex | null;
  timestamp?: Hex | null;
  transactions?: (RpcTransaction | Hex)[] | null;
  [key: string]: unknown;
}

/** One entry of a receipt's `logs`. */
export interface RpcLog {
  address?: Hex | null;
  topics?: Hex[] | null;
  data?: Hex | null;
  logIndex?: Hex | null;
  transactionHash?: Hex | null;
  removed?: boolean | null;
  [key: string]: unknown;
}

/** `eth_getTransactionReceipt` / one element of `eth_getBlockReceipts`. */
export interface RpcReceipt {
  transactionHash?: Hex | null;
  blockHash?: Hex | null;
  /** `0x1` success, `0x0` failure; absent/null before Byzantium. */
  status?: Hex | null;
  gasUsed?: Hex | null;
  /** Absent on old nodes (then the transaction's `gasPrice` is used). */
  effectiveGasPrice?: Hex | null;
  /** EIP-4844 blob fee parts (type-3 transactions only). */
  blobGasUsed?: Hex | null;
  blobGasPrice?: Hex | null;
  contractAddress?: Hex | null;
  logs?: RpcLog[] | null;
  [key: string]: unknown;
}

/** A geth `callTracer` frame. */
export interface CallFrame {
  type?: string | null;
  from?: Hex | null;
  to?: Hex | null;
  value?: Hex | null;
  error?: string | null;
  calls?: CallFrame[] | null;
  [key: string]: unknown;
}

/**
 * One element of `debug_traceBlockByNumber <n> {"tracer":"callTracer"}`. Newer geth adds `txHash`; older geth
 * prints only `result`, in block order. A transaction geth could not trace has `error` instead of `result`.
 */
export interface CallTraceEntry {
  txHash?: Hex | null;
  result?: CallFrame | null;
  error?: string | null;
}

/**
 * One element of Parity's `trace_block <n>` (OpenEthereum, Erigon, Nethermind, reth, Besu, Anvil): a flat list
 * of frames, each placed in its transaction's call tree by `traceAddress` (child indices from the top frame).
 * Block and uncle rewards come without a transaction hash.
 */
export interface ParityTrace {
  /** 'call', 'create', 'suicide' (or 'selfdestruct'), 'reward'. */
  type?: string | null;
  transactionHash?: Hex | null;
  traceAddress?: number[] | null;
  action?: {
    /** call: 'call', 'callcode', 'delegatecall', 'staticcall'. */
    callType?: string | null;
    /** create: 'create' or 'create2' (newer nodes). */
    creationMethod?: string | null;
    from?: Hex | null;
    to?: Hex | null;
    value?: Hex | null;
    /** suicide: the destroyed contract, who gets its balance, and the balance. */
    address?: Hex | null;
    refundAddress?: Hex | null;
    balance?: Hex | null;
    [key: string]: unknown;
  } | null;
  /** create: the new contract's `address`. */
  result?: { address?: Hex | null; [key: string]: unknown } | null;
  /** Set on a frame that failed (e.g. 'Reverted', 'Out of gas'). */
  error?: string | null;
  [key: string]: unknown;
}

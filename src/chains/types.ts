/**
 * The normalised block every chain adapter produces and everything after it (ingest, matching,
 * ledger) consumes: one shape for all families, so reorganisation handling, matching and the ledger
 * are written once. Amounts are bigint base units; addresses and transaction ids are in the
 * normalised form of src/domain/addresses.ts (EVM lower-case 0x, Tron base58, UTXO as validated).
 */

export interface BlockRef {
  height: number;
  hash: string;
  /** Seconds since the Unix epoch. */
  timestamp: number;
}

export interface TokenTransfer {
  transactionId: string;
  /** Position of the transfer in the block (EVM log index), for the event's identity. */
  logIndex: number;
  tokenType: 'ERC-20' | 'ERC-721' | 'BEP-20' | 'TRC-20' | 'TRC-721' | 'OMNI';
  /** Contract address (EVM, Tron) or Omni property id. */
  contract: string;
  from: string;
  to: string;
  /** Fungible: amount in base units; NFT: undefined. */
  amount?: bigint;
  /** NFT: the token id (decimal string); fungible: undefined. */
  tokenId?: string;
}

export interface InternalTransfer {
  /** The transaction the frame belongs to. */
  parentTransactionId: string;
  /** The frame's position in the call tree, e.g. call_0_2. */
  operationId: string;
  from: string;
  to: string;
  /** Native coin, base units (> 0). */
  amount: bigint;
}

export interface CoinMovement {
  transactionId: string;
  address: string;
  /** Positive: received; negative: spent (fees included). */
  delta: bigint;
}

/** An output of a UTXO-chain transaction paid to an address (outpoint `txid:vout`). */
export interface UtxoOutput {
  transactionId: string;
  outpoint: string;
  address: string;
  /** Base units. */
  value: bigint;
}

/** An input of a UTXO-chain transaction whose spent output the adapter did not resolve. */
export interface UtxoSpend {
  transactionId: string;
  /** The spent output, `txid:vout`. */
  outpoint: string;
}

export interface NormalizedBlock extends BlockRef {
  parentHash: string;
  transactionIds: string[];
  tokenTransfers: TokenTransfer[];
  internalTransfers: InternalTransfer[];
  coinMovements: CoinMovement[];
  /**
   * UTXO chains only. coinMovements then hold what the block itself tells (outputs received, inputs
   * spending outputs of earlier transactions of the same block); the ledger resolves `spends` against its
   * own record of watched outputs (`outputs` of earlier blocks and the opening's unspent outputs).
   */
  utxo?: { outputs: UtxoOutput[]; spends: UtxoSpend[] };
}

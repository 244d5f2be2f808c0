/**
 * What the Callback Data reads (docs/reference/api.md#callback-data-reads) ask a chain's node: one block or one transaction,
 * in the shapes of the hosted API, already formatted (amounts as decimal strings of whole coins with the
 * chain's unit). Adapters fill them; the API serves them as they are. `blockchainSpecific` is the
 * variant of the chain (docs/reference/api.md#callback-data-reads): there is no discriminator field, the
 * variant follows from the blockchain.
 */

export interface UnitAmount {
  /** Decimal string in whole coins. */
  amount: string;
  unit: string;
}

export interface BlockDetails {
  hash: string;
  height: number;
  previousBlockHash: string;
  /** Unix seconds. */
  timestamp: number;
  transactionsCount: number;
  /** The chain's block fields (docs/reference/api.md#callback-data-reads). */
  blockchainSpecific: Record<string, unknown>;
  /** EVM chains only: the EVM-style fields the block read by hash also puts at the top level (docs/reference/api.md#settled-callback-data-reads). */
  evm?: EvmBlockFields;
}

export interface EvmBlockFields {
  difficulty: string;
  extraData: string;
  gasLimit: string;
  gasUsed: string;
  nonce: string;
  sha3Uncles: string;
  totalDifficulty: string;
  minedInSeconds: number;
  size: number;
  uncles: string[];
}

export interface AddressAmount {
  address: string;
  /** Decimal string in whole coins. */
  amount: string;
}

/** A transaction mined in a block of the node's main chain (docs/reference/api.md#transaction-details). */
export interface TransactionDetails {
  /** Position in the block. */
  index: number;
  isConfirmed: boolean;
  minedInBlockHash: string;
  minedInBlockHeight: number;
  recipients: AddressAmount[];
  /** Sender amounts include the fee. */
  senders: AddressAmount[];
  timestamp: number;
  /** The hash (wtxid on UTXO chains, equal to the id elsewhere). */
  transactionHash: string;
  fee: UnitAmount;
  blockchainSpecific: Record<string, unknown>;
}

/** Which block a read names. */
export type BlockSelector = { height: number } | { hash: string };

/**
 * The node cannot answer the read: 'not-served' when it does not keep what is asked (no transaction
 * index, a pruned block), 'unavailable' when it did not answer (down, timeout, an answer that is not
 * one). `message` is for the customer: it says what to do and never names the node's URL.
 */
export class NodeReadError extends Error {
  override name = 'NodeReadError';

  constructor(
    readonly kind: 'not-served' | 'unavailable',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

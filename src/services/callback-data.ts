/**
 * The Callback Data reads (docs/reference/api.md#callback-data-reads, #settled-callback-data-reads and #settled-statuses-chains-and-prices): an address the customer's
 * subscriptions name, or any block or transaction of a chain herald follows here. Each read costs its
 * `costs.callbackData*` credits, taken only when it answers (an error takes nothing).
 *
 * - The address read answers from herald's own wallet ledger, which watches every address an active
 *   address subscription names from the moment the subscription is created (services/subscribed-addresses.ts),
 *   as it watches a wallet's addresses: the confirmed balance and totals that chain following keeps, and
 *   the counts of confirmed coin transactions it kept with them. Like the totals, they count the blocks
 *   after the one the address is watched from (herald is not an indexer: what happened before is in the
 *   opening balance read from the node, not counted), and the answer says which block that is
 *   (watchedFromBlock) and whether the balance holds the opening yet (openingBalance). A transaction is
 *   incoming or outgoing for an address, never both (netted per transaction, a transaction to itself is
 *   outgoing), so transactionsCount is their sum.
 * - Block and transaction reads ask the chain's node through the API role's own adapter.
 */
import type { BlockDetails, BlockSelector, TransactionDetails } from '../chains/types.ts';
import { NodeReadError } from '../chains/types.ts';
import { validateAddress, validateTransactionId } from '../domain/addresses.ts';
import { formatUnits } from '../domain/amounts.ts';
import { type Blockchain, CHAINS, type Network } from '../domain/chains.ts';
import { ApiError, type ErrorCode, invalidData, truncate } from '../domain/errors.ts';
import { addressLedger, hasAddressSubscription } from '../store/callback-data.ts';
import type { Caller, ChainReader, Charged, Common } from './context.ts';
import { watchSubscribedAddresses } from './subscribed-addresses.ts';
import { assertMainnetAllowed } from './subscriptions.ts';

export interface AddressDetails {
  incomingTransactionsCount: number;
  outgoingTransactionsCount: number;
  transactionsCount: number;
  confirmedBalance: { amount: string; unit: string };
  totalReceived: { amount: string; unit: string };
  totalSpent: { amount: string; unit: string };
  /** Extension: the block the address is watched from (the totals and counts cover the confirmed blocks after it); null until the chain is followed. */
  watchedFromBlock: number | null;
  /** Extension: whether confirmedBalance includes the opening balance at watchedFromBlock (as a wallet's coins say). */
  openingBalance: 'read' | 'pending' | 'unavailable';
}

/** Heights beyond any chain's but within a safe integer all the way down. */
const MAX_HEIGHT = 2_147_483_647;

export async function getAddressDetails(
  common: Common,
  caller: Caller,
  blockchain: Blockchain,
  network: Network,
  address: string,
): Promise<Charged<AddressDetails>> {
  const v = validateAddress(blockchain, network, address);
  if (!v.ok) throw invalidData([{ attribute: 'address', message: v.message }]);
  assertMainnetAllowed(caller, network);
  const customerId = caller.owner.customerId;
  const chain = { blockchain, network };
  if (!(await hasAddressSubscription(common.db, customerId, chain, v.normalized))) throw addressNotSubscribed(blockchain, network, address);
  let ledger = await addressLedger(common.db, customerId, chain, v.normalized);
  if (!ledger) {
    // Subscribed, but its watch was not recorded (the process stopped right after the create): watched from now.
    await watchSubscribedAddresses(common.db, chain, customerId, [v.normalized]);
    ledger = await addressLedger(common.db, customerId, chain, v.normalized);
    if (!ledger) throw addressNotSubscribed(blockchain, network, address); // its last subscription ended meanwhile
  }
  const { unit, decimals } = CHAINS[blockchain];
  const amount = (units: bigint) => ({ amount: formatUnits(units, decimals), unit });
  const value: AddressDetails = {
    incomingTransactionsCount: ledger.incomingTransactions,
    outgoingTransactionsCount: ledger.outgoingTransactions,
    transactionsCount: ledger.incomingTransactions + ledger.outgoingTransactions,
    confirmedBalance: amount(ledger.confirmedBalance),
    totalReceived: amount(ledger.totalReceived),
    totalSpent: amount(ledger.totalSpent),
    watchedFromBlock: ledger.watchedFromBlock === null ? null : Number(ledger.watchedFromBlock),
    openingBalance: ledger.openingState,
  };
  return { value, ...(await common.credits.charge(customerId, BigInt(common.config.costs.callbackDataAddress), caller.endpoint)) };
}

function addressNotSubscribed(blockchain: Blockchain, network: Network, address: string): ApiError {
  return new ApiError(
    'blockchain_data_address_event_subscription_not_found',
    `No active ${blockchain} ${network} subscription of this API key's customer names the address '${truncate(address)}'; subscribe to an event of the address first.`,
  );
}

export async function getBlockByHash(common: Common, caller: Caller, blockchain: Blockchain, network: Network, blockHash: string) {
  const hash = normalizedBlockHash(blockchain, blockHash);
  assertMainnetAllowed(caller, network);
  const block = await readBlock(common, blockchain, network, { hash }, `with hash '${truncate(blockHash)}'`);
  return { value: block, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.callbackDataBlockByHash), caller.endpoint)) };
}

export async function getBlockByHeight(common: Common, caller: Caller, blockchain: Blockchain, network: Network, blockHeight: string) {
  if (!/^\d{1,10}$/.test(blockHeight) || Number(blockHeight) > MAX_HEIGHT) {
    throw invalidData([{ attribute: 'blockHeight', message: `The blockHeight must be a block number, an integer from 0 to ${MAX_HEIGHT}.` }]);
  }
  assertMainnetAllowed(caller, network);
  const block = await readBlock(common, blockchain, network, { height: Number(blockHeight) }, `at height ${Number(blockHeight)}`);
  return { value: block, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.callbackDataBlockByHeight), caller.endpoint)) };
}

export async function getTransaction(
  common: Common,
  caller: Caller,
  blockchain: Blockchain,
  network: Network,
  transactionId: string,
): Promise<Charged<TransactionDetails>> {
  const v = validateTransactionId(blockchain, network, transactionId);
  if (!v.ok) throw invalidData([{ attribute: 'transactionId', message: v.message }]);
  assertMainnetAllowed(caller, network);
  const reader = readerOf(common, blockchain, network, 'resource_not_found');
  const id = `${blockchain} ${network} transaction '${truncate(transactionId)}'`;
  const tx = await fromNode(common, blockchain, network, 'resource_not_found', () => reader.getTransactionDetails?.(v.normalized));
  if (!tx) {
    throw new ApiError(
      'resource_not_found',
      `The ${id} is not mined in a block of the chain's main chain (unknown, or still unconfirmed); check the id and network.`,
    );
  }
  return { value: tx, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.callbackDataTransaction), caller.endpoint)) };
}

/** A block hash as the family spells it (EVM 0x + 64 hex, the other chains 64 hex), lower-case; 409 otherwise. */
function normalizedBlockHash(blockchain: Blockchain, blockHash: string): string {
  const evm = CHAINS[blockchain].family === 'evm';
  const pattern = evm ? /^0x[0-9a-fA-F]{64}$/ : /^[0-9a-fA-F]{64}$/;
  if (!pattern.test(blockHash)) {
    const shape = evm ? "'0x' and 64 hexadecimal characters" : '64 hexadecimal characters';
    throw invalidData([{ attribute: 'blockHash', message: `The blockHash '${truncate(blockHash)}' is not a ${blockchain} block hash: it must be ${shape}.` }]);
  }
  return blockHash.toLowerCase();
}

async function readBlock(common: Common, blockchain: Blockchain, network: Network, selector: BlockSelector, which: string): Promise<BlockDetails> {
  const reader = readerOf(common, blockchain, network, 'blockchain_data_block_not_found');
  const block = await fromNode(common, blockchain, network, 'blockchain_data_block_not_found', () => reader.getBlockDetails?.(selector));
  if (!block) {
    throw new ApiError('blockchain_data_block_not_found', `There is no ${blockchain} ${network} block ${which} on the chain's main chain.`);
  }
  return block;
}

/** The chain's node reader; a chain with no node on this deployment is the read's 404, saying so. */
function readerOf(common: Common, blockchain: Blockchain, network: Network, code: ErrorCode): ChainReader {
  const reader = common.chainReader?.(blockchain, network);
  if (!reader) {
    throw new ApiError(
      code,
      `herald does not follow ${blockchain} ${network} on this deployment (no node is configured for it), so it cannot read its blocks and transactions; GET /blockchain-events/status lists the chains it follows.`,
    );
  }
  return reader;
}

/**
 * Runs a node read. The node keeping no such data (pruned, no transaction index) is the read's 404 with
 * the node's reason; a node that does not answer is 503 with Retry-After. The customer never sees the
 * node's URL; the log has the whole error.
 */
async function fromNode<T>(
  common: Common,
  blockchain: Blockchain,
  network: Network,
  code: ErrorCode,
  read: () => Promise<T> | undefined,
): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof NodeReadError && error.kind === 'not-served') throw new ApiError(code, error.message);
    common.logger.warn({ err: error, blockchain, network }, 'callback data read: the node did not answer');
    const message = error instanceof NodeReadError ? error.message : `The ${blockchain} ${network} node could not be read just now; retry in a moment.`;
    throw new ApiError('service_unavailable', message, undefined, { 'retry-after': '5' });
  }
}

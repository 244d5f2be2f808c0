/**
 * The Callback Data reads on Tron (docs/reference/api.md#block-by-hash, #block-by-height, #transaction-details and #callback-data-reads), from java-tron's HTTP API:
 * `getblockbynum` (a block asked by hash is looked up at the height its first 8 bytes give, and must be
 * the node's block there), `gettransactioninfobyblocknum` (or `gettransactioninfobyid` per transaction on
 * nodes without it) for the block's fees and resources, `gettransactionbyid` + `gettransactioninfobyid`
 * for a transaction (mined only: a transaction without an info is not in a block yet).
 *
 * java-tron's JSON has no block size: `size` is -1 (unknown). Resources are the points the receipts
 * report (bandwidth `net_usage`, energy `energy_usage_total`); TRX burnt is the infos' `fee`.
 */

import { validateAddress } from '../../domain/addresses.ts';
import { formatUnits } from '../../domain/amounts.ts';
import { mapLimit } from '../../lib/concurrency.ts';
import { type BlockDetails, type BlockSelector, NodeReadError, type TransactionDetails } from '../details.ts';
import { NodeRpcError } from '../rpc-error.ts';
import { normalizeTronBlockHeader, parseTronInt, TRANSFER_TOPIC, type TronNetwork } from './normalize.ts';
import { type TronRpcClient, TronRpcError } from './rpc.ts';
import type { TronBlock, TronTransaction, TronTransactionInfo } from './rpc-types.ts';

const trx = (sun: bigint) => formatUnits(sun, 6);
const isEmpty = (value: unknown) => value === null || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length === 0;
const int = (value: unknown) => parseTronInt(value) ?? 0n;

export interface TronDetailsReader {
  getBlockDetails(block: BlockSelector): Promise<BlockDetails | undefined>;
  getTransactionDetails(transactionId: string): Promise<TransactionDetails | undefined>;
}

export function createTronDetailsReader(rpc: TronRpcClient, network: TronNetwork, concurrency: number): TronDetailsReader {
  const base58 = (value: unknown): string => {
    if (typeof value !== 'string' || value === '') return '';
    const v = validateAddress('tron', network, value);
    return v.ok ? v.normalized : '';
  };

  async function post<T>(path: string, body: Record<string, unknown>): Promise<T> {
    try {
      return await rpc.post<T>(path, body);
    } catch (error) {
      const what = error instanceof NodeRpcError && error.unanswered ? 'did not answer' : 'answered with an error';
      throw new NodeReadError('unavailable', `The tron node ${what} (${path}); retry in a moment.`, { cause: error });
    }
  }

  function header(block: TronBlock) {
    try {
      return normalizeTronBlockHeader(block);
    } catch (error) {
      throw new NodeReadError('unavailable', 'The tron node answered a block herald cannot read; retry in a moment.', { cause: error });
    }
  }

  async function blockAt(height: number): Promise<TronBlock | undefined> {
    const block = await post<TronBlock>('wallet/getblockbynum', { num: height });
    return isEmpty(block) ? undefined : block;
  }

  async function infosOf(height: number, ids: string[]): Promise<TronTransactionInfo[]> {
    if (ids.length === 0) return [];
    try {
      const infos = await rpc.post<TronTransactionInfo[]>('wallet/gettransactioninfobyblocknum', { num: height });
      return Array.isArray(infos) ? infos : [];
    } catch (error) {
      if (!(error instanceof TronRpcError && error.kind === 'unsupported')) {
        throw new NodeReadError('unavailable', 'The tron node answered with an error (gettransactioninfobyblocknum); retry in a moment.', { cause: error });
      }
    }
    return await mapLimit(ids, concurrency, (id) => post<TronTransactionInfo>('wallet/gettransactioninfobyid', { value: id }));
  }

  async function getBlockDetails(selector: BlockSelector): Promise<BlockDetails | undefined> {
    // A Tron block id starts with the block's height (8 bytes, big-endian).
    const height = 'height' in selector ? selector.height : Number.parseInt(selector.hash.slice(0, 16), 16);
    if (!Number.isSafeInteger(height)) return undefined;
    const block = await blockAt(height);
    if (!block) return undefined;
    const h = header(block);
    if ('hash' in selector && h.hash !== selector.hash.toLowerCase()) return undefined;
    const infos = await infosOf(height, h.transactionIds);
    let bandwidth = 0n;
    let energy = 0n;
    let burnt = 0n;
    for (const info of infos) {
      bandwidth += int(info.receipt?.net_usage);
      energy += int(info.receipt?.energy_usage_total);
      burnt += int(info.fee);
    }
    return {
      hash: h.hash,
      height: h.height,
      previousBlockHash: h.parentHash,
      timestamp: h.timestamp,
      transactionsCount: h.transactionIds.length,
      blockchainSpecific: { bandwidthUsed: bandwidth.toString(), burnedTrx: trx(burnt), energyUsed: energy.toString(), size: -1 },
    };
  }

  async function getTransactionDetails(transactionId: string): Promise<TransactionDetails | undefined> {
    const [tx, info] = await Promise.all([
      post<TronTransaction>('wallet/gettransactionbyid', { value: transactionId }),
      post<TronTransactionInfo>('wallet/gettransactioninfobyid', { value: transactionId }),
    ]);
    // Unknown, or not in a block yet (no info).
    if (isEmpty(tx) || isEmpty(info)) return undefined;
    const number = parseTronInt(info.blockNumber);
    if (number === undefined) return undefined;
    const block = await blockAt(Number(number));
    if (!block) return undefined;
    const h = header(block);
    const index = h.transactionIds.indexOf(transactionId);
    if (index < 0) return undefined;
    const contract = tx.raw_data?.contract?.[0];
    const value = contract?.parameter?.value ?? {};
    const amount = int(value.amount ?? value.call_value);
    const fee = int(info.fee);
    const from = base58(value.owner_address);
    const contractAddress = base58(value.contract_address ?? info.contract_address);
    const to = base58(value.to_address) || contractAddress;
    const hasTokenTransfers = (info.log ?? []).some((log) => log?.topics?.[0]?.toLowerCase() === TRANSFER_TOPIC);
    return {
      index,
      isConfirmed: true,
      minedInBlockHash: h.hash,
      minedInBlockHeight: h.height,
      recipients: to ? [{ address: to, amount: trx(amount) }] : [],
      senders: [{ address: from, amount: trx(amount + fee) }],
      timestamp: h.timestamp,
      transactionHash: transactionId,
      fee: { amount: trx(fee), unit: 'TRX' },
      blockchainSpecific: {
        amount: trx(amount),
        bandwidthUsed: { amount: int(info.receipt?.net_usage).toString(), unit: 'BANDWIDTH' },
        contract: contractAddress,
        energyUsed: { amount: int(info.receipt?.energy_usage_total).toString(), unit: 'ENERGY' },
        hasInternalTransactions: (info.internal_transactions ?? []).length > 0,
        hasTokenTransfers: String(hasTokenTransfers),
        input: typeof value.data === 'string' ? value.data : '',
        recipients: to,
        senders: from,
        transactionStatus: String(tx.ret?.[0]?.contractRet ?? 'SUCCESS'),
      },
    };
  }

  return { getBlockDetails, getTransactionDetails };
}

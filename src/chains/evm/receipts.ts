/**
 * Receipts of an EVM node: a block's (`eth_getBlockReceipts`, one call per block, when served, else
 * `eth_getTransactionReceipt` per transaction with bounded concurrency), and where transactions were
 * mined (one receipt, or many in one JSON-RPC batch).
 */
import { mapLimit } from '../../lib/concurrency.ts';
import type { TransactionLocation } from '../types.ts';
import { EvmAdapterError, type EvmNode, isUnsupported } from './node.ts';
import { parseQuantity } from './normalize.ts';
import { EvmRpcError } from './rpc.ts';
import type { RpcReceipt } from './rpc-types.ts';

export interface EvmReceiptReader {
  /** The receipts of the block at `hexHeight`, whose transactions are `transactionIds`. */
  blockReceipts(hexHeight: string, transactionIds: string[]): Promise<RpcReceipt[]>;
  findTransaction(transactionId: string): Promise<TransactionLocation | undefined>;
  findTransactions(transactionIds: readonly string[]): Promise<(TransactionLocation | undefined)[]>;
}

export function createEvmReceiptReader(node: EvmNode): EvmReceiptReader {
  const { rpc, concurrency, support } = node;

  async function blockReceipts(hexHeight: string, transactionIds: string[]): Promise<RpcReceipt[]> {
    if (support.blockReceipts !== 'unsupported') {
      try {
        const receipts = await rpc.request<RpcReceipt[] | null>('eth_getBlockReceipts', [hexHeight]);
        support.blockReceipts = 'supported';
        if (!Array.isArray(receipts)) throw new EvmAdapterError(`eth_getBlockReceipts ${hexHeight} at ${rpc.url} returned no receipts`);
        return receipts;
      } catch (error) {
        if (!isUnsupported(error)) throw error;
        node.markUnsupported('blockReceipts', 'eth_getBlockReceipts', error);
      }
    }
    return await mapLimit(transactionIds, concurrency, async (id) => {
      const receipt = await rpc.request<RpcReceipt | null>('eth_getTransactionReceipt', [id]);
      // The block lists it, so a mined receipt must exist: none means the node moved to another chain.
      if (receipt === null || typeof receipt !== 'object') throw new EvmAdapterError(`no receipt for transaction ${id} at ${rpc.url}`);
      return receipt;
    });
  }

  async function findTransaction(transactionId: string): Promise<TransactionLocation | undefined> {
    return receiptLocation(await rpc.request<RpcReceipt | null>('eth_getTransactionReceipt', [transactionId]));
  }

  /**
   * The receipts in one JSON-RPC batch. A node (or a gateway in front of it) that answers a batch with
   * anything but a batch answer is asked one by one (with the adapter's concurrency), and no longer in
   * batches once that worked: a refusal is for good, and a node that is down fails both ways.
   */
  let batchesServed = true;
  async function findTransactions(transactionIds: readonly string[]): Promise<(TransactionLocation | undefined)[]> {
    const oneByOne = () => mapLimit(transactionIds, concurrency, findTransaction);
    if (!batchesServed || transactionIds.length <= 1) return await oneByOne();
    let answers: Awaited<ReturnType<typeof rpc.batch<RpcReceipt | null>>>;
    try {
      answers = await rpc.batch<RpcReceipt | null>(transactionIds.map((id) => ({ method: 'eth_getTransactionReceipt', params: [id] })));
    } catch (error) {
      if (!(error instanceof EvmRpcError) || error.retryable) throw error;
      const located = await oneByOne();
      batchesServed = false;
      node.logger?.warn({ url: rpc.url, err: error }, 'the node does not answer JSON-RPC batches: transactions are looked up one by one');
      return located;
    }
    return answers.map((answer) => {
      if (!answer.ok) throw answer.error;
      return receiptLocation(answer.result);
    });
  }

  return { blockReceipts, findTransaction, findTransactions };
}

/** Where a receipt says its transaction was mined; undefined for none (not mined, or unknown to the node). */
function receiptLocation(receipt: RpcReceipt | null): TransactionLocation | undefined {
  if (receipt === null || typeof receipt !== 'object') return undefined;
  const height = parseQuantity(receipt.blockNumber);
  const hash = typeof receipt.blockHash === 'string' && /^0x[0-9a-fA-F]{64}$/.test(receipt.blockHash) ? receipt.blockHash.toLowerCase() : undefined;
  return height === undefined || hash === undefined ? undefined : { height: Number(height), hash };
}

/**
 * The Callback Data reads on the EVM chains (docs/reference/api.md#block-by-hash, #block-by-height, #transaction-details and #callback-data-reads): one block by height or
 * hash, one mined transaction, from standard JSON-RPC methods every node serves (eth_getBlockBy*,
 * eth_getTransactionByHash, eth_getTransactionReceipt). Only blocks of the node's main chain are
 * answered: a block asked by hash is checked against the block at its height.
 */

import { formatUnits } from '../../domain/amounts.ts';
import { CHAINS } from '../../domain/chains.ts';
import { type BlockDetails, type BlockSelector, NodeReadError, type TransactionDetails } from '../details.ts';
import { NodeRpcError } from '../rpc-error.ts';
import type { EvmBlockchain } from './normalize.ts';
import { parseQuantity } from './normalize.ts';
import type { EvmRpcClient } from './rpc.ts';
import type { RpcBlock, RpcReceipt, RpcTransaction } from './rpc-types.ts';

const HASH = /^0x[0-9a-fA-F]{64}$/;

export interface EvmDetailsReader {
  getBlockDetails(block: BlockSelector): Promise<BlockDetails | undefined>;
  getTransactionDetails(transactionId: string): Promise<TransactionDetails | undefined>;
}

export function createEvmDetailsReader(rpc: EvmRpcClient, blockchain: EvmBlockchain): EvmDetailsReader {
  const { unit, decimals } = CHAINS[blockchain];
  const coins = (wei: bigint) => formatUnits(wei, decimals);

  /** A node call; what is not an answer becomes NodeReadError 'unavailable' (the customer never sees the node's URL). */
  async function call<T>(method: string, params: readonly unknown[]): Promise<T> {
    try {
      return await rpc.request<T>(method, params);
    } catch (error) {
      const what = error instanceof NodeRpcError && error.unanswered ? 'did not answer' : 'answered with an error';
      throw new NodeReadError('unavailable', `The ${blockchain} node ${what} (${method}); retry in a moment.`, { cause: error });
    }
  }

  const quantity = (value: unknown, what: string): bigint => {
    const n = parseQuantity(value);
    if (n === undefined) throw new NodeReadError('unavailable', `The ${blockchain} node answered a ${what} that is not a hex quantity; retry in a moment.`);
    return n;
  };

  /** The block as the node has it on its main chain (transaction hashes only), or undefined. */
  async function mainChainBlock(selector: BlockSelector): Promise<RpcBlock | undefined> {
    const block =
      'height' in selector
        ? await call<RpcBlock | null>('eth_getBlockByNumber', [`0x${selector.height.toString(16)}`, false])
        : await call<RpcBlock | null>('eth_getBlockByHash', [selector.hash, false]);
    if (block === null || typeof block !== 'object') return undefined;
    if ('hash' in selector) {
      // eth_getBlockByHash also finds side-chain blocks some nodes keep: only the main chain's answer.
      const atHeight = await call<RpcBlock | null>('eth_getBlockByNumber', [block.number, false]);
      if (typeof atHeight?.hash !== 'string' || atHeight.hash.toLowerCase() !== String(block.hash).toLowerCase()) return undefined;
    }
    return block;
  }

  async function getBlockDetails(selector: BlockSelector): Promise<BlockDetails | undefined> {
    const block = await mainChainBlock(selector);
    if (!block) return undefined;
    const height = Number(quantity(block.number, 'block number'));
    const timestamp = Number(quantity(block.timestamp, 'block timestamp'));
    const parentHash = String(block.parentHash ?? '').toLowerCase();
    let minedInSeconds = 0;
    if (height > 0) {
      const parent = await call<RpcBlock | null>('eth_getBlockByHash', [parentHash, false]);
      if (parent) minedInSeconds = Math.max(0, timestamp - Number(quantity(parent.timestamp, 'block timestamp')));
    }
    const decimal = (value: unknown) => (parseQuantity(value) ?? 0n).toString();
    const evm = {
      difficulty: decimal(block.difficulty),
      extraData: typeof block.extraData === 'string' ? block.extraData : '0x',
      gasLimit: decimal(block.gasLimit),
      gasUsed: decimal(block.gasUsed),
      nonce: typeof block.nonce === 'string' ? block.nonce : '0x0000000000000000',
      sha3Uncles: typeof block.sha3Uncles === 'string' ? block.sha3Uncles.toLowerCase() : '',
      // Nodes after the merge may leave totalDifficulty out: '' then, not a made-up figure.
      totalDifficulty: parseQuantity(block.totalDifficulty)?.toString() ?? '',
      minedInSeconds,
      size: Number(parseQuantity(block.size) ?? 0n),
      uncles: Array.isArray(block.uncles) ? (block.uncles as unknown[]).filter((u): u is string => typeof u === 'string').map((u) => u.toLowerCase()) : [],
    };
    return {
      hash: String(block.hash).toLowerCase(),
      height,
      previousBlockHash: parentHash,
      timestamp,
      transactionsCount: Array.isArray(block.transactions) ? block.transactions.length : 0,
      blockchainSpecific: { ...evm },
      evm,
    };
  }

  async function getTransactionDetails(transactionId: string): Promise<TransactionDetails | undefined> {
    const tx = await call<RpcTransaction | null>('eth_getTransactionByHash', [transactionId]);
    // Unknown, or pending (not mined yet: no block to describe it in).
    if (tx === null || typeof tx !== 'object' || typeof tx.blockHash !== 'string' || !HASH.test(tx.blockHash)) return undefined;
    const [receipt, block] = await Promise.all([
      call<RpcReceipt | null>('eth_getTransactionReceipt', [transactionId]),
      mainChainBlock({ hash: tx.blockHash.toLowerCase() }),
    ]);
    if (!receipt || !block || String(receipt.blockHash).toLowerCase() !== tx.blockHash.toLowerCase()) return undefined;
    const value = parseQuantity(tx.value) ?? 0n;
    const gasUsed = quantity(receipt.gasUsed, 'gasUsed');
    const gasPrice = parseQuantity(receipt.effectiveGasPrice) ?? parseQuantity(tx.gasPrice) ?? 0n;
    const blobFee = (parseQuantity(receipt.blobGasUsed) ?? 0n) * (parseQuantity(receipt.blobGasPrice) ?? 0n);
    const fee = gasUsed * gasPrice + blobFee;
    const from = String(tx.from ?? '').toLowerCase();
    const created = typeof receipt.contractAddress === 'string' ? receipt.contractAddress.toLowerCase() : undefined;
    const to = typeof tx.to === 'string' ? tx.to.toLowerCase() : (created ?? '');
    const status = parseQuantity(receipt.status);
    const specific: Record<string, unknown> = {
      contract: created ?? '',
      gasLimit: (parseQuantity(tx.gas) ?? 0n).toString(),
      gasPrice: { amount: coins(gasPrice), unit },
      gasUsed: gasUsed.toString(),
      inputData: typeof tx.input === 'string' ? tx.input : '0x',
      nonce: Number(parseQuantity(tx.nonce) ?? 0n),
    };
    // Only ethereum's variant has it (docs/reference/api.md#callback-data-reads); pre-Byzantium receipts have no status: success.
    if (blockchain === 'ethereum') specific.transactionStatus = status === undefined ? '0x1' : `0x${status.toString(16)}`;
    return {
      index: Number(quantity(tx.transactionIndex, 'transactionIndex')),
      isConfirmed: true,
      minedInBlockHash: tx.blockHash.toLowerCase(),
      minedInBlockHeight: Number(quantity(tx.blockNumber, 'blockNumber')),
      recipients: [{ address: to, amount: coins(value) }],
      senders: [{ address: from, amount: coins(value + fee) }],
      timestamp: Number(quantity(block.timestamp, 'block timestamp')),
      transactionHash: String(tx.hash).toLowerCase(),
      fee: { amount: coins(fee), unit },
      blockchainSpecific: specific,
    };
  }

  return { getBlockDetails, getTransactionDetails };
}

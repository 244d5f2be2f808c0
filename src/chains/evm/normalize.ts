/**
 * Pure EVM block normaliser: turns the JSON-RPC results of one block (block with full transactions,
 * its receipts, optionally its callTracer traces) into the chain-independent NormalizedBlock. No I/O.
 *
 * Rules (see also the README of the recorded fixtures and docs/reference/events/README.md):
 * - Header quantities are hex; a malformed header, a hash-only block, a missing receipt, a receipt from
 *   another block or a trace that cannot be attributed to a transaction throws EvmNormalizeError (the
 *   caller should refetch: normalising half a block would lose ledger entries).
 * - Token transfers: receipt logs with topic0 = Transfer(address,address,uint256). 3 topics and 32 bytes of
 *   data = fungible (ERC-20, BEP-20 on binance-smart-chain); 4 topics and empty data = NFT (ERC-721, token
 *   id in decimal). Removed logs, logs of failed transactions and malformed logs (wrong data length,
 *   non-hex bytes, address topics with non-zero upper 12 bytes, ...) are skipped, never thrown.
 * - Receipt status: `0x1` success, `0x0` failure; absent (pre-Byzantium receipts) counts as success.
 * - Internal transfers: callTracer frames below the top frame with value > 0 and type CALL, CREATE, CREATE2
 *   or SELFDESTRUCT (case-insensitive; CALLCODE, DELEGATECALL and STATICCALL move no value between
 *   accounts). A frame with `error` is excluded with its whole subtree; nothing of a failed transaction.
 * - operationId scheme: `call_` + the frame's path of child indices from the top frame, e.g. the top
 *   frame's 3rd child's 1st child is `call_2_0`. The index counts every child (also zero-value and
 *   static calls), so it equals Parity/Erigon's `traceAddress`; the prefix is always `call` whatever the
 *   frame type, so the identity does not change between tracer dialects (geth SELFDESTRUCT / Parity
 *   suicide, CREATE2 / create).
 * - Coin movements, per transaction, one net entry per address (zero nets omitted), in block order then
 *   first appearance: the sender pays gasUsed × effectiveGasPrice (receipt; the transaction's gasPrice if
 *   the receipt has none) plus blobGasUsed × blobGasPrice when present; on success `value` moves from
 *   `from` to `to` (contract creation: the receipt's contractAddress) and every internal transfer moves its
 *   amount. Block rewards and withdrawals are not transaction-bound and are not included.
 * - Fees: each transaction's fee (> 0) and its sender, in `fees` (the wallet-key callbacks' `fee`).
 * - Nonces: each transaction's `sender:nonce` (decimal) in `nonces`, failed ones included (the conflict
 *   check of announced pending transactions, src/ingest/dropped.ts); a transaction without a readable nonce
 *   is left out.
 */

import { MovementBook } from '../movements.ts';
import type { InternalTransfer, NormalizedBlock, TokenTransfer, TransactionFee } from '../types.ts';
import type { CallFrame, CallTraceEntry, RpcBlock, RpcLog, RpcReceipt, RpcTransaction } from './rpc-types.ts';

export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

export type EvmBlockchain = 'ethereum' | 'ethereum-classic' | 'binance-smart-chain';

export interface EvmBlockInput {
  /** `eth_getBlockByNumber <n> true` result. */
  block: RpcBlock;
  /** `eth_getBlockReceipts` result, or the per-transaction `eth_getTransactionReceipt` results (any order). */
  receipts: RpcReceipt[];
  /** `debug_traceBlockByNumber <n> {"tracer":"callTracer"}` result; without it there are no internal transfers. */
  traces?: CallTraceEntry[];
}

export class EvmNormalizeError extends Error {
  override name = 'EvmNormalizeError';
}

const QUANTITY = /^0x[0-9a-fA-F]+$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const WORD = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS_WORD = /^0x0{24}([0-9a-fA-F]{40})$/;

/** Hex quantity → bigint, or undefined when absent or not a hex quantity. */
export function parseQuantity(value: unknown): bigint | undefined {
  return typeof value === 'string' && QUANTITY.test(value) ? BigInt(value) : undefined;
}

function normalizeHash(value: unknown): string | undefined {
  return typeof value === 'string' && HASH.test(value) ? value.toLowerCase() : undefined;
}

function normalizeAddress(value: unknown): string | undefined {
  return typeof value === 'string' && ADDRESS.test(value) ? value.toLowerCase() : undefined;
}

function requireHash(value: unknown, what: string): string {
  const hash = normalizeHash(value);
  if (hash === undefined) throw new EvmNormalizeError(`${what} is not a 32-byte hex hash: ${String(value)}`);
  return hash;
}

function requireSafeNumber(value: unknown, what: string): number {
  const n = parseQuantity(value);
  if (n === undefined || n > BigInt(Number.MAX_SAFE_INTEGER)) throw new EvmNormalizeError(`${what} is not a hex quantity: ${String(value)}`);
  return Number(n);
}

export interface EvmBlockHeader {
  height: number;
  hash: string;
  parentHash: string;
  timestamp: number;
  transactionIds: string[];
}

/** Header part of a block; accepts `eth_getBlockByNumber` with full transactions or with hashes only. */
export function normalizeEvmBlockHeader(block: RpcBlock): EvmBlockHeader {
  if (block === null || typeof block !== 'object') throw new EvmNormalizeError('block is not an object');
  const txs = block.transactions;
  if (!Array.isArray(txs)) throw new EvmNormalizeError('block has no transactions array');
  return {
    height: requireSafeNumber(block.number, 'block number'),
    hash: requireHash(block.hash, 'block hash'),
    parentHash: requireHash(block.parentHash, 'block parentHash'),
    timestamp: requireSafeNumber(block.timestamp, 'block timestamp'),
    transactionIds: txs.map((tx, i) => requireHash(typeof tx === 'string' ? tx : tx?.hash, `transaction ${i} hash`)),
  };
}

/** A Transfer log as a TokenTransfer, or undefined when it is not one or is malformed. Never throws. */
export function decodeTransferLog(log: RpcLog, transactionId: string, blockchain: EvmBlockchain): TokenTransfer | undefined {
  if (log === null || typeof log !== 'object' || log.removed === true) return undefined;
  const topics = log.topics;
  if (!Array.isArray(topics) || typeof topics[0] !== 'string' || topics[0].toLowerCase() !== TRANSFER_TOPIC) return undefined;
  const contract = normalizeAddress(log.address);
  const logIndex = parseQuantity(log.logIndex);
  if (contract === undefined || logIndex === undefined || logIndex > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  const from = topicAddress(topics[1]);
  const to = topicAddress(topics[2]);
  if (from === undefined || to === undefined) return undefined;
  const data = typeof log.data === 'string' ? log.data : undefined;
  if (topics.length === 3) {
    if (data === undefined || !WORD.test(data)) return undefined;
    const tokenType = blockchain === 'binance-smart-chain' ? 'BEP-20' : 'ERC-20';
    return { transactionId, logIndex: Number(logIndex), tokenType, contract, from, to, amount: BigInt(data) };
  }
  if (topics.length === 4) {
    const tokenTopic = topics[3];
    if (typeof tokenTopic !== 'string' || !WORD.test(tokenTopic)) return undefined;
    if (data !== undefined && data !== '0x' && data !== '') return undefined;
    return { transactionId, logIndex: Number(logIndex), tokenType: 'ERC-721', contract, from, to, tokenId: BigInt(tokenTopic).toString(10) };
  }
  return undefined;
}

function topicAddress(topic: unknown): string | undefined {
  if (typeof topic !== 'string') return undefined;
  const m = ADDRESS_WORD.exec(topic);
  return m?.[1] === undefined ? undefined : `0x${m[1].toLowerCase()}`;
}

const VALUE_FRAME_TYPES = new Set(['CALL', 'CREATE', 'CREATE2', 'SELFDESTRUCT']);

/** Internal transfers of one transaction's callTracer tree (top frame excluded). Never throws on frame content. */
export function internalTransfersOfFrame(top: CallFrame, parentTransactionId: string): InternalTransfer[] {
  const out: InternalTransfer[] = [];
  if (top === null || typeof top !== 'object' || hasError(top)) return out;
  const walk = (frame: CallFrame, path: number[]): void => {
    const children = Array.isArray(frame.calls) ? frame.calls : [];
    children.forEach((child, i) => {
      if (child === null || typeof child !== 'object' || hasError(child)) return;
      const childPath = [...path, i];
      const type = typeof child.type === 'string' ? child.type.toUpperCase() : '';
      const amount = parseQuantity(child.value);
      const from = normalizeAddress(child.from);
      const to = normalizeAddress(child.to);
      if (VALUE_FRAME_TYPES.has(type) && amount !== undefined && amount > 0n && from !== undefined && to !== undefined) {
        out.push({ parentTransactionId, operationId: `call_${childPath.join('_')}`, from, to, amount });
      }
      walk(child, childPath);
    });
  };
  walk(top, []);
  return out;
}

function hasError(frame: CallFrame): boolean {
  return frame.error !== undefined && frame.error !== null && frame.error !== '';
}

/**
 * Internal transfers of a block's callTracer result. Entries are attributed by `txHash`, or, when no entry
 * has one (old geth), by position, which then requires one entry per transaction.
 */
export function extractInternalTransfers(traces: CallTraceEntry[], transactionIds: string[]): Map<string, InternalTransfer[]> {
  if (!Array.isArray(traces)) throw new EvmNormalizeError('traces is not an array');
  const known = new Set(transactionIds);
  const byPosition = traces.every((t) => t?.txHash === undefined || t?.txHash === null);
  if (byPosition && traces.length !== transactionIds.length) {
    throw new EvmNormalizeError(`traces without txHash: ${traces.length} entries for ${transactionIds.length} transactions`);
  }
  const result = new Map<string, InternalTransfer[]>();
  traces.forEach((entry, i) => {
    const txId = byPosition ? transactionIds[i] : normalizeHash(entry?.txHash);
    if (txId === undefined || !known.has(txId)) throw new EvmNormalizeError(`trace ${i} belongs to no transaction of the block: ${String(entry?.txHash)}`);
    if (entry.result === undefined || entry.result === null) throw new EvmNormalizeError(`trace of ${txId} has no result: ${String(entry.error)}`);
    result.set(txId, internalTransfersOfFrame(entry.result, txId));
  });
  return result;
}

type Status = 'success' | 'failed';

function receiptStatus(receipt: RpcReceipt, txId: string): Status {
  if (receipt.status === undefined || receipt.status === null) return 'success';
  const s = parseQuantity(receipt.status);
  if (s === 1n) return 'success';
  if (s === 0n) return 'failed';
  throw new EvmNormalizeError(`receipt of ${txId} has an unknown status: ${String(receipt.status)}`);
}

function requireQuantity(value: unknown, what: string): bigint {
  const q = parseQuantity(value);
  if (q === undefined) throw new EvmNormalizeError(`${what} is not a hex quantity: ${String(value)}`);
  return q;
}

export function normalizeEvmBlock(input: EvmBlockInput, chain: { blockchain: EvmBlockchain }): NormalizedBlock {
  const header = normalizeEvmBlockHeader(input.block);
  const txs = (input.block.transactions ?? []) as (RpcTransaction | string)[];

  const receipts = new Map<string, RpcReceipt>();
  if (!Array.isArray(input.receipts)) throw new EvmNormalizeError('receipts is not an array');
  for (const r of input.receipts) {
    const id = normalizeHash(r?.transactionHash);
    if (id === undefined) throw new EvmNormalizeError(`receipt without a valid transactionHash: ${String(r?.transactionHash)}`);
    const blockHash = normalizeHash(r.blockHash);
    if (r.blockHash !== undefined && r.blockHash !== null && blockHash !== header.hash) {
      throw new EvmNormalizeError(`receipt of ${id} is from block ${String(r.blockHash)}, not ${header.hash}`);
    }
    receipts.set(id, r);
  }

  const internalByTx = input.traces === undefined ? new Map<string, InternalTransfer[]>() : extractInternalTransfers(input.traces, header.transactionIds);

  const tokenTransfers: TokenTransfer[] = [];
  const internalTransfers: InternalTransfer[] = [];
  const book = new MovementBook();
  const failed: string[] = [];
  const fees: TransactionFee[] = [];
  const nonces: { transactionId: string; key: string }[] = [];

  txs.forEach((tx, i) => {
    const txId = header.transactionIds[i] as string;
    if (typeof tx === 'string') throw new EvmNormalizeError('block must be fetched with full transaction objects (eth_getBlockByNumber <n> true)');
    const receipt = receipts.get(txId);
    if (receipt === undefined) throw new EvmNormalizeError(`no receipt for transaction ${txId}`);
    const status = receiptStatus(receipt, txId);
    const from = normalizeAddress(tx.from);
    if (from === undefined) throw new EvmNormalizeError(`transaction ${txId} has no valid from: ${String(tx.from)}`);

    book.startTransaction(txId);
    const gasUsed = requireQuantity(receipt.gasUsed, `gasUsed of ${txId}`);
    const gasPrice = requireQuantity(receipt.effectiveGasPrice ?? tx.gasPrice, `effectiveGasPrice/gasPrice of ${txId}`);
    let fee = gasUsed * gasPrice;
    const blobGasUsed = parseQuantity(receipt.blobGasUsed);
    const blobGasPrice = parseQuantity(receipt.blobGasPrice);
    if (blobGasUsed !== undefined && blobGasPrice !== undefined) fee += blobGasUsed * blobGasPrice;
    book.add(from, -fee);
    if (fee > 0n) fees.push({ transactionId: txId, payer: from, amount: fee });
    const nonce = parseQuantity(tx.nonce);
    if (nonce !== undefined) nonces.push({ transactionId: txId, key: `${from}:${nonce}` });

    if (status !== 'success') {
      failed.push(txId);
      return;
    }

    const value = requireQuantity(tx.value ?? '0x0', `value of ${txId}`);
    if (value > 0n) {
      const to = tx.to === null || tx.to === undefined ? normalizeAddress(receipt.contractAddress) : normalizeAddress(tx.to);
      if (to === undefined) throw new EvmNormalizeError(`transaction ${txId} moves value but has no recipient (to/contractAddress)`);
      book.add(from, -value);
      book.add(to, value);
    }

    for (const log of Array.isArray(receipt.logs) ? receipt.logs : []) {
      const transfer = decodeTransferLog(log, txId, chain.blockchain);
      if (transfer !== undefined) tokenTransfers.push(transfer);
    }

    for (const t of internalByTx.get(txId) ?? []) {
      internalTransfers.push(t);
      book.add(t.from, -t.amount);
      book.add(t.to, t.amount);
    }
  });
  book.flush();

  tokenTransfers.sort((a, b) => a.logIndex - b.logIndex);

  const block: NormalizedBlock = { ...header, tokenTransfers, internalTransfers, coinMovements: book.movements };
  if (failed.length > 0) block.failedTransactionIds = failed;
  if (fees.length > 0) block.fees = fees;
  if (nonces.length > 0) block.nonces = nonces;
  return block;
}

/**
 * The EVM mempool reader (MempoolReader): a pending transaction filter (`eth_newPendingTransactionFilter`,
 * then `eth_getFilterChanges` at each poll), and the new transactions read by hash
 * (`eth_getTransactionByHash`). A transaction the node answers with a `blockNumber` (mined since it was
 * announced) or not at all (dropped, replaced) is left out.
 *
 * With the node's WebSocket (wsUrl), `eth_subscribe ["newPendingTransactions"]` pushes the hashes and wakes
 * the loop at once; the filter is then polled every `pollIntervalMs` only (30 s by default: the safety net
 * for what a subscription drops, and it keeps the filter alive), and at every round while the
 * subscription is down (it reconnects with backoff). Each (re)subscription reads the node's pending block
 * too, for what entered the pool while nothing listened.
 *
 * What an unmined transaction shows:
 * - coins: its `value`, from the sender to the recipient (no fee: the gas used is unknown before execution;
 *   a transaction of value 0 moves no coins);
 * - tokens: the calldata of a direct call of `transfer(to, amount)` (ERC-20), `transferFrom(from, to, x)`
 *   (ERC-20, or ERC-721 when the contract says it supports ERC-721 by ERC-165) or
 *   `safeTransferFrom(from, to, tokenId[, data])` (ERC-721). A transfer made inside another contract's
 *   code (a router, a multisig) shows only in the logs of its execution: it cannot be seen before mining.
 * - conflicts: `sender:nonce`, which a replacement (same nonce, higher fee) shares.
 *
 * A filter the node forgot (its restart, an expiry) is made again at the next poll, and the node's pending
 * block is read then for what the pool already holds: only a transaction that entered and left the pool
 * while there was no filter goes unseen (its confirmed events are unaffected).
 */
import { decodeFunctionData, type Hex, parseAbi } from 'viem';
import type { Blockchain } from '../../domain/chains.ts';
import { mapLimit } from '../../lib/concurrency.ts';
import { createPushQueue } from '../push-queue.ts';
import type { CoinMovement, MempoolReader, PendingTransactions, TokenTransfer } from '../types.ts';
import type { EvmRpcClient } from './rpc.ts';
import { createSubscription, type SubscriptionOptions } from './subscription.ts';

const TRANSFER_ABI = parseAbi([
  'function transfer(address to, uint256 amount)',
  'function transferFrom(address from, address to, uint256 amount)',
  'function safeTransferFrom(address from, address to, uint256 tokenId)',
  'function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)',
]);
const SELECTORS = new Set(['0xa9059cbb', '0x23b872dd', '0x42842e0e', '0xb88d4fde']);
/** supportsInterface(0x80ac58cd): ERC-165's question for ERC-721. */
const SUPPORTS_ERC721 = `0x01ffc9a780ac58cd${'0'.repeat(56)}` as Hex;
const HASH = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** Contracts whose ERC-721 answer is remembered (oldest forgotten first). */
const MAX_KNOWN_CONTRACTS = 10_000;

interface RpcPendingTransaction {
  hash?: unknown;
  from?: unknown;
  to?: unknown;
  value?: unknown;
  input?: unknown;
  nonce?: unknown;
  blockNumber?: unknown;
}

/** The node's WebSocket, for newPendingTransactions. */
export interface EvmMempoolPush extends Pick<SubscriptionOptions<string>, 'wsUrl' | 'timeoutMs' | 'reconnectDelayMs' | 'logger' | 'log'> {
  /** The filter is polled at least this often while the subscription is up; default 30 s. */
  pollIntervalMs?: number;
  now?: () => number;
}

export function createEvmMempoolReader(rpc: EvmRpcClient, blockchain: Blockchain, concurrency = 8, push?: EvmMempoolPush): MempoolReader {
  let filter: string | undefined;
  const nft = new Map<string, boolean>();
  const fungible = blockchain === 'binance-smart-chain' ? 'BEP-20' : 'ERC-20';

  /**
   * The transactions already in the pool when a filter is made (a filter announces only later ones): the
   * node's pending block, where it has one. Without this, a payment sent between a chain's first
   * unconfirmed subscription (or a node restart) and the filter's creation would never be seen.
   */
  async function pooledAtStart(): Promise<string[]> {
    const pending = await rpc.request<{ transactions?: unknown } | null>('eth_getBlockByNumber', ['pending', false]).catch(() => null);
    const ids = pending && Array.isArray(pending.transactions) ? pending.transactions : [];
    return ids.filter((h): h is string => typeof h === 'string' && HASH.test(h)).map((h) => h.toLowerCase());
  }

  async function filterChanges(): Promise<string[]> {
    if (filter === undefined) {
      filter = await rpc.request<string>('eth_newPendingTransactionFilter', []);
      const pooled = await pooledAtStart();
      if (pooled.length > 0) return pooled; // the filter's first changes come at the next poll
    }
    let changes: unknown;
    try {
      changes = await rpc.request<unknown>('eth_getFilterChanges', [filter]);
    } catch (error) {
      filter = undefined; // forgotten by the node (restart, expiry): a new one at the next poll
      throw error;
    }
    if (!Array.isArray(changes)) throw new Error(`eth_getFilterChanges at ${rpc.url} answered no list`);
    return changes.filter((h): h is string => typeof h === 'string' && HASH.test(h)).map((h) => h.toLowerCase());
  }

  async function isNft(contract: string): Promise<boolean> {
    const known = nft.get(contract);
    if (known !== undefined) return known;
    const answer = await rpc.call({ to: contract, data: SUPPORTS_ERC721, gas: 100_000n }).catch(() => '0x');
    const result = answer.length >= 66 && BigInt(answer.slice(0, 66)) === 1n;
    if (nft.size >= MAX_KNOWN_CONTRACTS) nft.delete(nft.keys().next().value as string);
    nft.set(contract, result);
    return result;
  }

  async function tokenTransfer(id: string, from: string, contract: string, input: Hex): Promise<TokenTransfer | undefined> {
    if (!SELECTORS.has(input.slice(0, 10).toLowerCase())) return undefined;
    let call: ReturnType<typeof decodeFunctionData<typeof TRANSFER_ABI>>;
    try {
      call = decodeFunctionData({ abi: TRANSFER_ABI, data: input });
    } catch {
      return undefined; // the selector but not the arguments: not a transfer we can read
    }
    const base = { transactionId: id, logIndex: 0, contract };
    if (call.functionName === 'transfer') {
      const [to, amount] = call.args;
      return { ...base, tokenType: fungible, from, to: to.toLowerCase(), amount };
    }
    const [source, to, x] = call.args;
    const asNft = call.functionName === 'safeTransferFrom' || (await isNft(contract));
    return asNft
      ? { ...base, tokenType: 'ERC-721', from: source.toLowerCase(), to: to.toLowerCase(), tokenId: x.toString(10) }
      : { ...base, tokenType: fungible, from: source.toLowerCase(), to: to.toLowerCase(), amount: x };
  }

  async function readPending(ids: string[]): Promise<PendingTransactions> {
    const answers = await mapLimit(ids, concurrency, (id) => rpc.request<RpcPendingTransaction | null>('eth_getTransactionByHash', [id]));
    const result: PendingTransactions = { transactionIds: [], coinMovements: [], tokenTransfers: [], conflicts: [] };
    for (const [i, tx] of answers.entries()) {
      const id = ids[i] as string;
      // Unknown (dropped, replaced) or mined meanwhile.
      if (tx === null || typeof tx !== 'object' || (tx.blockNumber !== null && tx.blockNumber !== undefined)) continue;
      if (typeof tx.from !== 'string' || !ADDRESS.test(tx.from)) continue;
      const from = tx.from.toLowerCase();
      const to = typeof tx.to === 'string' && ADDRESS.test(tx.to) ? tx.to.toLowerCase() : undefined;
      result.transactionIds.push(id);
      if (typeof tx.nonce === 'string') result.conflicts.push({ transactionId: id, key: `${from}:${BigInt(tx.nonce)}` });
      const value = typeof tx.value === 'string' && /^0x[0-9a-fA-F]+$/.test(tx.value) ? BigInt(tx.value) : 0n;
      if (value > 0n && to !== undefined) {
        const movements: CoinMovement[] = [
          { transactionId: id, address: from, delta: -value },
          { transactionId: id, address: to, delta: value },
        ];
        result.coinMovements.push(...(from === to ? [] : movements));
      }
      if (to !== undefined && typeof tx.input === 'string' && tx.input.length >= 10) {
        const transfer = await tokenTransfer(id, from, to, tx.input as Hex);
        if (transfer) result.tokenTransfers.push(transfer);
      }
    }
    return result;
  }

  /** eth_getTransactionByHash for each of `ids`: those the node answers null (never a mined one: it is answered with its block). */
  async function missing(ids: string[]): Promise<string[]> {
    const answers = await mapLimit(ids, concurrency, (id) => rpc.request<unknown>('eth_getTransactionByHash', [id]));
    return ids.filter((_, i) => {
      const tx = answers[i];
      if (tx === null) return true;
      if (typeof tx !== 'object' || tx === undefined)
        throw new Error(`eth_getTransactionByHash ${ids[i]} at ${rpc.url} answered neither a transaction nor null`);
      return false;
    });
  }

  /**
   * docs/concepts/deposit-safety.md#evicted: between two equal reads of the latest block's hash, the
   * candidates still unknown to the node, and their sender's nonce at that block (`eth_getTransactionCount`
   * at its hash, EIP-1898): at most the transaction's nonce, neither it nor a transaction taking its nonce is
   * mined up to that block.
   */
  async function provenUnmined(candidates: { transactionId: string; claims: string[] }[]): Promise<{ tip: string; unmined: string[] } | undefined> {
    const tipBefore = await latestHash();
    const gone = new Set(await missing(candidates.map((c) => c.transactionId)));
    const unmined: string[] = [];
    for (const c of candidates) {
      if (!gone.has(c.transactionId)) continue;
      const nonces = c.claims.flatMap((claim) => {
        const [sender, nonce] = claim.split(':');
        return sender !== undefined && ADDRESS.test(sender) && nonce !== undefined && /^[0-9]+$/.test(nonce) ? [{ sender, nonce: BigInt(nonce) }] : [];
      });
      if (nonces.length === 0) continue;
      let proven = true;
      for (const { sender, nonce } of nonces) {
        const count = await rpc.request<unknown>('eth_getTransactionCount', [sender, { blockHash: tipBefore }]);
        if (typeof count !== 'string' || !/^0x[0-9a-fA-F]+$/.test(count)) throw new Error(`eth_getTransactionCount at ${rpc.url} answered ${String(count)}`);
        if (BigInt(count) > nonce) proven = false;
      }
      if (proven) unmined.push(c.transactionId);
    }
    if ((await latestHash()) !== tipBefore) return undefined;
    return { tip: tipBefore, unmined };
  }

  async function latestHash(): Promise<string> {
    const block = await rpc.request<{ hash?: unknown } | null>('eth_getBlockByNumber', ['latest', false]);
    if (!block || typeof block.hash !== 'string' || !HASH.test(block.hash)) throw new Error(`eth_getBlockByNumber latest at ${rpc.url} answered no block`);
    return block.hash.toLowerCase();
  }

  if (!push) return { method: 'pending transaction filter', newTransactionIds: filterChanges, readPending, missing, provenUnmined };

  const now = push.now ?? Date.now;
  const pollIntervalMs = push.pollIntervalMs ?? 30_000;
  const queue = createPushQueue();
  let live = false;
  let lastPollAt = 0;
  let watching = false;
  const subscription = createSubscription<string>({
    ...push,
    params: ['newPendingTransactions'],
    // Hashes (geth's default form); a node that sends whole transactions gives their hash.
    parse: (result) => {
      const hash = typeof result === 'string' ? result : (result as { hash?: unknown } | null)?.hash;
      return typeof hash === 'string' && HASH.test(hash) ? hash.toLowerCase() : undefined;
    },
    // Another keep-alive than newHeads' (15 s): its own socket (see subscription.ts).
    keepAliveMs: 14_000,
    onUp: () => {
      live = true;
      void pooledAtStart().then((ids) => {
        for (const id of ids) queue.push(id);
      });
    },
    onDown: () => {
      live = false;
      queue.wake(); // the filter at once
    },
  });

  return {
    method: 'websocket newPendingTransactions + pending transaction filter',
    async newTransactionIds() {
      if (!watching) {
        watching = true; // stopped by close()
        subscription.watch((hash) => queue.push(hash));
      }
      const due = !live || now() - lastPollAt >= pollIntervalMs;
      const polled = due ? await filterChanges() : [];
      if (due) lastPollAt = now();
      const pushed = queue.drain();
      return pushed.length === 0 ? polled : pushed.concat(polled);
    },
    readPending,
    missing,
    provenUnmined,
    watch: (onNews) => queue.watch(onNews),
    async close() {
      subscription.stop();
      queue.clear();
    },
  };
}

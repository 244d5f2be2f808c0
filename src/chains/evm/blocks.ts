/**
 * Blocks and heads of an EVM node: a whole block (`eth_getBlockByNumber` with its transactions, their
 * receipts and call traces, checked to be of one block), a block's hash, the node's health and identity.
 */
import type { NodeHealth, NodeIdentity, NormalizedBlock } from '../types.ts';
import { EvmAdapterError, type EvmNode, isUnsupported } from './node.ts';
import { type EvmBlockchain, type EvmBlockHeader, normalizeEvmBlock, normalizeEvmBlockHeader, parseQuantity } from './normalize.ts';
import type { EvmReceiptReader } from './receipts.ts';
import type { RpcBlock } from './rpc-types.ts';
import type { EvmTraceReader } from './traces.ts';

export interface EvmBlockReader {
  getBlock(height: number): Promise<NormalizedBlock>;
  getBlockHash(height: number): Promise<string>;
  getNodeHealth(): Promise<NodeHealth>;
  getNodeIdentity(): Promise<NodeIdentity>;
}

export function createEvmBlockReader(
  { rpc }: EvmNode,
  blockchain: EvmBlockchain,
  receipts: Pick<EvmReceiptReader, 'blockReceipts'>,
  traces: EvmTraceReader,
): EvmBlockReader {
  /** Resolves when the block asked for before the current one has been linked. */
  let linkTurn: Promise<void> = Promise.resolve();

  async function readBlock(height: number): Promise<NormalizedBlock> {
    const hexHeight = `0x${height.toString(16)}`;
    const previous = linkTurn;
    let linkedNow!: () => void;
    linkTurn = new Promise((resolve) => {
      linkedNow = resolve;
    });
    let block: RpcBlock | null;
    let header: EvmBlockHeader;
    let chain: number;
    try {
      block = await rpc.request<RpcBlock | null>('eth_getBlockByNumber', [hexHeight, true]);
      if (block === null || typeof block !== 'object') throw new EvmAdapterError(`block ${height} is not on the node ${rpc.url} (yet)`);
      header = normalizeEvmBlockHeader(block);
      if (header.height !== height) throw new EvmAdapterError(`asked ${rpc.url} for block ${height}, got block ${header.height}`);
      await previous;
      chain = traces.linkBlock(header);
    } finally {
      linkedNow();
    }
    const ids = header.transactionIds;
    const [blockReceipts, blockTraces] =
      ids.length === 0 ? [[], undefined] : await Promise.all([receipts.blockReceipts(hexHeight, ids), traces.blockTraces(hexHeight, block, header, chain)]);
    // Receipts are asked by height too: one from another block means the node switched chains between
    // the two calls. Normalising would mix two blocks; throwing makes the follower fetch again.
    for (const receipt of blockReceipts) {
      const hash = typeof receipt?.blockHash === 'string' ? receipt.blockHash.toLowerCase() : undefined;
      if (hash !== undefined && hash !== header.hash) {
        throw new EvmAdapterError(
          `node ${rpc.url} reorganised under us: receipt of ${String(receipt.transactionHash)} is from block ${hash}, not ${header.hash}`,
        );
      }
    }
    return normalizeEvmBlock({ block, receipts: blockReceipts, traces: blockTraces }, { blockchain });
  }

  /** The header only (transaction hashes, not bodies): the follower's same-height head check. */
  async function getBlockHash(height: number): Promise<string> {
    const block = await rpc.request<RpcBlock | null>('eth_getBlockByNumber', [`0x${height.toString(16)}`, false]);
    if (block === null || typeof block !== 'object') throw new EvmAdapterError(`block ${height} is not on the node ${rpc.url} (yet)`);
    const header = normalizeEvmBlockHeader(block);
    if (header.height !== height) throw new EvmAdapterError(`asked ${rpc.url} for block ${height}, got block ${header.height}`);
    return header.hash;
  }

  /**
   * eth_syncing (false when in step with the network, else an object with currentBlock and highestBlock) and
   * the latest header, side by side. A node that answers eth_syncing with an object is catching up, whatever
   * its numbers say (geth keeps it until the state is healed too).
   */
  async function getNodeHealth(): Promise<NodeHealth> {
    const [syncing, latest] = await Promise.all([
      // A gateway that does not serve eth_syncing hides nothing we could act on: taken as in step.
      rpc.request<unknown>('eth_syncing', []).catch((error: unknown) => {
        if (isUnsupported(error)) return false;
        throw error;
      }),
      rpc.request<RpcBlock | null>('eth_getBlockByNumber', ['latest', false]),
    ]);
    if (latest === null || typeof latest !== 'object') throw new EvmAdapterError(`${rpc.url} answered no latest block`);
    const header = normalizeEvmBlockHeader(latest);
    if (syncing === false) return { height: header.height, hash: header.hash };
    const progress = syncing !== null && typeof syncing === 'object' ? (syncing as { currentBlock?: unknown; highestBlock?: unknown }) : {};
    const current = parseQuantity(progress.currentBlock);
    const highest = parseQuantity(progress.highestBlock);
    const detail = current !== undefined && highest !== undefined ? `: block ${current} of ${highest}` : '';
    return { height: header.height, hash: header.hash, syncing: `eth_syncing says the node is syncing${detail}` };
  }

  /** eth_chainId (EIP-695), in decimal. */
  async function getNodeIdentity(): Promise<NodeIdentity> {
    const id = await rpc.request<unknown>('eth_chainId', []);
    const chainId = parseQuantity(id);
    if (chainId === undefined) throw new EvmAdapterError(`eth_chainId at ${rpc.url} answered ${JSON.stringify(id)?.slice(0, 100)}, not a chain id`);
    return { chainId: String(chainId) };
  }

  return { getBlock: readBlock, getBlockHash, getNodeHealth, getNodeIdentity };
}

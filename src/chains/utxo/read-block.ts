/**
 * A block by height from one Bitcoin-family node, checked to be the one asked: getblockhash, then the block
 * as the node serves it best (blocks.ts), checked to have that hash and height and to still be on the node's
 * main chain. Shared by the adapter (in-process reads) and the block workers (block-worker.ts), so both
 * paths check a block the same way.
 */
import type { BlockFetcher, FetchedBlock } from './blocks.ts';
import { UtxoAdapterError } from './errors.ts';
import { type UtxoRpcClient, UtxoRpcError } from './rpc.ts';

const HASH = /^[0-9a-fA-F]{64}$/;

export interface BlockReader {
  /** getblockhash; a height the node does not have yet is an adapter error (the follower retries). */
  blockHash(height: number): Promise<string>;
  /** Block `hash` at `height`, checked to be the one asked and still on the node's main chain. */
  fetchBlock(hash: string, height: number): Promise<FetchedBlock>;
  /** blockHash then fetchBlock. */
  readBlock(height: number): Promise<{ hash: string; fetched: FetchedBlock }>;
}

export function createBlockReader(rpc: UtxoRpcClient, blocks: BlockFetcher): BlockReader {
  async function blockHash(height: number): Promise<string> {
    let hash: unknown;
    try {
      hash = await rpc.request<unknown>('getblockhash', [height]);
    } catch (error) {
      if (error instanceof UtxoRpcError && error.kind === 'rpc' && error.code === -8)
        throw new UtxoAdapterError(`block ${height} is not on the node ${rpc.url} (yet): ${error.nodeMessage}`);
      throw error;
    }
    if (typeof hash !== 'string' || !HASH.test(hash)) throw new UtxoAdapterError(`getblockhash ${height} at ${rpc.url} answered ${String(hash)}`);
    return hash.toLowerCase();
  }

  async function fetchBlock(hash: string, height: number): Promise<FetchedBlock> {
    const fetched = await blocks.fetch(hash, height);
    const { block } = fetched;
    const gotHash = typeof block.hash === 'string' ? block.hash.toLowerCase() : undefined;
    if (gotHash !== hash || block.height !== height)
      throw new UtxoAdapterError(`asked ${rpc.url} for block ${height} (${hash}), got block ${String(block.height)} (${String(block.hash)})`);
    // -1: the block left the main chain between getblockhash and getblock.
    if (block.confirmations === -1) throw new UtxoAdapterError(`block ${height} (${hash}) left the main chain of ${rpc.url} while being read`);
    return fetched;
  }

  async function readBlock(height: number): Promise<{ hash: string; fetched: FetchedBlock }> {
    const hash = await blockHash(height);
    return { hash, fetched: await fetchBlock(hash, height) };
  }

  return { blockHash, fetchBlock, readBlock };
}

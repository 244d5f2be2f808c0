/**
 * The unspent outputs of an address after block `h` (the opening of a watched address on UTXO chains):
 * `scantxoutset "start" ["addr(<address>)"]`, which reads the node's UTXO set at its tip, keeps the outputs
 * created at or before `h`, and, on nodes that serve getblock verbosity 3, adds back the outputs of the
 * address created at or before `h` but spent in the blocks after it (h, tip]: those blocks are walked and
 * the inputs whose `prevout` pays the address are taken. The answer is then exactly the unspent set after
 * block `h`, and the ledger sees those spendings inline (verbosity 3 resolves them) when it applies the
 * blocks after `h`.
 *
 * On verbosity-2 nodes the add-back is left out on purpose: the ledger cannot resolve the spendings of
 * outputs it never recorded either (its `utxo.spends` are matched against its own record), so leaving both
 * out keeps the final balance exact; only the opening is then the balance at the tip's unspent set rather
 * than at `h`.
 *
 * scantxoutset runs one scan at a time per node ("Scan already in progress"): calls are serialised here, and
 * a scan started by someone else is waited for. A node without scantxoutset (-32601: zcashd, Dogecoin 1.14,
 * Core < 0.17) cannot tell: undefined.
 */
import type { Logger } from 'pino';
import type { UnspentOutput, UnspentOutputs } from '../../ingest/adapter.ts';
import { mapLimit } from '../concurrency.ts';
import type { FetchedBlock, Support } from './blocks.ts';
import { UtxoAdapterError } from './errors.ts';
import { normalizeNodeAddress, normalizeUtxoAddress, parseCoinAmount, scriptAddress, type UtxoChainRef } from './normalize.ts';
import { type UtxoRpcClient, UtxoRpcError } from './rpc.ts';

/** Blocks after `h` walked for the add-back; beyond, the opening is unknown (about two weeks of bitcoin blocks). */
export const MAX_ADD_BACK_BLOCKS = 2016;
/** A scan of the whole UTXO set takes minutes on mainnet. */
const SCAN_TIMEOUT_MS = 15 * 60_000;
/** Waits while another scan runs: 0.25 s doubling to 5 s, about 2 minutes in all, then thrown (the caller retries). */
const BUSY_DELAYS_MS = [250, 500, 1_000, 2_000, 4_000, ...Array.from({ length: 22 }, () => 5_000)];
/** Verbosity-3 blocks are tens of MB of JSON each: few at a time. */
const WALK_CONCURRENCY = 2;

export interface UnspentReaderOptions {
  rpc: UtxoRpcClient;
  chain: UtxoChainRef;
  /** getblockhash + the block as the node serves it best (see blocks.ts). */
  readBlock(height: number): Promise<{ hash: string; fetched: FetchedBlock }>;
  /** The getblock verbosity known to be in use ('unknown' before the first block with inputs). */
  verbosity(): 'unknown' | 1 | 2 | 3;
  logger?: Pick<Logger, 'warn' | 'info'>;
  log: Record<string, unknown>;
}

export interface UnspentReader {
  getUnspentOutputs(address: string, height: number): Promise<UnspentOutputs | undefined>;
  support(): Support;
}

interface ScanUnspent {
  txid?: unknown;
  vout?: unknown;
  amount?: unknown;
  height?: unknown;
}

interface ScanResult {
  success?: unknown;
  height?: unknown;
  bestblock?: unknown;
  unspents?: unknown;
}

const HASH = /^[0-9a-fA-F]{64}$/;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

export function createUnspentReader(options: UnspentReaderOptions): UnspentReader {
  const { rpc, chain, logger, log } = options;
  let support: Support = 'unknown';
  /** The scan in flight (or last): scans of this adapter run one after the other. */
  let queue: Promise<unknown> = Promise.resolve();

  function serialised<T>(work: () => Promise<T>): Promise<T> {
    const run = queue.then(work, work);
    queue = run.catch(() => undefined);
    return run;
  }

  /** scantxoutset for one address; undefined when the node has no scantxoutset or refuses the address. */
  async function scan(address: string): Promise<ScanResult | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await rpc.request<unknown>('scantxoutset', ['start', [`addr(${address})`]], { timeoutMs: SCAN_TIMEOUT_MS });
        support = 'supported';
        if (!isObject(result)) throw new UtxoAdapterError(`scantxoutset at ${rpc.url} answered no scan result`);
        return result;
      } catch (error) {
        if (!(error instanceof UtxoRpcError)) throw error;
        if (error.kind === 'unsupported') {
          if (support !== 'unsupported') logger?.info({ ...log, answer: error.nodeMessage }, 'node has no scantxoutset: opening balances are unknown');
          support = 'unsupported';
          return undefined;
        }
        const busy = error.kind === 'rpc' && /scan already in progress/i.test(error.nodeMessage);
        if (busy && attempt < BUSY_DELAYS_MS.length) {
          await new Promise((r) => setTimeout(r, BUSY_DELAYS_MS[attempt]));
          continue;
        }
        // An address the node cannot put in a descriptor (validated here, so a node of another network or fork).
        if (!busy && error.kind === 'rpc' && (error.code === -5 || error.code === -8) && /address|descriptor/i.test(error.nodeMessage)) {
          logger?.warn({ ...log, address, answer: error.nodeMessage }, 'node refused the address in scantxoutset: opening balance unknown');
          return undefined;
        }
        throw error;
      }
    }
  }

  async function getUnspentOutputs(address: string, height: number): Promise<UnspentOutputs | undefined> {
    if (support === 'unsupported') return undefined;
    // The node's spelling (bitcoin-cash: cashaddr with prefix), which is also the normalised one.
    const target = normalizeUtxoAddress(chain, address);
    return await serialised(async () => {
      const tipBefore = await rpc.request<unknown>('getblockcount', []);
      const result = await scan(target);
      if (result === undefined) return undefined;
      if (result.success !== true) throw new UtxoAdapterError(`scantxoutset at ${rpc.url} did not complete (aborted?)`);
      let scanHeight: number;
      if (isCount(result.height)) scanHeight = result.height;
      else {
        // Core < 0.20 does not say at which height it scanned: the tip must not have moved meanwhile.
        const tipAfter = await rpc.request<unknown>('getblockcount', []);
        if (!isCount(tipBefore) || tipAfter !== tipBefore) throw new UtxoAdapterError(`the tip of ${rpc.url} moved during scantxoutset; try again`);
        scanHeight = tipBefore;
      }
      if (scanHeight < height) throw new UtxoAdapterError(`node ${rpc.url} scanned its UTXO set at block ${scanHeight}, below the asked block ${height}`);
      if (!Array.isArray(result.unspents)) throw new UtxoAdapterError(`scantxoutset at ${rpc.url} answered no unspents`);
      const unspent: UnspentOutput[] = [];
      for (const u of result.unspents as ScanUnspent[]) {
        if (!isObject(u) || typeof u.txid !== 'string' || !HASH.test(u.txid) || !isCount(u.vout) || !isCount(u.height))
          throw new UtxoAdapterError(`scantxoutset at ${rpc.url} answered a malformed unspent: ${JSON.stringify(u).slice(0, 200)}`);
        if (u.height <= height) unspent.push({ outpoint: `${u.txid.toLowerCase()}:${u.vout}`, value: parseCoinAmount(u.amount), height: u.height });
      }
      if (scanHeight === height) return { outputs: unspent, tipHeight: scanHeight };
      if (scanHeight - height > MAX_ADD_BACK_BLOCKS) {
        logger?.warn(
          { ...log, address: target, height, scanHeight },
          `the node's UTXO set is more than ${MAX_ADD_BACK_BLOCKS} blocks past the opening height: opening balance unknown`,
        );
        return undefined;
      }
      // On verbosity-2 nodes the add-back is left out: see the module comment.
      if (options.verbosity() === 1 || options.verbosity() === 2) return { outputs: unspent, tipHeight: scanHeight };
      const spent = await spentAfter(target, height, scanHeight, typeof result.bestblock === 'string' ? result.bestblock.toLowerCase() : undefined);
      return { outputs: spent === undefined ? unspent : [...unspent, ...spent], tipHeight: scanHeight };
    });
  }

  /**
   * The outputs paying `address`, created at or before `height`, spent in blocks (height, scanHeight]; undefined
   * when the node does not serve verbosity 3 after all.
   */
  async function spentAfter(address: string, height: number, scanHeight: number, bestblock: string | undefined): Promise<UnspentOutput[] | undefined> {
    const heights = Array.from({ length: scanHeight - height }, (_, i) => height + 1 + i);
    const blocks = await mapLimit(heights, WALK_CONCURRENCY, (h) => options.readBlock(h));
    if (blocks.some((b) => b.fetched.verbosity !== 3)) return undefined;
    // The walked blocks must be the chain the scan saw: linked, ending at its best block.
    blocks.forEach((b, i) => {
      const parent = b.fetched.block.previousblockhash;
      if (i > 0 && (typeof parent !== 'string' || parent.toLowerCase() !== blocks[i - 1]?.hash))
        throw new UtxoAdapterError(`the chain of ${rpc.url} changed while reading blocks ${height + 1}..${scanHeight}; try again`);
    });
    if (bestblock !== undefined && blocks.at(-1)?.hash !== bestblock)
      throw new UtxoAdapterError(`the tip of ${rpc.url} changed after scantxoutset (scanned ${bestblock}); try again`);
    const createdAfter = new Set<string>();
    for (const b of blocks) for (const tx of b.fetched.block.tx ?? []) if (isObject(tx) && typeof tx.txid === 'string') createdAfter.add(tx.txid.toLowerCase());
    const spent: UnspentOutput[] = [];
    for (const b of blocks) {
      for (const tx of b.fetched.block.tx ?? []) {
        if (!isObject(tx) || !Array.isArray(tx.vin)) continue;
        for (const vin of tx.vin) {
          if (!isObject(vin) || !isObject(vin.prevout) || typeof vin.txid !== 'string' || !isCount(vin.vout)) continue;
          const raw = scriptAddress(vin.prevout.scriptPubKey);
          if (raw === undefined || normalizeNodeAddress(chain, raw) !== address) continue;
          const prevHeight = vin.prevout.height;
          const createdBefore = isCount(prevHeight) ? prevHeight <= height : !createdAfter.has(vin.txid.toLowerCase());
          if (!createdBefore) continue;
          spent.push({
            outpoint: `${vin.txid.toLowerCase()}:${vin.vout}`,
            value: parseCoinAmount(vin.prevout.value),
            height: isCount(prevHeight) ? prevHeight : height,
          });
        }
      }
    }
    return spent;
  }

  return { getUnspentOutputs, support: () => support };
}

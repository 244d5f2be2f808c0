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
import { mapLimit } from '../../lib/concurrency.ts';
import { backoffMs, sleep } from '../../lib/loop.ts';
import type { UnspentOutput, UnspentOutputs } from '../types.ts';
import type { FetchedBlock, Support } from './blocks.ts';
import { UtxoAdapterError } from './errors.ts';
import { normalizeNodeAddress, normalizeUtxoAddress, parseCoinAmount, scriptAddress, type UtxoChainRef } from './normalize.ts';
import { type UtxoRpcClient, UtxoRpcError } from './rpc.ts';

/** Blocks after `h` walked for the add-back; beyond, the opening is unknown (about two weeks of bitcoin blocks). */
export const MAX_ADD_BACK_BLOCKS = 2016;
/** A scan of the whole UTXO set takes minutes on mainnet. */
const SCAN_TIMEOUT_MS = 15 * 60_000;
/** Waits while another scan runs: 0.25 s doubling to 5 s, about 2 minutes in all, then thrown (the caller retries). */
const BUSY_BACKOFF = { firstMs: 250, maxMs: 5_000 };
const BUSY_RETRIES = 27;
/** Addresses per scan: one pass over the UTXO set serves them all (scantxoutset takes many scan objects). */
const MAX_SCAN_BATCH = 200;
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
  desc?: unknown;
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
  /** Requests waiting for the next scan: scans of this adapter run one after the other, each for a batch. */
  const waiting: Request[] = [];
  let draining = false;

  /** scantxoutset for some addresses; undefined when the node has no scantxoutset or refuses an address. */
  async function scan(addresses: readonly string[]): Promise<ScanResult | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        const objects = addresses.map((a) => `addr(${a})`);
        const result = await rpc.request<unknown>('scantxoutset', ['start', objects], { timeoutMs: SCAN_TIMEOUT_MS });
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
        if (busy && attempt < BUSY_RETRIES) {
          await sleep(backoffMs(attempt + 1, BUSY_BACKOFF));
          continue;
        }
        // An address the node cannot put in a descriptor (validated here, so a node of another network or fork).
        if (!busy && error.kind === 'rpc' && (error.code === -5 || error.code === -8) && /address|descriptor/i.test(error.nodeMessage)) {
          if (addresses.length > 1) throw new RefusedInBatch();
          logger?.warn({ ...log, address: addresses[0], answer: error.nodeMessage }, 'node refused the address in scantxoutset: opening balance unknown');
          return undefined;
        }
        throw error;
      }
    }
  }

  function getUnspentOutputs(address: string, height: number): Promise<UnspentOutputs | undefined> {
    if (support === 'unsupported') return Promise.resolve(undefined);
    // The node's spelling (bitcoin-cash: cashaddr with prefix), which is also the normalised one.
    const target = normalizeUtxoAddress(chain, address);
    return new Promise((resolve, reject) => {
      waiting.push({ target, height, resolve, reject });
      if (!draining) void drain();
    });
  }

  /** Scans the waiting requests, MAX_SCAN_BATCH addresses at a time (a mainnet scan takes minutes whatever their number). */
  async function drain(): Promise<void> {
    draining = true;
    // Requests made in the same turn (readOpenings asks for all its addresses at once) share the first scan.
    await Promise.resolve();
    try {
      while (waiting.length > 0) {
        const batch = waiting.splice(0, MAX_SCAN_BATCH);
        try {
          const answers = await scanBatch(batch);
          for (const [i, r] of batch.entries()) r.resolve(answers[i]);
        } catch (error) {
          for (const r of batch) r.reject(error);
        }
      }
    } finally {
      draining = false;
    }
  }

  async function scanBatch(batch: readonly Request[]): Promise<(UnspentOutputs | undefined)[]> {
    const targets = [...new Set(batch.map((r) => r.target))];
    const tipBefore = await rpc.request<unknown>('getblockcount', []);
    let result: ScanResult | undefined;
    try {
      result = await scan(targets);
    } catch (error) {
      if (error instanceof RefusedInBatch) return await oneByOne(batch);
      throw error;
    }
    if (result === undefined) return batch.map(() => undefined);
    if (result.success !== true) throw new UtxoAdapterError(`scantxoutset at ${rpc.url} did not complete (aborted?)`);
    let scanHeight: number;
    if (isCount(result.height)) scanHeight = result.height;
    else {
      // Core < 0.20 does not say at which height it scanned: the tip must not have moved meanwhile.
      const tipAfter = await rpc.request<unknown>('getblockcount', []);
      if (!isCount(tipBefore) || tipAfter !== tipBefore) throw new UtxoAdapterError(`the tip of ${rpc.url} moved during scantxoutset; try again`);
      scanHeight = tipBefore;
    }
    const lowest = Math.min(...batch.map((r) => r.height));
    if (scanHeight < lowest) throw new UtxoAdapterError(`node ${rpc.url} scanned its UTXO set at block ${scanHeight}, below the asked block ${lowest}`);
    if (!Array.isArray(result.unspents)) throw new UtxoAdapterError(`scantxoutset at ${rpc.url} answered no unspents`);
    const byTarget = new Map<string, UnspentOutput[]>(targets.map((t) => [t, []]));
    for (const u of result.unspents as ScanUnspent[]) {
      if (!isObject(u) || typeof u.txid !== 'string' || !HASH.test(u.txid) || !isCount(u.vout) || !isCount(u.height))
        throw new UtxoAdapterError(`scantxoutset at ${rpc.url} answered a malformed unspent: ${JSON.stringify(u).slice(0, 200)}`);
      // Which address it pays: the only one scanned, or the addr(...) descriptor the node matched it with.
      const described = targets.length === 1 ? undefined : descriptorAddress(u.desc);
      const owner = targets.length === 1 ? targets[0] : described === undefined ? undefined : normalizeNodeAddress(chain, described);
      const outputs = owner === undefined ? undefined : byTarget.get(owner);
      if (outputs === undefined) return await oneByOne(batch); // a node that does not say: one scan per address
      outputs.push({ outpoint: `${u.txid.toLowerCase()}:${u.vout}`, value: parseCoinAmount(u.amount), height: u.height });
    }
    const bestblock = typeof result.bestblock === 'string' ? result.bestblock.toLowerCase() : undefined;
    const needAddBack = batch.filter((r) => r.height < scanHeight && scanHeight - r.height <= MAX_ADD_BACK_BLOCKS);
    // On verbosity-2 nodes the add-back is left out: see the module comment.
    const addBack =
      needAddBack.length > 0 && options.verbosity() !== 1 && options.verbosity() !== 2
        ? await spentAfter(lowestHeights(needAddBack), scanHeight, bestblock)
        : undefined;
    return batch.map((r) => {
      const outputs = (byTarget.get(r.target) ?? []).filter((o) => o.height <= r.height);
      if (scanHeight === r.height) return { outputs, tipHeight: scanHeight };
      if (scanHeight - r.height > MAX_ADD_BACK_BLOCKS) {
        logger?.warn(
          { ...log, address: r.target, height: r.height, scanHeight },
          `the node's UTXO set is more than ${MAX_ADD_BACK_BLOCKS} blocks past the opening height: opening balance unknown`,
        );
        return undefined;
      }
      const spent = (addBack?.get(r.target) ?? []).filter((x) => x.spentAt > r.height && x.output.height <= r.height).map((x) => x.output);
      return { outputs: [...outputs, ...spent], tipHeight: scanHeight };
    });
  }

  /** The batch scanned address by address (a node that refused one of them, or does not say which address an output pays). */
  async function oneByOne(batch: readonly Request[]): Promise<(UnspentOutputs | undefined)[]> {
    const answers: (UnspentOutputs | undefined)[] = [];
    for (const r of batch) answers.push(...(await scanBatch([r])));
    return answers;
  }

  /**
   * The outputs paying each address, created at or before its height, spent in the blocks after it up to
   * scanHeight (walked once for all); undefined when the node does not serve verbosity 3 after all.
   */
  async function spentAfter(heights: Map<string, number>, scanHeight: number, bestblock: string | undefined): Promise<Map<string, SpentOutput[]> | undefined> {
    const from = Math.min(...heights.values());
    const walked = Array.from({ length: scanHeight - from }, (_, i) => from + 1 + i);
    const blocks = await mapLimit(walked, WALK_CONCURRENCY, (h) => options.readBlock(h));
    if (blocks.some((b) => b.fetched.verbosity !== 3)) return undefined;
    // The walked blocks must be the chain the scan saw: linked, ending at its best block.
    blocks.forEach((b, i) => {
      const parent = b.fetched.block.previousblockhash;
      if (i > 0 && (typeof parent !== 'string' || parent.toLowerCase() !== blocks[i - 1]?.hash))
        throw new UtxoAdapterError(`the chain of ${rpc.url} changed while reading blocks ${from + 1}..${scanHeight}; try again`);
    });
    if (bestblock !== undefined && blocks.at(-1)?.hash !== bestblock)
      throw new UtxoAdapterError(`the tip of ${rpc.url} changed after scantxoutset (scanned ${bestblock}); try again`);
    const createdAt = new Map<string, number>();
    blocks.forEach((b, i) => {
      for (const tx of b.fetched.block.tx ?? []) if (isObject(tx) && typeof tx.txid === 'string') createdAt.set(tx.txid.toLowerCase(), walked[i] as number);
    });
    const spent = new Map<string, SpentOutput[]>([...heights.keys()].map((a) => [a, []]));
    blocks.forEach((b, i) => {
      const spentAt = walked[i] as number;
      for (const tx of b.fetched.block.tx ?? []) {
        if (!isObject(tx) || !Array.isArray(tx.vin)) continue;
        for (const vin of tx.vin) {
          if (!isObject(vin) || !isObject(vin.prevout) || typeof vin.txid !== 'string' || !isCount(vin.vout)) continue;
          const raw = scriptAddress(vin.prevout.scriptPubKey);
          if (raw === undefined) continue;
          const address = normalizeNodeAddress(chain, raw);
          const height = heights.get(address);
          // Spent after the address's opening height, of an output created at or before it.
          if (height === undefined || spentAt <= height) continue;
          const prevHeight = vin.prevout.height;
          const created = isCount(prevHeight) ? prevHeight : (createdAt.get(vin.txid.toLowerCase()) ?? height);
          if (created > height) continue;
          const output = { outpoint: `${vin.txid.toLowerCase()}:${vin.vout}`, value: parseCoinAmount(vin.prevout.value), height: created };
          spent.get(address)?.push({ output, spentAt });
        }
      }
    });
    return spent;
  }

  return { getUnspentOutputs, support: () => support };
}

/** An output the walk saw spent, and the block that spent it. */
interface SpentOutput {
  output: UnspentOutput;
  spentAt: number;
}

/** Each address with the lowest opening height asked for it (the walk then covers every request). */
function lowestHeights(requests: readonly Request[]): Map<string, number> {
  const heights = new Map<string, number>();
  for (const r of requests) heights.set(r.target, Math.min(r.height, heights.get(r.target) ?? r.height));
  return heights;
}

interface Request {
  target: string;
  height: number;
  resolve(answer: UnspentOutputs | undefined): void;
  reject(error: unknown): void;
}

/** The node refused one of several addresses: they are scanned one by one to tell which. */
class RefusedInBatch extends Error {}

/** The address of an `addr(...)` descriptor (with or without its checksum), as scantxoutset reports a match. */
function descriptorAddress(desc: unknown): string | undefined {
  if (typeof desc !== 'string') return undefined;
  return /^addr\(([^)]+)\)(?:#[0-9a-z]+)?$/.exec(desc)?.[1];
}

/**
 * Pure Bitcoin-family block normaliser (bitcoin, bitcoin-cash, litecoin, dogecoin, dash, zcash): turns the
 * JSON-RPC results of one block into the chain-independent NormalizedBlock. No I/O.
 *
 * Input: `getblock <hash> 2` (transaction objects), or `getblock <hash> 1` (txid strings) together with the
 * `getrawtransaction <txid> true` results of its transactions; optionally the previous outputs the block's
 * inputs spend (`prevouts`, keyed `txid:vout`), which verbosity 2 does not carry. `prevoutsNeeded` lists the
 * keys an adapter has to resolve (getrawtransaction of the funding transaction, or the service's own record).
 *
 * Rules (see also sections 1 and 2 of the recorded fixtures' README):
 * - Header: `height`, `hash`, `previousblockhash` (absent on genesis: 64 zeros), `time`. Hashes and txids are
 *   lower-case hex. transactionIds are `tx[].txid`, never `tx[].hash` (the wtxid).
 * - A missing or malformed hash/height/time, a transaction without a txid, a verbosity-1 txid without its
 *   transaction object, an output without a readable amount or an input that is neither coinbase, MWEB nor
 *   `txid`+`vout` throws UtxoNormalizeError (the caller should refetch: normalising half a block would lose
 *   ledger entries).
 * - Amounts: `valueZat` (zcash) or `valueSat` (dash) when present, else `value` read as a decimal string
 *   (the number's shortest round-trip form, e.g. 0.1 → "0.1") → base units with BigInt, never float
 *   arithmetic; more than 8 decimals is an error.
 * - Addresses: `scriptPubKey.address` (Core >= 22) or `scriptPubKey.addresses[0]` when it holds exactly one
 *   address (older Core and the forks; note that old Core prints the P2PKH address of a bare `pubkey` output,
 *   modern Core none). Outputs without an address (nulldata, bare multisig, nonstandard, modern pubkey,
 *   Litecoin HogEx `witness_mweb_hogaddr`) move nothing trackable and are skipped. Addresses are normalised as
 *   src/domain/addresses.ts normalises them (bitcoin-cash: cashaddr with prefix; segwit: lower case), so they
 *   equal subscribed addresses; an address that does not validate for the chain and network is kept as the
 *   node printed it.
 * - Coin movements, per transaction, one net entry per address (zero nets omitted), in block order then first
 *   appearance (inputs, then outputs): outputs credit their address; inputs debit the address of the output
 *   they spend when that output is known: `vin[].prevout` (verbosity 3), `input.prevouts`, or an output of an
 *   earlier transaction of the same block. Inputs whose previous output is unknown move nothing (resolve them
 *   first with prevoutsNeeded, or leave them to the ledger through `utxo.spends`). Coinbase inputs spend nothing.
 * - `utxo.outputs`: every transparent output that has an address (normalised address, outpoint `txid:vout`,
 *   value, transaction), zero-value ones included, in block order. `utxo.spends`: every input (not coinbase,
 *   not MWEB) whose previous output was not resolved above, in block order; the ledger resolves them against
 *   its own record of watched outputs. A resolved input is never in `spends`, so nothing is debited twice;
 *   it is in `utxo.resolvedSpends` (same form, block order), which moves nothing (the conflict check of
 *   announced unconfirmed transactions reads every input: src/ingest/dropped.ts).
 * - Ignored, never an error: Litecoin MWEB inputs/outputs (`ismweb: true`; their amounts are hidden), zcash
 *   shielded parts (`vjoinsplit`, `vShieldedSpend`, `vShieldedOutput`, `valueBalance`, `orchard`), Dogecoin
 *   `auxpow`, Dash special-transaction payloads (`type`, `extraPayload`), `fee`, and unknown fields.
 * - No token or internal transfers exist at this level (Omni is read elsewhere).
 */

import { validateAddress } from '../../domain/addresses.ts';
import type { Network } from '../../domain/chains.ts';
import { MovementBook } from '../movements.ts';
import type { NormalizedBlock, UtxoOutput, UtxoSpend } from '../types.ts';
import type { RpcBlock, RpcInput, RpcOutput, RpcPrevout, RpcScriptPubKey, RpcTransaction } from './rpc-types.ts';

export type UtxoBlockchain = 'bitcoin' | 'bitcoin-cash' | 'litecoin' | 'dogecoin' | 'dash' | 'zcash';

export interface UtxoChainRef {
  blockchain: UtxoBlockchain;
  network: Network;
}

/** A previous output an input spends, as resolved by the adapter. */
export interface KnownPrevout {
  /** The output's address as the node prints it (normalised by the normaliser); undefined when it has none. */
  address?: string;
  /** Base units (satoshis). */
  value: bigint;
}

export interface UtxoBlockInput {
  /** `getblock <hash> 2`, or `getblock <hash> 1` together with `transactions`. */
  block: RpcBlock;
  /** With verbosity 1: the `getrawtransaction <txid> true` results of the block's transactions, any order. */
  transactions?: readonly RpcTransaction[];
  /** Previous outputs spent by the block's inputs, keyed `txid:vout` (see prevoutKey, prevoutsNeeded). */
  prevouts?: ReadonlyMap<string, KnownPrevout>;
}

export class UtxoNormalizeError extends Error {
  override name = 'UtxoNormalizeError';
}

/** Decimal places of every Bitcoin-family coin (satoshi, litoshi, koinu, duff, zatoshi). */
export const COIN_DECIMALS = 8;

export const ZERO_HASH = '0'.repeat(64);

/** 2^51 satoshis in coins: below it, a double's rounding error times 10^8 stays under half a satoshi. */
const FAST_AMOUNT_LIMIT = 2 ** 51 / 1e8;

const HASH = /^[0-9a-fA-F]{64}$/;
const DECIMAL = /^([+-])?(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
const DIGITS = /^\d+$/;
/** Bounds the work of an absurd exponent in a string amount (a JSON number never exceeds e+308). */
const MAX_EXPONENT = 400;

/**
 * A coin amount (JSON number or decimal string, e.g. 0.1, "21000000", 1e-8) → base units, exactly. A number
 * is read through its shortest round-trip string (`String(0.1)` is "0.1"), so no float arithmetic happens.
 * Throws UtxoNormalizeError when the value is not a finite decimal or has more than `decimals` decimals.
 * Negative amounts are accepted here (the callers reject them where they cannot occur).
 */
export function parseCoinAmount(value: unknown, decimals = COIN_DECIMALS): bigint {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new UtxoNormalizeError(`amount is not a finite number: ${String(value)}`);
    // Fast path (a large block has thousands of amounts): below 2^51 base units, value × 10^decimals is within
    // 0.5 of the integer it stands for, and dividing back gives the same double only if it had no more decimals.
    if (decimals === COIN_DECIMALS && Math.abs(value) < FAST_AMOUNT_LIMIT) {
      const units = Math.round(value * 1e8);
      if (units / 1e8 === value) return BigInt(units);
    }
    text = String(value);
  } else if (typeof value === 'string') {
    text = value;
  } else {
    throw new UtxoNormalizeError(`amount is not a number: ${value === null ? 'null' : typeof value}`);
  }
  const m = DECIMAL.exec(text);
  if (m === null) throw new UtxoNormalizeError(`amount is not a decimal number: ${JSON.stringify(text)}`);
  const [, sign, whole = '', fraction = '', exponentText = '0'] = m;
  const exponent = Number(exponentText);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > MAX_EXPONENT) throw new UtxoNormalizeError(`amount exponent out of range: ${text}`);
  // value = digits × 10^(exponent − fraction.length); in base units, × 10^decimals.
  const digits = `${whole}${fraction}`;
  const shift = exponent - fraction.length + decimals;
  let units: bigint;
  if (shift >= 0) {
    units = BigInt(digits) * 10n ** BigInt(shift);
  } else {
    const cut = digits.length + shift; // shift < 0: the last −shift digits must be zeros
    const dropped = cut > 0 ? digits.slice(cut) : digits;
    if (/[^0]/.test(dropped)) throw new UtxoNormalizeError(`amount has more than ${decimals} decimals: ${text}`);
    units = cut > 0 ? BigInt(digits.slice(0, cut)) : 0n;
  }
  return sign === '-' ? -units : units;
}

/** An integer amount already in base units (`valueZat`, `valueSat`): a safe non-negative integer or a digit string. */
export function parseBaseUnits(value: unknown, what: string): bigint {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'string' && DIGITS.test(value)) return BigInt(value);
  throw new UtxoNormalizeError(`${what} is not a non-negative integer: ${String(value)}`);
}

/** The key of a previous output in `prevouts` and in prevoutsNeeded's answer. */
export function prevoutKey(txid: string, vout: number): string {
  return `${txid.toLowerCase()}:${vout}`;
}

function normalizeHash(value: unknown): string | undefined {
  return typeof value === 'string' && HASH.test(value) ? value.toLowerCase() : undefined;
}

function requireHash(value: unknown, what: string): string {
  const hash = normalizeHash(value);
  if (hash === undefined) throw new UtxoNormalizeError(`${what} is not a 32-byte hex hash: ${String(value)}`);
  return hash;
}

function requireCount(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw new UtxoNormalizeError(`${what} is not a non-negative integer: ${String(value)}`);
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export interface UtxoBlockHeader {
  height: number;
  hash: string;
  parentHash: string;
  timestamp: number;
  transactionIds: string[];
}

/** Header part of a block; accepts `getblock` with verbosity 1 (txid strings) or 2 (transaction objects). */
export function normalizeUtxoBlockHeader(block: RpcBlock): UtxoBlockHeader {
  if (!isObject(block)) throw new UtxoNormalizeError('block is not an object');
  const height = requireCount(block.height, 'block height');
  const hash = requireHash(block.hash, 'block hash');
  const prev = block.previousblockhash;
  let parentHash: string;
  if (prev === undefined || prev === null) {
    if (height !== 0) throw new UtxoNormalizeError(`block ${height} (${hash}) has no previousblockhash`);
    parentHash = ZERO_HASH;
  } else {
    parentHash = requireHash(prev, 'block previousblockhash');
  }
  const timestamp = requireCount(block.time, 'block time');
  const txs = block.tx;
  if (!Array.isArray(txs)) throw new UtxoNormalizeError(`block ${height} has no tx array`);
  const transactionIds = txs.map((tx, i) =>
    requireHash(typeof tx === 'string' ? tx : isObject(tx) ? tx.txid : undefined, `txid of transaction ${i} of block ${height}`),
  );
  return { height, hash, parentHash, timestamp, transactionIds };
}

/** The block's transaction objects in block order: verbosity 2 as is, verbosity 1 looked up in `transactions` by txid. */
function blockTransactions(block: RpcBlock, transactionIds: readonly string[], transactions: readonly RpcTransaction[] | undefined): RpcTransaction[] {
  const byId = new Map<string, RpcTransaction>();
  if (transactions !== undefined) {
    if (!Array.isArray(transactions)) throw new UtxoNormalizeError('transactions is not an array');
    transactions.forEach((tx, i) => {
      const id = normalizeHash(isObject(tx) ? tx.txid : undefined);
      if (id === undefined) throw new UtxoNormalizeError(`getrawtransaction result ${i} has no valid txid`);
      byId.set(id, tx);
    });
  }
  const entries = block.tx as (RpcTransaction | string)[];
  return entries.map((entry, i) => {
    const txid = transactionIds[i] as string;
    if (typeof entry !== 'string') return entry;
    const tx = byId.get(txid);
    if (tx === undefined)
      throw new UtxoNormalizeError(`no transaction object for ${txid}: a getblock verbosity 1 result needs the getrawtransaction results of its transactions`);
    return tx;
  });
}

/** The one address of a scriptPubKey as the node prints it, or undefined (none, or several: bare multisig). */
export function scriptAddress(spk: RpcScriptPubKey | null | undefined): string | undefined {
  if (!isObject(spk)) return undefined;
  if (typeof spk.address === 'string' && spk.address !== '') return spk.address;
  const list = spk.addresses;
  if (Array.isArray(list) && list.length === 1 && typeof list[0] === 'string' && list[0] !== '') return list[0];
  return undefined;
}

function outputValue(out: RpcOutput, what: string): bigint {
  let value: bigint;
  if (out.valueZat !== undefined && out.valueZat !== null) value = parseBaseUnits(out.valueZat, `${what} valueZat`);
  else if (out.valueSat !== undefined && out.valueSat !== null) value = parseBaseUnits(out.valueSat, `${what} valueSat`);
  else {
    try {
      value = parseCoinAmount(out.value);
    } catch (error) {
      throw new UtxoNormalizeError(`${what} value: ${(error as Error).message}`);
    }
  }
  if (value < 0n) throw new UtxoNormalizeError(`${what} has a negative value: ${String(out.value)}`);
  return value;
}

interface ParsedOutput {
  key: string;
  /** The node's spelling; normalised when a movement is recorded. */
  address: string | undefined;
  value: bigint;
}

/** Transparent outputs of a transaction (MWEB outputs left out). */
function parseOutputs(tx: RpcTransaction, txid: string): ParsedOutput[] {
  const vout = tx.vout ?? [];
  if (!Array.isArray(vout)) throw new UtxoNormalizeError(`transaction ${txid} has a vout that is not an array`);
  const out: ParsedOutput[] = [];
  vout.forEach((o, i) => {
    if (!isObject(o)) throw new UtxoNormalizeError(`output ${i} of ${txid} is not an object`);
    if (o.ismweb === true) return;
    const n = typeof o.n === 'number' && Number.isSafeInteger(o.n) && o.n >= 0 ? o.n : i;
    out.push({ key: prevoutKey(txid, n), address: scriptAddress(o.scriptPubKey), value: outputValue(o, `output ${n} of ${txid}`) });
  });
  return out;
}

type ParsedInput = { kind: 'none' } | { kind: 'spend'; key: string; prevout: RpcPrevout | undefined };

/** One input: coinbase and MWEB inputs spend nothing trackable; others name the output they spend. */
function parseInput(vin: RpcInput, i: number, txid: string): ParsedInput {
  if (!isObject(vin)) throw new UtxoNormalizeError(`input ${i} of ${txid} is not an object`);
  if (vin.ismweb === true) return { kind: 'none' };
  if (vin.coinbase !== undefined && vin.coinbase !== null) return { kind: 'none' };
  const prevTxid = normalizeHash(vin.txid);
  const vout = vin.vout;
  if (prevTxid === undefined || typeof vout !== 'number' || !Number.isSafeInteger(vout) || vout < 0) {
    throw new UtxoNormalizeError(`input ${i} of ${txid} is neither coinbase nor a txid:vout reference: ${String(vin.txid)}:${String(vout)}`);
  }
  return { kind: 'spend', key: prevoutKey(prevTxid, vout), prevout: isObject(vin.prevout) ? vin.prevout : undefined };
}

function parseInputs(tx: RpcTransaction, txid: string): ParsedInput[] {
  const vin = tx.vin ?? [];
  if (!Array.isArray(vin)) throw new UtxoNormalizeError(`transaction ${txid} has a vin that is not an array`);
  return vin.map((v, i) => parseInput(v, i, txid));
}

interface ParsedBlock {
  header: UtxoBlockHeader;
  txs: { txid: string; inputs: ParsedInput[]; outputs: ParsedOutput[] }[];
  /** Every transparent output of the block by `txid:vout`. */
  outputs: Map<string, ParsedOutput>;
}

function parseBlock(block: RpcBlock, transactions: readonly RpcTransaction[] | undefined): ParsedBlock {
  const header = normalizeUtxoBlockHeader(block);
  const objects = blockTransactions(block, header.transactionIds, transactions);
  const outputs = new Map<string, ParsedOutput>();
  const txs = objects.map((tx, i) => {
    const txid = header.transactionIds[i] as string;
    if (!isObject(tx)) throw new UtxoNormalizeError(`transaction ${txid} is not an object`);
    const parsed = { txid, inputs: parseInputs(tx, txid), outputs: parseOutputs(tx, txid) };
    for (const o of parsed.outputs) outputs.set(o.key, o);
    return parsed;
  });
  return { header, txs, outputs };
}

/**
 * The `txid:vout` keys of the inputs whose previous output the block does not carry (not coinbase, not MWEB,
 * no verbosity-3 `prevout`, not an output of the same block), in block order, without repeats. The adapter
 * resolves them (getrawtransaction of the txid, or its own record) and passes them as `prevouts`.
 * Throws UtxoNormalizeError on a structurally invalid block, as normalizeUtxoBlock does.
 */
export function prevoutsNeeded(block: RpcBlock, transactions?: readonly RpcTransaction[]): string[] {
  const parsed = parseBlock(block, transactions);
  const needed = new Set<string>();
  for (const tx of parsed.txs) {
    for (const input of tx.inputs) {
      if (input.kind === 'spend' && input.prevout === undefined && !parsed.outputs.has(input.key)) needed.add(input.key);
    }
  }
  return [...needed];
}

/** An address as subscriptions are normalised (bitcoin-cash: cashaddr with prefix); kept as given when it does not validate. */
export function normalizeUtxoAddress(chain: UtxoChainRef, raw: string): string {
  const v = validateAddress(chain.blockchain, chain.network, raw);
  return v.ok ? v.normalized : raw;
}

const BASE58_OR_LOWER_BECH32 = /^(?:[1-9A-HJ-NP-Za-km-z]{25,36}|[a-z]{2,4}1[02-9ac-hj-np-z]{8,87})$/;
const CASHADDR_WITH_PREFIX = /^(?:bitcoincash|bchtest|bchreg):[02-9ac-hj-np-z]{42,112}$/;

/**
 * normalizeUtxoAddress for an address a node printed for an output script. The node derived it from the
 * script, so its checksum is not verified again (that costs ~15 µs an address: most of the time of
 * normalising a 2,000-transaction block): base58 and lower-case bech32 are already in the form subscribed
 * addresses take (validateAddress keeps base58 as given and lower-cases bech32), and so is a cashaddr with
 * its prefix. Anything else (a bitcoin-cash legacy address, which subscriptions store as cashaddr, or an
 * odd spelling) takes the full path.
 */
export function normalizeNodeAddress(chain: UtxoChainRef, raw: string): string {
  if (chain.blockchain === 'bitcoin-cash' ? CASHADDR_WITH_PREFIX.test(raw) : BASE58_OR_LOWER_BECH32.test(raw)) return raw;
  return normalizeUtxoAddress(chain, raw);
}

/** normalizeUtxoAddress, cached per block (many outputs repeat addresses). */
function addressNormalizer(chain: UtxoChainRef): (raw: string) => string {
  const cache = new Map<string, string>();
  return (raw) => {
    let normalized = cache.get(raw);
    if (normalized === undefined) {
      normalized = normalizeNodeAddress(chain, raw);
      cache.set(raw, normalized);
    }
    return normalized;
  };
}

/** The spent output of an input, from verbosity 3, the adapter's prevouts or the block itself. */
function resolvePrevout(
  input: Extract<ParsedInput, { kind: 'spend' }>,
  txid: string,
  prevouts: ReadonlyMap<string, KnownPrevout> | undefined,
  inBlock: Map<string, ParsedOutput>,
): { address: string | undefined; value: bigint } | undefined {
  if (input.prevout !== undefined) {
    return { address: scriptAddress(input.prevout.scriptPubKey), value: outputValue(input.prevout, `prevout ${input.key} spent by ${txid}`) };
  }
  const known = prevouts?.get(input.key);
  if (known !== undefined) {
    if (typeof known.value !== 'bigint' || known.value < 0n) throw new UtxoNormalizeError(`prevouts entry ${input.key} has no non-negative bigint value`);
    return { address: typeof known.address === 'string' && known.address !== '' ? known.address : undefined, value: known.value };
  }
  return inBlock.get(input.key);
}

export function normalizeUtxoBlock(input: UtxoBlockInput, chain: UtxoChainRef): NormalizedBlock {
  if (!isObject(input)) throw new UtxoNormalizeError('input is not an object');
  const parsed = parseBlock(input.block, input.transactions);
  const prevouts = input.prevouts;
  if (prevouts !== undefined && (prevouts === null || typeof prevouts.get !== 'function')) throw new UtxoNormalizeError('prevouts is not a Map');
  const normalize = addressNormalizer(chain);
  const book = new MovementBook();
  const outputs: UtxoOutput[] = [];
  const spends: UtxoSpend[] = [];
  const resolvedSpends: UtxoSpend[] = [];

  for (const tx of parsed.txs) {
    book.startTransaction(tx.txid);
    for (const spend of tx.inputs) {
      if (spend.kind !== 'spend') continue;
      const prev = resolvePrevout(spend, tx.txid, prevouts, parsed.outputs);
      if (prev === undefined) {
        spends.push({ transactionId: tx.txid, outpoint: spend.key });
        continue;
      }
      resolvedSpends.push({ transactionId: tx.txid, outpoint: spend.key });
      if (prev.address !== undefined) book.add(normalize(prev.address), -prev.value);
    }
    for (const out of tx.outputs) {
      if (out.address === undefined) continue;
      const address = normalize(out.address);
      book.add(address, out.value);
      outputs.push({ transactionId: tx.txid, outpoint: out.key, address, value: out.value });
    }
  }
  book.flush();

  return { ...parsed.header, tokenTransfers: [], internalTransfers: [], coinMovements: book.movements, utxo: { outputs, spends, resolvedSpends } };
}

/**
 * Omni Layer tokens (USDT on bitcoin is property 31) read from Omni Core, which is bitcoind plus `omni_*`
 * RPCs. Whether a node is Omni Core is detected once with `omni_getinfo` (-32601: a plain bitcoind, no Omni
 * transfers). Per block: `omni_listblocktransactions <height>` (txids), then `omni_gettransaction` of each
 * (batched, bounded concurrency); only transactions with `valid: true` count.
 *
 * Transfers (omniTransfers): Simple Send (type_int 0; also when Omni Core calls it "Crowdsale Purchase":
 * the tokens still go from sender to reference address), Send All (4: one per `subsends[]` entry, each with
 * its own property), Send To Many (7: one per `receivers[]` entry, as Omni Core 0.12 prints it). Grants,
 * revocations, DEx and MetaDEx trades, Send To Owners and property creation move tokens without a
 * sender-to-receiver pair in the answer and give none. Amounts are decimal strings: 8 decimals for a
 * divisible property, an integer otherwise; read exactly (parseCoinAmount / BigInt).
 *
 * logIndex = position of the transaction in omni_listblocktransactions × 1000 + the entry's index in
 * subsends/receivers: stable for a block, distinct within a transaction (what the event identity needs).
 *
 * Unconfirmed (pendingTransfers, for the mempool reader): `omni_listpendingtransactions`, the same transfer
 * types read from the same fields.
 */

import type { Logger } from 'pino';
import type { Network } from '../../domain/chains.ts';
import { mapLimit } from '../../lib/concurrency.ts';
import { LookupCache } from '../lookup-cache.ts';
import type { TokenMetadata, TokenMetadataCache, TokenTransfer } from '../types.ts';
import type { Support } from './blocks.ts';
import { UtxoAdapterError } from './errors.ts';
import { normalizeUtxoAddress, parseCoinAmount } from './normalize.ts';
import { type UtxoRpcClient, UtxoRpcError } from './rpc.ts';

/** `omni_gettransaction` as Omni Core prints it (fields used here; DEx purchases have neither `valid` nor `type_int`). */
export interface OmniTransaction {
  txid?: unknown;
  sendingaddress?: unknown;
  referenceaddress?: unknown;
  type_int?: unknown;
  type?: unknown;
  propertyid?: unknown;
  divisible?: unknown;
  amount?: unknown;
  valid?: unknown;
  block?: unknown;
  blockhash?: unknown;
  subsends?: unknown;
  receivers?: unknown;
  [key: string]: unknown;
}

/** `omni_getproperty`. */
export interface OmniProperty {
  name: string;
  divisible: boolean;
  creationtxid: string;
}

export const SIMPLE_SEND = 0;
export const SEND_ALL = 4;
export const SEND_TO_MANY = 7;
/** Transfers per Omni transaction slot in logIndex. */
const SUB_INDEX_SPAN = 1000;
/** omni_gettransaction calls per batch request. */
const BATCH = 50;
/** Blocks after `height` walked to take a balance back; beyond, the balance is unknown. */
export const MAX_BALANCE_WALK_BLOCKS = 2016;
/** Bounds the memory caches (oldest dropped first). */
const MAX_CACHED = 100_000;
/** A property's name is shown in every callback: a hostile name must not make them huge. */
const MAX_NAME_LENGTH = 256;
const HASH = /^[0-9a-fA-F]{64}$/;
const PROPERTY_ID = /^[1-9]\d{0,9}$/;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

export class OmniFormatError extends Error {
  override name = 'OmniFormatError';
}

/** An Omni amount in base units: 8 decimals when divisible, a whole number otherwise. */
export function omniAmount(value: unknown, divisible: unknown, what: string): bigint {
  if (typeof divisible !== 'boolean') throw new OmniFormatError(`${what} has no divisible flag`);
  if (typeof value !== 'string' && typeof value !== 'number') throw new OmniFormatError(`${what} has no amount`);
  let amount: bigint;
  if (divisible) {
    try {
      amount = parseCoinAmount(value, 8);
    } catch (error) {
      throw new OmniFormatError(`${what} amount: ${(error as Error).message}`);
    }
  } else {
    const text = String(value);
    if (!/^\d+$/.test(text)) throw new OmniFormatError(`${what} amount of an indivisible property is not a whole number: ${text}`);
    amount = BigInt(text);
  }
  if (amount < 0n) throw new OmniFormatError(`${what} amount is negative: ${String(value)}`);
  return amount;
}

function propertyId(value: unknown, what: string): string {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !PROPERTY_ID.test(text)) throw new OmniFormatError(`${what} has no valid propertyid: ${String(value)}`);
  return text;
}

function address(value: unknown, what: string, network: Network): string {
  if (typeof value !== 'string' || value === '') throw new OmniFormatError(`${what} has no address`);
  return normalizeUtxoAddress({ blockchain: 'bitcoin', network }, value);
}

/**
 * The token transfers of one valid omni_gettransaction answer, `position` being its index in the block's
 * omni_listblocktransactions. Types that move no tokens from sender to receiver give none.
 */
export function omniTransfers(tx: OmniTransaction, position: number, network: Network): TokenTransfer[] {
  if (typeof tx.txid !== 'string' || !HASH.test(tx.txid)) throw new OmniFormatError(`Omni transaction without a valid txid: ${String(tx.txid)}`);
  const transactionId = tx.txid.toLowerCase();
  const what = `Omni transaction ${transactionId}`;
  const base = { transactionId, tokenType: 'OMNI' as const };
  const logIndex = (sub: number) => position * SUB_INDEX_SPAN + sub;
  switch (tx.type_int) {
    case SIMPLE_SEND:
      return [
        {
          ...base,
          logIndex: logIndex(0),
          contract: propertyId(tx.propertyid, what),
          from: address(tx.sendingaddress, `${what} sender`, network),
          to: address(tx.referenceaddress, `${what} reference`, network),
          amount: omniAmount(tx.amount, tx.divisible, what),
        },
      ];
    case SEND_ALL: {
      // Omni Core prints `subsends` only for confirmed transactions, and none when nothing was sent.
      const subsends = tx.subsends ?? [];
      if (!Array.isArray(subsends)) throw new OmniFormatError(`${what} (Send All) has subsends that are not an array`);
      const from = address(tx.sendingaddress, `${what} sender`, network);
      const to = address(tx.referenceaddress, `${what} reference`, network);
      return subsends.map((s: unknown, i) => {
        const sub = isObject(s) ? s : {};
        return {
          ...base,
          logIndex: logIndex(i),
          contract: propertyId(sub.propertyid, `${what} subsend ${i}`),
          from,
          to,
          amount: omniAmount(sub.amount, sub.divisible, `${what} subsend ${i}`),
        };
      });
    }
    case SEND_TO_MANY: {
      const receivers = tx.receivers;
      if (!Array.isArray(receivers)) throw new OmniFormatError(`${what} (Send To Many) has no receivers array`);
      const contract = propertyId(tx.propertyid, what);
      const from = address(tx.sendingaddress, `${what} sender`, network);
      return receivers.map((r: unknown, i) => {
        const receiver = isObject(r) ? r : {};
        return {
          ...base,
          logIndex: logIndex(i),
          contract,
          from,
          to: address(receiver.address, `${what} receiver ${i}`, network),
          amount: omniAmount(receiver.amount, tx.divisible, `${what} receiver ${i}`),
        };
      });
    }
    default:
      return [];
  }
}

/** Control characters dropped (PostgreSQL text takes no NUL), trimmed, capped. */
function cleanName(value: unknown): string {
  if (typeof value !== 'string') return '';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  const clean = value.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return Array.from(clean).slice(0, MAX_NAME_LENGTH).join('');
}

export interface OmniReaderOptions {
  rpc: UtxoRpcClient;
  network: Network;
  /** Property metadata is kept here too (the store's token_metadata). */
  tokenMetadataCache?: TokenMetadataCache;
  concurrency: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
  log: Record<string, unknown>;
}

export interface OmniReader {
  /** Whether the node is Omni Core ('unknown' until first asked). */
  support(): Support;
  /**
   * The Omni token transfers of block `height`; [] on a node without Omni. With `blockHash`, a transaction
   * Omni Core places in another block (the node reorganised between calls) is thrown.
   */
  blockTransfers(height: number, blockHash?: string): Promise<TokenTransfer[]>;
  /**
   * The Omni token transfers of the unconfirmed transactions `txids` (see the function); [] on a node
   * without Omni.
   */
  pendingTransfers(txids: ReadonlySet<string>): Promise<TokenTransfer[]>;
  tokenMetadata(transfer: TokenTransfer): Promise<TokenMetadata | undefined>;
  /** The property's balance of `address` after block `height` (see the function). */
  getTokenBalance(propertyId: string, address: string, height: number): Promise<bigint | undefined>;
}

export function createOmniReader(options: OmniReaderOptions): OmniReader {
  const { rpc, network, tokenMetadataCache, logger, log } = options;
  const concurrency = Math.max(1, options.concurrency);
  let support: Support = 'unknown';
  let detecting: Promise<boolean> | undefined;
  /** Looked up once per process (concurrent callers share the lookup; a failure or an unknown property is forgotten). */
  const properties = new LookupCache<OmniProperty | undefined>(MAX_CACHED, (p) => p !== undefined);
  /** Omni type of the transactions whose transfers were read, for tokenMetadata's transactionType. */
  const transactionTypes = new Map<string, string>();

  function remember<V>(cache: Map<string, V>, key: string, value: V): void {
    cache.set(key, value);
    if (cache.size > MAX_CACHED) cache.delete(cache.keys().next().value as string);
  }

  /** omni_getinfo once: true on Omni Core, false on a node without the omni_* methods; other failures thrown (asked again). */
  function detect(): Promise<boolean> {
    if (support !== 'unknown') return Promise.resolve(support === 'supported');
    if (detecting === undefined) {
      const probe = rpc.request<unknown>('omni_getinfo', []).then(
        () => {
          support = 'supported';
          return true;
        },
        (error: unknown) => {
          if (!(error instanceof UtxoRpcError && error.kind === 'unsupported')) throw error;
          support = 'unsupported';
          logger?.info({ ...log, answer: error.nodeMessage }, 'node is not Omni Core (no omni_getinfo): no Omni token transfers');
          return false;
        },
      );
      detecting = probe;
      probe.catch(() => {
        if (detecting === probe) detecting = undefined;
      });
    }
    return detecting;
  }

  /** omni_gettransaction of each txid, in order. */
  async function transactions(txids: string[]): Promise<OmniTransaction[]> {
    const chunks: string[][] = [];
    for (let i = 0; i < txids.length; i += BATCH) chunks.push(txids.slice(i, i + BATCH));
    const answers = await mapLimit(chunks, concurrency, (chunk) => rpc.batch<unknown>(chunk.map((id) => ({ method: 'omni_gettransaction', params: [id] }))));
    return answers.flat().map((answer, i) => {
      if (!answer.ok) throw answer.error;
      if (!isObject(answer.result)) throw new UtxoAdapterError(`omni_gettransaction ${txids[i]} at ${rpc.url} answered no transaction`);
      return answer.result as OmniTransaction;
    });
  }

  async function blockTransfers(height: number, blockHash?: string): Promise<TokenTransfer[]> {
    if (!(await detect())) return [];
    const txids = await rpc.request<unknown>('omni_listblocktransactions', [height]);
    if (!Array.isArray(txids) || !txids.every((t) => typeof t === 'string' && HASH.test(t)))
      throw new UtxoAdapterError(`omni_listblocktransactions ${height} at ${rpc.url} answered no list of transaction ids`);
    const list = (txids as string[]).map((t) => t.toLowerCase());
    const txs = await transactions(list);
    const transfers: TokenTransfer[] = [];
    txs.forEach((tx, i) => {
      const txid = list[i] as string;
      if (typeof tx.txid !== 'string' || tx.txid.toLowerCase() !== txid)
        throw new UtxoAdapterError(`omni_gettransaction ${txid} at ${rpc.url} answered transaction ${String(tx.txid)}`);
      if (tx.valid !== true) return;
      const hash = typeof tx.blockhash === 'string' ? tx.blockhash.toLowerCase() : undefined;
      if (tx.block !== height || (blockHash !== undefined && hash !== undefined && hash !== blockHash.toLowerCase()))
        throw new UtxoAdapterError(
          `Omni transaction ${txid} listed for block ${height} is in block ${String(tx.block)} (${String(tx.blockhash)}) at ${rpc.url}: the node reorganised under us`,
        );
      let found: TokenTransfer[];
      try {
        found = omniTransfers(tx, i, network);
      } catch (error) {
        if (error instanceof OmniFormatError) throw new UtxoAdapterError(`${error.message} (block ${height} at ${rpc.url})`);
        throw error;
      }
      if (found.length > 0 && typeof tx.type === 'string') remember(transactionTypes, txid, tx.type);
      transfers.push(...found);
    });
    return transfers;
  }

  /**
   * `omni_listpendingtransactions` (Omni Core's memory pool, in omni_gettransaction's shape for an unconfirmed
   * transaction: no `valid`, no block fields), once per call, keeping the entries of `txids`. Omni Core
   * decides validity only when a transaction is mined: a transfer of a property that does not exist (it
   * can never become valid) is left out; any other is taken as listed, so a send above the sender's
   * balance is reported and then turns invalid when mined, as an EVM transfer that reverts. Send All lists
   * its subsends only once mined, so it gives none here. logIndex is the entry's index in
   * subsends/receivers (position 0): the pending identity does not use it. An entry Omni Core prints
   * in a shape herald cannot read is logged and left out: the memory pool moves on, and retrying it would
   * hold up every other pending transaction of the chain.
   */
  async function pendingTransfers(txids: ReadonlySet<string>): Promise<TokenTransfer[]> {
    if (txids.size === 0 || !(await detect())) return [];
    const listed = await rpc.request<unknown>('omni_listpendingtransactions', []);
    if (!Array.isArray(listed)) throw new UtxoAdapterError(`omni_listpendingtransactions at ${rpc.url} answered no list`);
    const transfers: TokenTransfer[] = [];
    for (const entry of listed) {
      const txid = isObject(entry) && typeof entry.txid === 'string' ? entry.txid.toLowerCase() : undefined;
      if (txid === undefined || !txids.has(txid)) continue;
      const tx = entry as OmniTransaction;
      // Mined between getrawtransaction and this list: a confirmed event's business.
      if (tx.block !== undefined || (typeof tx.confirmations === 'number' && tx.confirmations > 0)) continue;
      let found: TokenTransfer[];
      try {
        found = omniTransfers(tx, 0, network);
      } catch (error) {
        if (!(error instanceof OmniFormatError)) throw error;
        logger?.warn({ ...log, txid }, `pending Omni transaction left out: ${error.message}`);
        continue;
      }
      for (const transfer of found) if ((await property(transfer.contract)) !== undefined) transfers.push(transfer);
      if (found.length > 0 && typeof tx.type === 'string') remember(transactionTypes, txid, tx.type);
    }
    return transfers;
  }

  async function fetchProperty(id: string): Promise<OmniProperty | undefined> {
    const key = { blockchain: 'bitcoin', network, contract: id };
    const stored = await tokenMetadataCache?.get(key);
    if (stored?.tokenType === 'OMNI') return { name: stored.name, divisible: stored.decimals === 8, creationtxid: stored.createdByTransactionId ?? '' };
    let answer: unknown;
    try {
      answer = await rpc.request<unknown>('omni_getproperty', [Number(id)]);
    } catch (error) {
      // -8 "Property identifier does not exist": nothing to tell (no valid transfer of it exists).
      if (error instanceof UtxoRpcError && error.kind === 'rpc' && /does not exist/i.test(error.nodeMessage)) return undefined;
      throw error;
    }
    if (!isObject(answer) || typeof answer.divisible !== 'boolean') throw new UtxoAdapterError(`omni_getproperty ${id} at ${rpc.url} answered no property`);
    const property: OmniProperty = {
      name: cleanName(answer.name),
      divisible: answer.divisible,
      creationtxid: typeof answer.creationtxid === 'string' && HASH.test(answer.creationtxid) ? answer.creationtxid.toLowerCase() : '',
    };
    await tokenMetadataCache?.put(key, {
      name: property.name,
      symbol: '',
      decimals: property.divisible ? 8 : 0,
      tokenType: 'OMNI',
      createdByTransactionId: property.creationtxid,
    });
    return property;
  }

  /** The property, looked up once per process (concurrent callers share the lookup; a failure is forgotten). */
  function property(id: string): Promise<OmniProperty | undefined> {
    return properties.get(id, () => fetchProperty(id));
  }

  async function transactionType(txid: string): Promise<string> {
    const known = transactionTypes.get(txid);
    if (known !== undefined) return known;
    // Read before this process started (a callback built after a restart): ask the node.
    const tx = await rpc.request<unknown>('omni_gettransaction', [txid]);
    const type = isObject(tx) && typeof tx.type === 'string' ? tx.type : 'Simple Send';
    remember(transactionTypes, txid, type);
    return type;
  }

  async function tokenMetadata(transfer: TokenTransfer): Promise<TokenMetadata | undefined> {
    if (transfer.tokenType !== 'OMNI' || !PROPERTY_ID.test(transfer.contract)) return undefined;
    const p = await property(transfer.contract);
    if (p === undefined) return undefined;
    // Omni properties have a name but no ticker.
    return {
      name: p.name,
      symbol: '',
      decimals: p.divisible ? 8 : 0,
      createdByTransactionId: p.creationtxid,
      transactionType: await transactionType(transfer.transactionId),
    };
  }

  /**
   * `omni_getbalance` tells the balance at the tip: available (`balance`) plus `reserved` (tokens locked in
   * DEx offers are still the address's; `frozen` is part of `balance`, so it is not added). The transfers of
   * the property in blocks (height, tip] are taken back from it. Undefined when the node is not Omni Core,
   * the property does not exist, or more than MAX_BALANCE_WALK_BLOCKS blocks would have to be read. Grants,
   * DEx trades and other Omni operations after `height` are not taken back (they are not transfers, and the
   * ledger does not count them either). The node's wallet subtracts its own unconfirmed sends from
   * `balance`; a watched address of the node's wallet with such a send pending reads low.
   */
  async function getTokenBalance(id: string, owner: string, height: number): Promise<bigint | undefined> {
    if (!PROPERTY_ID.test(id) || !(await detect())) return undefined;
    const p = await property(id);
    if (p === undefined) return undefined;
    const who = normalizeUtxoAddress({ blockchain: 'bitcoin', network }, owner);
    for (let attempt = 0; attempt < 3; attempt++) {
      const tip = await rpc.request<unknown>('getblockcount', []);
      if (typeof tip !== 'number' || !Number.isSafeInteger(tip)) throw new UtxoAdapterError(`getblockcount at ${rpc.url} answered ${String(tip)}`);
      if (tip < height) throw new UtxoAdapterError(`node ${rpc.url} is at block ${tip}, below the asked block ${height}`);
      if (tip - height > MAX_BALANCE_WALK_BLOCKS) {
        logger?.warn({ ...log, propertyId: id, address: who, height, tip }, `more than ${MAX_BALANCE_WALK_BLOCKS} blocks to take back: Omni balance unknown`);
        return undefined;
      }
      const balance = await rpc.request<unknown>('omni_getbalance', [who, Number(id)]);
      if (!isObject(balance)) throw new UtxoAdapterError(`omni_getbalance at ${rpc.url} answered no balance`);
      let current: bigint;
      try {
        current = omniAmount(balance.balance, p.divisible, 'omni_getbalance') + omniAmount(balance.reserved ?? '0', p.divisible, 'omni_getbalance reserved');
      } catch (error) {
        throw new UtxoAdapterError(`${(error as Error).message} at ${rpc.url}`);
      }
      const heights = Array.from({ length: tip - height }, (_, i) => height + 1 + i);
      const perBlock = await mapLimit(heights, concurrency, (h) => blockTransfers(h));
      let delta = 0n;
      for (const t of perBlock.flat()) {
        if (t.contract !== id || t.amount === undefined) continue;
        if (t.to === who) delta += t.amount;
        if (t.from === who) delta -= t.amount;
      }
      // A block mined meanwhile would be counted in the balance but not taken back: read again.
      if ((await rpc.request<unknown>('getblockcount', [])) !== tip) continue;
      const before = current - delta;
      if (before < 0n) {
        logger?.warn({ ...log, propertyId: id, address: who, height }, 'Omni balance taken back below zero (operations other than transfers?): unknown');
        return undefined;
      }
      return before;
    }
    throw new UtxoAdapterError(`the tip of ${rpc.url} kept moving while reading an Omni balance; try again`);
  }

  return { support: () => support, blockTransfers, pendingTransfers, tokenMetadata, getTokenBalance };
}

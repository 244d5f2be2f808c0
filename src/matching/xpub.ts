/**
 * Wallet-key matches (XPUB_COINS_TRANSACTION_CONFIRMED, docs/concepts/wallet-keys.md): the derived addresses a block's
 * transactions pay or spend from fold into ONE match per (transaction, subscription), never one per
 * address. Pure. From the block's coin movements, as the address coin events read them (coins.ts):
 *
 * UTXO blocks (the Bitcoin family), with the ledger's spends resolved (wallets/ledger.ts resolveSpends):
 * - per address of a transaction, `received` is the sum of its outputs and `sent` = received - net (its
 *   movements are nets of outputs received and inputs spent);
 * - `incoming` when the wallet sent nothing; `self` when it sent and every addressed output of the
 *   transaction is the wallet's; `outgoing` otherwise; `amount` = |received - sent| over the wallet;
 * - `fee` (sent - outputs) only when every input is known to be the wallet's: no input left unresolved,
 *   and no other address of the transaction spent anything.
 *
 * Account blocks (EVM, Tron: native coin only, internal transfers included where the adapter reads them; token
 * transfers are not coins and fire nothing here):
 * - per address, the movement's net is split by the block's `fees`: the fee its address paid goes to `sent`,
 *   and the rest of the net (what the transaction's value and internal transfers moved) to `received` when
 *   positive, to `sent` when negative; so received - sent is the net, and an address paying itself shows
 *   only the fee;
 * - `incoming` when the wallet sent nothing; `self` when it sent and no address outside the wallet received
 *   coins (a contract call or token transfer without value: the fee alone); `outgoing` otherwise;
 * - `fee` when the payer of the transaction's fee is one of the wallet's addresses.
 */
import type { NormalizedBlock, TransactionFee } from '../chains/types.ts';
import type { SubscribedWalletKey } from '../domain/subscriptions.ts';
import type { SubscriptionIndex, SubscriptionRecord } from './index.ts';

export type XpubDirection = 'incoming' | 'outgoing' | 'self';
/** The wallet-key events: confirmed (from blocks) and unconfirmed (from the mempool, matching/pending.ts). */
export type XpubEventType = 'XPUB_COINS_TRANSACTION_CONFIRMED' | 'XPUB_COINS_TRANSACTION_UNCONFIRMED';

/** One address of the wallet a transaction touches. */
export interface XpubAddressMovement {
  address: string;
  derivationPath: string;
  change: boolean;
  index: number;
  /** Base units. */
  received: bigint;
  sent: bigint;
}

export interface XpubCoinsMatch<E extends XpubEventType = 'XPUB_COINS_TRANSACTION_CONFIRMED'> {
  eventType: E;
  subscription: SubscriptionRecord;
  /** What tells its callback apart (match.ts ItemIdentity): the transaction alone. */
  identity: { transactionId: string; position: null; direction: null };
  transactionId: string;
  walletKey: SubscribedWalletKey;
  direction: XpubDirection;
  /** Base units, >= 0: |received - sent| over the wallet's addresses. */
  amount: bigint;
  /** Base units; UTXO: null unless every input of the transaction is known to be the wallet's; account chains: null unless the wallet paid it. */
  fee: bigint | null;
  /** Receive chain first, by index. */
  addresses: XpubAddressMovement[];
}

/** Bits of the transaction id screen (matchXpub): a few hundred touched transactions set about 1 in 300 of them (8 KiB, cleared per block). */
const SCREEN_BITS = 1 << 16;

/** A hash of a transaction id's last 8 characters (the ids are hashes: any 8 of their characters are random), below SCREEN_BITS. */
function quickHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = Math.max(0, id.length - 8); i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return (h ^ (h >>> 13)) & (SCREEN_BITS - 1);
}

/**
 * The lookup's arrays, reused from block to block (matching runs on one thread): the addresses looked up and
 * their transactions, what the lookup found, and per coin movement the position of its lookup (-1: a
 * movement that spent nothing, not looked up; a bigint's sign is read once per movement, not twice: V8's
 * BigInt comparison is a call).
 */
const scratch = {
  keys: [] as string[],
  found: new Int32Array(0),
  transactions: [] as string[],
  lookedUp: new Int32Array(0),
  screen: new Int32Array(SCREEN_BITS / 32),
};

interface Tally {
  address: string;
  /** The first derived-address entry of the address (SubscriptionIndex.xpubEntriesAt), or -1: not the wallet's. */
  entry: number;
  net: bigint;
  out: bigint;
}

/**
 * What the dust rule reads of a wallet-key match (docs/concepts/wallet-keys.md): the smallest payment to one of
 * the wallet's addresses, when incoming; undefined otherwise.
 */
export function smallestReceived(match: XpubCoinsMatch<XpubEventType>): { address: string; amount: bigint } | undefined {
  if (match.direction !== 'incoming') return undefined;
  let smallest: { address: string; amount: bigint } | undefined;
  for (const a of match.addresses)
    if (a.received > 0n && (smallest === undefined || a.received < smallest.amount)) smallest = { address: a.address, amount: a.received };
  return smallest;
}

/**
 * The wallet-key matches of `block` for the subscriptions of `eventType` (by default the confirmed ones), in
 * block order, then in the order the subscriptions were indexed. The mempool's pending transactions stand in
 * for a block for the unconfirmed ones (matching/pending.ts).
 */
export function matchXpub<E extends XpubEventType = 'XPUB_COINS_TRANSACTION_CONFIRMED'>(
  index: SubscriptionIndex,
  block: NormalizedBlock,
  eventType: E = 'XPUB_COINS_TRANSACTION_CONFIRMED' as E,
): XpubCoinsMatch<E>[] {
  if (!index.hasXpub) return [];
  return block.utxo === undefined ? matchAccountBlock(index, block, eventType) : matchUtxoBlock(index, block, block.utxo, eventType);
}

/** Whether the wallet-key subscription of entry owner `owner` is one of `eventType`'s (all are the confirmed event's while no unconfirmed one is indexed). */
const isOf = (index: SubscriptionIndex, owner: number, eventType: XpubEventType) =>
  !index.hasXpubUnconfirmed ? eventType === 'XPUB_COINS_TRANSACTION_CONFIRMED' : index.xpubOwnerEventType(owner) === eventType;

function matchUtxoBlock<E extends XpubEventType>(
  index: SubscriptionIndex,
  block: NormalizedBlock,
  utxo: NonNullable<NormalizedBlock['utxo']>,
  eventType: E,
): XpubCoinsMatch<E>[] {
  // The addresses that tell a transaction touches the wallet: each output's (the wallet received) and each
  // spending movement's (the wallet spent: a negative net; an address that spent and got more back has an
  // output too), looked up together (firstOfEach: the lookups overlap; no allocation per miss). The tallies
  // below are built for the touched transactions only.
  const { coinMovements } = block;
  const { outputs } = utxo;
  if (scratch.keys.length < coinMovements.length + outputs.length) {
    scratch.keys = new Array<string>(coinMovements.length + outputs.length);
    scratch.found = new Int32Array(scratch.keys.length);
    scratch.transactions = new Array<string>(scratch.keys.length);
  }
  if (scratch.lookedUp.length < coinMovements.length) scratch.lookedUp = new Int32Array(coinMovements.length);
  const { keys, found, transactions, lookedUp } = scratch;
  let count = 0;
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i] as (typeof outputs)[number];
    keys[count] = o.address;
    transactions[count++] = o.transactionId;
  }
  for (let i = 0; i < coinMovements.length; i++) {
    const m = coinMovements[i] as (typeof coinMovements)[number];
    if (m.delta >= 0n) {
      lookedUp[i] = -1;
      continue;
    }
    lookedUp[i] = count;
    keys[count] = m.address;
    transactions[count++] = m.transactionId;
  }
  index.findXpubAddresses(keys, count, found);
  let touched: Set<string> | undefined;
  for (let i = 0; i < count; i++) {
    if ((found[i] as number) < 0) continue;
    touched ??= new Set();
    touched.add(transactions[i] as string);
  }
  // No block's strings kept alive by the scratch.
  keys.fill('', 0, count);
  transactions.fill('', 0, count);
  if (touched === undefined) return [];
  const touchedIds = touched;
  // A Set or Map lookup of a string fresh from the node's answer costs V8 a slow first hash (target-table.ts):
  // the block's transaction ids are screened by a JavaScript hash of their last characters first, and only
  // the few that pass (the touched ones, and about 1 in 300 others) are looked up.
  const screen = scratch.screen;
  screen.fill(0);
  for (const id of touchedIds) {
    const h = quickHash(id);
    screen[h >>> 5] = (screen[h >>> 5] as number) | (1 << (h & 31));
  }
  const isTouched = (id: string): boolean => {
    const h = quickHash(id);
    return ((screen[h >>> 5] as number) & (1 << (h & 31))) !== 0 && touchedIds.has(id);
  };

  // Every address of the touched transactions (the others' spending tells whether the fee is the wallet's),
  // in small arrays per transaction (a few addresses each: compared, not hashed). A transaction's outputs, and
  // its movements, come together in our adapters' blocks: the answer for the last transaction id (touched or
  // not, and its tallies) serves the entries after it with the same id, compared, not screened again.
  const perTransaction = new Map<string, Tally[]>();
  let lastId: string | undefined;
  let lastTallies: Tally[] | undefined;
  const talliesOf = (transactionId: string): Tally[] | undefined => {
    if (transactionId === lastId) return lastTallies;
    lastId = transactionId;
    lastTallies = undefined;
    if (!isTouched(transactionId)) return undefined;
    lastTallies = perTransaction.get(transactionId);
    if (lastTallies === undefined) {
      lastTallies = [];
      perTransaction.set(transactionId, lastTallies);
    }
    return lastTallies;
  };
  // Each tally keeps the derived-address entry its lookup found (-1: not the wallet's): every address of the
  // wallet in a touched transaction was looked up above, as an output's or a spending movement's.
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i] as (typeof outputs)[number];
    const tallies = talliesOf(o.transactionId);
    if (tallies) tallyOf(tallies, o.address, found[i] as number).out += o.value;
  }
  lastId = undefined;
  for (let i = 0; i < coinMovements.length; i++) {
    const m = coinMovements[i] as (typeof coinMovements)[number];
    const tallies = talliesOf(m.transactionId);
    if (tallies === undefined) continue;
    const at = lookedUp[i] as number;
    tallyOf(tallies, m.address, at < 0 ? -1 : (found[at] as number)).net += m.delta;
  }
  const unresolved = new Set<string>();
  let lastSpent: string | undefined;
  for (const spend of utxo.spends) {
    if (spend.transactionId === lastSpent) continue;
    lastSpent = spend.transactionId;
    if (isTouched(lastSpent)) unresolved.add(lastSpent);
  }

  const matches: XpubCoinsMatch<E>[] = [];
  const ordered = block.transactionIds.filter(isTouched);
  // A transaction the block does not list (never from our adapters) still counts.
  if (ordered.length < touchedIds.size) {
    const listed = new Set(ordered);
    for (const id of touchedIds) if (!listed.has(id)) ordered.push(id);
  }
  for (const transactionId of ordered) {
    const tallies = perTransaction.get(transactionId) ?? [];
    let totalOut = 0n;
    for (const t of tallies) if (t.out !== 0n) totalOut += t.out;
    // The wallet's addresses the transaction touches, per subscription (the entries' owners; usually one).
    const groups: Group[] = [];
    for (const t of tallies) {
      if (t.entry < 0) continue;
      // The address's entries read in place (no object per entry): one per subscription deriving it.
      for (let at = t.entry; at >= 0; at = index.xpubEntryNext(at)) {
        const owner = index.xpubEntryOwner(at);
        if (!isOf(index, owner, eventType)) continue;
        let group: Group | undefined;
        for (const g of groups) if (g.owner === owner) group = g;
        if (group === undefined) {
          group = { owner, addresses: [] };
          groups.push(group);
        }
        group.addresses.push({
          address: t.address,
          derivationPath: index.xpubEntryPath(at),
          change: index.xpubEntryIsChange(at),
          index: index.xpubEntryIndex(at),
          received: t.out,
          sent: t.out - t.net,
        });
      }
    }
    for (const { owner, addresses } of groups) {
      const { received, sent } = walletTotals(addresses);
      if (received === 0n && sent === 0n) continue;
      let othersSpent = unresolved.size > 0 && unresolved.has(transactionId);
      for (const t of tallies) if (t.out - t.net > 0n && !addresses.some((a) => a.address === t.address)) othersSpent = true;
      const fee = sent > 0n && !othersSpent && sent >= totalOut ? sent - totalOut : null;
      const direction: XpubDirection = sent === 0n ? 'incoming' : received === totalOut ? 'self' : 'outgoing';
      if (addresses.length > 1) addresses.sort(byChainAndIndex);
      matches.push({
        eventType,
        subscription: index.xpubOwnerRecord(owner),
        identity: { transactionId, position: null, direction: null },
        transactionId,
        walletKey: index.xpubOwnerKey(owner),
        direction,
        amount: received > sent ? received - sent : sent - received,
        fee,
        addresses,
      });
    }
  }
  return matches;
}

/** The wallet's addresses a transaction touches, of one subscription (the owner of their derived-address entries). */
interface Group {
  owner: number;
  addresses: XpubAddressMovement[];
}

/** The tally of `address` in a transaction's tallies, added when it has none; `entry` (>= 0) kept when found. */
function tallyOf(tallies: Tally[], address: string, entry: number): Tally {
  for (const t of tallies) {
    if (t.address !== address) continue;
    if (entry >= 0) t.entry = entry;
    return t;
  }
  const t: Tally = { address, net: 0n, out: 0n, entry };
  tallies.push(t);
  return t;
}

/** Receive chain first, by index. */
const byChainAndIndex = (x: XpubAddressMovement, y: XpubAddressMovement): number => Number(x.change) - Number(y.change) || x.index - y.index;

/** The touched transactions of `block` in block order (one it does not list last: never from our adapters). */
function inBlockOrder(block: NormalizedBlock, touched: ReadonlySet<string>): string[] {
  const ordered = block.transactionIds.filter((id) => touched.has(id));
  if (ordered.length < touched.size) {
    const listed = new Set(ordered);
    for (const id of touched) if (!listed.has(id)) ordered.push(id);
  }
  return ordered;
}

/** Account chains (EVM, Tron): see the module's rules. */
function matchAccountBlock<E extends XpubEventType>(index: SubscriptionIndex, block: NormalizedBlock, eventType: E): XpubCoinsMatch<E>[] {
  const touched = new Set<string>();
  for (const m of block.coinMovements) if (index.xpubEntriesOf(m.address)) touched.add(m.transactionId);
  if (touched.size === 0) return [];
  // Every address of the touched transactions: whether one outside the wallet received tells outgoing from self.
  const nets = new Map<string, Map<string, bigint>>();
  for (const m of block.coinMovements) {
    if (!touched.has(m.transactionId)) continue;
    let byAddress = nets.get(m.transactionId);
    if (!byAddress) {
      byAddress = new Map();
      nets.set(m.transactionId, byAddress);
    }
    byAddress.set(m.address, (byAddress.get(m.address) ?? 0n) + m.delta);
  }
  const fees = new Map<string, TransactionFee>();
  for (const f of block.fees ?? []) if (touched.has(f.transactionId)) fees.set(f.transactionId, f);

  const matches: XpubCoinsMatch<E>[] = [];
  for (const transactionId of inBlockOrder(block, touched)) {
    const byAddress = nets.get(transactionId) ?? new Map<string, bigint>();
    const fee = fees.get(transactionId);
    const bySubscription = new Map<number, XpubAddressMovement[]>();
    for (const [address, net] of byAddress) {
      const entries = index.xpubEntriesOf(address);
      if (!entries) continue;
      const paid = fee !== undefined && fee.payer === address ? fee.amount : 0n;
      const moved = net + paid;
      const received = moved > 0n ? moved : 0n;
      const sent = (moved < 0n ? -moved : 0n) + paid;
      for (const e of entries) {
        if (!isOf(index, e.owner, eventType)) continue;
        const list = bySubscription.get(e.owner) ?? [];
        list.push({ address, derivationPath: e.derivationPath, change: e.change, index: e.index, received, sent });
        bySubscription.set(e.owner, list);
      }
    }
    for (const [owner, addresses] of bySubscription) {
      const subscription = index.xpubOwnerRecord(owner);
      const walletKey = index.xpubOwnerKey(owner);
      const { received, sent } = walletTotals(addresses);
      if (received === 0n && sent === 0n) continue;
      const mine = new Set(addresses.map((a) => a.address));
      let othersReceived = false;
      for (const [address, net] of byAddress) if (!mine.has(address) && net > 0n) othersReceived = true;
      const direction: XpubDirection = sent === 0n ? 'incoming' : othersReceived ? 'outgoing' : 'self';
      addresses.sort((a, b) => Number(a.change) - Number(b.change) || a.index - b.index);
      matches.push({
        eventType,
        subscription,
        identity: { transactionId, position: null, direction: null },
        transactionId,
        walletKey,
        direction,
        amount: received > sent ? received - sent : sent - received,
        fee: fee !== undefined && mine.has(fee.payer) ? fee.amount : null,
        addresses,
      });
    }
  }
  return matches;
}

/** What a transaction moved into and out of the wallet: the sums over its addresses. */
function walletTotals(addresses: readonly { received: bigint; sent: bigint }[]): { received: bigint; sent: bigint } {
  let received = 0n;
  let sent = 0n;
  for (const a of addresses) {
    received += a.received;
    sent += a.sent;
  }
  return { received, sent };
}

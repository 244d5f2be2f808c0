/**
 * Wallet-key matches (XPUB_COINS_TRANSACTION_CONFIRMED, docs/concepts/wallet-keys.md): the derived addresses a block's
 * transactions pay or spend from fold into ONE match per (transaction, subscription), never one per
 * address. Pure. UTXO blocks only (the Bitcoin family), with the ledger's spends resolved
 * (wallets/ledger.ts resolveSpends), as the coin events read them (coins.ts):
 *
 * - per address of a transaction, `received` is the sum of its outputs and `sent` = received - net (its
 *   movements are nets of outputs received and inputs spent);
 * - `incoming` when the wallet sent nothing; `self` when it sent and every addressed output of the
 *   transaction is the wallet's; `outgoing` otherwise; `amount` = |received - sent| over the wallet;
 * - `fee` (sent - outputs) only when every input is known to be the wallet's: no input left unresolved,
 *   and no other address of the transaction spent anything.
 */
import type { NormalizedBlock } from '../chains/types.ts';
import type { SubscribedWalletKey } from '../domain/subscriptions.ts';
import type { SubscriptionIndex, SubscriptionRecord } from './index.ts';

export type XpubDirection = 'incoming' | 'outgoing' | 'self';

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

export interface XpubCoinsMatch {
  eventType: 'XPUB_COINS_TRANSACTION_CONFIRMED';
  subscription: SubscriptionRecord;
  /** What tells its callback apart (match.ts ItemIdentity): the transaction alone. */
  identity: { transactionId: string; position: null; direction: null };
  transactionId: string;
  walletKey: SubscribedWalletKey;
  direction: XpubDirection;
  /** Base units, >= 0: |received - sent| over the wallet's addresses. */
  amount: bigint;
  /** Base units; null unless every input of the transaction is known to be the wallet's. */
  fee: bigint | null;
  /** Receive chain first, by index. */
  addresses: XpubAddressMovement[];
}

interface Tally {
  net: bigint;
  out: bigint;
}

/** The wallet-key matches of `block`, in block order, then in the order the subscriptions were indexed. */
export function matchXpub(index: SubscriptionIndex, block: NormalizedBlock): XpubCoinsMatch[] {
  const utxo = block.utxo;
  if (!index.hasXpub || utxo === undefined) return [];
  const touched = new Set<string>();
  for (const m of block.coinMovements) if (index.xpubEntriesOf(m.address)) touched.add(m.transactionId);
  for (const o of utxo.outputs) if (index.xpubEntriesOf(o.address)) touched.add(o.transactionId);
  if (touched.size === 0) return [];

  // Every address of the touched transactions (the others' spending tells whether the fee is the wallet's).
  const perTransaction = new Map<string, Map<string, Tally>>();
  const tallyOf = (transactionId: string, address: string): Tally => {
    let byAddress = perTransaction.get(transactionId);
    if (!byAddress) {
      byAddress = new Map();
      perTransaction.set(transactionId, byAddress);
    }
    let t = byAddress.get(address);
    if (!t) {
      t = { net: 0n, out: 0n };
      byAddress.set(address, t);
    }
    return t;
  };
  for (const m of block.coinMovements) if (touched.has(m.transactionId)) tallyOf(m.transactionId, m.address).net += m.delta;
  for (const o of utxo.outputs) if (touched.has(o.transactionId)) tallyOf(o.transactionId, o.address).out += o.value;
  const unresolved = new Set<string>();
  for (const s of utxo.spends) if (touched.has(s.transactionId)) unresolved.add(s.transactionId);

  const matches: XpubCoinsMatch[] = [];
  const ordered = block.transactionIds.filter((id) => touched.has(id));
  // A transaction the block does not list (never from our adapters) still counts.
  for (const id of touched) if (!block.transactionIds.includes(id)) ordered.push(id);
  for (const transactionId of ordered) {
    const byAddress = perTransaction.get(transactionId) ?? new Map<string, Tally>();
    let totalOut = 0n;
    for (const t of byAddress.values()) totalOut += t.out;
    const bySubscription = new Map<string, XpubAddressMovement[]>();
    for (const [address, t] of byAddress) {
      for (const e of index.xpubEntriesOf(address) ?? []) {
        const list = bySubscription.get(e.subscriptionId) ?? [];
        list.push({ address, derivationPath: e.derivationPath, change: e.change, index: e.index, received: t.out, sent: t.out - t.net });
        bySubscription.set(e.subscriptionId, list);
      }
    }
    for (const [subscriptionId, addresses] of bySubscription) {
      const subscription = index.recordOf(subscriptionId);
      const walletKey = index.walletKeyOf(subscriptionId);
      if (!subscription || !walletKey) continue;
      let received = 0n;
      let sent = 0n;
      for (const a of addresses) {
        received += a.received;
        sent += a.sent;
      }
      if (received === 0n && sent === 0n) continue;
      const mine = new Set(addresses.map((a) => a.address));
      let othersSpent = unresolved.has(transactionId);
      for (const [address, t] of byAddress) if (!mine.has(address) && t.out - t.net > 0n) othersSpent = true;
      const fee = sent > 0n && !othersSpent && sent >= totalOut ? sent - totalOut : null;
      const direction: XpubDirection = sent === 0n ? 'incoming' : received === totalOut ? 'self' : 'outgoing';
      addresses.sort((a, b) => Number(a.change) - Number(b.change) || a.index - b.index);
      matches.push({
        eventType: 'XPUB_COINS_TRANSACTION_CONFIRMED',
        subscription,
        identity: { transactionId, position: null, direction: null },
        transactionId,
        walletKey,
        direction,
        amount: received > sent ? received - sent : sent - received,
        fee,
        addresses,
      });
    }
  }
  return matches;
}

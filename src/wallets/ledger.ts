/**
 * The wallet ledger of watched addresses, kept by chain following inside each block's transaction
 * (docs/reference/api.md#wallets: only confirmed blocks count, totals from watchedFromBlock, opening balance read
 * from the node).
 *
 * - blockEntries: when block h is applied, its effect on watched addresses becomes ledger entries
 *   (coin received/spent per address, fungible token delta per contract, NFT held or not after h).
 * - confirmedChanges: when block h is applied, the entries of blocks up to h - confirmations + 1 (now
 *   confirmed) are added to the balances; a token first seen by an address starts from its balanceOf
 *   just before the first block that moves it. (An address's opening coin balance is read at its
 *   watchedFromBlock once that block is confirmed, outside the block transaction: see openings.ts.)
 * - rewind: a reorganisation reverses the applied entries of orphaned blocks and drops the rest.
 * - UTXO chains: an input names only the output it spends (getblock verbosity 2 has no input address
 *   or amount), so the ledger records the outputs paid to watched addresses (table ledger_outputs, from
 *   applied blocks and from the opening's unspent outputs) and counts an input spending one of them as
 *   that address's spending (resolveSpends, once per block, shared with the coin events). Spendings of outputs it never recorded (created before watchedFromBlock and
 *   spent before the opening was read) are missing from the opening too, so the balance stays exact;
 *   only totalSpent leaves them out.
 *
 * The follower reads and writes the tables for these in its few per-block statements (store/block-apply.ts);
 * this module decides what they hold. Family-neutral: it reads only the normalised block and the adapter's
 * optional balance lookups.
 * Node lookups happen inside the block transaction: they are rare (an address's first block, a token's
 * first movement) and cached by the adapter, and a failure rolls the block back to be retried.
 */
import type { ChainAdapter, CoinMovement, NormalizedBlock, TokenTransfer, UtxoSpend } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';
import type { Queryable } from '../store/db.ts';
import {
  addCoinTotals,
  addTokenDeltas,
  type CoinTotals,
  findRecordedOutputs,
  forgetOutputsAbove,
  type LedgerEntry,
  type NftHolding,
  type RecordedOutput,
  reanchorAbove,
  type StoredLedgerEntry,
  setNftHoldings,
  type TokenDelta,
  takeOrphanedEntries,
  type WatchedAddress,
} from '../store/ledger.ts';

export type LedgerNode = Pick<ChainAdapter, 'getCoinBalance' | 'getUnspentOutputs' | 'getTokenBalance' | 'tokenMetadata'>;

const isNft = (t: TokenTransfer) => t.amount === undefined;

/**
 * UTXO chains: `block` with the inputs that spend outputs the ledger recorded (outputs paid to watched
 * and coin-subscribed addresses, see recordBlock's `alsoRecord`) turned into coin movements of those
 * addresses, and left out of `utxo.spends`. Done ONCE per block, before recordBlock and matching, so the
 * ledger and the coin events read the same movements. Other chains: `block` itself. The answer has no
 * `utxo.resolvedSpends` (the conflict check of announced transactions reads the block as the adapter gave it).
 */
export async function resolveSpends(tx: Queryable, chain: ChainKey, block: NormalizedBlock): Promise<NormalizedBlock> {
  if (!block.utxo || block.utxo.spends.length === 0) return block;
  const recorded = await findRecordedOutputs(
    tx,
    chain,
    block.utxo.spends.map((s) => s.outpoint),
  );
  const resolved: CoinMovement[] = [];
  const unresolved: UtxoSpend[] = [];
  for (const s of block.utxo.spends) {
    const output = recorded.get(s.outpoint);
    if (output) resolved.push({ transactionId: s.transactionId, address: output.address, delta: -output.value });
    else unresolved.push(s);
  }
  if (resolved.length === 0) return block;
  return {
    ...block,
    coinMovements: [...block.coinMovements, ...resolved],
    utxo: { outputs: block.utxo.outputs, spends: unresolved },
    addresses: block.addresses && [...block.addresses, ...resolved.map((m) => m.address)],
  };
}

/**
 * The addresses `block` (spends resolved by resolveSpends) moves coins or tokens of: the ones to look up among
 * the watched. The block's own list when it has one (block workers), with the token transfers' (Omni) added:
 * a repeated address costs the lookup nothing, collecting 7,000 addresses in a Set cost the main thread 4 ms.
 */
export function touchedAddresses(block: NormalizedBlock): readonly string[] {
  if (block.addresses) {
    if (block.tokenTransfers.length === 0) return block.addresses;
    return [...block.addresses, ...block.tokenTransfers.flatMap((t) => [t.from, t.to])];
  }
  const touched = new Set<string>();
  for (const m of block.coinMovements) touched.add(m.address);
  for (const o of block.utxo?.outputs ?? []) touched.add(o.address);
  for (const t of block.tokenTransfers) {
    touched.add(t.from);
    touched.add(t.to);
  }
  return [...touched];
}

/** What a block adds to the ledger: its entries, and the outputs to record (written with the block, store/block-apply.ts). */
export interface BlockLedger {
  entries: LedgerEntry[];
  outputs: RecordedOutput[];
}

/**
 * The ledger entries of `block` (spends resolved by resolveSpends) for the watched addresses among those
 * it touches (`watched`, looked up by the caller in the block's transaction), to be inserted with the
 * block. UTXO chains: the outputs paid to watched addresses, and to addresses `alsoRecord` names (those of
 * coin subscriptions), are returned to be recorded with the block (writeBlock, in the same transaction) so
 * that resolveSpends recognises their spending later.
 */
export async function blockEntries(
  block: NormalizedBlock,
  watched: WatchedAddress[],
  node: LedgerNode,
  alsoRecord: (address: string) => boolean = () => false,
): Promise<BlockLedger> {
  const movements = block.coinMovements;
  const idsOf = new Map<string, string[]>();
  for (const w of watched) idsOf.set(w.address, [...(idsOf.get(w.address) ?? []), w.id]);
  const outputs: RecordedOutput[] = [];
  for (const o of block.utxo?.outputs ?? []) {
    if (idsOf.has(o.address) || alsoRecord(o.address)) outputs.push({ outpoint: o.outpoint, address: o.address, value: o.value, blockHeight: block.height });
  }
  if (watched.length === 0) return { entries: [], outputs };

  // Net per transaction and address first (a payment with change back to the payer is one spending),
  // so the totals do not depend on whether the node or the ledger's record resolved an input.
  const perTransaction = new Map<string, { address: string; delta: bigint }>();
  for (const m of movements) {
    if (!idsOf.has(m.address)) continue;
    const key = `${m.transactionId}/${m.address}`;
    const e = perTransaction.get(key) ?? { address: m.address, delta: 0n };
    e.delta += m.delta;
    perTransaction.set(key, e);
  }
  const coins = new Map<string, { received: bigint; spent: bigint; incoming: number; outgoing: number }>();
  for (const m of perTransaction.values()) {
    if (m.delta === 0n) continue;
    const c = coins.get(m.address) ?? { received: 0n, spent: 0n, incoming: 0, outgoing: 0 };
    if (m.delta > 0n) {
      c.received += m.delta;
      c.incoming += 1;
    } else {
      c.spent -= m.delta;
      c.outgoing += 1;
    }
    coins.set(m.address, c);
  }

  const tokens = new Map<string, { address: string; transfer: TokenTransfer; delta: bigint }>();
  const nfts = new Map<string, { address: string; transfer: TokenTransfer; held: boolean }>();
  const ordered = [...block.tokenTransfers].sort((a, b) => a.logIndex - b.logIndex);
  for (const t of ordered) {
    for (const [address, sign] of [
      [t.from, -1n],
      [t.to, 1n],
    ] as const) {
      if (!idsOf.has(address)) continue;
      if (isNft(t)) nfts.set(`${address}/${t.contract}/${t.tokenId}`, { address, transfer: t, held: sign > 0n });
      else {
        const key = `${address}/${t.contract}`;
        const e = tokens.get(key) ?? { address, transfer: t, delta: 0n };
        e.delta += sign * (t.amount ?? 0n);
        tokens.set(key, e);
      }
    }
  }

  const entries: LedgerEntry[] = [];
  const base = { identifier: '', tokenId: '', received: 0n, spent: 0n, incoming: 0, outgoing: 0, delta: 0n, symbol: '', tokenType: '', decimals: 0 };
  for (const [address, c] of coins) {
    for (const id of idsOf.get(address) ?? []) entries.push({ ...base, walletAddressId: id, kind: 'coin', ...c });
  }
  for (const { address, transfer, delta } of tokens.values()) {
    if (delta === 0n) continue;
    const meta = await node.tokenMetadata?.(transfer);
    for (const id of idsOf.get(address) ?? []) {
      entries.push({
        ...base,
        walletAddressId: id,
        kind: 'token',
        identifier: transfer.contract,
        delta,
        symbol: meta?.symbol ?? '',
        tokenType: transfer.tokenType,
        decimals: meta?.decimals ?? 0,
      });
    }
  }
  for (const { address, transfer, held } of nfts.values()) {
    const meta = await node.tokenMetadata?.(transfer);
    for (const id of idsOf.get(address) ?? []) {
      entries.push({
        ...base,
        walletAddressId: id,
        kind: 'nft',
        identifier: transfer.contract,
        tokenId: transfer.tokenId ?? '',
        delta: held ? 1n : -1n,
        symbol: meta?.symbol ?? '',
        tokenType: transfer.tokenType,
      });
    }
  }
  return { entries, outputs };
}

/** A confirmed entry as the block's transaction takes it (store/block-apply.ts), with its token's balance now (null: no row yet). */
export interface ConfirmedEntry extends StoredLedgerEntry {
  tokenAmount: bigint | null;
}

/** What confirmed entries change in the balances, written with the block (store/block-apply.ts). */
export interface BalanceChanges {
  coins: CoinTotals[];
  /** Added to each token balance row (a missing row counts as 0). */
  tokens: TokenDelta[];
  /** Token balance rows that reach 0: deleted. */
  emptiedTokens: { walletAddressId: string; identifier: string }[];
  nfts: NftHolding[];
}

/**
 * The balance changes of entries of blocks now confirmed (block order), to be written in the block's
 * transaction. A token the address never held here starts from the node's balance just before the first
 * block that moves it (that block is after watchedFromBlock, so nothing is counted twice); a row whose
 * amount reaches 0 is removed. Only the chain's follower writes token balances, under the chain's lock,
 * so the amount read when the entries were taken is the one the change applies to.
 */
export async function confirmedChanges(entries: ConfirmedEntry[], node: LedgerNode): Promise<BalanceChanges> {
  const plan = planEntries(entries, 1n);
  const current = new Map<string, bigint | null>();
  for (const e of entries) if (e.kind === 'token') current.set(`${e.walletAddressId}/${e.identifier}`, e.tokenAmount);
  const tokens: TokenDelta[] = [];
  const emptiedTokens: BalanceChanges['emptiedTokens'] = [];
  // The opening balances of the rows not there yet, asked of the node all at once (a block's first
  // movements of several tokens would otherwise wait for one answer after the other).
  const openings = new Map<string, Promise<bigint | undefined>>();
  for (const key of plan.deltas.keys()) {
    if ((current.get(key) ?? null) !== null) continue;
    const first = plan.firstBlock.get(key) as StoredLedgerEntry;
    const opening = Promise.resolve(node.getTokenBalance?.(first.identifier, first.address, first.blockHeight - 1));
    opening.catch(() => {}); // awaited below; a failure then fails the block, as before
    openings.set(key, opening);
  }
  for (const [key, d] of plan.deltas) {
    const now = current.get(key) ?? null;
    if (now === null) d.delta += (await openings.get(key)) ?? 0n;
    if ((now ?? 0n) + d.delta !== 0n) tokens.push(d);
    else if (now !== null) emptiedTokens.push({ walletAddressId: d.walletAddressId, identifier: d.identifier });
  }
  return { coins: plan.coins, tokens, emptiedTokens, nfts: plan.holdings };
}

/** Reverses the applied entries of blocks above `ancestorHeight` and forgets all of their entries. */
export async function rewind(tx: Queryable, chain: ChainKey, ancestorHeight: number): Promise<number> {
  const orphaned = await takeOrphanedEntries(tx, chain, ancestorHeight);
  if (orphaned.length > 0) {
    // Taking back: the rows exist (the entries were added to them), so no opening is read.
    const plan = planEntries(orphaned, -1n);
    await addCoinTotals(tx, plan.coins);
    await addTokenDeltas(tx, [...plan.deltas.values()]);
    await setNftHoldings(tx, plan.holdings);
  }
  await reanchorAbove(tx, chain, ancestorHeight);
  await forgetOutputsAbove(tx, chain, ancestorHeight);
  return orphaned.length;
}

/**
 * What adding (`sign` 1) or taking back (`sign` -1) entries does, in the order given (block order to apply,
 * reverse block order to take back): coin totals per address, token deltas per (address, contract) with
 * the entry of the first block that moves each, and the NFTs held or not.
 */
function planEntries(
  entries: StoredLedgerEntry[],
  sign: 1n | -1n,
): { coins: CoinTotals[]; deltas: Map<string, TokenDelta>; firstBlock: Map<string, StoredLedgerEntry>; holdings: NftHolding[] } {
  // One row per address: an UPDATE joined to two rows of the same address would apply only one.
  const coins = new Map<string, CoinTotals>();
  for (const e of entries) {
    if (e.kind !== 'coin') continue;
    const c = coins.get(e.walletAddressId) ?? { walletAddressId: e.walletAddressId, received: 0n, spent: 0n, incoming: 0, outgoing: 0 };
    c.received += sign * e.received;
    c.spent += sign * e.spent;
    c.incoming += Number(sign) * e.incoming;
    c.outgoing += Number(sign) * e.outgoing;
    coins.set(e.walletAddressId, c);
  }

  const deltas = new Map<string, TokenDelta>();
  const firstBlock = new Map<string, StoredLedgerEntry>();
  for (const e of entries) {
    if (e.kind !== 'token') continue;
    const key = `${e.walletAddressId}/${e.identifier}`;
    const d = deltas.get(key) ?? {
      walletAddressId: e.walletAddressId,
      identifier: e.identifier,
      delta: 0n,
      symbol: e.symbol,
      tokenType: e.tokenType,
      decimals: e.decimals,
    };
    d.delta += sign * e.delta;
    deltas.set(key, d);
    const first = firstBlock.get(key);
    if (!first || e.blockHeight < first.blockHeight) firstBlock.set(key, e);
  }

  // NFTs: the last entry per token wins (held after that block or not); taking back flips it.
  const holdings = new Map<string, NftHolding>();
  for (const e of entries) {
    if (e.kind !== 'nft') continue;
    holdings.set(`${e.walletAddressId}/${e.identifier}/${e.tokenId}`, {
      walletAddressId: e.walletAddressId,
      identifier: e.identifier,
      tokenId: e.tokenId,
      symbol: e.symbol,
      tokenType: e.tokenType,
      held: sign > 0n ? e.delta > 0n : e.delta < 0n,
    });
  }
  return { coins: [...coins.values()], deltas, firstBlock, holdings: [...holdings.values()] };
}

/**
 * Opening balances of watched addresses (docs/reference/api.md#wallets: read from the node where it can tell), read
 * OUTSIDE the follower's block transactions: a Bitcoin-family node answers with a scan of its whole UTXO
 * set (`scantxoutset`, minutes on mainnet), and neither the chain's lock nor its follower may wait for
 * that. Each chain's ingest runs readOpenings after it applies blocks.
 *
 * An address's opening is read once its watchedFromBlock h is confirmed, then recorded (all of a run's
 * in one short transaction under the chain's lock), only if the address is still waiting for it at h (a
 * reorganisation may have re-anchored it):
 * - account chains: the node's balance at block h (getCoinBalance), exact whenever it is read;
 * - UTXO chains: the address's outputs created up to h and unspent at the node's tip T when it scanned;
 *   they are recorded in ledger_outputs so that their spending is recognised later. That is exact only
 *   while the follower has not applied blocks above T (an input in such a block spending one of those
 *   outputs would have gone unrecognised), so a scan older than the follower's cursor is read again.
 *
 * An address derived from a wallet's extended key whose opening balance is positive is used at h, and its key's
 * window is extended past it in the same transaction (wallets/key-windows.ts useOpenings).
 */
import type { Logger } from 'pino';
import type { UnspentOutputs } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';
import { mapLimit } from '../lib/concurrency.ts';
import { getCursor, lockChain } from '../store/chain-state.ts';
import type { Db } from '../store/db.ts';
import { pendingOpenings, recordOutputs, setOpenings } from '../store/ledger.ts';
import { useOpenings } from './key-windows.ts';
import type { LedgerNode } from './ledger.ts';

/** Balance lookups in flight at once on account chains. */
const ACCOUNT_LOOKUPS = 8;

export interface OpeningDeps {
  db: Db;
  chain: ChainKey;
  node: LedgerNode;
  /** The chain's confirmations: an opening is read once watchedFromBlock has them. */
  confirmations: number;
  logger?: Pick<Logger, 'info' | 'warn'>;
}

/** Rounds at most of one run while wallet keys' windows grow from the openings read (each round reads the addresses the last one added). */
const MAX_KEY_ROUNDS = 100;

/**
 * Reads the openings that became readable; returns how many were recorded. Node errors are thrown (the caller
 * retries). While openings grow the windows of wallets' keys, the addresses added are read in the same run when
 * they are readable already (one confirmation), else at a later run.
 */
export async function readOpenings(deps: OpeningDeps): Promise<number> {
  let recorded = 0;
  for (let round = 0; round < MAX_KEY_ROUNDS; round++) {
    const run = await readOpeningsOnce(deps);
    recorded += run.recorded;
    if (run.added === 0) break;
  }
  return recorded;
}

async function readOpeningsOnce(deps: OpeningDeps): Promise<{ recorded: number; added: number }> {
  const { db, chain, node } = deps;
  let recorded = 0;
  let added = 0;
  const pending = await pendingOpenings(db, chain, deps.confirmations);
  // All at once on UTXO chains (the adapter scans them together in one pass over the UTXO set); a few
  // at a time on account chains (one balance call each).
  const answers = await mapLimit(pending, node.getUnspentOutputs ? Math.max(1, pending.length) : ACCOUNT_LOOKUPS, async (opening) => {
    const answer: { balance?: bigint; unspent?: UnspentOutputs } = {};
    if (node.getUnspentOutputs) answer.unspent = await node.getUnspentOutputs(opening.address, opening.height);
    else answer.balance = await node.getCoinBalance?.(opening.address, opening.height);
    return answer;
  });
  if (pending.length === 0) return { recorded: 0, added: 0 };
  // All recorded in one short transaction under the chain's lock (a few statements, not a few per address).
  const done = await db.transaction('ledger:record-openings', async (tx) => {
    await lockChain(tx, chain);
    const scanned = answers.some((a) => a.unspent);
    const now = scanned ? await getCursor(tx, chain) : undefined;
    const readings: { id: string; height: number; balance: bigint | undefined; unspent?: UnspentOutputs }[] = [];
    for (const [i, opening] of pending.entries()) {
      const { balance, unspent } = answers[i] as { balance?: bigint; unspent?: UnspentOutputs };
      if (!unspent) readings.push({ id: opening.id, height: opening.height, balance });
      // Scanned before blocks the follower applied since: read again at the next run.
      else if ((now?.height ?? 0) <= unspent.tipHeight) {
        readings.push({ id: opening.id, height: opening.height, balance: unspent.outputs.reduce((sum, u) => sum + u.value, 0n), unspent });
      }
    }
    const set = await setOpenings(tx, readings);
    const outputs = pending.flatMap((opening, i) =>
      set.has(opening.id)
        ? (answers[i]?.unspent?.outputs ?? []).map((u) => ({ outpoint: u.outpoint, address: opening.address, value: u.value, blockHeight: u.height }))
        : [],
    );
    await recordOutputs(tx, chain, outputs, true);
    // Addresses derived from a wallet's key that held coins when the window reached them: used, and the window
    // extended past them (wallets/key-windows.ts); the new addresses' openings are read next.
    const held = readings.filter((r) => set.has(r.id) && (r.balance ?? 0n) > 0n).map((r) => ({ walletAddressId: r.id, height: r.height }));
    if (held.length > 0) added = await useOpenings(tx, chain, held, (now ?? (await getCursor(tx, chain)))?.height ?? null);
    return set;
  });
  for (const [i, opening] of pending.entries()) {
    if (!done.has(opening.id)) continue;
    recorded++;
    const known = answers[i]?.unspent !== undefined || answers[i]?.balance !== undefined;
    deps.logger?.info({ ...chain, address: opening.address, watchedFromBlock: opening.height, known }, 'opening balance read');
  }
  return { recorded, added };
}

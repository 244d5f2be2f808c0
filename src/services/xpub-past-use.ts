/**
 * Past use at subscribe (docs/concepts/wallet-keys.md#past-use-at-subscribe): which derived addresses of a new
 * wallet-key subscription already hold coins, asked of the chain's node before the subscription is written, so
 * that its `used` flags and `addresses/next` are right from the first answer. No callback is sent for the past.
 *
 * The Bitcoin family's nodes answer with `scantxoutset` (the adapter's getUnspentOutputs: one pass over the
 * node's UTXO set for up to 200 addresses): an address with an unspent output is used, first seen at the
 * lowest height of its outputs. The window grows as on a block: when the highest used index is h, indexes up
 * to h + gapLimit are derived and scanned in turn, until a round finds nothing further out. scantxoutset sees
 * UNSPENT outputs only: an address that received and spent everything looks unused (so does everything past
 * it that only such an address would have reached). A node without scantxoutset (zcashd, Dogecoin 1.14), the
 * account chains, or no node reader at all: nothing is found, the subscription starts from index 0 as before.
 */
import type { Blockchain, Network } from '../domain/chains.ts';
import type { DerivedAddressRow, SubscribedWalletKey } from '../domain/subscriptions.ts';
import type { WalletKey } from '../domain/wallet-keys.ts';
import { deriveWindowYielding, windowEnd } from '../domain/wallet-windows.ts';
import type { Common } from './context.ts';

type Row = Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>;

/** A derived address found used, and the lowest height of its unspent outputs. */
export interface PastUse {
  change: boolean;
  index: number;
  height: number;
}

export interface PastUseResult {
  /** The window to store: the first one, grown past the addresses found used. */
  rows: Row[];
  used: PastUse[];
  /** 'read': the node answered; 'unavailable': it cannot tell (no scantxoutset, no node reader, an account chain). */
  state: 'read' | 'unavailable';
  /** Scans of the node's UTXO set (rounds: each round scans the addresses the last one added, 200 per scan). */
  rounds: number;
}

/**
 * Asks the node which addresses of `window` (and of what it grows into) already hold coins. A node that fails
 * (down, timed out) does not fail the create: the subscription starts as if none were used, and a warning says so.
 */
export async function findPastUse(
  common: Pick<Common, 'chainReader' | 'logger'>,
  chain: { blockchain: Blockchain; network: Network },
  key: WalletKey,
  subscribed: SubscribedWalletKey,
  window: readonly Row[],
): Promise<PastUseResult> {
  try {
    return await scanPastUse(common, chain, key, subscribed, window);
  } catch (error) {
    common.logger.warn(
      { err: error, ...chain },
      `past use at subscribe: the node could not tell (${(error as Error).message}); the subscription starts with no address used`,
    );
    return { rows: [...window], used: [], state: 'unavailable', rounds: 0 };
  }
}

async function scanPastUse(
  common: Pick<Common, 'chainReader' | 'logger'>,
  chain: { blockchain: Blockchain; network: Network },
  key: WalletKey,
  subscribed: SubscribedWalletKey,
  window: readonly Row[],
): Promise<PastUseResult> {
  const reader = common.chainReader?.(chain.blockchain, chain.network);
  const rows = [...window];
  if (!reader?.getUnspentOutputs || rows.length === 0) return { rows, used: [], state: 'unavailable', rounds: 0 };
  const unspentOf = reader.getUnspentOutputs.bind(reader);
  const head = await reader.getHead();
  const used: PastUse[] = [];
  let toScan: Row[] = rows;
  let rounds = 0;
  while (toScan.length > 0) {
    rounds++;
    // Asked in one turn: the adapter scans them together (one pass over the UTXO set per 200 addresses).
    const answers = await Promise.all(toScan.map((r) => unspentOf(r.address, head)));
    if (answers.some((a) => a === undefined)) {
      if (rounds === 1) return { rows, used: [], state: 'unavailable', rounds };
      common.logger.warn({ ...chain }, 'past use at subscribe: the node stopped answering scantxoutset; the window found so far is kept');
      break;
    }
    for (const [i, answer] of answers.entries()) {
      const outputs = answer?.outputs ?? [];
      if (outputs.length === 0) continue;
      const r = toScan[i] as Row;
      used.push({ change: r.change, index: r.index, height: Math.min(...outputs.map((o) => o.height)) });
    }
    // Each chain's window grown past its highest used index, as a block would grow it.
    toScan = [];
    for (const change of [false, true]) {
      const mine = rows.filter((r) => r.change === change);
      if (mine.length === 0) continue;
      const highest = Math.max(...mine.map((r) => r.index));
      const highestUsed = Math.max(-1, ...used.filter((u) => u.change === change).map((u) => u.index));
      const end = windowEnd(highestUsed, subscribed.gapLimit);
      if (end <= highest) continue;
      const added = await deriveWindowYielding(key, change, highest + 1, end, subscribed.regtest);
      rows.push(...added);
      toScan.push(...added);
    }
  }
  return { rows, used, state: 'read', rounds };
}

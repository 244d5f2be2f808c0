/**
 * Lowering the CPU priority of a PostgreSQL server process serving one of our connections, for work
 * that may wait while other customers' requests are served (bulk creation's chunks). Only meaningful,
 * and only tried, where the server runs on this machine as this user: the embedded database. A remote
 * server's process ids mean nothing here (a local process with the same id is someone else's), and a
 * local server run by another user refuses the change (EPERM).
 */
import { readFileSync } from 'node:fs';
import { setPriority } from 'node:os';

/** The nice level of low-priority backends, as the block workers' threads (src/chains/utxo/block-worker.ts). */
export const LOW_PRIORITY_NICE = 10;

/**
 * Sets process `pid`'s nice level when it is a PostgreSQL process (its /proc entry says so); false when
 * it was not changed (not one, not ours, no /proc). Raising one's own processes' nice level needs no
 * privilege; it cannot be lowered back without one, so the connection stays low-priority until closed.
 */
export function lowerBackendPriority(pid: number, nice = LOW_PRIORITY_NICE): boolean {
  try {
    if (!Number.isInteger(pid) || pid <= 0) return false;
    if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') return false;
    setPriority(pid, nice);
    return true;
  } catch {
    return false;
  }
}

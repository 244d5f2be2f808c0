/**
 * Coin movements of a block as adapters build them: one net entry per (transaction, address), in the
 * order addresses were first touched within the transaction; nets of zero are left out.
 */
import type { CoinMovement } from './types.ts';

export class MovementBook {
  readonly movements: CoinMovement[] = [];
  private current = new Map<string, CoinMovement>();
  private txId = '';

  /** Ends the previous transaction's entries and starts `txId`'s. */
  startTransaction(txId: string): void {
    this.flush();
    this.txId = txId;
  }

  add(address: string, delta: bigint): void {
    if (delta === 0n) return;
    const m = this.current.get(address);
    if (m) m.delta += delta;
    else this.current.set(address, { transactionId: this.txId, address, delta });
  }

  move(from: string, to: string, amount: bigint): void {
    this.add(from, -amount);
    this.add(to, amount);
  }

  /** Ends the current transaction's entries (call once more after the last transaction). */
  flush(): void {
    for (const m of this.current.values()) if (m.delta !== 0n) this.movements.push(m);
    this.current = new Map();
  }
}

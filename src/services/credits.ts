/**
 * Charging calls. A call either pays its whole cost or fails with 402 and takes nothing.
 *
 * Hot paths (subscription creates and reads) go through CreditCharger, which batches: debits of one
 * customer that arrive while a debit statement of that customer is in flight wait and go together in
 * the next statement ("group commit"). Without it, every request of a busy customer queues behind the
 * previous one's row lock and commit. A batch the balance cannot cover whole is split into single
 * debits in arrival order, so each request still gets its own exact answer at the boundary.
 */
import { ApiError } from '../domain/errors.ts';
import { creditBalance, type DebitResult, debitCredits, refundCredits } from '../store/customers.ts';
import type { Db, Queryable } from '../store/db.ts';

export interface Charge {
  consumed: bigint;
  available: bigint;
  /** The UTC day the usage was recorded under (for a refund); absent for a free call. */
  usageDay?: string;
}

export function insufficient(cost: bigint, available: bigint): ApiError {
  return new ApiError(
    'insufficient_credits',
    `This call costs ${cost} credits but the customer has ${available}. Ask the operator to add credits (herald credits add).`,
  );
}

function settle(result: DebitResult, cost: bigint): Charge {
  if (!result.ok) throw insufficient(cost, result.available);
  return { consumed: cost, available: result.available, ...(result.day && { usageDay: result.day }) };
}

/** Charges inside the caller's transaction: a later failure in it rolls the debit (and its usage) back too. */
export async function chargeInTransaction(tx: Queryable, customerId: string, cost: bigint, endpoint: string): Promise<Charge> {
  if (cost === 0n) return { consumed: 0n, available: await creditBalance(tx, customerId) };
  return settle(await debitCredits(tx, customerId, cost, [{ endpoint, requests: 1, credits: cost }]), cost);
}

interface Waiting {
  cost: bigint;
  endpoint: string;
  read: boolean;
  done: (result: DebitResult) => void;
  fail: (error: unknown) => void;
}

export class CreditCharger {
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly db: Db) {}

  /**
   * Takes `cost` from the customer for a call of `endpoint` (402 when the balance does not cover it).
   *
   * `read`: the call is a read with nothing durable of its own (the callback log, a GET), so its debit
   * commits without waiting for the WAL flush (docs/operations/retention.md, the callback log's p99). The one thing
   * a database crash in the next fraction of a second can lose is that debit: the customer got that read
   * free. The balance is never overdrawn (the debit checks it under the row lock, and every later
   * transaction sees it at once), and any later commit that waits for its flush (delivery's, a write's)
   * makes this one durable too, as the WAL is written in order. A charge for a side effect never skips
   * the wait: it is taken in the transaction of that effect (chargeInTransaction) or waits (the default).
   */
  async charge(customerId: string, cost: bigint, endpoint: string, options: { read?: boolean } = {}): Promise<Charge> {
    if (cost === 0n) return { consumed: 0n, available: await creditBalance(this.db, customerId) };
    const result = await new Promise<DebitResult>((done, fail) => {
      const queue = this.waiting.get(customerId) ?? [];
      queue.push({ cost, endpoint, read: options.read ?? false, done, fail });
      this.waiting.set(customerId, queue);
      if (!this.inFlight.has(customerId)) void this.drain(customerId);
    });
    return settle(result, cost);
  }

  /** Gives back a charge whose call then failed, and takes it out of the usage it was recorded in. */
  async refund(customerId: string, charge: Charge, endpoint: string): Promise<void> {
    if (charge.consumed > 0n) await refundCredits(this.db, customerId, charge.consumed, { endpoint, day: charge.usageDay });
  }

  private async drain(customerId: string): Promise<void> {
    this.inFlight.add(customerId);
    try {
      for (let batch = this.take(customerId); batch.length > 0; batch = this.take(customerId)) {
        try {
          await this.debitBatch(customerId, batch);
        } catch (error) {
          for (const w of batch) w.fail(error);
        }
      }
    } finally {
      this.inFlight.delete(customerId);
    }
  }

  private take(customerId: string): Waiting[] {
    const batch = this.waiting.get(customerId) ?? [];
    this.waiting.delete(customerId);
    return batch;
  }

  private async debitBatch(customerId: string, batch: Waiting[]): Promise<void> {
    const total = batch.reduce((sum, w) => sum + w.cost, 0n);
    const usage = batch.map((w) => ({ endpoint: w.endpoint, requests: 1, credits: w.cost }));
    // A batch with any charge not for a read waits for the flush, as that charge alone would.
    const waitForFlush = batch.some((w) => !w.read);
    const whole = await debitCredits(this.db, customerId, total, usage, { waitForFlush });
    if (whole.ok) {
      // Report balances as if the batch had been debited one by one, in arrival order.
      let after = whole.available + total;
      for (const w of batch) {
        after -= w.cost;
        w.done({ ok: true, available: after, day: whole.day });
      }
      return;
    }
    if (batch.length === 1) return batch[0]?.done(whole);
    for (const w of batch) {
      w.done(await debitCredits(this.db, customerId, w.cost, [{ endpoint: w.endpoint, requests: 1, credits: w.cost }], { waitForFlush: !w.read }));
    }
  }
}

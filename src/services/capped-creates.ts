/**
 * Creates of a customer whose plan caps active subscriptions, grouped ("group commit", as
 * CreditCharger does for debits). The cap is exact only if the creates of one customer are counted
 * one after another: each takes the customer's cap lock, reads the active counter and inserts. One
 * transaction per create would queue the customer's concurrent creates on that lock for a commit each;
 * here the creates that arrive while one transaction of the customer is in flight wait and go together
 * in the next: one lock, one counter read, one multi-row insert, one commit for all of them.
 *
 * Each create still gets its own answer: created, refused by an active twin (undefined, as
 * insertUnlessTwin), or over the cap (the plan's error), in arrival order.
 */
import { ApiError } from '../domain/errors.ts';
import type { Db } from '../store/db.ts';
import * as store from '../store/subscriptions.ts';

interface Waiting {
  cap: number;
  candidate: store.NewSubscription;
  done: (result: store.Subscription | undefined) => void;
  fail: (error: unknown) => void;
}

export function capReachedError(cap: number, active: number): ApiError {
  return new ApiError(
    'blockchain_events_callbacks_limit_reached',
    `The plan allows ${cap} active subscriptions and ${active} are active. Delete one, or ask the operator to raise the cap.`,
  );
}

export class CappedCreates {
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly db: Db) {}

  /** Inserts `candidate` for the customer unless an active twin forbids it (undefined) or the cap is reached (throws). */
  create(customerId: string, cap: number, candidate: store.NewSubscription): Promise<store.Subscription | undefined> {
    return new Promise((done, fail) => {
      const queue = this.waiting.get(customerId) ?? [];
      queue.push({ cap, candidate, done, fail });
      this.waiting.set(customerId, queue);
      if (!this.inFlight.has(customerId)) void this.drain(customerId);
    });
  }

  private async drain(customerId: string): Promise<void> {
    this.inFlight.add(customerId);
    try {
      for (let batch = this.take(customerId); batch.length > 0; batch = this.take(customerId)) {
        try {
          await this.write(customerId, batch);
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

  private async write(customerId: string, batch: Waiting[]): Promise<void> {
    const answers = await this.db.transaction('subscriptions:create-capped', async (tx) => {
      await store.lockActiveCap(tx, customerId);
      let active = await store.countActive(tx, customerId);
      // insertUnlessTwin's rule: without allowDuplicates, any active twin forbids the create.
      const twins = await store.activeByDuplicateKeys(
        tx,
        customerId,
        batch.flatMap((w) => (w.candidate.allowDuplicates ? [] : [w.candidate.duplicateKey])),
      );
      const taken = new Set(twins.keys());
      const admitted: Waiting[] = [];
      const results = new Map<Waiting, { twin: true } | { error: ApiError }>();
      for (const w of batch) {
        const key = w.candidate.duplicateKey.toString('hex');
        if (!w.candidate.allowDuplicates && taken.has(key)) results.set(w, { twin: true });
        else if (active >= w.cap) results.set(w, { error: capReachedError(w.cap, active) });
        else {
          admitted.push(w);
          active++;
          taken.add(key); // an allowDuplicates row is an active twin of a later create without it, too
        }
      }
      const created = await store.insertMany(
        tx,
        customerId,
        admitted.map((w) => w.candidate),
      );
      return batch.map((w) => {
        const createdAt = created.get(w.candidate.id);
        if (createdAt) return { w, subscription: store.createdSubscription(customerId, w.candidate, createdAt) };
        const refused = results.get(w);
        return { w, error: refused && 'error' in refused ? refused.error : undefined };
      });
    });
    for (const { w, subscription, error } of answers as { w: Waiting; subscription?: store.Subscription; error?: ApiError }[]) {
      if (error) w.fail(error);
      else w.done(subscription);
    }
  }
}

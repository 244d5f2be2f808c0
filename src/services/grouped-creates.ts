/**
 * Single subscription creates, grouped per customer ("group commit", as CreditCharger does for
 * debits). The creates of one customer that arrive while a group of that customer is being written
 * wait and go together in the next group: one read (balance, active counter, twins), then one
 * statement that inserts the group's rows and debits their total, both or neither. One transaction
 * per create made a busy customer's creates queue for a commit each: the NOTIFY that announces new
 * rows to the ingest (migration 018's trigger) holds a database-wide lock from the commit's start to
 * its end, and the customer's credit row is locked by each debit.
 *
 * Each create still gets its own answer, decided in arrival order as if the creates had run one by
 * one: insufficient_credits (402) when the balance left by the earlier ones does not cover it, refused
 * by an active twin (undefined, as insertUnlessTwin), over the plan's cap (when the customer has one),
 * or created and charged. Only the created ones are charged, in the statement that inserts them: an
 * error never costs anything, and a refusal of one create never fails another of its group.
 *
 * The group needs no transaction: a read gone stale (another charge lowered the balance, a concurrent
 * create made a twin) makes the write statement do nothing or fail, and the group is decided again.
 * With a cap, the write statement itself takes the customer's cap lock and counts the active
 * subscriptions after it is granted (migration 026), and writes only if the group still fits: the
 * creates of a capped customer are counted one statement after another and the cap is exact, with
 * the lock held for one statement rather than a transaction of five round trips. A group that keeps
 * going stale (other processes writing the same customer) falls back to one transaction per create,
 * under locks that keep its read true: every create gets its answer, never a server error.
 */
import { ApiError } from '../domain/errors.ts';
import type { NewSubscription, Subscription } from '../domain/subscriptions.ts';
import { type Db, DbError } from '../store/db.ts';
import * as store from '../store/subscriptions.ts';
import { type Charge, chargeInTransaction, insufficient } from './credits.ts';

interface Waiting {
  /** The plan's cap on active subscriptions; null when the customer has none. */
  cap: number | null;
  cost: bigint;
  endpoint: string;
  candidate: NewSubscription;
  done: (result: GroupedCreate) => void;
  fail: (error: unknown) => void;
}

/** A create's answer: the row made and its charge, or undefined when an active twin refused it (nothing charged). */
export type GroupedCreate = { subscription: Subscription; charge: Charge } | undefined;

/**
 * A group whose reads went stale before its write (another charge of the customer lowered the
 * balance, a concurrent create made a twin or raised the active count) is decided again this often;
 * then its creates are written one by one (writeAlone), which cannot go stale.
 */
const ATTEMPTS = 4;

/** Creates per group at most: as many as a bulk chunk (bulk-subscriptions.ts BULK_CHUNK). */
const MAX_GROUP = 1000;

class StaleGroup extends Error {}

/**
 * A write that found its read stale: the debit or the cap check found less room (StaleGroup), a twin
 * was committed meanwhile (unique violation), or the statement lost a deadlock (an activation holding
 * a twin's index entry waits for the customer's row that this statement holds): nothing was written.
 */
function isStale(error: unknown): boolean {
  return error instanceof StaleGroup || (error instanceof DbError && (error.isUniqueViolation || error.sqlstate === '40P01'));
}

export function capReachedError(cap: number, active: number): ApiError {
  return new ApiError(
    'blockchain_events_callbacks_limit_reached',
    `The plan allows ${cap} active subscriptions and ${active} are active. Delete one, or ask the operator to raise the cap.`,
  );
}

export class GroupedCreates {
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly db: Db) {}

  /**
   * Inserts `candidate` for the customer and charges `cost` for it in the same statement. Undefined
   * when an active twin forbids it; throws insufficient_credits or the cap's error.
   */
  create(customerId: string, request: { cap: number | null; cost: bigint; endpoint: string; candidate: NewSubscription }): Promise<GroupedCreate> {
    return new Promise((done, fail) => {
      const queue = this.waiting.get(customerId) ?? [];
      queue.push({ ...request, done, fail });
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

  /** The next group: the oldest waiting creates, at most MAX_GROUP (the statement's size stays bounded). */
  private take(customerId: string): Waiting[] {
    const queue = this.waiting.get(customerId) ?? [];
    const batch = queue.splice(0, MAX_GROUP);
    if (queue.length === 0) this.waiting.delete(customerId);
    return batch;
  }

  private async write(customerId: string, batch: Waiting[]): Promise<void> {
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      try {
        // Two statements and no transaction: the reads, then one statement that inserts and debits (and,
        // for a capped customer, counts under the cap lock) or does nothing.
        for (const [w, answer] of await this.decideAndWrite(customerId, batch)) {
          if (answer instanceof Error) w.fail(answer);
          else w.done(answer);
        }
        return;
      } catch (error) {
        if (!isStale(error)) throw error;
      }
    }
    // Stale again and again (other processes or paths writing the same customer's rows): each create
    // on its own, under locks that keep its read true, so that every one gets its answer.
    for (const w of batch) {
      try {
        w.done(await this.writeAlone(customerId, w));
      } catch (error) {
        w.fail(error);
      }
    }
  }

  /**
   * One create in a transaction of its own, which cannot go stale: the cap lock (when capped) is taken
   * before the count, a twin committed after the read makes the insert skip the row (ON CONFLICT DO
   * NOTHING: answered as the duplicate it now is, nothing charged), and a balance lowered after the
   * read fails the debit, which rolls the insert back (402). The customer's row is locked last, by the
   * debit, as in bulk-subscriptions.ts: locked first, the insert could wait, holding it, behind an
   * activation that holds a twin's index entry and waits for the same row.
   */
  private async writeAlone(customerId: string, w: Waiting): Promise<GroupedCreate> {
    return await this.db.transaction('subscriptions:create-alone', async (tx) => {
      if (w.cap !== null) await store.lockActiveCap(tx, customerId);
      const read = await store.beforeCreates(tx, customerId, w.candidate.allowDuplicates ? [] : [w.candidate.duplicateKey]);
      // The order of the checks of decideAndWrite: the charge first, then the twin, then the cap.
      if (read.credits < w.cost) throw insufficient(w.cost, read.credits);
      if (read.twins.length > 0) return undefined;
      if (w.cap !== null && read.active >= w.cap) throw capReachedError(w.cap, read.active);
      const created = await store.insertMany(tx, customerId, [w.candidate], { twins: 'skip' });
      const createdAt = created.get(w.candidate.id);
      if (!createdAt) return undefined;
      const charge = await chargeInTransaction(tx, customerId, w.cost, w.endpoint);
      return { subscription: store.createdSubscription(customerId, w.candidate, createdAt), charge };
    });
  }

  private async decideAndWrite(customerId: string, batch: Waiting[]): Promise<Map<Waiting, GroupedCreate | ApiError>> {
    const q = this.db;
    // insertUnlessTwin's rule: without allowDuplicates, any active twin forbids the create.
    const read = await store.beforeCreates(
      q,
      customerId,
      batch.flatMap((w) => (w.candidate.allowDuplicates ? [] : [w.candidate.duplicateKey])),
    );
    let balance = read.credits;
    let active = read.active;
    const taken = new Set(read.twins);
    const answers = new Map<Waiting, GroupedCreate | ApiError>();
    const admitted: { w: Waiting; available: bigint }[] = [];
    let total = 0n;
    // The order of the checks of a lone create: the charge first, then the twin, then the cap.
    for (const w of batch) {
      const key = w.candidate.duplicateKey.toString('hex');
      if (balance < w.cost) answers.set(w, insufficient(w.cost, balance));
      else if (!w.candidate.allowDuplicates && taken.has(key)) answers.set(w, undefined);
      else if (w.cap !== null && active >= w.cap) answers.set(w, capReachedError(w.cap, active));
      else {
        balance -= w.cost;
        total += w.cost;
        active++;
        taken.add(key); // an allowDuplicates row is an active twin of a later create without it, too
        admitted.push({ w, available: balance });
      }
    }
    if (admitted.length === 0) return answers;
    const candidates = admitted.map((a) => a.w.candidate);
    // The cap holds for every admitted create when the count found under the cap lock is at most the
    // tightest of (cap - 1 - creates admitted before it); a count that has grown since the read makes
    // the statement do nothing, and the group is decided again.
    const capBounds = admitted.flatMap((a, i) => (a.w.cap === null ? [] : [a.w.cap - 1 - i]));
    const cap = capBounds.length > 0 ? { activeAtMost: Math.min(...capBounds) } : undefined;
    // A twin committed since the read fails the insert (a unique violation), and a balance lowered
    // since the read fails the debit (nothing is written): either way the group is decided again.
    let created: Map<string, Date>;
    let day: string | undefined;
    if (total > 0n || cap) {
      const usage = admitted.filter((a) => a.w.cost > 0n).map((a) => ({ endpoint: a.w.endpoint, requests: 1, credits: a.w.cost }));
      const paid = await store.insertManyPaid(q, customerId, candidates, { cost: total, usage }, cap);
      if (!paid) throw new StaleGroup('another charge lowered the balance, or another create raised the active count, since the read');
      created = paid.created;
      day = paid.day;
    } else {
      created = await store.insertMany(q, customerId, candidates, { twins: 'fail' });
    }
    for (const { w, available } of admitted) {
      answers.set(w, {
        subscription: store.createdSubscription(customerId, w.candidate, created.get(w.candidate.id) as Date),
        charge: { consumed: w.cost, available, ...(w.cost > 0n && day && { usageDay: day }) },
      });
    }
    return answers;
  }
}

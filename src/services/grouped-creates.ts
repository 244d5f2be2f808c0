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
 * Without a cap the group needs no transaction: a read gone stale (another charge lowered the balance,
 * a concurrent create made a twin) makes the write statement do nothing or fail, and the group is
 * decided again. With a cap the group is a transaction that takes the customer's cap lock before its
 * read, so the creates of a capped customer are counted one group after another and the cap is exact.
 */
import { ApiError } from '../domain/errors.ts';
import { creditBalance } from '../store/customers.ts';
import { type Db, DbError, type Queryable } from '../store/db.ts';
import * as store from '../store/subscriptions.ts';
import { type Charge, insufficient } from './credits.ts';

interface Waiting {
  /** The plan's cap on active subscriptions; null when the customer has none. */
  cap: number | null;
  cost: bigint;
  endpoint: string;
  candidate: store.NewSubscription;
  done: (result: GroupedCreate) => void;
  fail: (error: unknown) => void;
}

/** A create's answer: the row made and its charge, or undefined when an active twin refused it (nothing charged). */
export type GroupedCreate = { subscription: store.Subscription; charge: Charge } | undefined;

/**
 * A group whose reads went stale before its writes (another charge of the customer lowered the
 * balance, or a concurrent create made a twin) is rolled back and decided again this often; the last
 * attempt locks the customer's row before reading the balance, so it cannot go stale.
 */
const ATTEMPTS = 5;

/** Creates per group at most: as many as a bulk chunk (bulk-subscriptions.ts BULK_CHUNK). */
const MAX_GROUP = 1000;

class StaleGroup extends Error {}

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
  create(customerId: string, request: { cap: number | null; cost: bigint; endpoint: string; candidate: store.NewSubscription }): Promise<GroupedCreate> {
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
    const capped = batch.some((w) => w.cap !== null);
    for (let attempt = 1; ; attempt++) {
      const last = attempt === ATTEMPTS;
      try {
        // Without a cap, two statements and no transaction: the reads, then one statement that inserts
        // and debits (or does neither). A cap needs its lock held from the count to the insert; the last
        // attempt locks the customer's row from the balance read to the debit.
        const answers =
          capped || last
            ? await this.db.transaction('subscriptions:create-grouped', (tx) => this.decideAndWrite(tx, customerId, batch, { capped, lockBalance: last }))
            : await this.decideAndWrite(this.db, customerId, batch, { capped, lockBalance: false });
        for (const [w, answer] of answers) {
          if (answer instanceof Error) w.fail(answer);
          else w.done(answer);
        }
        return;
      } catch (error) {
        const stale = error instanceof StaleGroup || (error instanceof DbError && error.isUniqueViolation);
        if (!stale || last) throw error;
      }
    }
  }

  private async decideAndWrite(
    q: Queryable,
    customerId: string,
    batch: Waiting[],
    options: { capped: boolean; lockBalance: boolean },
  ): Promise<Map<Waiting, GroupedCreate | ApiError>> {
    if (options.capped) await store.lockActiveCap(q, customerId);
    if (options.lockBalance) await creditBalance(q, customerId, { forUpdate: true });
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
    // A twin committed since the read fails the insert (a unique violation), and a balance lowered
    // since the read fails the debit (nothing is written): either way the group is decided again.
    let created: Map<string, Date>;
    let day: string | undefined;
    if (total > 0n) {
      const usage = admitted.filter((a) => a.w.cost > 0n).map((a) => ({ endpoint: a.w.endpoint, requests: 1, credits: a.w.cost }));
      const paid = await store.insertManyPaid(q, customerId, candidates, { cost: total, usage });
      if (!paid) throw new StaleGroup('another charge of the customer lowered its balance since it was read');
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

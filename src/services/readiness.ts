/**
 * Readiness for /readyz: whether the database answers. Probes and load balancers may call it many
 * times a second, from anywhere and without a key; the database is asked at most once a second and
 * every probe in between gets the last answer (concurrent probes share one check).
 */
import { pingDatabase, type Queryable } from '../store/db.ts';

const REFRESH_MS = 1_000;

export interface ReadyState {
  ready: boolean;
  /** Why not ready, for the operator reading the probe's answer. */
  reason?: string;
}

export class Readiness {
  private last?: { state: ReadyState; at: number };
  private checking?: Promise<ReadyState>;

  constructor(
    private readonly db: Queryable,
    private readonly now: () => number = () => performance.now(),
  ) {}

  async state(): Promise<ReadyState> {
    if (this.last && this.now() - this.last.at < REFRESH_MS) return this.last.state;
    this.checking ??= this.check().finally(() => {
      this.checking = undefined;
    });
    return await this.checking;
  }

  private async check(): Promise<ReadyState> {
    let state: ReadyState;
    try {
      await pingDatabase(this.db);
      state = { ready: true };
    } catch (error) {
      state = { ready: false, reason: `The database is not reachable: ${(error as Error).message}` };
    }
    this.last = { state, at: this.now() };
    return state;
  }
}

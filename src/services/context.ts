/**
 * What every service call receives: the dependencies (the `common` bag) and who is calling.
 */
import type { Logger } from 'pino';
import type { ChainAdapter } from '../chains/types.ts';
import type { Config } from '../config/config.ts';
import type { CallbackSender } from '../delivery/sender.ts';
import type { KeyOwner } from '../store/customers.ts';
import type { Db } from '../store/db.ts';
import type { AccessCache } from './access.ts';
import type { Charge, CreditCharger } from './credits.ts';
import type { GroupedCreates } from './grouped-creates.ts';
import type { InFlightCap } from './in-flight-cap.ts';
import type { StreamWake } from './stream-wake.ts';

/**
 * The node reads of the API role's own adapters (one per configured chain): the Callback Data endpoints,
 * and a dry-run replay's blocks (getBlock, tokenMetadata).
 */
export type ChainReader = Pick<ChainAdapter, 'getBlockDetails' | 'getTransactionDetails' | 'getBlock' | 'tokenMetadata' | 'getHead' | 'getUnspentOutputs'>;

export interface Common {
  config: Config;
  db: Db;
  /**
   * The pool for work that may wait while other requests are served (bulk creation's chunk statements):
   * small, and at low CPU priority where the database runs on this machine (store/open.ts). Without it, `db`.
   */
  lowPriorityDb?: Db;
  logger: Logger;
  credits: CreditCharger;
  /** Single subscription creates (without a backfill), grouped per customer with their charges. */
  creates: GroupedCreates;
  /** Dry-run replays in progress per customer (blockJobs.dryRunsPerCustomer). */
  dryRuns: InFlightCap;
  access: AccessCache;
  /** The guarded HTTPS client (test callbacks, domain verification). */
  sender: CallbackSender;
  /** The adapter reading `blockchain` `network`'s node; undefined when this deployment has no node for it. */
  chainReader?: (blockchain: string, network: string) => ChainReader | undefined;
  /** Wakes the event stream's long-polls on the database's announcements; without it they poll. */
  streamWake?: StreamWake;
  /** Whether what this process runs itself is up (the embedded database it started); /healthz answers it. */
  health?: ProcessHealth;
}

export type ProcessHealth = () => { up: boolean; reason?: string };

/** The authenticated caller of one request. */
export interface Caller {
  owner: KeyOwner;
  /** The endpoint name of the route called (key restrictions, credit usage). */
  endpoint: string;
  apiVersion: string;
  /** The request's id, as answered to the client: what the operator's log is searched by. */
  requestId: string;
}

/** A successful call's result and the credits it took, for the x-credits-* headers. */
export type Charged<T> = { value: T } & Charge;

/**
 * What every service call receives: the dependencies (the `common` bag) and who is calling.
 */
import type { Config } from '../config/config.ts';
import type { KeyOwner } from '../store/customers.ts';
import type { Db } from '../store/db.ts';

export interface Common {
  config: Config;
  db: Db;
}

/** The authenticated caller of one request. */
export interface Caller {
  owner: KeyOwner;
  apiVersion: string;
}

/** Credits taken by a successful call, for the x-credits-* headers. */
export interface Charged<T> {
  value: T;
  consumed: bigint;
  available: bigint;
}

/**
 * A connection the server ends in the middle of a transaction (a restart or failover terminates every
 * backend, SQLSTATE 57P01) while herald waits on something else between two statements: the transaction
 * fails as retryable and the process goes on. Before, the checked-out client had no error listener, and
 * the 'error' event ended the process (seen as a delivery process exiting 1 in test/topology.test.ts).
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDb, type Db, DbError } from '../src/store/db.ts';
import { createTestDatabase } from './harness.ts';

let url: string;
let db: Db;
let admin: pg.Client;
beforeAll(async () => {
  url = await createTestDatabase();
  db = createDb(url, { poolSize: 2 });
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});
afterAll(async () => {
  await db?.close();
  await admin?.end();
});

it('a backend terminated between two statements of a transaction fails it as retryable, without an unhandled error event', async () => {
  const failure = await db
    .transaction('test:terminated', async (tx) => {
      const [row] = await tx.query<{ pid: number }>('test:pid', 'SELECT pg_backend_pid() AS pid', []);
      await admin.query('SELECT pg_terminate_backend($1)', [row?.pid]);
      // Waiting on something that is not the database (a node, an HTTP call) while the server ends it.
      await new Promise((r) => setTimeout(r, 300));
      await tx.query('test:after', 'SELECT 1', []);
    })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(failure).toBeInstanceOf(DbError);
  expect((failure as DbError).retryable).toBe(true);
  // The pool gave up the dead client and serves the next transaction.
  expect(await db.transaction('test:next', async (tx) => (await tx.query<{ n: number }>('test:one', 'SELECT 1 AS n', []))[0]?.n)).toBe(1);
});

/**
 * Waiting for a customer's event-stream entries to be readable. An entry shows once every transaction
 * older than its own has ended (docs/concepts/event-stream.md), and the test files share one PostgreSQL
 * server, whose transaction ids are one sequence: another file's open transaction (a bulk import, a held
 * lock) holds this file's entries back for as long as it runs. A test that reads the stream right after
 * writing waits for this first.
 */

import type { Queryable } from '../../src/store/db.ts';
import { hasUnsettledEntries } from '../../src/store/event-stream.ts';
import { until } from './wait.ts';

export async function streamSettled(db: Queryable, customerId: string): Promise<void> {
  await until('the event-stream entries to settle', async () => !(await hasUnsettledEntries(db, customerId)), 30_000);
}

/**
 * `herald prune` as an operator runs it, in a real process on a real database: --dry-run prints the
 * counts and deletes nothing; without it the same callbacks (and their attempts) go, and nothing else.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './harness.ts';

const run = promisify(execFile);

describe('herald prune', () => {
  let url = '';
  let client: pg.Client;
  const herald = (...args: string[]) => run('node', ['bin/herald.js', ...args], { env: { ...process.env, DATABASE_URL: url, HERALD_LOG_LEVEL: 'warn' } });
  const counts = async () =>
    Object.fromEntries(
      (
        await client.query<{ status: string; n: number }>(
          "SELECT status || CASE WHEN finished_at < now() - interval '1 day' OR created_at < now() - interval '1 day' THEN '-old' ELSE '' END AS status, count(*)::int AS n FROM callbacks GROUP BY 1",
        )
      ).rows.map((r) => [r.status, r.n]),
    );
  const attempts = async () => (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM callback_attempts')).rows[0]?.n;

  beforeAll(async () => {
    url = await createTestDatabase();
    await herald('migrate');
    client = new pg.Client({ connectionString: url });
    await client.connect();
    // Per status: 4 old (past the default window: 30, 90, 7 days) and 2 recent; pending ones a year old.
    const insert = (status: string, ageDays: number, n: number) =>
      client.query(
        `WITH c AS (
           INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status,
             next_attempt_at, created_at, finished_at)
           SELECT gen_random_uuid(), 1, gen_random_uuid(), 'BLOCK_MINED', 'k' || g, '{}', 'https://h.example.com/', 'https://h.example.com:443', $1::text,
             now() - $2 * interval '1 day', now() - $2 * interval '1 day', CASE WHEN $1::text = 'pending' THEN NULL ELSE now() - $2 * interval '1 day' END
           FROM generate_series(1, $3::int) g RETURNING id)
         INSERT INTO callback_attempts (callback_id, attempt, started_at, duration_ms) SELECT id, 1, now(), 1 FROM c`,
        [status, ageDays, n],
      );
    await insert('delivered', 31, 4);
    await insert('delivered', 0.5, 2);
    await insert('failed', 91, 4);
    await insert('failed', 0.5, 2);
    await insert('cancelled', 8, 4);
    await insert('cancelled', 0.5, 2);
    await insert('pending', 365, 3);
  });
  afterAll(() => client?.end());

  it('--dry-run prints what would go and deletes nothing', async () => {
    const before = await counts();
    const { stdout } = await herald('prune', '--dry-run');
    expect(stdout).toMatch(/^delivered: would delete 4 callbacks and 4 attempts finished before \S+Z$/m);
    expect(stdout).toMatch(/^failed: would delete 4 callbacks and 4 attempts/m);
    expect(stdout).toMatch(/^cancelled: would delete 4 callbacks and 4 attempts/m);
    expect(stdout).toMatch(/^total: would delete 12 callbacks and 12 attempts in [\d.]+ s$/m);
    expect(await counts()).toEqual(before);
    expect(await attempts()).toBe(21);
  });

  it('deletes the old finished callbacks and their attempts, and only those', async () => {
    const { stdout } = await herald('prune');
    expect(stdout).toMatch(/^total: deleted 12 callbacks and 12 attempts in [\d.]+ s \([\d.]+ s in batches\)$/m);
    expect(await counts()).toEqual({ delivered: 2, failed: 2, cancelled: 2, 'pending-old': 3 });
    expect(await attempts()).toBe(9);
    const again = await herald('prune');
    expect(again.stdout).toMatch(/^total: deleted 0 callbacks/m);
  });
});

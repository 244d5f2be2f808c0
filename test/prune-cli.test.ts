/**
 * `herald prune` as an operator runs it, in a real process on a real database: --dry-run prints the
 * counts and deletes nothing; without it the same callbacks (and their attempts) go, and nothing else;
 * killed (SIGKILL) at any point, it leaves no callback without its attempts nor the reverse, and the
 * callback counters exact.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

describe('herald prune killed part way', () => {
  it('leaves only whole callbacks (each with all its attempts) and exact counters; the next run finishes the job', async () => {
    const url = await createTestDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'herald-prune-kill-'));
    const config = join(dir, 'herald.config.json');
    // Small batches back to back, so that the kill lands between and inside batches.
    writeFileSync(config, JSON.stringify({ retention: { batchSize: 300, pauseMs: 0, dutyCycle: 1 } }));
    const env = { ...process.env, DATABASE_URL: url, HERALD_CONFIG: config, HERALD_LOG_LEVEL: 'warn' };
    await run('node', ['bin/herald.js', 'migrate'], { env });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      // 30,000 old delivered callbacks over 50 subscriptions, 2 attempts each, and 50 recent ones (one per subscription).
      await client.query(
        `WITH subs AS (SELECT gen_random_uuid() AS id, s FROM generate_series(0, 49) s),
         c AS (
           INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status,
             next_attempt_at, created_at, finished_at)
           SELECT gen_random_uuid(), 1, subs.id, 'BLOCK_MINED', 'k' || g, '{}', 'https://h.example.com/', 'https://h.example.com:443', 'delivered',
             now() - a.days * interval '1 day', now() - a.days * interval '1 day', now() - a.days * interval '1 day'
           FROM generate_series(0, 30049) g JOIN subs ON subs.s = g % 50,
             LATERAL (SELECT CASE WHEN g < 30000 THEN 40 - g / 3000.0 ELSE 1 END AS days) a
           RETURNING id)
         INSERT INTO callback_attempts (callback_id, attempt, started_at, duration_ms) SELECT id, n, now(), 1 FROM c, generate_series(1, 2) n`,
      );
      const invariants = async () => {
        const { rows } = await client.query<{ callbacks: number; without: number; orphans: number; wrong: number }>(
          `SELECT (SELECT count(*)::int FROM callbacks) AS callbacks,
             (SELECT count(*)::int FROM callbacks c WHERE (SELECT count(*) FROM callback_attempts a WHERE a.callback_id = c.id) <> 2) AS without,
             (SELECT count(*)::int FROM callback_attempts a WHERE NOT EXISTS (SELECT 1 FROM callbacks c WHERE c.id = a.callback_id)) AS orphans,
             (SELECT count(*)::int FROM (SELECT subscription_id, count(*) AS n FROM callbacks GROUP BY 1) r
                FULL JOIN callback_counts k USING (subscription_id) WHERE k.callbacks IS DISTINCT FROM r.n) AS wrong`,
        );
        return rows[0];
      };
      expect(await invariants()).toEqual({ callbacks: 30_050, without: 0, orphans: 0, wrong: 0 });

      const child = spawn('node', ['bin/herald.js', 'prune'], { env, stdio: 'ignore' });
      const exited = new Promise((done) => child.once('exit', done));
      // Kill it once it has deleted some, not all.
      const deadline = Date.now() + 60_000;
      for (;;) {
        const n = (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM callbacks')).rows[0]?.n ?? 0;
        if (n < 27_000 || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      child.kill('SIGKILL');
      await exited;
      const killed = await invariants();
      expect(killed?.callbacks).toBeLessThan(30_050);
      expect(killed?.callbacks).toBeGreaterThan(50);
      expect({ ...killed, callbacks: 0 }).toEqual({ callbacks: 0, without: 0, orphans: 0, wrong: 0 });

      const { stdout } = await run('node', ['bin/herald.js', 'prune'], { env });
      expect(stdout).toMatch(/^total: deleted \d+ callbacks/m);
      expect(await invariants()).toEqual({ callbacks: 50, without: 0, orphans: 0, wrong: 0 });
    } finally {
      await client.end();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

/**
 * The receiver kit (packages/receiver) against what herald really does: callbacks signed by herald's own
 * signing code, the inbox on a real PostgreSQL database of the receiver's own, catchUp from a real herald's
 * event stream; the Python version's tests (python/test_herald_receiver.py) run as a program; and the
 * generated event types are what the OpenAPI document says today.
 */
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENTS_FILE, eventTypes } from '../../../scripts/receiver-types.ts';
import { signCallback } from '../../../src/delivery/signing.ts';
import { callbackBody } from '../../../src/domain/callbacks.ts';
import { callbackOfEvent } from '../../../src/domain/events.ts';
import { enqueueCallbacks } from '../../../src/store/callbacks.ts';
import { createTestDatabase, SAMPLE, startTestApp, type TestApp } from '../../../test/harness.ts';
import { installHint, isCi } from '../../../test/support/real-node.ts';
import { streamSettled } from '../../../test/support/stream-settled.ts';
import {
  CursorExpiredError,
  catchUp,
  createInbox,
  type HeraldCallback,
  handleOnce,
  pgCursorStore,
  type StreamEntry,
  type StreamEvent,
  type StreamRetraction,
  VerificationError,
  verifyCallback,
} from '../src/index.js';

const SECRET = 'kit-secret-ü';
const NOW = 1_767_225_600;
const body = callbackBody({ id: '0b7f5d3e-3f6c-4c52-a0a4-6f3c1f4f9b2d', eventType: 'BLOCK_MINED', apiVersion: '2021-03-20' }, 'a'.repeat(64), {
  blockchain: 'ethereum',
  network: 'sepolia',
  height: 1,
  hash: `0x${'1'.repeat(64)}`,
  timestamp: NOW,
});
const signed = (secret = SECRET, previous?: string) =>
  ({ ...signCallback(secret, Buffer.from(body), 'a'.repeat(64), NOW, previous) }) as Record<string, string>;
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error instanceof VerificationError ? error.code : `not a VerificationError: ${error}`;
  }
  return 'accepted';
};

describe('verifyCallback', () => {
  it("accepts herald's signatures and refuses a tampered, unsigned, stale or foreign request, with typed errors", () => {
    const at = NOW * 1000;
    expect(verifyCallback({ rawBody: Buffer.from(body), headers: signed(), secret: SECRET, now: at })).toEqual(JSON.parse(body));
    expect(verifyCallback({ rawBody: body, headers: new Headers(signed()), secret: SECRET, now: at }).idempotencyKey).toBe('a'.repeat(64));
    expect(codeOf(() => verifyCallback({ rawBody: body.replace('sepolia', 'hoodi!'), headers: signed(), secret: SECRET, now: at }))).toBe('bad_signature');
    const { 'webhook-signature': _, ...unsigned } = signed();
    expect(codeOf(() => verifyCallback({ rawBody: body, headers: unsigned, secret: SECRET, now: at }))).toBe('missing_signature');
    expect(codeOf(() => verifyCallback({ rawBody: body, headers: {}, secret: SECRET, now: at }))).toBe('missing_signature');
    expect(codeOf(() => verifyCallback({ rawBody: body, headers: signed(), secret: SECRET, now: at + 301_000 }))).toBe('stale_timestamp');
    expect(codeOf(() => verifyCallback({ rawBody: body, headers: signed(), secret: SECRET, now: at + 301_000, toleranceSeconds: 600 }))).toBe('accepted');
    expect(codeOf(() => verifyCallback({ rawBody: body, headers: signed(), secret: 'another', now: at }))).toBe('bad_signature');
    // x-signature right but webhook-signature of another secret: both are checked.
    expect(
      codeOf(() =>
        verifyCallback({ rawBody: body, headers: { ...signed(), 'webhook-signature': signed('x')['webhook-signature'] as string }, secret: SECRET, now: at }),
      ),
    ).toBe('bad_signature');
  });

  it('takes several secrets while one is rotated: a receiver on the old secret, on the new one, or on both', () => {
    const at = NOW * 1000;
    const rotating = signed('new-secret', SECRET); // herald during a rotation's overlap: both sign
    expect(codeOf(() => verifyCallback({ rawBody: body, headers: rotating, secret: SECRET, now: at }))).toBe('accepted');
    expect(codeOf(() => verifyCallback({ rawBody: body, headers: rotating, secret: 'new-secret', now: at }))).toBe('accepted');
    expect(codeOf(() => verifyCallback({ rawBody: body, headers: signed('new-secret'), secrets: ['new-secret', SECRET], now: at }))).toBe('accepted');
    expect(codeOf(() => verifyCallback({ rawBody: body, headers: signed('new-secret'), secrets: [SECRET], now: at }))).toBe('bad_signature');
  });
});

describe('the inbox and catchUp, on a database of the receiver', () => {
  let t: TestApp;
  let receiverUrl: string;
  let client: pg.Client;
  beforeAll(async () => {
    [t, receiverUrl] = await Promise.all([startTestApp(), createTestDatabase()]);
    client = new pg.Client({ connectionString: receiverUrl });
    await client.connect();
    await createInbox(client);
    await client.query('CREATE TABLE effects (key text PRIMARY KEY, height int)');
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
  });

  const effects = async () => (await client.query<{ key: string }>('SELECT key FROM effects ORDER BY height, key')).rows.map((r) => r.key);
  const apply = async (c: pg.Client, event: HeraldCallback | StreamEvent) => {
    const height = event.data.event === 'BLOCK_MINED' ? event.data.item.height : 0;
    await c.query('INSERT INTO effects (key, height) VALUES ($1, $2)', [event.idempotencyKey, height]);
  };
  const undo = async (c: pg.Client, event: StreamRetraction) => {
    await c.query('DELETE FROM effects WHERE key = $1', [event.idempotencyKey]);
  };

  it('applies each event once, rolls a failed handler back with its key, and undoes a retracted event once', async () => {
    const event = JSON.parse(body);
    expect(await handleOnce(client, event, apply, { onRetract: undo })).toBe('applied');
    expect(await handleOnce(client, event, apply, { onRetract: undo })).toBe('duplicate');
    const other = { ...event, idempotencyKey: 'b'.repeat(64) };
    await expect(
      handleOnce(client, other, async (c, e) => {
        await apply(c, e);
        throw new Error('the handler failed half way');
      }),
    ).rejects.toThrow('half way');
    expect(await effects()).toEqual([event.idempotencyKey]);
    // Two copies at the same moment on two connections: one effect.
    const second = new pg.Client({ connectionString: receiverUrl });
    await second.connect();
    const outcomes = await Promise.all([handleOnce(client, other, apply), handleOnce(second, other, apply)]);
    await second.end();
    expect(outcomes.sort()).toEqual(['applied', 'duplicate']);

    const retraction = { ...event, data: undefined, retracted: true };
    expect(await handleOnce(client, retraction, apply, { onRetract: undo })).toBe('retracted');
    expect(await handleOnce(client, retraction, apply, { onRetract: undo })).toBe('ignored');
    expect(await handleOnce(client, event, apply, { onRetract: undo })).toBe('ignored'); // a late copy of the retracted event
    expect(await effects()).toEqual([other.idempotencyKey]);
    expect(await handleOnce(client, { ...event, reinstated: true }, apply, { onRetract: undo })).toBe('applied');
    expect(await handleOnce(client, { ...event, idempotencyKey: 'test-x', data: { ...event.data, isTest: true } }, apply)).toBe('test');
    expect((await effects()).sort()).toEqual([event.idempotencyKey, other.idempotencyKey].sort());
  });

  it('catchUp reads the stream from the stored cursor through the inbox, goes on from there the next time, and says when the cursor expired', async () => {
    const c = await t.customer();
    const created = await t.request('POST', '/blockchain-events/bitcoin/testnet/subscriptions/block-mined', {
      key: c.key,
      body: { data: { item: { callbackUrl: SAMPLE.callbackUrl } } },
    });
    const subscription = created.body.data.item.referenceId as string;
    // Each enqueue waits until its entries are readable: another test file's open transaction on the shared
    // server holds the stream back (test/support/stream-settled.ts).
    const enqueue = async (heights: number[]) => {
      await enqueueNow(heights);
      await streamSettled(t.app.database.db, c.id);
    };
    const enqueueNow = (heights: number[]) =>
      t.app.database.db.transaction('test:enqueue', (tx) =>
        enqueueCallbacks(
          tx,
          heights.map((height) =>
            callbackOfEvent({
              customerId: c.id,
              subscriptionId: subscription,
              eventType: 'BLOCK_MINED',
              idempotencyKey: `kit-${height}`,
              body: callbackBody({ id: subscription, eventType: 'BLOCK_MINED', apiVersion: '2021-03-20' }, `kit-${height}`, {
                blockchain: 'bitcoin',
                network: 'testnet',
                height,
                hash: height.toString(16).padStart(64, '0'),
                timestamp: NOW + height,
              }),
              callbackUrl: SAMPLE.callbackUrl,
            }),
          ),
        ),
      );
    await client.query('TRUNCATE effects, herald_inbox');
    await enqueue([1, 2, 3]);
    const cursorStore = pgCursorStore(client, { name: 'kit-test' });
    const handle = (entry: StreamEntry) => handleOnce(client, entry, apply, { onRetract: undo });
    const options = { baseUrl: t.url, apiKey: c.key, cursorStore, handle, limit: 2 };
    expect((await catchUp(options)).entries).toBe(3);
    await enqueue([4]);
    expect((await catchUp(options)).entries).toBe(1);
    expect(await effects()).toEqual(['kit-1', 'kit-2', 'kit-3', 'kit-4']);

    // Following: an entry committed while catchUp waits at the end arrives, then the signal stops it.
    const stop = new AbortController();
    const following = catchUp({ ...options, follow: true, waitSeconds: 5, signal: stop.signal });
    await new Promise((r) => setTimeout(r, 200));
    await enqueue([5]);
    await expect.poll(effects, { timeout: 5000 }).toContain('kit-5');
    stop.abort();
    expect((await following).entries).toBe(1);

    // Retention deleted events after the stored cursor: a typed error with where to go on from.
    const expired = pgCursorStore(client, { name: 'kit-expired' });
    await expired.save(Buffer.from(JSON.stringify([1, '1', 1, '1', '00000000-0000-0000-0000-000000000001'])).toString('base64url'));
    await t.app.database.db.query('test:horizon', "INSERT INTO stream_horizons VALUES ($1, '5', 1, 1, gen_random_uuid())", [c.id]);
    const error = await catchUp({ ...options, cursorStore: expired }).catch((e) => e);
    expect(error).toBeInstanceOf(CursorExpiredError);
    expect(error.oldestCursor).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('the Python version: verify_callback on what herald signed, and the inbox on a real PostgreSQL database (psycopg)', async () => {
    const url = await createTestDatabase();
    const vector = { body, headers: signed(), secret: SECRET, now: NOW };
    const script = new URL('../python/test_herald_receiver.py', import.meta.url).pathname;
    // Under CI a Python without a PostgreSQL driver fails the inbox test instead of skipping it (as a
    // missing real node does, test/support/real-node.ts): .ci/run installs Debian's python3-psycopg.
    const driver = pythonWithDriver();
    const required = isCi();
    if (!driver) {
      if (required) throw new Error(`No Python here imports psycopg (or psycopg2), so the Python inbox cannot be tested: ${installHint('python3-psycopg')}.`);
      process.stderr.write(
        `\n*** packages/receiver: the Python inbox test is SKIPPED: no python3 here imports psycopg; ${installHint('python3-psycopg')} ***\n\n`,
      );
    }
    const { stderr } = await promisify(execFile)(driver ?? 'python3', [script], {
      env: {
        ...process.env,
        HERALD_SIGNED_VECTOR: JSON.stringify(vector),
        HERALD_TEST_DATABASE_URL: url,
        ...(required && { HERALD_REQUIRE_PG_DRIVER: '1' }),
      },
    });
    // unittest reports on stderr; a failure rejects the call above (exit code 1).
    expect(stderr).toMatch(/test_accepts_what_herald_signed \(.*\) \.\.\. ok/);
    expect(stderr).toMatch(/test_refuses_tampered_unsigned_stale_and_other_secret \(.*\) \.\.\. ok/);
    expect(stderr).toMatch(
      driver
        ? /test_each_effect_once_and_retractions_undo \(.*\) \.\.\. ok/
        : /test_each_effect_once_and_retractions_undo \(.*\) \.\.\. skipped 'no PostgreSQL driver/,
    );
  });
});

/**
 * The python3 that imports a PostgreSQL driver (psycopg 3, else psycopg2): Debian's /usr/bin/python3 first
 * (apt-get install python3-psycopg gives it psycopg), then the python3 on PATH (which may be another
 * installation, e.g. pyenv's, without it); undefined when none does.
 */
function pythonWithDriver(): string | undefined {
  const probe = 'try:\n import psycopg\nexcept ImportError:\n import psycopg2';
  for (const python of ['/usr/bin/python3', 'python3']) {
    if (spawnSync(python, ['-c', probe], { stdio: 'ignore' }).status === 0) return python;
  }
  return undefined;
}

describe('the event types', () => {
  it('are generated from the OpenAPI document as it is now (node --import tsx scripts/receiver-types.ts)', () => {
    expect(readFileSync(EVENTS_FILE, 'utf8')).toBe(eventTypes());
  });
});

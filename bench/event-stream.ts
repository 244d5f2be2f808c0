/**
 * The event stream benchmark. Targets (issue 34, docs/concepts/event-stream.md): streaming out 1,000,000
 * stored events through GET /blockchain-events/events reaches at least 0.5 of a bare SELECT of the same
 * rows through the same pool, in the same run; a long-poll answers within 50 ms of the event's commit (p99).
 *
 * One process: herald's API role (startApp, no delivery, no chains) on the embedded PostgreSQL of a fresh
 * temporary data directory, and this benchmark's client. The bare SELECT goes through the app's own pool
 * (app.database.db), page by page as the stream does (keyset on the stream's position, 1,000 rows a
 * page, the same columns), so the ratio is what the endpoint adds: the position filter, the marks'
 * branch, the charge, the JSON text and HTTP, and the client reading the answer (its bytes, not parsed:
 * the entries counted in them, the cursor taken from the tail). Three rounds of each, alternated; the
 * ratio is of the medians (bestToBestRatio, of the best of each, is the figure used before 2026-12-02).
 *
 * Data (BENCH_STREAM_SCALE, default 1, multiplies the count): 1,000,000 delivered BLOCK_MINED callbacks
 * of one customer over 10 subscriptions, 100 per writing transaction (a block's worth), bodies of the
 * real shape (~330 bytes), built by INSERT ... SELECT generate_series with explicit stream positions
 * (transaction ids below any running one, as committed history is).
 *
 * Long-poll (BENCH_STREAM_POLLS rounds, default 200): a GET with waitSeconds=30 at the end of the stream
 * waits; the benchmark commits one callback through the producers' store call (enqueueCallbacks, which
 * announces it) and times from the COMMIT's return to the answer's arrival.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { type RunningApp, startApp } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { callbackBody } from '../src/domain/callbacks.ts';
import { callbackOfEvent } from '../src/domain/events.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { createApiKey, createCustomer } from '../src/store/customers.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { envInt, envScale, log, median, onCleanup, percentile, removeDataDirOnCleanup } from './lib.ts';
import { BENCH_API_VERSION, insertBenchSubscription } from './subscriptions.ts';

const TARGETS = { streamToBareRatio: 0.5, longPollP99Ms: 50 };
const PAGE = 1000;
const PER_TRANSACTION = 100;
/** Rounds of each read, alternated (BENCH_STREAM_ROUNDS). */
const ROUNDS = envInt('BENCH_STREAM_ROUNDS', 3);
const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

const scale = (): number => envScale('BENCH_STREAM_SCALE');

export default async function eventStreamBenchmark(): Promise<Record<string, unknown>> {
  const total = Math.max(PAGE, Math.round(1_000_000 * scale()));
  const polls = envInt('BENCH_STREAM_POLLS', 200);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-stream-'));
  let app: RunningApp | undefined;
  removeDataDirOnCleanup(dataDir, () => app?.close());
  app = await startApp({ ...loadConfig({ dataDir, port: 0, roles: ['api'] }, {}), logLevel: 'warn' });
  const db = app.database.db;
  const customer = await createCustomer(db, 'bench-stream', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n);
  await upsertDomain(db, customer.id, 'localhost', 'operator');
  const { key } = await createApiKey(db, customer.id, { label: 'bench' });
  const subscriptions: string[] = [];
  for (let i = 0; i < 10; i++) subscriptions.push(await insertBenchSubscription(db, customer.id, `https://localhost/stream/${i}`, 'BLOCK_MINED'));

  let started = performance.now();
  log(`storing ${total} delivered callbacks, ${PER_TRANSACTION} per transaction`);
  const chunk = 100_000;
  for (let from = 1; from <= total; from += chunk) {
    await db.query(
      'bench:stream-build',
      `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status, attempts,
         next_attempt_at, finished_at, sequence, stream_xid)
       SELECT lpad(to_hex(g), 32, '0')::uuid, $1::bigint, s.id, 'BLOCK_MINED', md5(g::text),
         '{"apiVersion":"${BENCH_API_VERSION}","referenceId":"' || s.id || '","idempotencyKey":"' || md5(g::text) || md5(s.id::text) ||
           '","data":{"product":"BLOCKCHAIN_EVENTS","event":"BLOCK_MINED","item":{"blockchain":"ethereum","network":"goerli","height":' || g ||
           ',"hash":"0x' || md5(g::text) || md5((g + 1)::text) || '","timestamp":' || (1700000000 + g) || '}}}',
         'https://localhost/stream', 'https://localhost:443', 'delivered', 1, now(), now(), g, (1 + g / $4)::text::xid8
       FROM generate_series($2::int, $3::int) g, LATERAL (SELECT ($5::uuid[])[g % 10 + 1] AS id) s`,
      [customer.id, from, Math.min(total, from + chunk - 1), PER_TRANSACTION, subscriptions],
    );
  }
  // The rows' positions are made-up transaction ids 1.. (total / PER_TRANSACTION + 1); the stream returns
  // only rows of transactions older than every running one, so the server's own counter must pass them:
  // each autocommit pg_current_xact_id() takes one id.
  const lastMadeUpXid = 1 + Math.floor(total / PER_TRANSACTION);
  for (;;) {
    const [row] = await db.query<{ x: string }>('bench:stream-xid', 'SELECT pg_current_xact_id()::text AS x');
    if (Number(row?.x) > lastMadeUpXid + 1) break;
  }
  await db.query('bench:analyze', 'ANALYZE callbacks');
  log(`stored in ${Math.round(performance.now() - started)} ms`);

  // The bare SELECT: the same rows and columns, page by page, through the app's pool.
  const bare = async () => {
    let after = ['0', 0, '00000000-0000-0000-0000-000000000000'] as [string, number, string];
    let rows = 0;
    for (;;) {
      const page = await db.query<{ x: string; sequence: string; id: string; body: string }>(
        'bench:stream-bare',
        `SELECT c.stream_xid::text AS x, c.sequence, c.id, c.body, c.created_at, c.event_type, c.idempotency_key, c.subscription_id
         FROM callbacks c WHERE c.customer_id = $1 AND c.stream_xid >= $2::xid8 AND (c.stream_xid, c.sequence, c.id) > ($2::xid8, $3::bigint, $4::uuid)
         ORDER BY c.stream_xid, c.sequence, c.id LIMIT ${PAGE}`,
        [customer.id, ...after],
      );
      rows += page.length;
      const last = page.at(-1);
      if (!last || page.length < PAGE) return rows;
      after = [last.x, Number(last.sequence), last.id];
    }
  };
  const url = app.url as string;
  // The stream's client: undici's request on one kept-alive connection, reading the answer's bytes as they
  // come (as a receiver hands them to its JSON parser). fetch, its text and a count in that text took
  // about 1.5 ms of this one process's CPU a page (a CPU profile, 2026-12-02), all of it the client's.
  const agent = new Agent({ keepAliveTimeout: 60_000, connections: 1, bodyTimeout: 600_000, headersTimeout: 600_000 });
  onCleanup(() => agent.close());
  const CREATED_AT = Buffer.from('"createdAt":');
  const stream = async () => {
    let cursor = '';
    let entries = 0;
    for (;;) {
      const response = await request(`${url}/blockchain-events/events?limit=${PAGE}${cursor ? `&cursor=${cursor}` : ''}`, {
        headers: { 'x-api-key': key },
        dispatcher: agent,
      });
      if (response.statusCode !== 200) throw new Error(`the stream answered ${response.statusCode}: ${(await response.body.text()).slice(0, 300)}`);
      // The answer's bytes as they come: the entries counted in each chunk (a "createdAt": cut by a chunk's
      // end is counted in the next, which starts with the end of the one before), the cursor from the tail.
      let carry: Buffer = Buffer.alloc(0);
      let tailBytes: Buffer = Buffer.alloc(0);
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        const seam = carry.length > 0 ? Buffer.concat([carry, chunk.subarray(0, CREATED_AT.length - 1)]) : undefined;
        if (seam) for (let at = seam.indexOf(CREATED_AT); at >= 0; at = seam.indexOf(CREATED_AT, at + 1)) entries++;
        for (let at = chunk.indexOf(CREATED_AT); at >= 0; at = chunk.indexOf(CREATED_AT, at + CREATED_AT.length)) entries++;
        carry = chunk.subarray(Math.max(0, chunk.length - (CREATED_AT.length - 1)));
        tailBytes = chunk.length >= 1000 ? chunk : Buffer.concat([tailBytes, chunk]);
      }
      const tail = /"nextCursor":"([^"]+)","hasMore":(true|false)\}\}$/.exec(tailBytes.toString('utf8', Math.max(0, tailBytes.length - 1000)));
      if (!tail) throw new Error(`no cursor at the end of the answer: ${tailBytes.toString('utf8', Math.max(0, tailBytes.length - 300))}`);
      cursor = tail[1] as string;
      if (tail[2] === 'false') return entries;
    }
  };

  // Alternated, BENCH_STREAM_ROUNDS times each, so that neither always runs on the warmer cache.
  const seconds: { bare: number[]; stream: number[] } = { bare: [], stream: [] };
  for (let round_ = 0; round_ < ROUNDS; round_++) {
    for (const [name, run] of [
      ['bare', bare],
      ['stream', stream],
    ] as const) {
      started = performance.now();
      const n = await run();
      if (n !== total) throw new Error(`${name} read ${n} rows, not ${total}`);
      const s = (performance.now() - started) / 1000;
      seconds[name].push(s);
      log(`${name}: ${total} in ${round(s, 2)} s (${Math.round(total / s)}/s)`);
    }
  }
  const bareRate = total / median(seconds.bare);
  const streamRate = total / median(seconds.stream);
  const ratio = streamRate / bareRate;
  const bestRatio = Math.min(...seconds.bare) / Math.min(...seconds.stream);

  // Long-poll: from the commit to the answer, for a customer of its own (the stored events' positions
  // are made up, above the transaction ids this young database gives: events of the same customer
  // committed now would sort before them).
  const poller = await createCustomer(
    db,
    'bench-stream-poll',
    { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 },
    10n ** 15n,
  );
  await upsertDomain(db, poller.id, 'localhost', 'operator');
  const pollKey = (await createApiKey(db, poller.id, { label: 'bench' })).key;
  const pollSubscription = await insertBenchSubscription(db, poller.id, 'https://localhost/poll', 'BLOCK_MINED');
  let cursor = '';
  const latencies: number[] = [];
  log(`long-poll: ${polls} rounds`);
  for (let i = 0; i < polls; i++) {
    const answered = fetch(`${url}/blockchain-events/events?limit=10&waitSeconds=30${cursor ? `&cursor=${cursor}` : ''}`, {
      headers: { 'x-api-key': pollKey },
    }).then(async (r) => {
      const text = await r.text();
      return { at: performance.now(), text };
    });
    // The GET must be waiting before the commit: give it time to reach its wait.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const sub = pollSubscription;
    const idempotencyKey = `poll-${i}-${sub}`;
    const callback = callbackOfEvent({
      customerId: poller.id,
      subscriptionId: sub,
      eventType: 'BLOCK_MINED',
      idempotencyKey,
      body: callbackBody({ id: sub, eventType: 'BLOCK_MINED', apiVersion: BENCH_API_VERSION }, idempotencyKey, {
        blockchain: 'ethereum',
        network: 'goerli',
        height: i,
      }),
      callbackUrl: 'https://localhost/poll',
    });
    await db.transaction('bench:stream-commit', (tx) => enqueueCallbacks(tx, [callback]));
    const committed = performance.now();
    const { at, text } = await answered;
    const tail = /"nextCursor":"([^"]+)"/.exec(text);
    if (!text.includes(idempotencyKey) || !tail) throw new Error(`the long-poll answered without the event: ${text.slice(0, 300)}`);
    cursor = tail[1] as string;
    latencies.push(Math.max(0, at - committed));
  }
  latencies.sort((a, b) => a - b);
  const p50 = percentile(latencies, 50) as number;
  const p99 = percentile(latencies, 99) as number;
  log(`long-poll after commit: p50 ${round(p50, 1)} ms, p99 ${round(p99, 1)} ms`);

  return {
    events: total,
    bareRowsPerSecond: Math.round(bareRate),
    streamEventsPerSecond: Math.round(streamRate),
    streamToBareRatio: round(ratio),
    bestToBestRatio: round(bestRatio),
    bareSeconds: seconds.bare.map((s) => round(s, 2)),
    streamSeconds: seconds.stream.map((s) => round(s, 2)),
    longPollRounds: polls,
    longPollP50Ms: round(p50, 1),
    longPollP99Ms: round(p99, 1),
    targets: TARGETS,
    pass: { ratio: ratio >= TARGETS.streamToBareRatio, longPollP99: p99 <= TARGETS.longPollP99Ms },
  };
}

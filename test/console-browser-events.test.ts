/**
 * The console's Events catalogue and the Deliveries page's recovery of the filtered failures, in Debian's
 * Chromium (playwright-core) against a real herald on the test PostgreSQL, delivering to a real HTTPS
 * receiver (docs/getting-started/console.md):
 *
 * - Events shows every event type the API lists (GET /blockchain-events/event-types), each sample as the
 *   API gives it, on the chain chosen; "Send this sample to my URL" round-trips through the API
 *   (POST .../send-sample): the receiver gets it signed with the secret typed and marked as a test, and the
 *   page shows the answer.
 * - Deliveries, filtered to the failed callbacks of one chain, recovers the whole filtered set (more than
 *   the page of 50 shown) after one confirmation whose count is the API's dry run; the job is followed
 *   until every one is delivered, and the callbacks of the inactive subscription are named and left.
 *
 * axe-core checks each page (no serious or critical violation); screenshots go to test-output/console-events/.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { destinationOf } from '../src/store/callbacks.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { checkAccessibility, chromiumBinary, DESKTOP, launchChromium, signIn } from './support/console-browser.ts';
import { ensureConsoleBuilt } from './support/console-build.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const OUT = join(ROOT, 'test-output/console-events');

let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;
let browser: Browser;
let page: Page;

async function visited(p: Page, name: string): Promise<void> {
  await p.locator('.loading').first().waitFor({ state: 'detached', timeout: 10_000 });
  await checkAccessibility(p, name);
  await p.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
}

/** Times of a sample (the block's, the mempool's): the page and a later API read were built a moment apart. */
function withoutTimes(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, v) => (key === 'timestamp' || key === 'firstSeenInMempoolTimestamp' ? 0 : v));
}

/** A subscription of the customer as stored, with `failed` callbacks as the last retry leaves them. */
async function withFailures(options: { blockchain: string; network: string; active: boolean; failed: number; path: string }): Promise<string> {
  const db = t.app.database.db;
  const url = `${receiver.url}${options.path}`;
  const target = randomUUID();
  const [row] = await db.query<{ id: string }>(
    'test:console-subscription',
    `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, target, callback_url, callback_host,
       allow_duplicates, duplicate_key, api_version, is_active)
     VALUES (gen_random_uuid(), $1, 'TRANSACTION_MINED', $2, $3, $4::text, $4::text, $5, 'localhost', true, sha256(convert_to($4::text, 'UTF8')), '2021-03-20', $6)
     RETURNING id`,
    [c.id, options.blockchain, options.network, target, url, options.active],
  );
  const id = row?.id as string;
  await db.query(
    'test:console-failed-callbacks',
    `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status, attempts, finished_at, next_attempt_at, created_at)
     SELECT gen_random_uuid(), $2, $1, 'TRANSACTION_MINED', $3 || g, json_build_object('idempotencyKey', $3 || g)::text, $4, $5, 'failed', 1, now(), now(), now() - g * interval '1 second'
     FROM generate_series(1, $6::int) g`,
    [id, c.id, `${options.path.slice(1)}-`, url, destinationOf(url), options.failed],
  );
  return id;
}

describeWithRealNode('the console: events catalogue and recovering the filtered failures, in Chromium', chromiumBinary, () => {
  beforeAll(async () => {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    const ca = await createTestCa();
    await ensureConsoleBuilt();
    receiver = await startReceiver({ ca });
    t = await startTestApp({
      delivery: { ...loadConfig({}, {}).delivery, allowNetworks: ['127.0.0.1/32', '::1/128'], caFile: writeCaFile(ca.caPem), pollIntervalMs: 20 },
    });
    c = await t.customer({ name: 'acme', domains: ['localhost'] });
    browser = await launchChromium();
    const context = await browser.newContext(DESKTOP);
    page = await context.newPage();
    await signIn(page, t.url, { apiKey: c.key });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await receiver?.close();
  });

  it('Events: every event type the API lists, its sample as the API gives it on the chain chosen, and a sample sent to my URL', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Events' }).click();
    await page.getByRole('heading', { level: 1, name: 'Events' }).waitFor();
    const api = await t.request('GET', '/blockchain-events/event-types', { key: c.key });
    const items = api.body.data.items as { event: string; sample: unknown }[];
    const rows = page.locator('ul.catalogue > li');
    await rows.nth(items.length - 1).waitFor();
    await expect(rows.locator('.raw').allTextContents()).resolves.toEqual(items.map((i) => i.event));
    expect(items.length).toBe(20);
    // A sample opened: exactly the API's body.
    const coins = rows.filter({ has: page.locator('.raw', { hasText: /^ADDRESS_COINS_TRANSACTION_CONFIRMED$/ }) });
    await coins.locator('summary').click();
    const shown = JSON.parse((await coins.locator('pre.payload').textContent()) as string);
    expect(withoutTimes(shown)).toEqual(withoutTimes(items.find((i) => i.event === 'ADDRESS_COINS_TRANSACTION_CONFIRMED')?.sample));
    expect(shown.data.isTest).toBe(true);
    // On tron: the internal-transfer event's sample is on tron (the URL keeps the choice).
    await page.getByLabel('Samples on').selectOption('tron');
    await page.waitForURL(/blockchain=tron/);
    const internal = rows.filter({ has: page.locator('.raw', { hasText: /^ADDRESS_INTERNAL_TRANSACTION_CONFIRMED$/ }) });
    await internal.locator('summary').click();
    await expect
      .poll(async () => JSON.parse((await internal.locator('pre.payload').textContent()) as string).data.item.blockchain, { timeout: 10_000 })
      .toBe('tron');

    // Send it: through the API, signed with the secret typed, marked as a test; the answer on the page.
    await page.getByLabel('Your callback URL').fill(`${receiver.url}/samples`);
    await page.getByLabel('Secret key (optional)').fill('console-secret');
    await internal.getByRole('button', { name: 'Send this sample to my URL' }).click();
    await internal.getByText(/^Delivered: HTTP 200/).waitFor({ timeout: 10_000 });
    const got = receiver.received.filter((r) => r.path === '/samples');
    expect(got).toHaveLength(1);
    const request = got[0] as (typeof got)[number];
    expect(request.headers['x-signature']).toBe(createHmac('sha256', 'console-secret').update(request.rawBody).digest('hex'));
    expect(request.headers['x-callback-test']).toBe('true');
    const body = JSON.parse(request.rawBody.toString('utf8'));
    expect(body.data).toMatchObject({ event: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED', isTest: true, item: { blockchain: 'tron' } });
    await visited(page, 'events');
    await internal.screenshot({ path: join(OUT, 'panel-events-sample.png') });

    // A URL on a domain not verified: the API's message, under the event's button.
    await page.getByLabel('Your callback URL').fill('https://not-verified.example/hook');
    await internal.getByRole('button', { name: 'Send this sample to my URL' }).click();
    await internal
      .getByRole('alert')
      .getByText(/not a verified callback domain/)
      .first()
      .waitFor({ timeout: 10_000 });
  }, 90_000);

  it('Events at 390 px in the dark theme: nothing wider than the screen outside a box that scrolls, axe clean', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'dark', locale: 'en-GB', timezoneId: 'Europe/Paris' });
    try {
      const p = await phone.newPage();
      await signIn(p, t.url, { apiKey: c.key });
      await p.goto(`${t.url}/console/events`);
      await p.getByRole('heading', { level: 1, name: 'Events', exact: true }).waitFor();
      const rows = p.locator('ul.catalogue > li');
      await rows.nth(19).waitFor();
      await rows
        .filter({ has: p.locator('.raw', { hasText: /^CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER$/ }) })
        .locator('summary')
        .click();
      const layout = await p.evaluate(() => ({
        scrollWidth: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth),
        width: document.documentElement.clientWidth,
        overflowing: [...document.querySelectorAll('main *')]
          .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !e.closest('.scroll, pre'))
          .slice(0, 3)
          .map((e) => `${e.tagName.toLowerCase()}.${e.className}`),
      }));
      expect(layout.overflowing, 'wider than the screen').toEqual([]);
      expect(layout.scrollWidth).toBeLessThanOrEqual(layout.width);
      await visited(p, '390-dark-events');
    } finally {
      await phone.close();
    }
  }, 60_000);

  it('Deliveries: recovers every failed callback matching the filters (beyond the page shown) after one confirmation with the count', async () => {
    await withFailures({ blockchain: 'ethereum', network: 'goerli', active: true, failed: 60, path: '/eth' });
    await withFailures({ blockchain: 'ethereum', network: 'goerli', active: false, failed: 2, path: '/paused' });
    await withFailures({ blockchain: 'bitcoin', network: 'testnet', active: true, failed: 3, path: '/btc' });
    await page.goto(`${t.url}/console/deliveries?status=failed&blockchain=ethereum`);
    await page.getByRole('heading', { level: 1, name: 'Deliveries' }).waitFor();
    await page.locator('ul.deliveries li.callback.failed').nth(49).waitFor({ timeout: 10_000 });
    await expect(page.locator('ul.deliveries li.callback').count()).resolves.toBe(50);
    await page.getByRole('button', { name: 'Recover every failed callback matching the filters' }).waitFor();
    await visited(page, 'deliveries-filtered-failures');
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'Recover every failed callback matching the filters' }).click();
    await page.getByText(/^Recovery done: 60 of 60 delivered/).waitFor({ timeout: 30_000 });
    expect(asked).toMatch(/^Recover 60 failed callbacks matching these filters\?/);
    expect(asked).toContain('2 more failed callbacks of 1 inactive subscription are left');
    await page
      .getByText(/2 more failed callbacks of 1 inactive subscription are left/)
      .first()
      .waitFor();
    await until('the 60 delivered', async () => receiver.received.filter((r) => r.path === '/eth').length === 60, 20_000);
    expect(receiver.received.filter((r) => r.path === '/btc' || r.path === '/paused')).toEqual([]);
    // What the API holds now: of the filtered failures, only the inactive subscription's are left.
    const left = await t.request('GET', '/blockchain-events/callbacks?status=failed&blockchain=ethereum&limit=50', { key: c.key });
    expect(left.body.data.total).toBe(2);
    await expect.poll(async () => page.locator('ul.deliveries li.callback').count(), { timeout: 15_000 }).toBe(2);
    await visited(page, 'deliveries-recovered');
  }, 90_000);
});

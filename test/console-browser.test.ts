/**
 * The web console in a real browser (Debian's Chromium driven by playwright-core) against a real herald
 * on the test PostgreSQL, following a real EVM node (EDR), delivering to a real HTTPS receiver, verifying
 * a domain through a test DNS server. The customer signs in, meets a validation error and then creates a
 * subscription through the form, sees the callback of a transaction in the log, sees failed attempts
 * when the receiver fails and resends from the console, verifies a domain, manages a wallet and reads
 * the usage; the operator signs in with a token from `herald operator-tokens create`, looks at
 * customers, chains and delivery, and revokes the customer's key: the customer's console signs out with
 * a clear message.
 *
 * The subscription's Recover and Replay panels: after a receiver outage, activate and recover from the
 * page (the job's progress live until every missed callback is delivered), then a dry run of the
 * outage's block (what a replay would send, with the keys first sent) and the replay itself.
 *
 * Every page visited is checked with axe-core (no serious or critical violation) and saved as a
 * screenshot under test-output/console/ (the two panels also on their own, panel-*.png).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Address } from 'viem';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { tripBreaker } from '../src/store/chain-holds.ts';
import { saveCursor } from '../src/store/chain-state.ts';
import { createOperatorToken } from '../src/store/operator-tokens.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { checkAccessibility, chromiumBinary, DESKTOP, launchChromium, signIn } from './support/console-browser.ts';
import { ensureConsoleBuilt } from './support/console-build.ts';
import { startTestDns, type TestDns } from './support/dns.ts';
import { sendEth } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const OUT = join(ROOT, 'test-output/console');
const FILE_PATH = '/.well-known/blockchain-events-verification.txt';

let node: EvmNode;
let receiver: Receiver;
let dns: TestDns;
let t: TestApp;
let c: TestCustomer;
let browser: Browser;
let customerContext: BrowserContext;
let page: Page;
let shots = 0;
let referenceId = '';
/** The two payments made while the receiver was down, and their block. */
let outage: string[] = [];
let outageHeight = 0;
let operatorContext: BrowserContext | undefined;
let op: Page;

const watched = () => node.accounts[5]?.address as Address;

/** Waits for the page's loads to finish, checks it with axe, and saves a screenshot. */
async function visited(p: Page, name: string): Promise<void> {
  await p.locator('.loading').first().waitFor({ state: 'detached', timeout: 10_000 });
  await checkAccessibility(p, name);
  await p.screenshot({ path: join(OUT, `${String(++shots).padStart(2, '0')}-${name}.png`), fullPage: true });
}

async function nav(p: Page, label: string): Promise<void> {
  await p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label }).click();
}

/** The block of the transaction processed by the follower. */
async function processed(height: number): Promise<void> {
  await until(
    `block ${height} processed`,
    async () => {
      const r = await t.request('GET', '/blockchain-events/status', { key: c.key });
      return r.body?.data?.items?.[0]?.processedHeight >= height;
    },
    15_000,
  );
}

describeWithRealNode('the web console in Chromium', chromiumBinary, () => {
  beforeAll(async () => {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    const ca = await createTestCa();
    await ensureConsoleBuilt();
    [node, receiver, dns] = await Promise.all([
      startEvmNode({ automine: true }),
      startReceiver({ ca, hostnames: ['localhost', 'verify.test'] }),
      startTestDns(),
    ]);
    for (const host of ['localhost', 'verify.test']) dns.set(host, { A: ['127.0.0.1'] });
    t = await startTestApp({
      chains: [{ blockchain: 'ethereum', network: 'goerli', rpcUrl: node.url, pollIntervalMs: 50, concurrency: 4, requestTimeoutMs: 5000 }],
      domainVerificationPort: receiver.port,
      delivery: {
        ...loadConfig({}, {}).delivery,
        allowNetworks: ['127.0.0.1/32', '::1/128'],
        caFile: writeCaFile(ca.caPem),
        dnsServers: [dns.address],
        pollIntervalMs: 20,
        // One retry a second later, then the callback has failed: the log shows it within the test.
        retryScheduleSeconds: [1],
        retryJitter: 0,
      },
    });
    c = await t.customer({ name: 'acme', domains: ['localhost'] });
    browser = await launchChromium();
    customerContext = await browser.newContext(DESKTOP);
    page = await customerContext.newPage();
    page.on('dialog', (dialog) => dialog.accept());
  }, 120_000);

  afterAll(async () => {
    await operatorContext?.close();
    await browser?.close();
    await t?.close();
    await receiver?.close();
    await dns?.close();
    await node?.close();
  });

  it('signs in with an API key (a wrong one is refused beside the field)', async () => {
    await page.goto(`${t.url}/console/`);
    await expect(page.title()).resolves.toContain('Sign in');
    await visited(page, 'sign-in');
    await page.getByLabel('API key').fill('not-a-key');
    await page.getByRole('button', { name: 'Sign in with the API key' }).click();
    await expect(page.locator('#api-key-error').textContent({ timeout: 5000 })).resolves.toContain('unknown or has been revoked');
    await expect(page.getByLabel('API key').getAttribute('aria-invalid')).resolves.toBe('true');
    // With the keyboard only: type the key, Enter submits.
    await page.getByLabel('API key').fill('');
    await page.getByLabel('API key').focus();
    await page.keyboard.type(c.key);
    await page.keyboard.press('Enter');
    // The landing page: the overview, with the first-run checklist (the domain is verified already, the rest to do).
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    // The new page's heading has the focus; the first focusable element is the skip link, whose Enter leads to the content.
    await expect(page.evaluate(() => document.activeElement?.tagName)).resolves.toBe('H1');
    await expect(page.evaluate(() => document.querySelector('a[href], button, input, select, [tabindex="0"]')?.textContent)).resolves.toBe('Skip to content');
    await page.locator('a.skip').focus();
    await page.keyboard.press('Enter');
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('main');
    expect(new URL(page.url()).pathname).toBe('/console/overview');
    const steps = page.getByRole('region', { name: 'Get started' }).locator('li');
    await steps.nth(2).waitFor();
    await expect(steps.allTextContents()).resolves.toEqual([
      expect.stringMatching(/^Done Verify a callback domain/),
      expect.stringMatching(/^To do Create a subscription/),
      expect.stringMatching(/^To do Send a test callback/),
    ]);
    await page.getByText('Nothing needs attention.').waitFor();
    await page.getByRole('cell', { name: 'ethereum / goerli' }).waitFor();
    await visited(page, 'overview-first-run');
    await nav(page, 'Subscriptions');
    await page.getByRole('heading', { level: 1, name: 'Subscriptions' }).waitFor();
    await expect(page.locator('.empty').textContent()).resolves.toContain('No subscriptions yet');
    await visited(page, 'subscriptions-empty');
  }, 60_000);

  it('creates a subscription through the form: the API message beside the field first, then the subscription', async () => {
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.getByRole('heading', { level: 1, name: 'New subscription' }).waitFor();
    await page.getByLabel('Event type').selectOption('ADDRESS_COINS_TRANSACTION_CONFIRMED');
    await page.getByLabel('Blockchain').selectOption('ethereum');
    await page.getByLabel('Network').selectOption('goerli');
    await page.getByLabel('Address', { exact: true }).fill('0x1234');
    await page.getByLabel('Callback URL').fill(`${receiver.url}/hooks/console`);
    await page.getByLabel('Callback on confirmation (optional)').fill('1');
    await page.getByRole('button', { name: 'Create the subscription' }).click();
    const addressError = page.locator('#field-address-error');
    await addressError.waitFor();
    expect(await addressError.textContent()).toMatch(/address/i);
    await expect(page.getByLabel('Address', { exact: true }).getAttribute('aria-invalid')).resolves.toBe('true');
    // Focus moved to the field to fix.
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('field-address');
    await visited(page, 'create-validation-error');

    await page.getByLabel('Address', { exact: true }).fill(watched());
    await page.getByRole('button', { name: 'Create the subscription' }).click();
    await page.waitForURL(/\/console\/subscriptions\/[0-9a-f-]{36}\?created=1$/);
    await page.getByRole('heading', { level: 1, name: 'Subscription', exact: true }).waitFor();
    referenceId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop() as string);
    expect(referenceId).toMatch(/^[0-9a-f-]{36}$/);
    await page.getByText('The subscription is created.').waitFor();
    await page.locator('.empty', { hasText: 'No callbacks yet' }).waitFor();
    await visited(page, 'subscription-created');
  }, 60_000);

  it('shows the callback of a transaction in the log, with the attempt and the payload as sent', async () => {
    const tx = await sendEth(node, watched(), 1234n, { from: 1 });
    await processed(Number(tx.receipt?.blockNumber ?? 0));
    const delivered = page.locator('li.callback.delivered');
    await delivered.first().waitFor({ timeout: 20_000 });
    // Opened from the keyboard: a callback is a <details> whose summary takes Enter.
    await delivered.first().locator('summary').focus();
    await page.keyboard.press('Enter');
    const payload = delivered.first().locator('pre.payload');
    await payload.waitFor();
    expect(await payload.textContent()).toContain(tx.hash);
    const attempt = delivered.first().locator('tbody tr').first();
    expect(await attempt.locator('td').nth(1).textContent()).toBe('200');
    // Times in the browser's zone, the UTC value on hover.
    expect(await attempt.locator('time').getAttribute('title')).toMatch(/^UTC: \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
    await visited(page, 'callback-log');
  }, 60_000);

  it('shows failed attempts when the receiver fails, and resends the callback from the console once it is back', async () => {
    receiver.setDefault({ kind: 'status', status: 503, body: 'receiver under maintenance' });
    const tx = await sendEth(node, watched(), 5678n, { from: 1 });
    await processed(Number(tx.receipt?.blockNumber ?? 0));
    const failed = page.locator('li.callback.failed');
    await failed.first().waitFor({ timeout: 30_000 });
    await failed.first().locator('summary').click();
    const rows = failed.first().locator('tbody tr');
    await rows.nth(1).waitFor();
    await expect(rows.count()).resolves.toBe(2);
    for (const i of [0, 1]) {
      expect(await rows.nth(i).locator('td').nth(1).textContent()).toBe('503');
      await rows.nth(i).locator('pre.excerpt').waitFor();
      expect(await rows.nth(i).locator('pre.excerpt').textContent()).toBe('receiver under maintenance');
    }
    await visited(page, 'callback-failed');

    // Retries exhausted: herald deactivated the subscription (the page shows it), so it is activated
    // again once the receiver is back, then the failed callback is resent.
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor({ timeout: 10_000 });
    expect(await page.locator('dl.facts').first().textContent()).toContain('inactive');
    // The overview shows the failure within 10 s: counted, and the subscription under "Needs attention".
    await nav(page, 'Overview');
    await expect.poll(async () => Number(await page.getByTestId('failed-24h').textContent()), { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    const attention = page.getByRole('region', { name: /^Needs attention/ });
    const failingItem = attention.locator('li', { has: page.locator(`[title="${referenceId}"]`) });
    await failingItem.waitFor({ timeout: 10_000 });
    expect(await failingItem.textContent()).toContain('deactivated by herald');
    await visited(page, 'overview-failing');
    // And in Deliveries, filtered to the failed ones, its attempts one Enter away.
    await nav(page, 'Deliveries');
    await page.getByRole('heading', { level: 1, name: 'Deliveries' }).waitFor();
    await page.getByLabel('Status').selectOption('failed');
    await page.waitForURL(/status=failed/);
    const failedRow = page.locator('ul.deliveries li.callback.failed').first();
    await failedRow.waitFor({ timeout: 10_000 });
    await failedRow.locator(`summary [title="${referenceId}"]`).waitFor();
    await failedRow.locator('summary').focus();
    await page.keyboard.press('Enter');
    await failedRow.locator('tbody tr').first().waitFor();
    expect(await failedRow.locator('tbody tr').first().locator('td').nth(1).textContent()).toBe('503');
    await page.getByRole('button', { name: /^Resend the \d+ failed callbacks? shown$/ }).waitFor();
    await visited(page, 'deliveries-failed');
    await nav(page, 'Overview');
    await failingItem.getByRole('link').click();
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor();
    await failed.first().locator('summary').click();
    await failed.first().getByRole('button', { name: 'Resend this callback' }).waitFor();
    receiver.setDefault({ kind: 'status', status: 200 });
    await page.getByRole('button', { name: 'Activate', exact: true }).click();
    await page.getByText('The subscription is active again.').waitFor();
    const before = receiver.received.length;
    await failed.first().getByRole('button', { name: 'Resend this callback' }).click();
    await page.getByText(/Queued again/).waitFor();
    await page.locator('li.callback.delivered').nth(1).waitFor({ timeout: 20_000 });
    await expect(page.locator('li.callback.failed').count()).resolves.toBe(0);
    const resent = receiver.received.slice(before).map((r) => JSON.parse(r.rawBody.toString('utf8')));
    expect(resent.some((b) => b.data.item.transactionId === tx.hash)).toBe(true);
  }, 90_000);

  it('recovers the callbacks missed while the receiver was down: activate and recover from the Recover panel, the job followed live until done', async () => {
    // The start of the outage, as the customer would type it: local time (Europe/Paris here), to the second.
    const since = await page.evaluate(() => {
      const d = new Date(Date.now() - 2000);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    });
    receiver.setDefault({ kind: 'status', status: 503, body: 'down for the night' });
    // Two payments in one block: their callbacks fail together, and herald deactivates the subscription.
    await node.setAutomine(false);
    outage = [(await sendEth(node, watched(), 9001n, { from: 2, wait: false })).hash, (await sendEth(node, watched(), 9002n, { from: 3, wait: false })).hash];
    outageHeight = await node.mine(1);
    await node.setAutomine(true);
    await processed(outageHeight);
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor({ timeout: 30_000 });
    const list = await t.request('GET', `/blockchain-events/subscriptions/${referenceId}/callbacks?limit=50`, { key: c.key });
    const failedNow = list.body.data.items.filter((x: { status: string }) => x.status === 'failed').length;
    expect(failedNow, 'the receiver being down failed at least one callback').toBeGreaterThanOrEqual(1);

    receiver.setDefault({ kind: 'status', status: 200 });
    const recover = page.getByRole('region', { name: 'Recover failed callbacks' });
    await recover.getByText('The subscription is inactive: recovering activates it too').waitFor();
    // Without a start, nothing is sent: the message is beside the field, which has the focus.
    await recover.getByRole('button', { name: 'Activate and recover' }).click();
    await expect(recover.locator('#recover-since-error').textContent()).resolves.toContain('Give the date and time');
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('recover-since');
    const before = receiver.received.length;
    await recover.getByLabel('Since').fill(since);
    await recover.getByRole('button', { name: 'Activate and recover' }).click();
    // Live progress: the job's sentence (a polite live region) until every callback found is delivered.
    const state = recover.locator('.job-state');
    await expect(state.getAttribute('aria-live')).resolves.toBe('polite');
    // (Which of the two failed and which waited, held by the deactivation, depends on the delivery worker's timing.)
    const done = recover.getByText(/^Recovery done: (\d+) of \1 delivered, 0 failed again\.$/);
    await done.waitFor({ timeout: 30_000 });
    const found = Number((await done.textContent())?.match(/(\d+) of/)?.[1]);
    expect(found).toBeGreaterThanOrEqual(failedNow);
    const bar = recover.locator('progress');
    await expect(bar.getAttribute('value')).resolves.toBe(String(found));
    await expect(bar.getAttribute('max')).resolves.toBe(String(found));
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor({ state: 'detached' });
    // Both payments reach the receiver: the failed ones through the recovery, any still held by the deactivation on their own.
    await until(
      'both missed callbacks at the receiver',
      async () => {
        const got = receiver.received.slice(before).map((r) => JSON.parse(r.rawBody.toString('utf8')).data.item.transactionId);
        return outage.every((h) => got.includes(h));
      },
      20_000,
    );
    await visited(page, 'recover');
    await recover.screenshot({ path: join(OUT, 'panel-recover.png') });

    // Now active: the full form. The API's message for a window that ends before it starts is beside Until.
    await recover.getByLabel('Until (optional)').fill(`${since.slice(0, 11)}00:00:00`);
    await recover.getByRole('button', { name: 'Recover', exact: true }).click();
    await expect(recover.locator('#recover-until-error').textContent()).resolves.toContain('until must be later than since');
    await expect(recover.getByLabel('Until (optional)').getAttribute('aria-invalid')).resolves.toBe('true');
    // The same window again: nothing failed is left in it.
    await recover.getByLabel('Until (optional)').fill('');
    await recover.getByRole('button', { name: 'Recover', exact: true }).click();
    await recover.getByText('Recovery done: no failed callback was created in this window, nothing to queue.').waitFor({ timeout: 15_000 });
  }, 90_000);

  it('replays a block range: the dry run lists what would be sent, then the replay sends it again with its progress shown', async () => {
    const replay = page.getByRole('region', { name: 'Replay a block range' });
    await replay.getByText(/herald has processed ethereum goerli up to block \d+\./).waitFor();
    // A range that ends before it starts: the API's message beside To block.
    await replay.getByLabel('From block').fill(String(outageHeight));
    await replay.getByLabel('To block').fill(String(outageHeight - 1));
    await replay.getByRole('button', { name: 'Dry run' }).click();
    await expect(replay.locator('#replay-to-error').textContent()).resolves.toContain('toBlockHeight must be at least fromBlockHeight');

    // The dry run: the two payments of the outage block, with the keys they were sent with.
    await replay.getByLabel('To block').fill(String(outageHeight));
    await replay.getByLabel('To block').press('Enter');
    const rows = replay.locator('table.dry-run tbody tr');
    await rows.first().waitFor();
    await expect(rows.count()).resolves.toBe(2);
    const sent = receiver.received
      .filter((r) => r.method === 'POST')
      .map((r) => JSON.parse(r.rawBody.toString('utf8')))
      .filter((b) => outage.includes(b.data?.item?.transactionId));
    const keyOf = new Map(sent.map((b) => [b.data.item.transactionId as string, b.idempotencyKey as string]));
    const listed = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 4).map((td) => td.textContent)));
    expect(listed.map(([event, block, tx, key]) => ({ event, block, tx, key })).sort((a, b) => String(a.tx).localeCompare(String(b.tx)))).toEqual(
      [...outage].sort().map((tx) => ({ event: 'ADDRESS_COINS_TRANSACTION_CONFIRMED', block: String(outageHeight), tx, key: keyOf.get(tx) })),
    );
    await replay.getByText('A replay of blocks', { exact: false }).waitFor();
    expect(await replay.getByText('would send 2 callbacks, for 10 credits').count()).toBe(1);
    await visited(page, 'replay-dry-run');

    // The replay: the job's progress until done, and both callbacks at the receiver again under the same keys.
    const before = receiver.received.length;
    await replay.getByRole('button', { name: 'Replay', exact: true }).click();
    await replay.getByText('Replay done: 1 block evaluated, 2 callbacks queued (their deliveries appear in the callback log).').waitFor({ timeout: 30_000 });
    await expect(replay.locator('progress').getAttribute('value')).resolves.toBe('1');
    await until('the replayed callbacks at the receiver', async () => receiver.received.length >= before + 2, 20_000);
    const again = receiver.received.slice(before).map((r) => JSON.parse(r.rawBody.toString('utf8')));
    expect(again.map((b) => b.idempotencyKey).sort()).toEqual([...keyOf.values()].sort());
    await visited(page, 'replay');
    await replay.screenshot({ path: join(OUT, 'panel-replay.png') });
  }, 90_000);

  it('sends a test callback and shows the answer; the list is dense (status badges, short ids, one or two lines a row at 1280 px) and filters as you type', async () => {
    await page.getByRole('button', { name: 'Send a test callback' }).click();
    await page.getByText(/Test callback delivered: HTTP 200/).waitFor();

    // More subscriptions with long values (a 66-character transaction id, a token contract) on other chains too.
    const url = `${receiver.url}/hooks/quiet`;
    const more: [string, Record<string, unknown>][] = [
      ['ethereum/goerli/subscriptions/transaction-mined', { transactionId: `0x${'ab'.repeat(32)}`, callbackUrl: url }],
      [
        'ethereum/goerli/subscriptions/tokens-transfers-for-specific-amount',
        { contractAddress: `0x${'cd'.repeat(20)}`, amountHigherThan: 1000, callbackUrl: url },
      ],
      [
        'ethereum/sepolia/subscriptions/address-internal-transactions-confirmed-each-confirmation',
        { address: `0x${'ef'.repeat(20)}`, callbackUrl: url, callbackSecretKey: 'k', allowDuplicates: false },
      ],
      ['bitcoin/testnet/subscriptions/block-height-reached', { blockHeightReached: 10_000_000, callbackUrl: url }],
    ];
    for (const [path, item] of more) {
      const r = await t.request('POST', `/blockchain-events/${path}`, { key: c.key, body: { data: { item } } });
      expect(r.status, r.text).toBeLessThan(300);
    }

    await nav(page, 'Subscriptions');
    await page.getByRole('heading', { level: 1, name: 'Subscriptions' }).waitFor();
    const rows = page.locator('tbody tr');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1 + more.length);
    // The payments' subscription delivered recently; the new ones have had nothing yet.
    const main = rows.filter({ has: page.locator(`[title="${referenceId}"]`) });
    expect(await main.locator('.badge').textContent()).toBe('Delivering');
    expect(await rows.locator('.badge', { hasText: 'Idle' }).count()).toBe(more.length);
    // Human event names, the raw name secondary; ids shortened with the full value on hover and a copy button.
    expect(await main.locator('td.event').textContent()).toBe('Coins to or from an address, confirmedADDRESS_COINS_TRANSACTION_CONFIRMED');
    expect(await main.locator('.short-id a').textContent()).toBe(`${referenceId.slice(0, 6)}…${referenceId.slice(-6)}`);
    await main.getByRole('button', { name: `Copy the subscription ${referenceId}` }).waitFor();
    // No row taller than two lines, nothing clipped on the right.
    const measured = await rows.evaluateAll((trs) =>
      trs.map((tr) => {
        const cs = getComputedStyle(tr.querySelector('td') as HTMLElement);
        const twoLines = 2 * Number.parseFloat(cs.lineHeight) + Number.parseFloat(cs.paddingTop) + Number.parseFloat(cs.paddingBottom) + 2;
        return { height: tr.getBoundingClientRect().height, twoLines, text: tr.textContent };
      }),
    );
    for (const m of measured) expect(m.height, `row "${m.text}" is taller than two lines`).toBeLessThanOrEqual(m.twoLines);
    const scroller = page.locator('.scroll').first();
    const widths = await scroller.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
    expect(widths.scroll, 'the table fits its box (no column clipped)').toBeLessThanOrEqual(widths.client);

    // Filters apply as you type (no button).
    await page.getByLabel('Search').fill(watched().toLowerCase());
    await page.waitForURL(/q=0x/);
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1);
    expect(await rows.first().locator('.short-id').first().getAttribute('title')).toBe(referenceId);
    await page.getByLabel('Search').fill('0xdeadbeef');
    await page.getByText('No subscription matches these filters.').waitFor();
    await page.getByLabel('Search').fill('');
    await page.getByLabel('Blockchain').selectOption('bitcoin');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1);
    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1 + more.length);
    await visited(page, 'subscriptions');

    // The test callback delivered, the first-run checklist is done: the overview no longer shows it.
    await nav(page, 'Overview');
    await page.getByRole('heading', { level: 2, name: 'Callbacks in the last 24 h' }).waitFor();
    await expect(page.getByRole('region', { name: 'Get started' }).count()).resolves.toBe(0);
    expect(Number(await page.getByTestId('delivered-24h').textContent())).toBeGreaterThanOrEqual(3);
    await visited(page, 'overview');
  }, 60_000);

  it('edits a subscription: pause and resume, reveal and rotate its secret, each round-tripping through the API', async () => {
    const read = async () => (await t.request('GET', `/blockchain-events/subscriptions/${referenceId}`, { key: c.key })).body.data.item;
    await page.goto(`${t.url}/console/subscriptions/${referenceId}`);
    await page.getByRole('heading', { level: 1, name: 'Subscription', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByText('The subscription is paused').waitFor();
    expect(await read()).toMatchObject({ isActive: false });
    expect((await read()).deactivationReasons.at(-1).reason).toBe('paused');
    await page.locator('dl.facts .badge', { hasText: 'Paused' }).waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Activate', exact: true }).click();
    await page.getByText('The subscription is active again.').waitFor();
    expect((await read()).isActive).toBe(true);
    await page.getByRole('button', { name: 'Pause' }).waitFor();

    // The callback URL: an unverified host is refused beside the field, then a new path on the verified one.
    const urlPanel = page.getByRole('region', { name: 'Callback URL' });
    await urlPanel.getByLabel('Callback URL').fill('https://elsewhere.test/hooks');
    await urlPanel.getByRole('button', { name: 'Change the callback URL' }).click();
    await expect(urlPanel.locator('#url-new-error').textContent()).resolves.toContain('not a verified callback domain');
    await urlPanel.getByLabel('Callback URL').fill(`${receiver.url}/hooks/console-moved`);
    await urlPanel.getByRole('button', { name: 'Change the callback URL' }).click();
    await urlPanel.getByText('The callback URL is changed').waitFor();
    expect((await read()).callbackUrl).toBe(`${receiver.url}/hooks/console-moved`);

    const secret = page.getByRole('region', { name: 'Callback secret' });
    await expect(secret.getByLabel('New secret').inputValue()).resolves.toMatch(/^[0-9a-f]{64}$/);
    await secret.getByLabel('New secret').fill('console-rotated-secret-1');
    await secret.getByRole('button', { name: 'Rotate the secret' }).click();
    await secret.getByText('The secret is rotated.').waitFor();
    expect((await read()).callbackSecretKey).toBe('console-rotated-secret-1');
    await secret.getByRole('button', { name: 'Reveal' }).click();
    await expect(secret.getByTestId('secret').textContent()).resolves.toBe('console-rotated-secret-1');
    await visited(page, 'subscription-edit');
    await secret.getByRole('button', { name: 'Hide' }).click();
    expect(await secret.getByTestId('secret').textContent()).not.toContain('console-rotated');
  }, 60_000);

  it('registers and verifies a callback domain: the instructions, what a failed check found, then verified', async () => {
    await nav(page, 'Callback domains');
    await page.getByRole('heading', { level: 1, name: 'Callback domains' }).waitFor();
    await page.getByLabel('Domain', { exact: true }).fill('verify.test');
    await page.getByRole('button', { name: 'Add the domain' }).click();
    const card = page.locator('li.card', { has: page.getByRole('heading', { name: 'verify.test' }) });
    await card.getByText('Not verified yet.').waitFor();
    expect(await card.locator('code').first().textContent()).toBe(`https://verify.test${FILE_PATH}`);
    expect(await card.locator('code').nth(2).textContent()).toBe('_blockchain-events.verify.test');
    await card.getByRole('button', { name: 'Verify verify.test' }).click();
    const found = card.locator('.notice.warn');
    await found.waitFor();
    expect(await found.textContent()).toMatch(/File:.*DNS TXT:/s);
    await visited(page, 'domain-unverified');

    const token = (await card.locator('code').nth(1).textContent()) as string;
    receiver.byPath(FILE_PATH, { kind: 'status', status: 200, body: `${token}\n` });
    await card.getByRole('button', { name: 'Verify verify.test' }).click();
    await page.getByText('verify.test is verified.').waitFor();
    await card.getByText('Verified', { exact: true }).waitFor();
    await visited(page, 'domains');
  }, 60_000);

  it('creates a wallet, watches an address and lists its assets', async () => {
    await nav(page, 'Wallets');
    await page.getByText('No wallets yet').waitFor();
    await page.getByLabel('New wallet name').fill('treasury');
    await page.getByRole('button', { name: 'Create the wallet' }).click();
    const card = page.locator('li.card', { has: page.getByRole('heading', { name: /treasury/ }) });
    await card.getByText('No addresses watched in this wallet yet.').waitFor();
    await card.getByLabel('Blockchain').selectOption('ethereum');
    await card.getByLabel('Network').selectOption('goerli');
    await card.getByLabel('Address to watch').fill(watched());
    await card.getByRole('button', { name: 'Watch the address' }).click();
    await card.getByRole('cell', { name: watched(), exact: true }).first().waitFor();
    await visited(page, 'wallets');
  }, 60_000);

  it('shows the credits and the credits spent per endpoint and day', async () => {
    await nav(page, 'Credits and usage');
    await page.getByText('Credits available').waitFor();
    // The plan in words, not its field names.
    await page.locator('dl.facts dt', { hasText: 'Mainnets' }).waitFor();
    expect(await page.locator('main').textContent()).not.toContain('mainnetAllowed');
    await page.locator('figure.chart canvas').waitFor();
    await visited(page, 'credits-and-usage');
  }, 60_000);

  it('sets a default confirmation policy of a chain (tiers, then finality) and removes it', async () => {
    await nav(page, 'Credits and usage');
    await page.getByText('No policy: subscriptions default to receiveCallbackOn 3.').waitFor();
    await page.getByLabel('Blockchain').selectOption('ethereum');
    await page.getByLabel('Network').selectOption('sepolia');
    await page.getByRole('button', { name: 'Set the policy of ethereum sepolia' }).click();
    await page.getByRole('cell', { name: 'up to 1: 1 · up to 10: 3 · above: 6' }).waitFor();
    await page.getByLabel('Policy', { exact: true }).selectOption('finality');
    await page.getByRole('button', { name: 'Set the policy of ethereum sepolia' }).click();
    await page.getByRole('cell', { name: 'When the block is final' }).waitFor();
    await page.getByRole('button', { name: 'Remove the policy of ethereum sepolia' }).click();
    await page.getByText('No policy: subscriptions default to receiveCallbackOn 3.').waitFor();
  }, 60_000);

  it('operator: signs in with a token from herald operator-tokens create, adds credits, and revokes the key; the customer console signs out with a clear message', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, 'bin/herald.js'), 'operator-tokens', 'create', '--name', 'ops'], {
      env: { ...process.env, DATABASE_URL: t.config.databaseUrl },
    });
    const registered = await t.request('POST', '/blockchain-events/callback-domains', { key: c.key, body: { data: { item: { domain: 'pending.test' } } } });
    expect(registered.status).toBe(201);
    operatorContext = await browser.newContext(DESKTOP);
    op = await operatorContext.newPage();
    op.on('dialog', (dialog) => dialog.accept());
    // The operator lands on the overview (test/console-operator-browser.test.ts checks it).
    await signIn(op, t.url, { operatorToken: stdout.trim() });
    await nav(op, 'Customers');
    await op.getByRole('heading', { level: 1, name: 'Customers' }).waitFor();
    await op.getByRole('cell', { name: 'acme' }).waitFor();
    await visited(op, 'operator-customers');

    await op.getByRole('link', { name: 'acme' }).click();
    await op.getByRole('heading', { level: 1, name: 'Customer acme' }).waitFor();
    const credits = Number(await op.locator('dd.big').textContent());
    await op.getByLabel('Credits to add').fill('250');
    await op.getByRole('button', { name: 'Add credits' }).click();
    await op.getByText(`Credits added: the balance is now ${credits + 250}.`).waitFor();
    // A new key, shown once.
    await op.getByRole('button', { name: 'Create a key' }).click();
    expect(await op.getByTestId('new-api-key').textContent()).toMatch(/^hk_/);
    // A domain the customer registered, marked verified by the operator.
    await op.getByRole('button', { name: 'Mark pending.test verified' }).click();
    await op.getByText('pending.test is marked verified.').waitFor();
    const domains = (await t.request('GET', '/blockchain-events/callback-domains', { key: c.key })).body.data.items;
    expect(domains).toContainEqual(expect.objectContaining({ domain: 'pending.test', isVerified: true }));
    await visited(op, 'operator-customer');
    // The customer's first key (the console's) is revoked, behind a typed confirmation (its id); the new one stays.
    const firstKey = (await op.locator('tbody tr td.mono').first().textContent()) as string;
    await op.locator('summary', { hasText: new RegExp(`^Revoke key ${firstKey}…$`) }).click();
    await op.getByLabel(`Type ${firstKey} to confirm`, { exact: true }).fill(firstKey);
    await op.getByRole('button', { name: `Revoke key ${firstKey}`, exact: true }).click();
    await op.getByText(/is revoked\./).waitFor();

    // The customer's console makes its next request with the revoked key, is refused, signs out and says
    // why. The credits page would refresh itself within 10 s; moving to another page asks at once, so the
    // test does not wait for the timer.
    await nav(page, 'Subscriptions');
    await page.getByRole('heading', { level: 1, name: 'Sign in to herald' }).waitFor({ timeout: 20_000 });
    expect(await page.getByRole('alert').first().textContent()).toContain('You have been signed out: the API key was not accepted');
    await expect(page.evaluate(() => sessionStorage.length)).resolves.toBe(0);
    await visited(page, 'signed-out');
  }, 90_000);

  it('operator: chains (state, lag chart, nodes) and delivery (due, attempts per minute, slowest destinations)', async () => {
    await nav(op, 'Chains');
    const chain = op.locator('li.card', { has: op.getByRole('heading', { name: /ethereum \/ goerli/ }) });
    await chain.waitFor();
    await chain.getByRole('cell', { name: node.url }).waitFor();
    await chain.locator('figure.chart canvas').waitFor({ timeout: 90_000 });
    // Reset is a destructive action behind a typed confirmation: the button stays disabled until the chain's name is typed.
    await chain.locator('summary', { hasText: 'Reset ethereum / goerli' }).click();
    const resetButton = chain.getByRole('button', { name: 'Reset ethereum / goerli' });
    await expect(resetButton.isDisabled()).resolves.toBe(true);
    await chain.getByLabel('Type ethereum/goerli to confirm').fill('ethereum');
    await expect(resetButton.isDisabled()).resolves.toBe(true);
    await chain.getByLabel('Type ethereum/goerli to confirm').fill('ethereum/goerli');
    await expect(resetButton.isEnabled()).resolves.toBe(true);
    await visited(op, 'operator-chains');
    await chain.getByLabel('Type ethereum/goerli to confirm').fill('');
    await nav(op, 'Delivery');
    await op.getByText('Callbacks due').waitFor();
    await op.locator('figure.chart canvas').waitFor();
    await op.getByRole('cell', { name: 'localhost' }).first().waitFor();
    await visited(op, 'operator-delivery');
  }, 120_000);

  it('operator: a chain held by the deep-reorganisation breaker shows its depth and blocks; Release lets it go (as herald chains release)', async () => {
    const dash = { blockchain: 'dash', network: 'testnet' } as const;
    await t.app.database.db.transaction('test:hold', async (tx) => {
      await saveCursor(tx, dash, { height: 40, hash: 'h40', timestamp: Math.floor(Date.now() / 1000) }, 40);
      const blocks = [37, 38, 39, 40].map((height) => ({ height, orphanedHash: `orphaned-${height}`, newHash: `new-${height}` }));
      const trip = { at: new Date().toISOString(), reason: 'reorganisation' as const, depth: 4, ancestorHeight: 36, ancestorHash: 'h36', blocks, detail: null };
      await tripBreaker(tx, dash, trip, 3);
    });
    await nav(op, 'Delivery');
    await nav(op, 'Chains');
    const chain = op.locator('li.card', { has: op.getByRole('heading', { name: /dash \/ testnet/ }) });
    const hold = chain.getByRole('region', { name: 'Held by the deep-reorganisation breaker' });
    await hold.waitFor();
    expect(await hold.textContent()).toContain('a reorganisation of 4 blocks (more than reorgBreakerDepth 3)');
    await hold.getByRole('cell', { name: 'orphaned-38' }).waitFor();
    await hold.getByRole('cell', { name: 'new-38' }).waitFor();
    await visited(op, 'operator-chain-held');
    // Release is behind a typed confirmation too.
    await hold.getByLabel('Type dash/testnet to confirm').fill('dash/testnet');
    await hold.getByRole('button', { name: 'Release dash / testnet' }).click();
    await op.getByText('dash / testnet is released: 0 held callbacks are being sent.').waitFor();
    await until('the hold gone', async () => (await t.app.database.db.query('test:holds', 'SELECT 1 FROM chain_holds')).length === 0);
  }, 60_000);

  it('billing off (docs/operations/single-tenant.md): no credits, prices or credit form, for the customer or the operator', async () => {
    const free = await startTestApp({ billing: { enabled: false } });
    const context = await browser.newContext(DESKTOP);
    /** Waits until `text` no longer mentions credits (the console reads the setting after its first render); fails if it still does after 10 s. */
    const creditless = (what: string, text: () => Promise<string | null>) =>
      until(`${what} without credits`, async () => !/credit/i.test((await text()) ?? ''));
    try {
      const customer = await free.customer({ name: 'solo' });
      const created = await free.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/block-mined', {
        key: customer.key,
        body: { data: { item: { callbackUrl: 'https://hooks.example.com/blocks' } } },
      });
      expect(created.status, created.text).toBe(200);
      const p = await context.newPage();
      await signIn(p, free.url, { apiKey: customer.key });
      await creditless('the overview', () => p.locator('main').textContent());
      // The account page is named for what it shows: no balance, no usage.
      await p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account', exact: true }).waitFor();
      await p.goto(`${free.url}/console/subscriptions/${created.body.data.item.referenceId}`);
      await p.getByRole('heading', { level: 1, name: 'Subscription', exact: true }).waitFor();
      for (const name of ['Recover failed callbacks', 'Replay a block range']) {
        const panel = p.getByRole('region', { name });
        await panel.waitFor();
        await creditless(name, () => panel.textContent());
      }
      await visited(p, 'billing-off-subscription');

      // The operator, in a tab of its own (a fresh console, which reads the setting from GET /operator/whoami).
      const made = await createOperatorToken(free.app.database.db, 'solo-ops');
      const o = await context.newPage();
      await signIn(o, free.url, { operatorToken: made?.token as string });
      await creditless('the operator overview', () => o.locator('main').textContent());
      await nav(o, 'Customers');
      await o.getByRole('cell', { name: 'solo' }).waitFor();
      await creditless('the customers', () => o.locator('main').textContent());
      expect(await o.getByRole('columnheader').allTextContents()).toEqual(['Name', 'Plan', 'Active subscriptions', 'Keys']);
      await o.getByRole('link', { name: 'solo' }).click();
      await o.getByRole('heading', { name: 'API keys' }).waitFor();
      await creditless('the customer', () => o.locator('main').textContent());
      await expect(o.getByRole('button', { name: 'Add credits' }).count()).resolves.toBe(0);
      await visited(o, 'billing-off-operator-customer');
    } finally {
      await context.close();
      await free.close();
    }
  }, 60_000);
});

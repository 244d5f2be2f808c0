/**
 * The console's operator pages and its look, in a real browser (Debian's Chromium through playwright-core)
 * against a real herald on the test PostgreSQL following an EVM node (EDR) and delivering to an HTTPS
 * receiver that starts answering 503 (docs/getting-started/console.md):
 * - the operator's Overview (delivery, due, failed callbacks of 24 h, chains with lag and a held one,
 *   a chain customers subscribe to that no node follows), refreshing itself with "Updated N s ago" and
 *   paused while the tab is hidden; the failing receiver shows up there and in Failed callbacks;
 * - creating a customer and changing its plan from the console, each checked through the API; revoking a
 *   key and releasing a held chain behind a typed confirmation;
 * - light and dark themes (prefers-color-scheme, and the toggle remembered in localStorage), axe-core
 *   clean (no serious or critical violation) in both;
 * - every page at 390 px wide: the page body never scrolls sideways; wide tables scroll in their box.
 * Screenshots under test-output/console-operator/ (the docs' screenshots are taken from there).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Address } from 'viem';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { tripBreaker } from '../src/store/chain-holds.ts';
import { saveCursor } from '../src/store/chain-state.ts';
import { createOperatorToken } from '../src/store/operator-tokens.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { checkAccessibility, chromiumBinary, DESKTOP, launchChromium, signIn } from './support/console-browser.ts';
import { ensureConsoleBuilt } from './support/console-build.ts';
import { sendEth } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { ethereumSubscription } from './support/subscription-rows.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const OUT = join(ROOT, 'test-output/console-operator');

let node: EvmNode;
let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;
let browser: Browser;
let context: BrowserContext;
let op: Page;
let token = '';
let referenceId = '';

async function setTheme(p: Page, theme: 'light' | 'dark'): Promise<void> {
  const toggle = p.getByRole('button', { name: 'Dark theme' });
  if ((await toggle.getAttribute('aria-pressed')) !== String(theme === 'dark')) await toggle.click();
  await until(`the ${theme} theme`, async () => (await p.evaluate(() => document.documentElement.dataset.theme)) === theme);
}

/** Waits for the page's loads, then checks it with axe and saves a screenshot in the light and the dark theme. */
async function visited(p: Page, name: string): Promise<void> {
  await p.locator('.loading').first().waitFor({ state: 'detached', timeout: 10_000 });
  for (const theme of ['light', 'dark'] as const) {
    await setTheme(p, theme);
    await checkAccessibility(p, `${name} (${theme})`);
    await p.screenshot({ path: join(OUT, `${name}-${theme}.png`), fullPage: true });
  }
  await setTheme(p, 'light');
}

async function nav(p: Page, label: string): Promise<void> {
  await p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
  await p.getByRole('heading', { level: 1 }).waitFor();
}

/** The page body does not scroll sideways; every table wider than its box is in a box that scrolls. */
async function fitsTheWidth(p: Page, name: string): Promise<void> {
  const layout = await p.evaluate(() => {
    const tables = [...document.querySelectorAll('main table')].filter((table) => table.getBoundingClientRect().width > 0);
    return {
      scrollWidth: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth),
      width: document.documentElement.clientWidth,
      wideTablesOutsideScroll: tables
        .filter((table) => table.scrollWidth > (table.parentElement?.clientWidth ?? 0) + 1)
        .filter((table) => {
          const box = table.closest('.scroll');
          return !box || getComputedStyle(box).overflowX !== 'auto';
        }).length,
      // Something wider than the screen that is not inside a scrolling box.
      overflowing: [...document.querySelectorAll('main *')]
        .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !e.closest('.scroll, pre, figure.chart'))
        .slice(0, 3)
        .map((e) => `${e.tagName.toLowerCase()}.${e.className}`),
    };
  });
  expect(layout.scrollWidth, `${name}: the page scrolls sideways (${JSON.stringify(layout.overflowing)})`).toBeLessThanOrEqual(layout.width);
  expect(layout.wideTablesOutsideScroll, name).toBe(0);
}

describeWithRealNode('the operator console and the look, in Chromium', chromiumBinary, () => {
  beforeAll(async () => {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    const ca = await createTestCa();
    await ensureConsoleBuilt();
    [node, receiver] = await Promise.all([startEvmNode({ automine: true }), startReceiver({ ca, hostnames: ['localhost'] })]);
    t = await startTestApp({
      chains: [{ blockchain: 'ethereum', network: 'goerli', rpcUrl: node.url, pollIntervalMs: 50, concurrency: 4, requestTimeoutMs: 5000 }],
      delivery: {
        ...loadConfig({}, {}).delivery,
        allowNetworks: ['127.0.0.1/32', '::1/128'],
        caFile: writeCaFile(ca.caPem),
        pollIntervalMs: 20,
        // One retry a second later, then the callback has failed.
        retryScheduleSeconds: [1],
        retryJitter: 0,
      },
    });
    c = await t.customer({ name: `acme-${randomUUID().slice(0, 6)}`, domains: ['localhost'] });
    const created = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/block-mined', {
      key: c.key,
      body: { data: { item: { callbackUrl: `${receiver.url}/hooks/blocks` } } },
    });
    expect(created.status, created.text).toBe(200);
    referenceId = created.body.data.item.referenceId;
    // A subscription on a chain no node of this installation follows (made before its node was taken away).
    await insertUnlessTwin(
      t.app.database.db,
      c.id,
      ethereumSubscription({ eventType: 'BLOCK_MINED', target: null, blockchain: 'bitcoin-cash', network: 'testnet' }),
    );
    // A chain held by the deep-reorganisation breaker.
    await t.app.database.db.transaction('test:hold', async (tx) => {
      const dash = { blockchain: 'dash', network: 'testnet' } as const;
      await saveCursor(tx, dash, { height: 40, hash: 'h40', timestamp: Math.floor(Date.now() / 1000) }, 40);
      const blocks = [38, 39, 40].map((height) => ({ height, orphanedHash: `orphaned-${height}`, newHash: `new-${height}` }));
      await tripBreaker(
        tx,
        dash,
        { at: new Date().toISOString(), reason: 'reorganisation', depth: 3, ancestorHeight: 37, ancestorHash: 'h37', blocks, detail: null },
        2,
      );
    });
    token = (await createOperatorToken(t.app.database.db, `ops-${randomUUID().slice(0, 6)}`))?.token as string;
    browser = await launchChromium();
    context = await browser.newContext({ ...DESKTOP, colorScheme: 'light' });
    op = await context.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await receiver?.close();
    await node?.close();
  });

  it('the operator lands on the Overview: chains with lag, the held one and the one not followed; a failing receiver shows up by itself', async () => {
    await signIn(op, t.url, { operatorToken: token });
    expect(new URL(op.url()).pathname).toBe('/console/operator/overview');
    const chains = op.getByRole('region', { name: 'Chains followed' });
    await chains.getByRole('row', { name: /ethereum \/ goerli/ }).waitFor();
    await expect(chains.getByRole('row', { name: /dash \/ testnet/ }).textContent()).resolves.toContain('held: 0 confirmed callbacks wait for a release');
    const unfollowed = op.getByRole('region', { name: 'Subscribed but not followed' });
    await expect(unfollowed.textContent()).resolves.toMatch(/bitcoin-cash \/ testnet/);
    await op.getByRole('region', { name: 'Latest failed callbacks' }).getByText('No callback failed in the last 24 hours.').waitFor();

    // A block: its callback fails (503, retried once a second later, then failed); the overview shows it
    // by itself within 10 s of failing.
    // The blocks seen so far were delivered (the receiver answers 200 until now).
    await until(
      'nothing pending',
      async () => {
        const r = await t.request('GET', `/blockchain-events/callbacks?status=pending&referenceId=${referenceId}`, { key: c.key });
        return r.body?.data?.total === 0;
      },
      30_000,
    );
    receiver.setDefault({ kind: 'status', status: 503, body: 'receiver under maintenance' });
    await sendEth(node, node.accounts[5]?.address as Address, 1n);
    await until(
      'the callback failed',
      async () => {
        const r = await t.request('GET', `/blockchain-events/callbacks?status=failed&referenceId=${referenceId}`, { key: c.key });
        return r.body?.data?.total === 1;
      },
      30_000,
    );
    const latest = op.getByRole('region', { name: 'Latest failed callbacks' });
    // Read every 5 s: on the page within 10 s of failing, 15 s allowed for a loaded machine.
    await latest.getByRole('link', { name: c.name }).waitFor({ timeout: 15_000 });
    await expect(latest.textContent()).resolves.toContain('HTTP 503');
    await expect(op.locator('dl.tiles > div', { hasText: 'Failed callbacks, 24 h' }).locator('dd').textContent()).resolves.toBe('1');
    await op.getByRole('link', { name: 'Delivery details' }).waitFor();
    await visited(op, 'operator-overview');
  }, 90_000);

  it('refreshes itself with "Updated N s ago", and pauses while the tab is hidden', async () => {
    const freshness = op.getByTestId('freshness');
    await expect(freshness.textContent()).resolves.toMatch(/^Updated \d+ s ago · refreshes every 5 s$/);
    // It counts up, then a read brings it back to 0-1 s.
    await until('the age counted up', async () => /Updated [2-9] s ago/.test((await freshness.textContent()) ?? ''));
    await until('read again', async () => /Updated [01] s ago/.test((await freshness.textContent()) ?? ''), 15_000);
    // Hidden: no reads, and it says so; shown again: read at once.
    const reads: string[] = [];
    op.on('request', (r) => {
      if (r.url().includes('/operator/delivery')) reads.push(r.url());
    });
    const setVisibility = (state: 'hidden' | 'visible') =>
      op.evaluate((s) => {
        Object.defineProperty(document, 'visibilityState', { value: s, configurable: true });
        document.dispatchEvent(new Event('visibilitychange'));
      }, state);
    await setVisibility('hidden');
    await until('paused', async () => ((await freshness.textContent()) ?? '').includes('paused while the tab is hidden'));
    reads.length = 0;
    // Longer than the 5 s period: a visible page would have read again.
    await op.waitForTimeout(6_500);
    expect(reads).toEqual([]);
    await setVisibility('visible');
    await until('read when shown again', async () => reads.length > 0, 5_000);
    await until('not paused', async () => ((await freshness.textContent()) ?? '').includes('refreshes every 5 s'));
  }, 60_000);

  it('Failed callbacks lists the failure across customers, filtered by customer as you type', async () => {
    await nav(op, 'Failed callbacks');
    const row = op.getByRole('row', { name: new RegExp(c.name) });
    await row.waitFor();
    await expect(row.textContent()).resolves.toMatch(/HTTP 503/);
    await expect(row.textContent()).resolves.toContain(`localhost:${receiver.port}`);
    // At 1280 px no column is clipped: the table fits its box (rows of two lines at most: the raw names go beneath).
    await expect(
      op
        .locator('.scroll', { has: op.locator('table') })
        .first()
        .evaluate((e) => e.scrollWidth <= e.clientWidth),
    ).resolves.toBe(true);
    await expect(row.evaluate((e) => e.getBoundingClientRect().height)).resolves.toBeLessThan(60);
    await op.getByTestId('freshness').waitFor();
    await visited(op, 'operator-failed');
    await op.getByLabel('Customer').fill('nobody-at-all');
    await op.getByText('There is no customer named nobody-at-all.').waitFor();
    await op.getByLabel('Customer').fill(c.name);
    await row.waitFor();
    expect(new URL(op.url()).searchParams.get('customer')).toBe(c.name);
  }, 60_000);

  it('creates a customer and changes its plan from the console (checked through the API); revoking a key takes its id typed', async () => {
    const name = `made-${randomUUID().slice(0, 6)}`;
    await nav(op, 'Customers');
    await op.locator('summary', { hasText: 'Create a customer' }).click();
    await op.getByLabel('Name').fill(name);
    await op.getByLabel('Requests per second per API key').fill('0');
    await op.getByRole('button', { name: 'Create the customer' }).click();
    // The API's message beside the field.
    await op.locator('#new-rate-error').waitFor();
    await visited(op, 'operator-customers-create');
    await op.getByLabel('Requests per second per API key').fill('25');
    await op.getByLabel('Active subscriptions at most').fill('10');
    await op.getByLabel('Mainnets allowed (unticked: test networks only)').uncheck();
    await op.getByRole('button', { name: 'Create the customer' }).click();
    await op.getByRole('heading', { level: 1, name: `Customer ${name}` }).waitFor();
    await op.getByText(`Customer ${name} is created.`).waitFor();
    const operator = { headers: { authorization: `Bearer ${token}` } };
    const made = await t.request('GET', `/operator/customers/${name}`, operator);
    expect(made.body.data.item.plan).toEqual({ mainnetAllowed: false, maxActiveSubscriptions: 10, requestsPerSecond: 25 });

    await op.locator('summary', { hasText: 'Change the plan' }).click();
    await expect(op.getByLabel('Active subscriptions at most').inputValue()).resolves.toBe('10');
    await op.getByLabel('Active subscriptions at most').fill('');
    await op.getByLabel('Mainnets allowed (unticked: test networks only)').check();
    await op.getByRole('button', { name: 'Save the plan' }).click();
    await op.getByText(/^The plan is changed: /).waitFor();
    const changed = await t.request('GET', `/operator/customers/${name}`, operator);
    expect(changed.body.data.item.plan).toEqual({ mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 25 });
    // The page reads the customer again once the change is saved, after the notice: the facts show the new
    // plan when that read lands, so wait for them rather than read them at once.
    await op.locator('dl.facts', { hasText: 'Active subscriptions: no limit' }).waitFor();

    // A key, then its revocation: the button is enabled once the key's id is typed.
    await op.getByRole('button', { name: 'Create a key' }).click();
    const keyId = (await op.locator('tbody tr td.mono').first().textContent()) as string;
    await op.locator('summary', { hasText: new RegExp(`^Revoke key ${keyId}…$`) }).click();
    const revoke = op.getByRole('button', { name: `Revoke key ${keyId}`, exact: true });
    await expect(revoke.isDisabled()).resolves.toBe(true);
    await op.getByLabel(`Type ${keyId} to confirm`, { exact: true }).fill('1234567');
    await expect(revoke.isDisabled()).resolves.toBe(true);
    await op.getByLabel(`Type ${keyId} to confirm`, { exact: true }).fill(keyId);
    await visited(op, 'operator-customer');
    await revoke.click();
    await op.getByText(`Key ${keyId} is revoked.`).waitFor();
    const keys = (await t.request('GET', `/operator/customers/${name}`, operator)).body.data.item.keys;
    expect(keys[0].revokedTimestamp).toEqual(expect.any(Number));
  }, 60_000);

  it('releasing a held chain takes its name typed', async () => {
    await nav(op, 'Chains');
    const hold = op.getByRole('region', { name: 'Held by the deep-reorganisation breaker' });
    await hold.waitFor();
    const release = hold.getByRole('button', { name: 'Release dash / testnet' });
    await expect(release.isDisabled()).resolves.toBe(true);
    await hold.getByLabel('Type dash/testnet to confirm').fill('dash/testnet');
    await expect(release.isEnabled()).resolves.toBe(true);
    await op.getByTestId('freshness').waitFor();
    await visited(op, 'operator-chains');
    await release.click();
    await op.getByText('dash / testnet is released: 0 held callbacks are being sent.').waitFor();
    await nav(op, 'Delivery');
    await op.getByText('Callbacks due').waitFor();
    await visited(op, 'operator-delivery');
  }, 60_000);

  it('light and dark: the system preference first, then the toggle, remembered in localStorage', async () => {
    const dark = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'dark' });
    try {
      const p = await dark.newPage();
      await p.goto(`${t.url}/console/`);
      await p.getByRole('heading', { level: 1, name: 'Sign in to herald' }).waitFor();
      await expect(p.evaluate(() => document.documentElement.dataset.theme)).resolves.toBe('dark');
      const background = () => p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      const darkBackground = await background();
      await checkAccessibility(p, 'sign-in (dark, from the system)');
      // Chosen light: remembered across a reload, whatever the system says.
      await p.getByRole('button', { name: 'Dark theme' }).click();
      await expect(p.evaluate(() => localStorage.getItem('herald-console-theme'))).resolves.toBe('light');
      await p.reload();
      await p.getByRole('heading', { level: 1, name: 'Sign in to herald' }).waitFor();
      await expect(p.evaluate(() => document.documentElement.dataset.theme)).resolves.toBe('light');
      expect(await background()).not.toBe(darkBackground);
      await expect(p.getByRole('button', { name: 'Dark theme' }).getAttribute('aria-pressed')).resolves.toBe('false');
    } finally {
      await dark.close();
    }
  }, 30_000);

  it('every page is readable at 390 px: the page never scrolls sideways, tables scroll in their box; axe clean in light and dark', async () => {
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      locale: 'en-GB',
      timezoneId: 'Europe/Paris',
      isMobile: true,
      hasTouch: true,
    });
    try {
      const p = await phone.newPage();
      await signIn(p, t.url, { operatorToken: token });
      const operatorPages: [string, string][] = [
        ['/operator/overview', 'Overview'],
        ['/operator/customers', 'Customers'],
        [`/operator/customers/${c.name}`, `Customer ${c.name}`],
        ['/operator/chains', 'Chains'],
        ['/operator/delivery', 'Delivery'],
        ['/operator/failed', 'Failed callbacks'],
      ];
      for (const [path, title] of operatorPages) {
        await p.goto(`${t.url}/console${path}`);
        await p.getByRole('heading', { level: 1, name: title }).waitFor();
        await p.locator('.loading').first().waitFor({ state: 'detached', timeout: 10_000 });
        await fitsTheWidth(p, path);
        await visited(p, `390${path.replaceAll('/', '-')}`);
      }
      // A wide table (the failed callbacks) scrolls inside its box, not the page.
      await p.goto(`${t.url}/console/operator/failed`);
      const box = p.locator('.scroll', { has: p.locator('table') }).first();
      await box.waitFor();
      await expect(box.evaluate((e) => e.scrollWidth > e.clientWidth)).resolves.toBe(true);

      // The customer's pages too.
      await p.getByRole('button', { name: 'Sign out' }).click();
      await p.getByLabel('API key').fill(c.key);
      await p.getByRole('button', { name: 'Sign in with the API key' }).click();
      await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      const customerPages: [string, string][] = [
        ['/overview', 'Overview'],
        ['/deliveries', 'Deliveries'],
        ['/subscriptions', 'Subscriptions'],
        [`/subscriptions/${referenceId}`, 'Subscription'],
        ['/subscriptions/new', 'New subscription'],
        ['/domains', 'Callback domains'],
        ['/wallets', 'Wallets'],
        ['/account', 'Credits and usage'],
      ];
      for (const [path, title] of customerPages) {
        await p.goto(`${t.url}/console${path}`);
        await p.getByRole('heading', { level: 1, name: title, exact: true }).waitFor();
        await p.locator('.loading').first().waitFor({ state: 'detached', timeout: 10_000 });
        await fitsTheWidth(p, path);
        await visited(p, `390-customer${path === `/subscriptions/${referenceId}` ? '-subscription' : path.replaceAll('/', '-')}`);
      }
    } finally {
      await phone.close();
    }
  }, 180_000);
});

/**
 * What the console's browser tests share (test/console-browser.test.ts, test/console-operator-browser.test.ts,
 * test/console-browser-events.test.ts): Debian's Chromium driven by playwright-core (a tool's own browser
 * download does not work on these machines), the desktop window they browse in, an axe-core check of a page,
 * and a page opened on the console and signed in.
 */
import { existsSync } from 'node:fs';
import axe from 'axe-core';
import { type Browser, type BrowserContextOptions, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { installHint, type RealNodeBinary } from './real-node.ts';

const CHROMIUM = '/usr/bin/chromium';

/** For describeWithRealNode: what the browser tests need installed. */
export const chromiumBinary: RealNodeBinary = { name: 'chromium', path: existsSync(CHROMIUM) ? CHROMIUM : undefined, install: installHint('chromium') };

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

/** The desktop window: 1280 x 900, British English, Paris time (the times shown are the browser's zone's). */
export const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 900 }, locale: 'en-GB', timezoneId: 'Europe/Paris' };

/** axe-core on the page as it is: no serious or critical violation. */
export async function checkAccessibility(p: Page, name: string): Promise<void> {
  // Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
  await p.evaluate(axe.source);
  const violations = await p.evaluate(async () => {
    const result = await (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
  });
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious, `accessibility violations on ${name}: ${JSON.stringify(serious, null, 2)}`).toEqual([]);
}

/** Opens the console of the herald at `baseUrl` in `p` and signs in with an API key or an operator token; returns once the Overview is shown. */
export async function signIn(p: Page, baseUrl: string, as: { apiKey: string } | { operatorToken: string }): Promise<void> {
  await p.goto(`${baseUrl}/console/`);
  if ('apiKey' in as) {
    await p.getByLabel('API key').fill(as.apiKey);
    await p.getByRole('button', { name: 'Sign in with the API key' }).click();
  } else {
    await p.getByLabel('Operator token').fill(as.operatorToken);
    await p.getByRole('button', { name: 'Sign in as operator' }).click();
  }
  await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/**
 * The example receivers customers copy (examples/receivers/, docs/guides/verify-signatures.md), each run as
 * its own program against a real herald: callbacks its delivery worker sends, test callbacks from the API,
 * a resend (the same idempotencyKey again), a secret rotation, and herald's own request replayed tampered,
 * unsigned, signed with another secret or too old. Python and Go run where their toolchain is installed
 * (.ci/run installs Go; under CI a missing toolchain fails the file, test/support/real-node.ts).
 *
 * Also `herald dev receiver` (src/dev/receiver.ts), run as the command: herald trusts its CA and delivers to it, and
 * a herald given only the settings it prints (docs/getting-started/receive-locally.md, step 2) does too.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { signCallback } from '../src/delivery/signing.ts';
import { startDevReceiver } from '../src/dev/receiver.ts';
import { callbackBody } from '../src/domain/callbacks.ts';
import type { EventType } from '../src/domain/chains.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { describeWithRealNode, findBinary, type RealNodeBinary } from './support/real-node.ts';
import { type ReceivedRequest, type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, type TestCa, writeCaFile } from './support/tls.ts';

const EXAMPLES = new URL('../examples/receivers/', import.meta.url).pathname;
const SECRET = 'receiver-secret-ü'; // not ASCII: the receivers must sign the secret's UTF-8 bytes
const ZERO_HASH = `0x${'0'.repeat(64)}`;

let ca: TestCa;
let t: TestApp;
let customer: TestCustomer;
let dir: string;
let tls: { certFile: string; keyFile: string };
let agent: Agent;
/** A test callback exactly as herald sent it (to a recording receiver), replayed to each example below. */
let genuine: ReceivedRequest;
/** `herald dev receiver`, started before herald so that herald can trust its CA beside the tests' one. */
let devReceiver: Running;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'herald-receivers-'));
  const bin = new URL('../bin/herald.js', import.meta.url).pathname;
  devReceiver = await run(process.execPath, [bin, 'dev', 'receiver', '--port', '0', '--data-dir', dir, '--secret', SECRET], dir, /^Waiting for callbacks/);
  ca = await createTestCa();
  const devCa = readFileSync(join(dir, 'dev-receiver', 'ca.pem'), 'utf8');
  t = await startTestApp({
    delivery: { ...loadConfig({}, {}).delivery, allowNetworks: ['127.0.0.1/32'], caFile: writeCaFile(ca.caPem + devCa), pollIntervalMs: 20 },
  });
  customer = await t.customer({ domains: ['localhost'] });
  const { certPem, keyPem } = ca.issue(['localhost'], ['127.0.0.1']);
  tls = { certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem') };
  writeFileSync(tls.certFile, certPem);
  writeFileSync(tls.keyFile, keyPem);
  agent = new Agent({ connect: { ca: ca.caPem } });

  const recorder: Receiver = await startReceiver({ ca, ipv6: false });
  try {
    const s = await subscribe(`${recorder.url}/recorded`);
    await testCallback(s);
    [genuine] = (await recorder.waitFor(1)) as [ReceivedRequest];
  } finally {
    await recorder.close();
  }
});

afterAll(async () => {
  devReceiver?.stop();
  await agent?.close();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Subscription {
  referenceId: string;
  eventType: EventType;
  callbackUrl: string;
}

async function subscribe(callbackUrl: string): Promise<Subscription> {
  const item = { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl, callbackSecretKey: SECRET };
  const res = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', { key: customer.key, body: { data: { item } } });
  expect(res.status, res.text).toBe(200);
  return res.body.data.item as Subscription;
}

/** POST .../test-callback: herald sends it now and answers with what the receiver did. */
async function testCallback(s: Subscription) {
  const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: customer.key });
  expect(res.status, res.text).toBe(200);
  return res.body.data.item as { delivered: boolean; httpStatus: number | null; idempotencyKey: string };
}

/** Queues a callback as chain following does; the delivery worker signs and sends it. */
async function enqueue(s: Subscription): Promise<{ id: string; key: string }> {
  const key = randomBytes(32).toString('hex');
  const minedInBlock = { height: 812, hash: `0x${randomBytes(32).toString('hex')}`, timestamp: Math.floor(Date.now() / 1000) };
  const item = { blockchain: 'ethereum', network: 'goerli', transactionId: `0x${randomBytes(32).toString('hex')}`, minedInBlock };
  const body = callbackBody({ id: s.referenceId, eventType: s.eventType, apiVersion: '2021-03-20' }, key, item);
  const id = randomUUID();
  await t.app.database.db.transaction('test:enqueue', (tx) =>
    enqueueCallbacks(tx, [
      { id, customerId: customer.id, subscriptionId: s.referenceId, eventType: s.eventType, idempotencyKey: key, body, callbackUrl: s.callbackUrl },
    ]),
  );
  return { id, key };
}

/** One example receiver, running as its own process; its stdout lines are collected. */
interface Running {
  url: string;
  lines: string[];
  /** Resolves with the first line matching `pattern`, waiting up to timeoutMs (default 10 s: a busy machine) for it. */
  line(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(): void;
}

/** Starts `command`; ready once a line matches `ready`, whose last `:port` is where it listens. */
async function run(command: string, args: string[], cwd: string, ready = /^listening on https:\/\/localhost:\d+$/): Promise<Running> {
  const child: ChildProcess = spawn(command, args, {
    cwd,
    env: { ...process.env, HERALD_CALLBACK_SECRET: SECRET, PORT: '0', ...(tls && { TLS_CERT_FILE: tls.certFile, TLS_KEY_FILE: tls.keyFile }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let pending = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (pending + chunk).split('\n');
    pending = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const line = async (pattern: RegExp, timeoutMs = 10_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = lines.find((l) => pattern.test(l));
      if (found) return found;
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`${command} ${args.join(' ')}: no line matching ${pattern} (exit ${child.exitCode}); stdout:\n${lines.join('\n')}\nstderr:\n${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  await line(ready, 30_000); // a command run from the TypeScript sources (tsx) takes seconds on a busy machine
  const port = (lines.find((l) => /listening on https:\/\/localhost:\d+/.test(l)) ?? '').match(/localhost:(\d+)/)?.[1];
  return { url: `https://localhost:${port}`, lines, line, stop: () => child.kill() };
}

/** Sends `body` with `headers` to the receiver, as herald would; returns the status. */
async function post(url: string, body: Buffer, headers: Record<string, string>): Promise<number> {
  const res = await request(`${url}/replayed`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, dispatcher: agent });
  await res.body.dump();
  return res.statusCode;
}

const go = findBinary('go', '.ci/run installs it with apt-get install -y golang (Debian package)');
const python = findBinary('python3', 'install python3 (Debian package python3)');

const languages: { name: string; binary: RealNodeBinary; start: () => Promise<Running> }[] = [
  {
    name: 'Node.js',
    binary: { name: 'node', path: process.execPath, install: '' },
    start: () => run(process.execPath, ['receiver.mjs'], join(EXAMPLES, 'node')),
  },
  { name: 'Python', binary: python, start: () => run(python.path as string, ['receiver.py'], join(EXAMPLES, 'python')) },
  {
    name: 'Go',
    binary: go,
    start: () => {
      const program = join(dir, 'go-receiver');
      // A HOME-less environment (some CI shells) leaves the go tool without a build cache: give it one.
      const cache = process.env.HOME || process.env.GOCACHE ? {} : { GOCACHE: join(tmpdir(), 'herald-go-cache'), GOPATH: join(tmpdir(), 'herald-gopath') };
      execFileSync(go.path as string, ['build', '-o', program, '.'], { cwd: join(EXAMPLES, 'go'), env: { ...process.env, ...cache }, stdio: 'pipe' });
      return run(program, [], dir);
    },
  },
];

for (const language of languages) {
  describeWithRealNode(`the ${language.name} example receiver`, language.binary, () => {
    let receiver: Running;
    let s: Subscription;
    beforeAll(async () => {
      receiver = await language.start();
      s = await subscribe(`${receiver.url}/herald`);
    });
    afterAll(() => receiver?.stop());

    it('acknowledges a test callback from herald at once and recognises it as a test', async () => {
      const result = await testCallback(s);
      expect(result).toMatchObject({ delivered: true, httpStatus: 204 });
      expect(await receiver.line(new RegExp(`^test callback ${result.idempotencyKey} TRANSACTION_MINED$`))).toBeTruthy();
      expect(receiver.lines.filter((l) => l.startsWith('callback '))).toEqual([]);
    });

    it('handles a callback from the delivery worker once: its resend (same idempotencyKey) is acknowledged and skipped', async () => {
      const callback = await enqueue(s);
      expect(await receiver.line(new RegExp(`^callback ${callback.key} TRANSACTION_MINED \\{"blockchain":"ethereum"`))).toBeTruthy();
      const resend = await t.request('POST', `/blockchain-events/callbacks/${callback.id}/resend`, { key: customer.key });
      expect(resend.status, resend.text).toBe(201);
      expect(await receiver.line(new RegExp(`^duplicate ${callback.key}$`))).toBeTruthy();
      expect(receiver.lines.filter((l) => l.startsWith(`callback ${callback.key}`))).toHaveLength(1);
      // The receiver prints once it has answered: herald records the attempt a moment later.
      const attempts = async () => {
        const log = await t.request('GET', `/blockchain-events/subscriptions/${s.referenceId}/callbacks`, { key: customer.key });
        const entry = log.body.data.items.find((e: { callbackId: string }) => e.callbackId === callback.id);
        return entry.attempts.map((a: { httpStatus: number }) => a.httpStatus);
      };
      await expect.poll(attempts, { timeout: 10_000 }).toEqual([204, 204]);
    });

    it("accepts herald's own request replayed, and refuses it with 401 when tampered, unsigned, signed with another secret or too old", async () => {
      const body = genuine.rawBody;
      const headers = Object.fromEntries(['x-signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, genuine.headers[h] as string]));
      const { 'x-signature': _x, ...standardOnly } = headers;
      const { 'webhook-id': _i, 'webhook-timestamp': _t, 'webhook-signature': _s, ...xOnly } = headers;
      const id = headers['webhook-id'] as string;
      const now = Math.floor(Date.now() / 1000);
      const tampered = Buffer.from(body.toString('utf8').replace(ZERO_HASH, `0x${'0'.repeat(63)}1`));
      expect(tampered.equals(body)).toBe(false);

      expect(await post(receiver.url, body, headers)).toBe(204);
      const refused = receiver.lines.filter((l) => l.startsWith('refused ')).length;
      const cases: [string, Buffer, Record<string, string>][] = [
        ['tampered body', tampered, headers],
        ['unsigned', body, {}],
        ['x-signature only', body, xOnly],
        ['Standard Webhooks headers only', body, standardOnly],
        ['another secret', body, { ...signCallback('another secret', body, id, now) }],
        ['signed 6 minutes ago', body, { ...signCallback(SECRET, body, id, now - 360) }],
        ['signed 6 minutes ahead', body, { ...signCallback(SECRET, body, id, now + 360) }],
        ['x-signature of the body, webhook-signature of another id', body, { ...signCallback(SECRET, body, `${id}x`, now), 'webhook-id': id }],
      ];
      for (const [what, sentBody, sentHeaders] of cases) expect(await post(receiver.url, sentBody, sentHeaders), what).toBe(401);
      await receiver.line(/^refused /);
      await expect.poll(() => receiver.lines.filter((l) => l.startsWith('refused ')).length, { timeout: 10_000 }).toBe(refused + cases.length);
    });

    it('keeps verifying during a secret rotation while it still has the old secret (x-signature-previous, second webhook-signature entry)', async () => {
      const rotate = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/rotate-secret`, {
        key: customer.key,
        body: { data: { item: { callbackSecretKey: 'the-new-secret', overlapSeconds: 3600 } } },
      });
      expect(rotate.status, rotate.text).toBe(200);
      const result = await testCallback(s);
      expect(result).toMatchObject({ delivered: true, httpStatus: 204 });
    });
  });
}

describe('herald dev receiver', () => {
  it('prints the settings a local herald needs: its CA file, the loopback network, localhost as a verified domain', () => {
    const printed = devReceiver.lines.join('\n');
    const caFile = join(dir, 'dev-receiver', 'ca.pem');
    expect(printed).toContain(`HERALD_DELIVERY_CA_FILE=${caFile}`);
    expect(printed).toContain('HERALD_DELIVERY_ALLOW_NETWORKS=127.0.0.1/32');
    expect(printed).toContain('domains add --customer default --domain localhost --verified');
    expect(printed).toContain(`"callbackUrl":"${devReceiver.url}/callbacks","callbackSecretKey":"${SECRET}"`);
  });

  it('prints a callback herald sends it, with its signatures checked, and answers 204', async () => {
    const s = await subscribe(`${devReceiver.url}/callbacks`);
    const result = await testCallback(s);
    expect(result).toMatchObject({ delivered: true, httpStatus: 204 });
    const key = result.idempotencyKey;
    expect(
      await devReceiver.line(new RegExp(`POST /callbacks TRANSACTION_MINED \\(test callback\\) idempotencyKey ${key} sequence 0: signature ok -> 204$`)),
    ).toBeTruthy();
    expect(devReceiver.lines).toContain(`    "idempotencyKey": "${key}",`);
  });

  it('the settings it prints are all a herald needs: one started with just those (no other CA) delivers a test callback to it', async () => {
    const printed = devReceiver.lines.slice(0, devReceiver.lines.indexOf('that is:'));
    const env: Record<string, string> = {};
    for (const line of printed) {
      const setting = /^ {2}(HERALD_[A-Z_]+)=(\S+) /.exec(line);
      if (setting) env[setting[1] as string] = setting[2] as string;
    }
    expect(Object.keys(env).sort()).toEqual(['HERALD_DELIVERY_ALLOW_NETWORKS', 'HERALD_DELIVERY_CA_FILE', 'HERALD_SUBSCRIPTIONS_ALLOW_UNFOLLOWED_CHAINS']);
    const settings = loadConfig({}, env);
    expect(settings.subscriptions.allowUnfollowedChains).toBe(true);
    const local = await startTestApp({ delivery: settings.delivery, subscriptions: settings.subscriptions });
    try {
      const owner = await local.customer({ domains: ['localhost'] }); // what the printed `domains add ... --verified` does
      const item = { transactionId: `0x${'1'.repeat(64)}`, callbackUrl: `${devReceiver.url}/callbacks`, callbackSecretKey: SECRET };
      const created = await local.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
        key: owner.key,
        body: { data: { item } },
      });
      expect(created.status, created.text).toBe(200);
      const sent = await local.request('POST', `/blockchain-events/subscriptions/${created.body.data.item.referenceId}/test-callback`, { key: owner.key });
      expect(sent.body.data.item, sent.text).toMatchObject({ delivered: true, httpStatus: 204 });
      expect(await devReceiver.line(new RegExp(`idempotencyKey ${sent.body.data.item.idempotencyKey} sequence 0: signature ok -> 204$`))).toBeTruthy();
    } finally {
      await local.close();
    }
  });

  it('refuses with 401, and says why, a callback signed with another secret', async () => {
    const res = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
      key: customer.key,
      body: {
        data: { item: { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl: `${devReceiver.url}/other`, callbackSecretKey: 'not the secret' } },
      },
    });
    expect(res.status, res.text).toBe(200);
    const result = await testCallback(res.body.data.item);
    expect(result).toMatchObject({ delivered: false, httpStatus: 401 });
    expect(await devReceiver.line(new RegExp(`POST /other .*${result.idempotencyKey}.*: REFUSED, x-signature wrong .* -> 401$`))).toBeTruthy();
  });

  it('keeps its certificates and secret in the directory: a restarted receiver is still trusted', async () => {
    const directory = join(dir, 'restarted');
    const first = await startDevReceiver({ port: 0, host: '127.0.0.1', directory, print: () => {} });
    await first.close();
    const caPem = readFileSync(first.caFile, 'utf8');
    const second = await startDevReceiver({ port: 0, host: '127.0.0.1', directory, print: () => {} });
    await second.close();
    expect(readFileSync(second.caFile, 'utf8')).toBe(caPem);
    expect(second.secret).toBe(first.secret);
    expect(first.secret).toMatch(/^dev-[0-9a-f]{32}$/);
  });
});

/**
 * The end-to-end latency benchmark. Target (from the issue): "500 transactions on EDR (automine,
 * WebSocket heads): from block mined to mined callback received, p50 at most 150 ms, p99 at most 500 ms."
 *
 * Processes:
 *   - the node: an EDR node with automine on (a block per transaction) in a child process of its own
 *     (bench/evm-ingest.ts --node-child live), with a test token and a Forwarder deployed;
 *   - this process: owns the embedded PostgreSQL of a fresh temporary data directory (customer, API key,
 *     callback domain 'localhost' verified, through the store code), runs the HTTPS receiver
 *     (test/support/receiver.ts, its own test CA) and sends the transactions;
 *   - the service under test: `herald serve` with all roles (api, ingest, delivery) on that data
 *     directory; the chain ethereum/goerli with rpcUrl and wsUrl (newHeads wake the follower; the poll
 *     interval stays at 2 s, so the WebSocket path is what is measured); delivery allowed to loopback,
 *     trusting the receiver's CA.
 *
 * Each of WARMUP + 500 transactions (in turn an ETH transfer with gas 21,000, an ERC-20 transfer and a
 * Forwarder.forward with value, so a third of them need a trace) is signed here in advance, and
 * subscribed to (TRANSACTION_MINED, through the API) before any is sent; the benchmark waits until the
 * ingest role has indexed every subscription (the callback of one more subscription, to a transaction
 * already mined, made after all the others, has arrived). Then, one at a
 * time: eth_sendRawTransaction (automine mines the block before answering: the moment the call returns
 * is taken as the block's mined time), then wait for the callback of that subscription at the receiver.
 * Latency = the receiver's arrival time of the callback's request minus that moment, same clock. The
 * first WARMUP transactions are not counted.
 *
 * Breakdown per transaction, from the database: mined -> enqueued (callbacks.created_at, inside the
 * follower's block transaction: newHeads, the follower's fetch of the block and matching), enqueued ->
 * first attempt started (callback_attempts.started_at: commit, NOTIFY, the worker's claim), attempt
 * started -> received (the HTTPS POST).
 *
 * Environment: BENCH_SERVER_NODE_ARGS (extra node arguments for the service, e.g. '--cpu-prof
 * --cpu-prof-dir=/tmp/prof'); makes the figures an experiment. BENCH_DURATION does not apply.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request as undiciRequest } from 'undici';
import { type Hex, keccak256 } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { loadConfig } from '../src/config/config.ts';
import { createApiKey, createCustomer } from '../src/store/customers.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { startReceiver } from '../test/support/receiver.ts';
import { createTestCa } from '../test/support/tls.ts';
import { type LiveNodeInfo, poolAddress, SELECTOR, startNodeChild, word } from './evm-ingest.ts';
import {
  forEachLimited,
  freePort,
  HERALD,
  isAlive,
  log,
  machineBusySeconds,
  measureCpu,
  median,
  onCleanup,
  percentile,
  postmasterPid,
  processCpuSeconds,
  removeDataDirOnCleanup,
  runCleanups,
  sampleRss,
  selfCpuSeconds,
  sleep,
  startChild,
  treeCpuSeconds,
  waitForOk,
} from './lib.ts';

const TRANSACTIONS = 500;
const WARMUP = 20;
const SUBSCRIBE_CONCURRENCY = 8;
const CALLBACK_TIMEOUT_MS = 10_000;
const TARGETS = { p50Ms: 150, p99Ms: 500 };
const CHAIN_PATH = '/blockchain-events/ethereum/goerli';
const SECRET = 'bench-e2e-secret';

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

interface Sent {
  hash: string;
  raw: Hex;
  referenceId?: string;
  /** Date.now() when eth_sendRawTransaction returned (the block is mined by then). */
  minedAt?: number;
  sendMs?: number;
  receivedAt?: number;
}

/** p50, p90, p99 and max of `values` (ms), rounded. */
function spread(values: number[]): { p50: number | null; p90: number | null; p99: number | null; max: number | null } {
  const sorted = [...values].sort((a, b) => a - b);
  const r = (v: number | null) => (v === null ? null : round(v));
  return { p50: r(percentile(sorted, 50)), p90: r(percentile(sorted, 90)), p99: r(percentile(sorted, 99)), max: r(sorted.at(-1) ?? null) };
}

export default async function e2eLatencyBenchmark(): Promise<Record<string, unknown>> {
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-e2e-'));
  let database: OpenDatabase | undefined;
  // Registered first, so it runs last: after the service, the receiver and the node have stopped.
  removeDataDirOnCleanup(dataDir, () => database?.close());

  try {
    const [{ child: node, info }, opened, ca] = await Promise.all([
      startNodeChild<LiveNodeInfo>(['live'], 120_000),
      openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 4 }),
      createTestCa(),
    ]);
    database = opened;
    const db = database.db;
    const receiver = await startReceiver({ ca });
    onCleanup(() => receiver.close());
    const caFile = join(dataDir, 'receiver-ca.pem');
    writeFileSync(caFile, ca.caPem);
    const customer = await createCustomer(db, 'bench', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n);
    const { key } = await createApiKey(db, customer.id, { label: 'bench' });
    await upsertDomain(db, customer.id, 'localhost', 'operator');
    log(`node ${info.url} (automine, ${info.wsUrl}); receiver ${receiver.url}; data directory ${dataDir}`);

    // The service: all roles, on this data directory (it finds the running database). The port goes on the
    // command line: `herald serve` always passes its --port (default 8080) over the configuration file's.
    const port = await freePort();
    const configFile = join(dataDir, 'service.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        logLevel: 'info',
        chains: [{ blockchain: 'ethereum', network: 'goerli', rpcUrl: info.url, wsUrl: info.wsUrl, pollIntervalMs: 2000, concurrency: 8 }],
        delivery: { allowNetworks: ['127.0.0.1/32', '::1/128'], caFile },
      }),
    );
    const service = startChild(process.execPath, [...nodeArgs, HERALD, 'serve', '--data-dir', dataDir, '--port', String(port)], {
      env: { DATABASE_URL: '', HERALD_CONFIG: configFile, HERALD_DATA_DIR: '', HERALD_ROLES: '', HERALD_LOG_LEVEL: 'info' },
      label: 'service',
    });
    const api = `http://127.0.0.1:${port}`;
    await waitForOk(`${api}/readyz`, { child: service, timeoutMs: 60_000 });
    for (let waited = 0; !service.stdout().includes('"msg":"following chain"'); waited += 20) {
      if (waited > 30_000 || !isAlive(service.pid)) throw new Error(`the service does not follow the chain:\n${service.output()}`);
      await sleep(20);
    }
    log('service ready and following ethereum/goerli');

    // Every transaction signed in advance: ETH transfer, ERC-20 transfer, Forwarder.forward, in turn.
    const agent = new Agent({ keepAliveTimeout: 30_000 });
    onCleanup(() => agent.close());
    let rpcId = 0;
    const rpc = async <T>(method: string, params: unknown[]): Promise<T> => {
      const response = await undiciRequest(info.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }),
        dispatcher: agent,
      });
      const answer = (await response.body.json()) as { result?: T; error?: { message: string } };
      if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
      return answer.result as T;
    };
    const account = privateKeyToAccount(info.sender.privateKey as Hex);
    const firstNonce = Number(await rpc<string>('eth_getTransactionCount', [account.address, 'pending']));
    const total = WARMUP + TRANSACTIONS;
    let started = performance.now();
    const sent: Sent[] = [];
    for (let i = 0; i < total; i++) {
      const kind = i % 3;
      const to = poolAddress(i);
      const common = {
        chainId: info.chainId,
        nonce: firstNonce + i,
        maxFeePerGas: 20_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
        type: 'eip1559' as const,
      };
      const raw =
        kind === 0
          ? await account.signTransaction({ ...common, to: to as Hex, value: 1_000_000_000_000n + BigInt(i), gas: 21_000n })
          : kind === 1
            ? await account.signTransaction({
                ...common,
                to: info.token as Hex,
                gas: 120_000n,
                data: `${SELECTOR.transfer}${word(to)}${word(BigInt(1000 + i))}` as Hex,
              })
            : await account.signTransaction({
                ...common,
                to: info.forwarder as Hex,
                value: 10_000_000_000_000_000n,
                gas: 150_000n,
                data: `${SELECTOR.forward}${word(to)}` as Hex,
              });
      sent.push({ hash: keccak256(raw), raw });
    }
    log(`signed ${total} transactions in ${Math.round(performance.now() - started)} ms`);

    // Subscribed before any is sent, through the API.
    started = performance.now();
    await forEachLimited(sent, SUBSCRIBE_CONCURRENCY, async (s) => {
      const response = await fetch(`${api}${CHAIN_PATH}/subscriptions/transaction-mined`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ data: { item: { callbackUrl: `${receiver.url}/hooks/mined`, callbackSecretKey: SECRET, transactionId: s.hash } } }),
      });
      const body = (await response.json()) as { data?: { item?: { referenceId?: string } } };
      if (response.status >= 300 || !body.data?.item?.referenceId) throw new Error(`subscribing failed: ${response.status} ${JSON.stringify(body)}`);
      s.referenceId = body.data.item.referenceId;
    });
    const byReference = new Map(sent.map((s) => [s.referenceId as string, s]));
    // The ingest role applies subscription announcements in the order they were committed. A last one,
    // on a transaction already mined, is called back once it has been applied: all the others are
    // indexed by then.
    const latest = await rpc<{ transactions: string[] }>('eth_getBlockByNumber', ['latest', false]);
    const probe = await fetch(`${api}${CHAIN_PATH}/subscriptions/transaction-mined`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ data: { item: { callbackUrl: `${receiver.url}/hooks/probe`, transactionId: latest.transactions[0] } } }),
    });
    if (probe.status >= 300) throw new Error(`the probe subscription failed: ${probe.status} ${await probe.text()}`);
    for (let waited = 0; !receiver.received.some((r) => r.path === '/hooks/probe'); waited += 20) {
      if (waited > 30_000) throw new Error(`the probe's callback did not arrive in 30 s:\n${service.output()}`);
      await sleep(20);
    }
    await sleep(200);
    log(`${total} subscriptions created and indexed in ${Math.round(performance.now() - started)} ms`);

    // One at a time: send, then wait for its callback.
    const pm = postmasterPid(dataDir);
    const rss = sampleRss(service.pid, 100);
    let cpu: ReturnType<typeof measureCpu> | undefined;
    started = performance.now();
    for (const [i, s] of sent.entries()) {
      if (i === WARMUP) {
        cpu = measureCpu({
          service: () => processCpuSeconds(service.pid),
          postgres: () => (pm ? treeCpuSeconds(pm) : 0),
          node: () => processCpuSeconds(node.pid),
          bench: selfCpuSeconds,
          machine: machineBusySeconds,
        });
        started = performance.now();
      }
      const before = receiver.received.length;
      const t0 = performance.now();
      const hash = await rpc<string>('eth_sendRawTransaction', [s.raw]);
      s.minedAt = Date.now();
      s.sendMs = performance.now() - t0;
      if (hash.toLowerCase() !== s.hash.toLowerCase()) throw new Error(`the node answered ${hash} for ${s.hash}`);
      const arrived = await receiver.waitFor(before + 1, CALLBACK_TIMEOUT_MS).catch(() => {
        throw new Error(`no callback for transaction ${i} (${s.hash}) within ${CALLBACK_TIMEOUT_MS} ms:\n${service.output()}`);
      });
      for (const r of arrived.slice(before)) {
        const referenceId = (JSON.parse(r.rawBody.toString('utf8')) as { referenceId?: string }).referenceId;
        const target = referenceId === undefined ? undefined : byReference.get(referenceId);
        if (target && target.receivedAt === undefined) target.receivedAt = r.receivedAt;
      }
      if (s.receivedAt === undefined) throw new Error(`the callback received after transaction ${i} is not its own`);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpuPct = cpu?.stop() ?? {};
    rss.stop();
    const measured = sent.slice(WARMUP);
    const latencies = measured.map((s) => (s.receivedAt as number) - (s.minedAt as number));
    const latency = spread(latencies);
    log(`${TRANSACTIONS} transactions in ${round(seconds, 2)} s: mined -> callback received ${JSON.stringify(latency)} ms`);

    // Breakdown from the database: enqueued (in the block's transaction), first attempt started.
    const rows = await db.query<{ subscription_id: string; enqueued: string; attempted: string | null }>(
      'bench:e2e-breakdown',
      `SELECT c.subscription_id, extract(epoch FROM c.created_at) * 1000 AS enqueued,
         (SELECT extract(epoch FROM min(a.started_at)) * 1000 FROM callback_attempts a WHERE a.callback_id = c.id) AS attempted
       FROM callbacks c WHERE c.customer_id = $1`,
      [customer.id],
    );
    const stages = { minedToEnqueued: [] as number[], enqueuedToAttempt: [] as number[], attemptToReceived: [] as number[] };
    for (const r of rows) {
      const s = byReference.get(r.subscription_id);
      if (!s || sent.indexOf(s) < WARMUP || r.attempted === null) continue;
      const enqueued = Number(r.enqueued);
      const attempted = Number(r.attempted);
      stages.minedToEnqueued.push(enqueued - (s.minedAt as number));
      stages.enqueuedToAttempt.push(attempted - enqueued);
      stages.attemptToReceived.push((s.receivedAt as number) - attempted);
    }
    const breakdown = {
      minedToEnqueued: spread(stages.minedToEnqueued),
      enqueuedToAttemptStarted: spread(stages.enqueuedToAttempt),
      attemptStartedToReceived: spread(stages.attemptToReceived),
    };
    log(`breakdown (ms): ${JSON.stringify(breakdown)}`);
    const sendMs = spread(measured.map((s) => s.sendMs as number));
    // The probe's callback is one of them; any other means a subscription was indexed after its block.
    const alreadyMined =
      service
        .stdout()
        .split('\n')
        .filter((l) => l.includes('subscribed transaction was already mined')).length - 1;
    const stepFailures = service
      .stdout()
      .split('\n')
      .filter((l) => l.includes('chain following step failed')).length;
    const duplicates = receiver.received.length - total - 1;
    if (alreadyMined > 0) log(`${alreadyMined} callbacks came through the already-mined path (subscription indexed after its block)`);

    const code = await service.stop('SIGTERM', 20_000);
    if (code !== 0) log(`the service exited with ${code} on SIGTERM:\n${service.output()}`);

    const pass = {
      p50: latency.p50 !== null && latency.p50 <= TARGETS.p50Ms,
      p99: latency.p99 !== null && latency.p99 <= TARGETS.p99Ms,
    };
    return {
      bench: 'e2e-latency',
      ...(nodeArgs.length > 0 && { experiment: { serverNodeArgs: nodeArgs } }),
      transactions: TRANSACTIONS,
      warmup: WARMUP,
      mix: 'ETH transfer (gas 21000), ERC-20 transfer, Forwarder.forward with value (traced), in turn; one block each (automine)',
      sending: 'one at a time: the next is sent when the previous callback has arrived',
      seconds: round(seconds, 2),
      latencyMs: latency,
      // An upper bound: from the moment eth_sendRawTransaction was called (the block is mined during the call).
      latencyFromSendStartMs: spread(measured.map((s) => (s.receivedAt as number) - (s.minedAt as number) + (s.sendMs as number))),
      latencyMeanMs: round(latencies.reduce((a, b) => a + b, 0) / latencies.length),
      latencyMedianByKindMs: {
        ethTransfer: round(median(latencies.filter((_, i) => (i + WARMUP) % 3 === 0))),
        erc20Transfer: round(median(latencies.filter((_, i) => (i + WARMUP) % 3 === 1))),
        forwarderCall: round(median(latencies.filter((_, i) => (i + WARMUP) % 3 === 2))),
      },
      breakdownMs: breakdown,
      sendRawTransactionMs: sendMs,
      alreadyMinedCallbacks: alreadyMined,
      duplicateCallbacks: duplicates,
      stepFailures,
      service: { maxRssMb: round(rss.max()), cpuPct },
      targets: { p50Ms: `<=${TARGETS.p50Ms}`, p99Ms: `<=${TARGETS.p99Ms}` },
      pass: { ...pass, all: Object.values(pass).every(Boolean) },
    };
  } finally {
    await runCleanups();
  }
}

/**
 * Unconfirmed events (issue 15), two parts: the latency below, and the burst of bench/mempool-burst.ts
 * (20,000 pending transactions against 1,000,000 subscriptions beside the block follower).
 * BENCH_MEMPOOL_PART=latency or burst runs one of them; both by default.
 *
 * Unconfirmed-event latency: "seen on the node -> callback received at the receiver: p50 <= 200
 * ms, p99 <= 1 s on EDR (automine off) and on litecoind (polling), 500 transactions each".
 *
 * Processes: litecoind 0.21 in regtest (a child process, test/support/litecoin-node.ts, -mempoolreplacement
 * off as by default) and an EDR node with automine off (in this process, test/support/evm-node.ts: its CPU is
 * the benchmark's, not the service's); this process also owns the embedded PostgreSQL of a fresh data
 * directory and the HTTPS receiver; the service under test is `herald serve` (all roles) following
 * litecoin/testnet and ethereum/goerli with `mempoolPollIntervalMs` 100 (the default 1000 would put the
 * p50 near 500 ms: polling is the whole latency budget on a node without ZMQ or pending-transaction push).
 *
 * One ADDRESS_COINS_TRANSACTION_UNCONFIRMED subscription per chain, on one address; then, one at a time per
 * chain: send a payment to it (litecoind: sendrawtransaction of a transaction signed by the node's wallet
 * beforehand; EDR: eth_sendRawTransaction of a transaction signed beforehand), the moment the send call
 * returns taken as "seen on the node" (the node accepted it into its mempool), then wait for its callback.
 * Latency = receiver arrival - that moment, same clock. WARMUP transactions per chain are not counted.
 * Nothing is mined during the run (the mempools hold up to 520 transactions).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Hex, keccak256, parseEther } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { loadConfig } from '../src/config/config.ts';
import { createApiKey, createCustomer } from '../src/store/customers.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { startEvmNode } from '../test/support/evm-node.ts';
import { startLitecoinDriver } from '../test/support/litecoin-node.ts';
import { startReceiver } from '../test/support/receiver.ts';
import { createTestCa } from '../test/support/tls.ts';
import { freePort, HERALD, isAlive, log, onCleanup, percentile, removeDataDirOnCleanup, runCleanups, sleep, startChild, waitForOk } from './lib.ts';
import { mempoolBurst } from './mempool-burst.ts';

const TRANSACTIONS = 500;
const WARMUP = 20;
const CALLBACK_TIMEOUT_MS = 10_000;
const POLL_MS = 100;
const TARGETS = { p50Ms: 200, p99Ms: 1000 };

const round = (n: number) => Math.round(n * 10) / 10;
function spread(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const r = (v: number | null) => (v === null ? null : round(v));
  return { p50: r(percentile(sorted, 50)), p90: r(percentile(sorted, 90)), p99: r(percentile(sorted, 99)), max: r(sorted.at(-1) ?? null) };
}

/** BENCH_MEMPOOL_PART: `latency` (this file), `burst` (bench/mempool-burst.ts), or both (unset). */
export default async function mempoolBenchmark(): Promise<Record<string, unknown>> {
  const part = process.env.BENCH_MEMPOOL_PART ?? '';
  if (part !== '' && part !== 'latency' && part !== 'burst') throw new Error(`BENCH_MEMPOOL_PART must be latency or burst, not '${part}'.`);
  const latencyFigures = part === 'burst' ? undefined : await latency();
  const burstFigures = part === 'latency' ? undefined : await mempoolBurst();
  return {
    bench: 'mempool',
    ...(part !== '' && { experiment: { part } }),
    ...(latencyFigures && { latency: latencyFigures }),
    ...(burstFigures && { burst: burstFigures }),
    pass: { ...(latencyFigures && { latency: latencyFigures.pass }), ...(burstFigures && { burst: burstFigures.pass }) },
  };
}

async function latency(): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-mempool-'));
  let database: OpenDatabase | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.close());
  try {
    const total = WARMUP + TRANSACTIONS;
    const [ltc, evm, opened, ca] = await Promise.all([
      startLitecoinDriver({ addressType: 'bech32', fundingCoins: total, fundingCoinValue: 9_000_000n }),
      startEvmNode({ automine: false }),
      openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 4 }),
      createTestCa(),
    ]);
    onCleanup(() => ltc.close());
    onCleanup(() => evm.close());
    database = opened;
    const db = database.db;
    const receiver = await startReceiver({ ca });
    onCleanup(() => receiver.close());
    const caFile = join(dataDir, 'receiver-ca.pem');
    writeFileSync(caFile, ca.caPem);
    const customer = await createCustomer(db, 'bench', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n);
    const { key } = await createApiKey(db, customer.id, { label: 'bench' });
    await upsertDomain(db, customer.id, 'localhost', 'operator');

    const port = await freePort();
    const configFile = join(dataDir, 'service.json');
    const follow = { pollIntervalMs: 1000, mempoolPollIntervalMs: POLL_MS, concurrency: 8 };
    writeFileSync(
      configFile,
      JSON.stringify({
        logLevel: 'info',
        chains: [
          { blockchain: 'litecoin', network: 'testnet', rpcUrl: ltc.rpcUrl, ...ltc.chainConfig, ...follow },
          { blockchain: 'ethereum', network: 'goerli', rpcUrl: evm.url, ...follow },
        ],
        delivery: { allowNetworks: ['127.0.0.1/32', '::1/128'], caFile },
      }),
    );
    const service = startChild(process.execPath, [HERALD, 'serve', '--data-dir', dataDir, '--port', String(port)], {
      env: { DATABASE_URL: '', HERALD_CONFIG: configFile, HERALD_DATA_DIR: '', HERALD_ROLES: '', HERALD_LOG_LEVEL: 'info' },
      label: 'service',
    });
    const api = `http://127.0.0.1:${port}`;
    await waitForOk(`${api}/readyz`, { child: service, timeoutMs: 60_000 });
    const subscribe = async (chain: string, address: string, hook: string) => {
      const response = await fetch(`${api}/blockchain-events/${chain}/subscriptions/address-coins-transactions-unconfirmed`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ data: { item: { address, callbackUrl: `${receiver.url}/hooks/${hook}` } } }),
      });
      if (response.status !== 201) throw new Error(`subscribing failed: ${response.status} ${await response.text()}`);
    };

    // Signed in advance, so the measured step is the send alone.
    const ltcAddress = await ltc.newAddress();
    const evmAddress = evm.accounts[5]?.address as string;
    await subscribe('litecoin/testnet', ltcAddress, 'ltc');
    await subscribe('ethereum/goerli', evmAddress, 'evm');
    const unspent = await ltc.node.rpc<{ txid: string; vout: number; amount: number }[]>('listunspent', 1);
    const coins = unspent.filter((u) => Math.round(u.amount * 1e8) === 9_000_000).slice(0, total);
    if (coins.length < total) throw new Error(`only ${coins.length} funding coins`);
    const ltcRaw: string[] = [];
    for (const coin of coins) {
      const raw = await ltc.node.rpc<string>('createrawtransaction', [{ txid: coin.txid, vout: coin.vout }], [{ [ltcAddress]: 0.089 }]);
      ltcRaw.push((await ltc.node.rpc<{ hex: string }>('signrawtransactionwithwallet', raw)).hex);
    }
    const sender = evm.accounts[0] as { privateKey: Hex; address: string };
    const account = privateKeyToAccount(sender.privateKey);
    const nonce = Number(await evm.request<string>('eth_getTransactionCount', [sender.address, 'pending']));
    const evmRaw: Hex[] = [];
    for (let i = 0; i < total; i++)
      evmRaw.push(
        await account.signTransaction({
          chainId: evm.chainId,
          nonce: nonce + i,
          to: evmAddress as Hex,
          value: parseEther('0.001') + BigInt(i),
          gas: 21_000n,
          maxFeePerGas: 20_000_000_000n,
          maxPriorityFeePerGas: 1_000_000_000n,
          type: 'eip1559',
        }),
      );
    await sleep(2 * POLL_MS + 500); // both subscriptions indexed (announced over LISTEN/NOTIFY)
    log(`signed ${total} litecoin and ${total} EVM transactions; service ready`);

    const run = async (label: string, hook: string, raws: string[], send: (raw: string) => Promise<string>, idOf?: (raw: string) => string) => {
      const latencies: number[] = [];
      for (const [i, raw] of raws.entries()) {
        const before = receiver.received.length;
        const id = await send(raw);
        const seenAt = Date.now();
        if (idOf && id.toLowerCase() !== idOf(raw).toLowerCase()) throw new Error(`${label}: the node answered ${id}`);
        const arrived = await receiver.waitFor(before + 1, CALLBACK_TIMEOUT_MS).catch(() => {
          throw new Error(`${label}: no callback for transaction ${i} within ${CALLBACK_TIMEOUT_MS} ms:\n${service.output()}`);
        });
        const mine = arrived.slice(before).find((r) => r.path === `/hooks/${hook}` && r.rawBody.toString('utf8').includes(id.toLowerCase()));
        if (!mine) throw new Error(`${label}: the callback after transaction ${i} is not its own`);
        if (i >= WARMUP) latencies.push(mine.receivedAt - seenAt);
      }
      const latency = spread(latencies);
      log(`${label}: ${JSON.stringify(latency)} ms`);
      return latency;
    };
    const litecoin = await run('litecoind (getrawmempool polling)', 'ltc', ltcRaw, (raw) => ltc.node.rpc<string>('sendrawtransaction', raw));
    const ethereum = await run(
      'EDR (pending transaction filter, automine off)',
      'evm',
      evmRaw,
      (raw) => evm.request<string>('eth_sendRawTransaction', [raw]),
      (raw) => keccak256(raw as Hex),
    );
    const duplicates = receiver.received.length - 2 * total;
    if (!isAlive(service.pid)) throw new Error(`the service died:\n${service.output()}`);
    await service.stop('SIGTERM', 20_000);
    const pass = (l: ReturnType<typeof spread>) => l.p50 !== null && l.p50 <= TARGETS.p50Ms && l.p99 !== null && l.p99 <= TARGETS.p99Ms;
    return {
      transactions: TRANSACTIONS,
      warmup: WARMUP,
      mempoolPollIntervalMs: POLL_MS,
      sending: 'one at a time per chain: the next is sent when the previous callback has arrived; nothing mined',
      latencyMs: { litecoind: litecoin, edr: ethereum },
      duplicateCallbacks: duplicates,
      loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
      targets: { p50Ms: `<=${TARGETS.p50Ms}`, p99Ms: `<=${TARGETS.p99Ms}` },
      pass: { litecoind: pass(litecoin), edr: pass(ethereum) },
    };
  } finally {
    await runCleanups();
  }
}

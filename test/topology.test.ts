/**
 * The multi-process topology (issue 12, point 4), with real parts only: a PostgreSQL 15 server of the
 * test's own (Debian's package; the test restarts it), a real PgBouncer in transaction pooling mode in
 * front of it, litecoind in regtest and the EVM test node, a real HTTPS receiver, and SIX herald
 * processes (`herald serve` as child processes): two `--roles api`, two `--roles delivery`, two
 * `--roles ingest` following both chains. Every process reaches PostgreSQL through PgBouncer
 * (`databasePreparedStatements: false`) except its LISTEN connection (`listenDatabaseUrl`, direct).
 *
 * API traffic goes through both API processes, blocks are mined (and litecoind reorganised), then:
 *  (a) the ingest process that applied the last block is SIGKILLed, a few times: the other one takes
 *      over; the time from the kill to the next block applied is measured (target <= 5 s) and printed;
 *  (b) a delivery process is SIGKILLed mid-batch (slow receiver): its callbacks are sent again by the
 *      other one once their lease ends (at least once, same idempotencyKey);
 *  (c) PostgreSQL itself restarts (pg_ctl restart -m fast): every process carries on without a restart
 *      of its own, and the LISTEN-based key cache is correct again: a key revoked after the restart
 *      stops working within 1 s through both API processes.
 * Afterwards: no block skipped or applied twice (the ingest processes' "block applied" lines, the
 * BLOCK_MINED callbacks per height), every callback delivered (the receiver got every idempotencyKey
 * of the callbacks table, duplicates only with the same key and body), and no callback for the
 * confirmed event of a transaction whose block was orphaned.
 *
 * Needs litecoind, pgbouncer and PostgreSQL 15 (.ci/run installs them): skipped with a banner when one is
 * missing locally, failed under CI. It runs its own server, so .ci/run's second pass (DATABASE_URL set:
 * the suite against a PostgreSQL 15 server) skips it: it would only run the same thing again.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, createCustomer, type Plan, revokeApiKey } from '../src/store/customers.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { freePort } from '../src/store/embedded.ts';
import { migrate } from '../src/store/migrate.ts';
import { sendEth } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { type HeraldProcess, killAllHeralds, spawnHerald } from './support/herald-process.ts';
import { type LitecoinDriver, litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { type PgBouncer, pgbouncerBinary, startPgBouncer } from './support/pgbouncer.ts';
import { type PostgresServer, postgresBinary, startPostgresServer } from './support/postgres-server.ts';
import { describeWithRealNode, type RealNodeBinary } from './support/real-node.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-topology';
const TAKEOVER_TARGET_MS = 5_000;
/** Short, so that the callbacks of the delivery process killed mid-batch are sent again within the test. */
const LEASE_SECONDS = 4;
const LTC = { blockchain: 'litecoin', network: 'testnet' } as const;
const ETH = { blockchain: 'ethereum', network: 'goerli' } as const;
type ChainName = typeof LTC | typeof ETH;

/** Every binary this file needs, as one: missing when any is. */
function allOf(...binaries: RealNodeBinary[]): RealNodeBinary {
  const missing = binaries.filter((b) => b.path === undefined);
  if (missing.length === 0) return { name: binaries.map((b) => b.name).join(' + '), path: binaries[0]?.path, install: '' };
  return { name: missing.map((b) => b.name).join(' + '), path: undefined, install: missing.map((b) => `${b.name}: ${b.install}`).join('; ') };
}

interface LogLine {
  level: number;
  time: number;
  msg: string;
  blockchain?: string;
  network?: string;
  height?: number;
  hash?: string;
  callbacks?: number;
}

interface Herald {
  role: 'api' | 'delivery' | 'ingest';
  name: string;
  process: HeraldProcess;
  /** api role: http://127.0.0.1:PORT */
  url?: string;
  killedAt?: number;
}

function logsOf(h: Herald): LogLine[] {
  return h.process
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as LogLine];
      } catch {
        return []; // a line cut by SIGKILL
      }
    });
}

const alive = (h: Herald) => h.process.child.exitCode === null && h.process.child.signalCode === null;
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

const suite = process.env.DATABASE_URL ? describe.skip : describe;
// .ci/run's second pass sets DATABASE_URL (the whole suite against a PostgreSQL 15 server): this file
// starts its own PostgreSQL 15 server whatever DATABASE_URL says, so it has run in the first pass already.
suite('multi-process topology', () => {
  describeWithRealNode(
    'six herald processes (2 api, 2 delivery, 2 ingest) behind PgBouncer, processes and PostgreSQL killed and restarted',
    allOf(postgresBinary(), pgbouncerBinary, litecoind),
    () => {
      let pgServer: PostgresServer;
      let bouncer: PgBouncer;
      let ltc: LitecoinDriver;
      let evm: EvmNode;
      let receiver: Receiver;
      let db: Db;
      let dir: string;
      let configFile: string;
      const heralds: Herald[] = []; // every process ever started, killed ones included (their logs count)
      let customer: { id: string; key: string };
      /** Subscriptions made, by referenceId: what callbacks each must get. */
      const blockSubscriptions = new Map<string, ChainName>();
      const minedSubscriptions = new Map<string, { chain: ChainName; transactionId: string }>();
      const addressSubscriptions = new Map<string, { chain: ChainName; address: string; transactionIds: string[] }>();
      /** The litecoin transaction whose block was orphaned: no confirmed callback may name it. */
      let orphaned: string | undefined;
      /** The heights each chain's BLOCK_MINED subscription covers (from the one after it was made). */
      const firstBlockHeight = new Map<ChainName, number>();
      const takeovers: { chain: string; ms: number; mode: string }[] = [];

      const api = () => heralds.filter((h) => h.role === 'api' && alive(h));
      const ofRole = (role: Herald['role']) => heralds.filter((h) => h.role === role && alive(h));

      async function start(role: Herald['role'], name: string): Promise<Herald> {
        const port = role === 'api' ? await freePort() : undefined;
        const process_ = spawnHerald(['--roles', role, '--config', configFile, ...(port ? ['--port', String(port)] : [])], {
          DATABASE_URL: bouncer.url('postgres'),
          HERALD_LISTEN_DATABASE_URL: pgServer.url('postgres'),
          HERALD_DB_PREPARED_STATEMENTS: 'false',
          HERALD_ROLES: '',
          HERALD_CONFIG: '',
          HERALD_PORT: '',
          HERALD_LOG_LEVEL: 'debug',
        });
        const h: Herald = { role, name, process: process_, url: port ? `http://127.0.0.1:${port}` : undefined };
        heralds.push(h);
        await until(
          `${name} to be ready`,
          async () => {
            if (!alive(h)) throw new Error(`${name} exited: ${h.process.output().slice(-3000)}`);
            const logs = logsOf(h);
            if (!logs.some((l) => l.msg === 'herald is ready')) return false;
            // An ingest process is useful once it follows both chains.
            return role !== 'ingest' || logs.filter((l) => l.msg === 'following chain').length === 2;
          },
          60_000,
        );
        return h;
      }

      async function request(h: Herald, method: string, path: string, options: { key?: string; body?: unknown } = {}) {
        const response = await fetch(`${h.url}${path}`, {
          method,
          headers: { 'x-api-key': options.key ?? customer.key, ...(options.body ? { 'content-type': 'application/json' } : {}) },
          body: options.body ? JSON.stringify(options.body) : undefined,
        });
        const text = await response.text();
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        // biome-ignore lint/suspicious/noExplicitAny: test reads arbitrary JSON
        return { status: response.status, text, body: body as any };
      }

      let turn = 0;
      /** Creates a subscription through the API processes in turn. */
      async function subscribe(chain: ChainName, event: string, item: Record<string, unknown>, hook: string): Promise<string> {
        const apis = api();
        const h = apis[turn++ % apis.length] as Herald;
        const res = await request(h, 'POST', `/blockchain-events/${chain.blockchain}/${chain.network}/subscriptions/${event}`, {
          body: { data: { item: { callbackUrl: `${receiver.url}/hooks/${hook}`, callbackSecretKey: SECRET, ...item } } },
        });
        expect(res.status, `${h.name}: ${res.text}`).toBeLessThan(300);
        return res.body.data.item.referenceId as string;
      }

      async function cursor(chain: ChainName): Promise<{ height: number; hash: string } | undefined> {
        const [row] = await db.query<{ height: string; hash: string }>(
          'test:cursor',
          'SELECT height, hash FROM chain_cursors WHERE blockchain = $1 AND network = $2',
          [chain.blockchain, chain.network],
        );
        return row ? { height: Number(row.height), hash: row.hash } : undefined;
      }

      const nodeHeight = async (chain: ChainName) => (chain === LTC ? await ltc.height() : Number(await evm.request<string>('eth_blockNumber')));

      async function processed(chain: ChainName, height?: number) {
        const target = height ?? (await nodeHeight(chain));
        await until(`${chain.blockchain} block ${target} to be processed`, async () => ((await cursor(chain))?.height ?? -1) >= target, 30_000);
      }

      const mine = async (chain: ChainName, count = 1) => (chain === LTC ? await ltc.mine(count) : await evm.mine(count));

      const received = () =>
        receiver.received.map((r) => ({
          path: r.path,
          at: r.receivedAt,
          raw: r.rawBody.toString('utf8'),
          // biome-ignore lint/suspicious/noExplicitAny: callback bodies are arbitrary JSON
          json: JSON.parse(r.rawBody.toString('utf8')) as any,
        }));
      const receivedFor = (referenceId: string) => received().filter((r) => r.json.referenceId === referenceId);

      /** The last 'block applied' line of every live ingest process: who applied the most recent block. */
      function lastApplier(): Herald | undefined {
        let best: { h: Herald; time: number } | undefined;
        for (const h of ofRole('ingest')) {
          const last = logsOf(h)
            .filter((l) => l.msg === 'block applied')
            .at(-1);
          if (last && (!best || last.time > best.time)) best = { h, time: last.time };
        }
        return best?.h;
      }

      const appliedBy = (h: Herald, chain: ChainName, height: number) =>
        logsOf(h).find((l) => l.msg === 'block applied' && l.blockchain === chain.blockchain && l.height === height);

      beforeAll(async () => {
        dir = mkdtempSync(join(tmpdir(), 'herald-topology-'));
        const ca = await createTestCa();
        const caFile = writeCaFile(ca.caPem);
        [pgServer, ltc, evm, receiver] = await Promise.all([
          startPostgresServer(),
          startLitecoinDriver(),
          startEvmNode({ automine: false }),
          startReceiver({ ca }),
        ]);
        bouncer = await startPgBouncer(pgServer.url('postgres'), { poolSize: 10 });
        // The schema first (through PgBouncer, as the processes would): six processes then start on it at once.
        db = createDb(bouncer.url('postgres'), { poolSize: 4, preparedStatements: false, onError: () => undefined });
        await migrate(db);
        const plan: Plan = { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 100_000 };
        const c = await createCustomer(db, 'topology', plan, 100_000_000n);
        await upsertDomain(db, c.id, 'localhost', 'operator');
        customer = { id: c.id, key: (await createApiKey(db, c.id, {})).key };

        configFile = join(dir, 'herald.config.json');
        writeFileSync(
          configFile,
          JSON.stringify({
            host: '127.0.0.1',
            databasePoolSize: 8,
            chains: [
              { ...LTC, rpcUrl: ltc.rpcUrl, ...ltc.chainConfig, confirmations: 2, pollIntervalMs: 1000 },
              { ...ETH, rpcUrl: evm.url, wsUrl: evm.wsUrl, confirmations: 2, pollIntervalMs: 1000 },
            ],
            delivery: { allowNetworks: ['127.0.0.1/32', '::1/128'], caFile, leaseSeconds: LEASE_SECONDS, pollIntervalMs: 500 },
          }),
        );
        await Promise.all([
          start('api', 'api-1'),
          start('api', 'api-2'),
          start('delivery', 'delivery-1'),
          start('delivery', 'delivery-2'),
          start('ingest', 'ingest-1'),
          start('ingest', 'ingest-2'),
        ]);
        await Promise.all([processed(LTC), processed(ETH)]);
      }, 120_000);

      afterAll(async () => {
        // The processes' errors, for whoever reads a failed run (CI keeps only the test output).
        for (const h of heralds) {
          const errors = logsOf(h).filter((l) => l.level >= 50);
          if (errors.length > 0) console.warn(`${h.name}: ${errors.length} error line(s):\n${errors.map((l) => JSON.stringify(l).slice(0, 600)).join('\n')}`);
        }
        killAllHeralds();
        await db?.close().catch(() => undefined);
        await Promise.all([receiver?.close(), ltc?.close(), evm?.close()]);
        await bouncer?.close();
        await pgServer?.close();
        if (dir) rmSync(dir, { recursive: true, force: true });
      });

      it('API traffic through both API processes; blocks on both chains followed and called back; a litecoin reorganisation', { timeout: 60_000 }, async () => {
        expect(api()).toHaveLength(2);
        for (const chain of [LTC, ETH]) {
          blockSubscriptions.set(await subscribe(chain, 'block-mined', {}, `blocks-${chain.blockchain}`), chain);
          firstBlockHeight.set(chain, (await nodeHeight(chain)) + 1);
        }
        // Address subscriptions (confirmed at 2) and payments to them; transaction-mined for each payment.
        for (let i = 0; i < 3; i++) {
          const ltcAddress = await ltc.newAddress();
          const ethAddress = privateKeyToAddress(generatePrivateKey());
          const ltcSub = await subscribe(LTC, 'address-coins-transactions-confirmed', { address: ltcAddress, receiveCallbackOn: 2 }, 'confirmed');
          const ethSub = await subscribe(ETH, 'address-coins-transactions-confirmed', { address: ethAddress, receiveCallbackOn: 2 }, 'confirmed');
          const ltcTx = await ltc.send(ltcAddress, 1_000_000n + BigInt(i));
          const ethTx = (await sendEth(evm, ethAddress as Address, 10n ** 15n + BigInt(i), { from: i + 1, wait: false })).hash as string;
          addressSubscriptions.set(ltcSub, { chain: LTC, address: ltcAddress, transactionIds: [ltcTx] });
          addressSubscriptions.set(ethSub, { chain: ETH, address: ethAddress, transactionIds: [ethTx] });
          minedSubscriptions.set(await subscribe(LTC, 'transaction-mined', { transactionId: ltcTx }, 'mined'), { chain: LTC, transactionId: ltcTx });
          minedSubscriptions.set(await subscribe(ETH, 'transaction-mined', { transactionId: ethTx }, 'mined'), { chain: ETH, transactionId: ethTx });
        }
        // Reads through both API processes too.
        for (const h of api()) {
          const list = await request(h, 'GET', `/blockchain-events/${ETH.blockchain}/${ETH.network}/subscriptions?limit=50`);
          expect(list.status, list.text).toBe(200);
        }
        await Promise.all([mine(LTC), mine(ETH)]);
        await Promise.all([processed(LTC), processed(ETH)]);

        // A payment whose block is orphaned before its second confirmation: litecoind drops the block
        // (invalidateblock) and mines two new ones without it. No confirmed callback may ever name it.
        const [watched] = [...addressSubscriptions.values()].filter((s) => s.chain === LTC);
        orphaned = await ltc.send(watched?.address as string, 2_000_000n);
        const minedAt = await mine(LTC);
        await processed(LTC, minedAt);
        await ltc.reorg(1, { drop: [orphaned] });
        await processed(LTC);
        const after = (await cursor(LTC)) as { height: number; hash: string };
        expect(after.hash).toBe(await ltc.blockHash(after.height));
        expect(heralds.some((h) => logsOf(h).some((l) => l.msg === 'chain reorganisation: rewound to the common ancestor'))).toBe(true);
        await Promise.all([mine(LTC), mine(ETH)]); // the first payments' second confirmation
        await Promise.all([processed(LTC), processed(ETH)]);

        await until('the mined and confirmed callbacks', async () =>
          [...minedSubscriptions.keys(), ...addressSubscriptions.keys()].every((id) => receivedFor(id).length > 0),
        );
        for (const [id, s] of minedSubscriptions) expect(receivedFor(id)[0]?.json.data.item.transactionId).toBe(s.transactionId);
      });

      it('(a) SIGKILL of the ingest process that applied the last block: the other takes over within 5 s', { timeout: 120_000 }, async () => {
        for (let round = 0; round < 3; round++) {
          // Round 0 and 2: killed while idle between blocks; round 1: killed just after a block was mined,
          // likely inside that block's transaction (holding the chain's advisory lock, through PgBouncer).
          const mode = round === 1 ? 'mid-block' : 'idle';
          expect(ofRole('ingest')).toHaveLength(2);
          await Promise.all([processed(LTC), processed(ETH)]);
          const victim = lastApplier() as Herald;
          expect(victim, 'an ingest process has applied a block').toBeDefined();
          const survivor = ofRole('ingest').find((h) => h !== victim) as Herald;
          let heights: number[] = [];
          if (mode === 'mid-block') {
            heights = await Promise.all([mine(LTC), mine(ETH)]);
            await new Promise((r) => setTimeout(r, 30));
          }
          victim.killedAt = Date.now();
          victim.process.child.kill('SIGKILL');
          await victim.process.exited;
          if (mode === 'idle') heights = await Promise.all([mine(LTC), mine(ETH)]);
          const [ltcHeight, ethHeight] = heights as [number, number];
          for (const [chain, height] of [
            [LTC, ltcHeight],
            [ETH, ethHeight],
          ] as const) {
            await processed(chain, height);
            // Applied by the survivor, or by the victim just before it died (mid-block). The line may
            // arrive through the pipe a moment after the block's transaction is visible.
            const line = await until(
              `the line of ${chain.blockchain} block ${height}`,
              async () => appliedBy(survivor, chain, height) ?? (mode === 'mid-block' && appliedBy(victim, chain, height) ? 'victim' : undefined),
              5_000,
            ).catch(async (error) => {
              const who = heralds.filter((h) => appliedBy(h, chain, height)).map((h) => h.name);
              // Mid-block, the victim may have committed the block (processed() above saw the cursor reach it) and
              // been killed before its log line left the process (pino writes asynchronously): the block is
              // applied, and no one logs it. The survivor is alive and would have written its line by now had it
              // applied the block, so it was the victim's.
              if (mode === 'mid-block' && who.length === 0) {
                console.log(`topology: ${chain.blockchain} block ${height} committed by the victim, whose line was lost with it (mid-block round ${round})`);
                return 'victim' as const;
              }
              // Say who did apply it (and what the survivor was doing), so that a failure here can be read.
              const recent = logsOf(survivor)
                .filter((l) => l.blockchain === chain.blockchain)
                .slice(-8)
                .map((l) => `${l.time} ${l.msg}${l.height === undefined ? '' : ` ${l.height}`}`);
              throw new Error(
                `${(error as Error).message} (${mode} round ${round}; cursor ${JSON.stringify(await cursor(chain))}; applied by ${who.join(', ') || 'no process'}; ` +
                  `victim ${victim.name} killed at ${victim.killedAt}; the survivor ${survivor.name}'s last lines: ${recent.join(' | ')})`,
              );
            });
            if (line === 'victim') continue;
            // Mid-block, the survivor may have won the race for the block before the kill: no takeover then.
            if (line.time >= (victim.killedAt as number)) takeovers.push({ chain: chain.blockchain, ms: line.time - (victim.killedAt as number), mode });
          }
          await start('ingest', `ingest-${heralds.filter((h) => h.role === 'ingest').length + 1}`);
        }
        const ms = takeovers.map((t) => t.ms);
        console.log(
          `topology: ingest takeover (SIGKILL to the next block applied by the other ingest process, pollIntervalMs 1000): ` +
            `median ${median(ms)} ms, max ${Math.max(...ms)} ms over ${ms.length} (${takeovers.map((t) => `${t.chain}/${t.mode} ${t.ms}`).join(', ')})`,
        );
        expect(ms.length).toBeGreaterThanOrEqual(4);
        expect(Math.max(...ms)).toBeLessThanOrEqual(TAKEOVER_TARGET_MS);
      });

      it('(b) SIGKILL of a delivery process mid-batch: its callbacks are sent again by the other (same idempotencyKey)', { timeout: 60_000 }, async () => {
        // Each slow callback takes 2 s to answer: the batch is in flight when the process dies.
        receiver.byPath('/hooks/slow', { kind: 'slow-body', status: 200, chunkDelayMs: 250, chunks: 8 });
        const target = (await nodeHeight(ETH)) + 1;
        const slow: string[] = [];
        for (let i = 0; i < 8; i++) slow.push(await subscribe(ETH, 'block-height-reached', { blockHeightReached: target, allowDuplicates: true }, 'slow'));
        const minedAt = Date.now();
        await mine(ETH);
        const slowReceived = () => received().filter((r) => r.path === '/hooks/slow');
        await until('every slow callback to be in flight', async () => slowReceived().length >= slow.length);
        // The process that claimed the most since the block (the block's BLOCK_MINED callback may have gone to the other).
        const claimedSince = (h: Herald) =>
          logsOf(h)
            .filter((l) => l.msg === 'callbacks claimed' && l.time >= minedAt)
            .reduce((n, l) => n + (l.callbacks ?? 0), 0);
        const victim = ofRole('delivery').sort((a, b) => claimedSince(b) - claimedSince(a))[0] as Herald;
        expect(claimedSince(victim)).toBeGreaterThanOrEqual(slow.length / 2);
        victim.killedAt = Date.now();
        victim.process.child.kill('SIGKILL');
        await victim.process.exited;
        // The killed process had sent them but recorded nothing: after the lease they are sent again.
        const before = slowReceived().length;
        await until(
          'the killed process’s callbacks to be sent again',
          async () => slowReceived().length > before && (await pendingCallbacks()) === 0,
          (LEASE_SECONDS + 10) * 1000,
        );
        const keys = new Set(slowReceived().map((r) => r.json.idempotencyKey));
        expect(keys.size).toBe(slow.length);
        for (const id of slow) expect(receivedFor(id).length).toBeGreaterThanOrEqual(1);
        console.log(
          `topology: delivery process killed mid-batch; ${slowReceived().length - slow.length} callback(s) sent again after the ${LEASE_SECONDS} s lease`,
        );
        receiver.byPath('/hooks/slow', { kind: 'status', status: 200 });
        await start('delivery', `delivery-${heralds.filter((h) => h.role === 'delivery').length + 1}`);
      });

      async function pendingCallbacks(): Promise<number> {
        const [row] = await db.query<{ n: number }>('test:pending', "SELECT count(*)::int AS n FROM callbacks WHERE status = 'pending'");
        return row?.n ?? -1;
      }

      it('(c) PostgreSQL restarts: every process carries on, and a key revoked after the restart stops working within 1 s on both API processes', {
        timeout: 60_000,
      }, async () => {
        const running = heralds.filter(alive);
        expect(running).toHaveLength(6);
        const revokee = await createCustomer(db, 'revokee', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 100_000 }, 100_000_000n);
        const key = (await createApiKey(db, revokee.id, {})).key;
        const path = '/wallet-as-a-service/wallets/all-assets';

        // Requests through both API processes all along the restart: answered 200 or 503 (retry), never 500.
        const statuses = new Map<number, number>();
        let restarting = true;
        const probing = (async () => {
          while (restarting) {
            for (const h of api()) {
              // A connection error (status 0) is a failure too, reported below with the process's state.
              const r = await request(h, 'GET', path, { key: customer.key }).catch((error: Error) => ({ status: 0, body: { error: error.cause ?? error } }));
              statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
              if (r.status === 503) expect(r.body?.error?.code).toBe('service_unavailable');
            }
            await new Promise((done) => setTimeout(done, 25));
          }
        })();
        const restartedAt = Date.now();
        await pgServer.restart();
        const restartMs = Date.now() - restartedAt;

        // The change listeners lost their session and are back, by themselves.
        const reconnected = (h: Herald) => logsOf(h).some((l) => l.msg === 'change listener connected again; caches on' && l.time >= restartedAt);
        await until('every process’s change listener to reconnect', async () => running.every(reconnected), 20_000).catch((error: Error) => {
          // Which process, alive or not, and what it said last: the failure must say what to look at.
          const report = running
            .filter((h) => !reconnected(h))
            .map(
              (h) =>
                `${h.name} (${alive(h) ? 'alive' : `exited ${h.process.child.exitCode ?? h.process.child.signalCode}`}):\n${h.process.output().split('\n').slice(-60).join('\n')}`,
            );
          throw new Error(`${error.message}; statuses ${JSON.stringify([...statuses])}\n${report.join('\n\n')}`);
        });
        restarting = false;
        await probing;
        expect(
          [...statuses.keys()].filter((status) => status !== 200 && status !== 503),
          JSON.stringify([...statuses]),
        ).toEqual([]);
        // The key cache of each API process is live again: two requests, one lookup.
        const keyLookups = async (h: Herald) =>
          Number(/herald_db_query_duration_seconds_count\{query="keys:owner"\} (\d+)/.exec((await request(h, 'GET', '/metrics')).text)?.[1] ?? 0);
        for (const h of api()) {
          let last = '';
          await until(`${h.name}'s key cache to be live`, async () => {
            const before = await keyLookups(h);
            const a = await request(h, 'GET', path, { key });
            const b = await request(h, 'GET', path, { key });
            const after = await keyLookups(h);
            last = `${a.status} ${a.text.slice(0, 300)} / ${b.status} / lookups ${before} -> ${after}`;
            return a.status === 200 && b.status === 200 && after - before <= 1;
          }).catch((error) => {
            throw new Error(`${(error as Error).message}; last: ${last}\n${h.process.output().slice(-4000)}`);
          });
        }
        const revokedAt = Date.now();
        expect(await revokeApiKey(db, revokee.id, key.slice(0, 10))).toBe(1);
        for (const h of api()) {
          for (;;) {
            const r = await request(h, 'GET', path, { key });
            if (r.status === 401) break;
            expect(Date.now() - revokedAt, `${h.name}: the revoked key still works`).toBeLessThan(1000);
            await new Promise((done) => setTimeout(done, 20));
          }
        }
        const revokeMs = Date.now() - revokedAt;
        expect(revokeMs).toBeLessThan(1000);

        // Subscriptions made after the restart reach the ingest processes (their LISTEN is back) and
        // their callbacks are delivered; blocks are followed on both chains.
        const ltcTx = await ltc.send(await ltc.newAddress(), 1_500_000n);
        const ethTx = (await sendEth(evm, privateKeyToAddress(generatePrivateKey()), 12345n, { from: 5, wait: false })).hash as string;
        const ids = [
          await subscribe(LTC, 'transaction-mined', { transactionId: ltcTx }, 'mined'),
          await subscribe(ETH, 'transaction-mined', { transactionId: ethTx }, 'mined'),
        ];
        minedSubscriptions.set(ids[0] as string, { chain: LTC, transactionId: ltcTx });
        minedSubscriptions.set(ids[1] as string, { chain: ETH, transactionId: ethTx });
        await Promise.all([mine(LTC), mine(ETH)]);
        await Promise.all([processed(LTC), processed(ETH)]);
        await until('the callbacks of subscriptions made after the restart', async () => ids.every((id) => receivedFor(id).length > 0), 15_000);
        for (const h of running) expect(alive(h), `${h.name} is still the same process`).toBe(true);
        console.log(
          `topology: PostgreSQL restarted in ${restartMs} ms; all 6 processes carried on; API answers meanwhile ${JSON.stringify(Object.fromEntries(statuses))}; ` +
            `revoked key refused by both API processes ${revokeMs} ms after the revocation`,
        );
      });

      it('afterwards: no block skipped or applied twice, every callback delivered, none for the orphaned transaction’s confirmed event', {
        timeout: 60_000,
      }, async () => {
        await Promise.all([mine(LTC), mine(ETH)]);
        await Promise.all([processed(LTC), processed(ETH)]);
        await until('no pending callback', async () => (await pendingCallbacks()) === 0, 20_000);

        // Blocks: each (chain, height, hash) applied once over all ingest processes, killed ones included.
        const applied = new Map<string, string[]>();
        for (const h of heralds.filter((x) => x.role === 'ingest')) {
          for (const l of logsOf(h).filter((x) => x.msg === 'block applied')) {
            const key = `${l.blockchain}/${l.height}/${l.hash}`;
            applied.set(key, [...(applied.get(key) ?? []), h.name]);
          }
        }
        const twice = [...applied].filter(([, by]) => by.length > 1);
        expect(twice, 'blocks applied more than once').toEqual([]);

        // Every height of each chain since the BLOCK_MINED subscription has its callback with the canonical
        // hash (none skipped); the orphaned litecoin block may have one of its own.
        for (const [id, chain] of blockSubscriptions) {
          const top = (await cursor(chain))?.height as number;
          const byHeight = new Map<number, Set<string>>();
          for (const r of receivedFor(id)) {
            const item = r.json.data.item;
            byHeight.set(item.height, (byHeight.get(item.height) ?? new Set()).add(item.hash));
          }
          for (let height = firstBlockHeight.get(chain) as number; height <= top; height++) {
            const canonical =
              chain === LTC
                ? await ltc.blockHash(height)
                : ((await evm.request<{ hash: string }>('eth_getBlockByNumber', [`0x${height.toString(16)}`, false])).hash as string);
            expect(byHeight.get(height)?.has(canonical), `${chain.blockchain} block ${height}: BLOCK_MINED callback`).toBe(true);
          }
        }

        // Every callback in the table delivered and received, under its idempotencyKey; duplicates only
        // with the same key and the same bytes.
        const rows = await db.query<{ subscription_id: string; idempotency_key: string; status: string; body: string }>(
          'test:callbacks',
          'SELECT subscription_id, idempotency_key, status, body FROM callbacks',
        );
        const bodies = new Map<string, Set<string>>();
        for (const r of received()) {
          const key = `${r.json.referenceId}/${r.json.idempotencyKey}`;
          bodies.set(key, (bodies.get(key) ?? new Set()).add(r.raw));
        }
        const undelivered = rows.filter((r) => r.status !== 'delivered' && r.status !== 'cancelled');
        expect(undelivered, 'callbacks not delivered').toEqual([]);
        const byKey = new Map(rows.map((r) => [`${r.subscription_id}/${r.idempotency_key}`, r]));
        for (const row of rows.filter((r) => r.status === 'delivered')) {
          expect(bodies.has(`${row.subscription_id}/${row.idempotency_key}`), `callback ${row.idempotency_key} received`).toBe(true);
        }
        // Whatever was received is a callback of the table (a cancelled one: sent before its block was orphaned), byte for byte.
        for (const [key, got] of bodies) expect([...got], key).toEqual([byKey.get(key)?.body]);

        // The expected callbacks: each mined subscription its transaction, each address its payment.
        for (const [id, s] of minedSubscriptions) expect(receivedFor(id)[0]?.json.data.item.transactionId, s.transactionId).toBe(s.transactionId);
        for (const [id, s] of addressSubscriptions) {
          const named = receivedFor(id).map((r) => r.json.data.item.transactionId as string);
          for (const tx of s.transactionIds) expect(named).toContain(tx);
        }
        // The orphaned block's payment: neither received nor waiting anywhere.
        expect(orphaned).toBeDefined();
        expect(received().filter((r) => r.json.data?.item?.transactionId === orphaned && r.json.eventType === 'ADDRESS_COINS_TRANSACTION_CONFIRMED')).toEqual(
          [],
        );
        expect(rows.filter((r) => r.body.includes(orphaned as string) && r.body.includes('ADDRESS_COINS_TRANSACTION_CONFIRMED'))).toEqual([]);

        const repeats = received().length - bodies.size;
        console.log(
          `topology: ${rows.length} callbacks, ${bodies.size} distinct received (${repeats} repeated, same key and body); ` +
            `${applied.size} blocks applied, none twice, by ${heralds.filter((h) => h.role === 'ingest').length} ingest processes over the run`,
        );
      });
    },
  );
});

/**
 * Bitcoin-family benchmark, two parts (targets from the issue).
 *
 * (a) One big recorded block: mainnet 766391 (1,034 transactions, 3.1 MB of `getblock <hash> 2` JSON,
 *     test/fixtures/bitcoin/mainnet/vivita) normalised by normalizeUtxoBlock and matched (matchBlock)
 *     against an index of 1,000,000 bitcoin/mainnet subscriptions in at most 60 ms (median of 20, after 5
 *     warm-up runs). Normalising and matching are also reported apart. The index mixes 500,000
 *     TRANSACTION_MINED subscriptions (200 of them on transactions of this block) and 500,000
 *     ADDRESS_TOKENS_TRANSACTION_CONFIRMED subscriptions (200 of them on output addresses of this block);
 *     on bitcoin an address subscription matches Omni token transfers only, and the normaliser produces
 *     none, so the address hits cost lookups but give no match. Each run normalises a fresh JSON.parse of
 *     the block (not timed; reported for scale), as the adapter gets it from the node.
 *
 * (b) Catching up: a fake Bitcoin Core node (bench/utxo-fake-node.ts, in a child process of its own so its
 *     serving has its own event loop and its CPU is counted apart) serves a synthetic chain of 500 blocks of
 *     2,000 transactions (about 4.5 MB of getblock verbosity-3 JSON each, rendered once at its start).
 *     - The baseline, in this process: a bare loop fetching blocks 1..500 one after the other with the HTTP
 *       client settings of the service's node client (src/chains/node-http.ts: undici request() on a keep-alive
 *       Agent, the body read to text): getblockhash, then getblock <hash> 3 (the verbosity the adapter settles
 *       on with this node), JSON.parse. For scale, the same loop through the service's own client
 *       (createUtxoRpcClient: it also rewrites amounts to decimal text before parsing).
 *     - The service: `herald serve --roles ingest` following bitcoin/testnet on that node from height 1 to 500
 *       through the chain registry's adapter (createChainAdapter, as the service runs it) and the ingest
 *       pipeline into embedded PostgreSQL, with a fresh copy of a template database per run (CREATE DATABASE
 *       ... TEMPLATE): 100,000 subscriptions (50,000 TRANSACTION_MINED, 500 of them on transactions of the
 *       chain, one per block; 50,000 ADDRESS_TOKENS_TRANSACTION_CONFIRMED, 200 of them on addresses the chain
 *       pays, which match Omni transfers only, of which this node has none) and 100 wallets of 5 addresses, 400
 *       of them paid in the chain (the node has no scantxoutset, so their opening is unknown; the ledger still
 *       records their outputs and movements). Measured from its 'following chain' log line to the commit of
 *       block 500 (chain_cursors.updated_at): blocks/s and transactions/s, median of 3 runs; RSS (max) and each
 *       process's CPU. Run with the chain's blockWorkers at 0 (blocks read on the main thread), 1 and 2
 *       (BENCH_UTXO_WORKERS, default 0,1,2). Target: at least 70 % of the bare loop's blocks/s, each run against
 *       a bare loop measured just before it (the median of those ratios; the first bare loop is kept for scale).
 *
 * BENCH_DURATION does not apply: the work is fixed. Experiments (reported under `experiment`): BENCH_UTXO_PART=a
 * or b runs one part only; BENCH_UTXO_WORKERS lists part (b)'s blockWorkers settings; BENCH_UTXO_BLOCKS, BENCH_UTXO_TX_PER_BLOCK and BENCH_UTXO_RUNS change part (b)'s work;
 * BENCH_SERVER_NODE_ARGS adds node arguments for the service (e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof').
 * Duration on 2 cores: part (a) about 30 s; part (b) about a minute to build the chain, then a few minutes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { Agent, request as undiciRequest } from 'undici';
import type { NormalizedBlock } from '../src/chains/types.ts';
import { type CompactUtxoBlock, decodeCompactBlock, encodeCompactBlock } from '../src/chains/utxo/compact-block.ts';
import { normalizeUtxoBlock } from '../src/chains/utxo/normalize.ts';
import { createUtxoRpcClient } from '../src/chains/utxo/rpc.ts';
import type { RpcBlock } from '../src/chains/utxo/rpc-types.ts';
import { loadConfig } from '../src/config/config.ts';
import { validateAddress } from '../src/domain/addresses.ts';
import type { IndexableSubscription } from '../src/domain/subscriptions.ts';
import { SubscriptionIndex } from '../src/matching/index.ts';
import { matchBlock } from '../src/matching/match.ts';
import { createCustomer } from '../src/store/customers.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { insertWallet } from '../src/store/wallets.ts';
import {
  type Child,
  envInt,
  firstStdoutLine,
  type IngestRun,
  ingestRun,
  log,
  machineBusySeconds,
  measureCpu,
  median,
  mix,
  percentile,
  postmasterPid,
  processCpuSeconds,
  ROOT,
  removeDataDirOnCleanup,
  runCleanups,
  selfCpuSeconds,
  startChild,
} from './lib.ts';
import type { FakeUtxoNodeInfo } from './utxo-fake-node.ts';

const BLOCK_FILE = join(ROOT, 'test', 'fixtures', 'bitcoin', 'mainnet', 'vivita', 'getblock_2_height766391_00000000000000000001ed7f.json');
const BLOCK_TRANSACTIONS = 1034;
const SUBSCRIPTIONS = { transaction: 500_000, address: 500_000 };
const HITS = { transaction: 200, address: 200 };
const CUSTOMERS = 1000;
const WARMUP = 5;
const MEASURED = 20;
const TARGETS = { blockMsMedian: 60, ratioToBare: 0.7 };
const CHAIN = { blockchain: 'bitcoin', network: 'mainnet' } as const;

const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

const HEX_CODES = Buffer.from('0123456789abcdef');
const BECH32_CODES = Buffer.from('qpzry9x8gf2tvdw0s3jn54khce6mua7l');
const scratch = Buffer.alloc(128);

/** `words` 32-bit words of lower-case hex from (salt, i), as one flat string (as pg and JSON.parse make them). */
function hexWords(salt: number, i: number, words: number): string {
  let at = 0;
  for (let w = 0; w < words; w++) {
    const word = mix(i, salt * 16 + w);
    for (let shift = 28; shift >= 0; shift -= 4) scratch[at++] = HEX_CODES[(word >>> shift) & 15] as number;
  }
  return scratch.toString('latin1', 0, at);
}

/** A v4-shaped UUID from i. */
function uuid(i: number): string {
  let at = 0;
  for (let w = 0; w < 4; w++) {
    const word = mix(i, 1 + w);
    for (let shift = 28; shift >= 0; shift -= 4) {
      if (at === 8 || at === 13 || at === 18 || at === 23) scratch[at++] = 45; // -
      scratch[at++] = HEX_CODES[(word >>> shift) & 15] as number;
    }
  }
  scratch[14] = 52; // version 4
  return scratch.toString('latin1', 0, 36);
}

/**
 * A P2WPKH-shaped mainnet address (bc1q + 38 bech32 characters) from i. Its checksum is not computed:
 * the index compares strings and never validates (the API validated them), and encoding 500,000 real
 * bech32 addresses would take most of the set-up time.
 */
function segwitAddress(i: number): string {
  scratch.write('bc1q', 0, 'latin1');
  let at = 4;
  for (let w = 0; at < 42; w++) {
    const word = mix(i, 32 + w);
    for (let shift = 0; shift < 30 && at < 42; shift += 5) scratch[at++] = BECH32_CODES[(word >>> shift) & 31] as number;
  }
  return scratch.toString('latin1', 0, 42);
}

// ---------------------------------------------------------------------------------------------------
// (a) The recorded block, normalised and matched.

function buildIndex(hitTransactions: string[], hitAddresses: string[]): { index: SubscriptionIndex; addMs: number; wallMs: number } {
  const started = performance.now();
  const total = SUBSCRIPTIONS.transaction + SUBSCRIPTIONS.address;
  const index = new SubscriptionIndex('bitcoin', 'mainnet', { expectedSize: total });
  // Interleaved 1:1; the hits are spread over the whole index.
  const hitEvery = Math.floor(SUBSCRIPTIONS.transaction / HITS.transaction);
  const BATCH = 10_000;
  let addMs = 0;
  for (let start = 0; start < total; start += BATCH) {
    const batch: IndexableSubscription[] = [];
    for (let i = start; i < Math.min(total, start + BATCH); i++) {
      const k = i >> 1;
      const hit = k % hitEvery === 0 ? k / hitEvery : -1;
      const common = { id: uuid(i), customerId: String(1 + (i % CUSTOMERS)), blockchain: 'bitcoin', network: 'mainnet', isActive: true } as const;
      batch.push(
        i % 2 === 0
          ? {
              ...common,
              eventType: 'TRANSACTION_MINED',
              target: hitTransactions[hit] ?? hexWords(3, k, 8),
              receiveCallbackOn: null,
              amountHigherThan: null,
            }
          : {
              ...common,
              eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
              target: hitAddresses[hit] ?? segwitAddress(k),
              receiveCallbackOn: 1 + (k % 6),
              amountHigherThan: null,
            },
      );
    }
    const t0 = performance.now();
    for (const sub of batch) index.add(sub);
    addMs += performance.now() - t0;
  }
  if (index.size !== total) throw new Error(`the index holds ${index.size} subscriptions, not ${total}`);
  return { index, addMs, wallMs: performance.now() - started };
}

/**
 * For the breakdown: what validating each distinct address of the block once costs (the normaliser validates
 * every address it meets once per block, to normalise it as subscriptions are). Median of 20 passes over fresh
 * copies of the strings.
 */
function addressValidation(text: string): { distinctAddresses: number; validateAddressUsEach: number; msPerBlock: number } {
  const addresses = [...new Set(text.match(/"address":"[^"]+"/g) ?? [])].map((m) => m.slice(11, -1));
  const each: number[] = [];
  for (let pass = 0; pass < 25; pass++) {
    const fresh = addresses.map((a) => Buffer.from(a, 'latin1').toString('latin1'));
    const t0 = performance.now();
    for (const a of fresh) validateAddress('bitcoin', 'mainnet', a);
    if (pass >= 5) each.push(((performance.now() - t0) * 1000) / fresh.length);
  }
  const us = median(each);
  return { distinctAddresses: addresses.length, validateAddressUsEach: round(us, 2), msPerBlock: round((us * addresses.length) / 1000, 1) };
}

/**
 * What a block worker's answer costs the main thread (v8.deserialize is the structured clone's receiving
 * half, as postMessage does it): the normalised block as plain objects, against the compact form
 * (compact-block.ts) and building the objects from it. Median of 20 after 5 warm-up runs.
 */
function crossing(block: NormalizedBlock): Record<string, unknown> {
  const plain = serialize(block);
  const { compact } = encodeCompactBlock(block);
  const packed = serialize(compact);
  const times = { plainMs: [] as number[], compactMs: [] as number[], encodeMs: [] as number[] };
  for (let run = 0; run < WARMUP + MEASURED; run++) {
    const t0 = performance.now();
    deserialize(plain);
    const t1 = performance.now();
    decodeCompactBlock(deserialize(packed) as CompactUtxoBlock);
    const t2 = performance.now();
    encodeCompactBlock(block);
    const t3 = performance.now();
    if (run < WARMUP) continue;
    times.plainMs.push(t1 - t0);
    times.compactMs.push(t2 - t1);
    times.encodeMs.push(t3 - t2);
  }
  const figures = {
    plainObjects: { bytes: plain.length, mainThreadMs: round(median(times.plainMs)) },
    compact: { bytes: packed.length, mainThreadMs: round(median(times.compactMs)), workerEncodeMs: round(median(times.encodeMs)) },
  };
  log(
    `(a) a worker's answer on the main thread: plain objects ${figures.plainObjects.mainThreadMs} ms (${plain.length} bytes), compact ${figures.compact.mainThreadMs} ms (${packed.length} bytes)`,
  );
  return figures;
}

async function recordedBlock(): Promise<Record<string, unknown>> {
  const text = readFileSync(BLOCK_FILE, 'utf8');
  const first = normalizeUtxoBlock({ block: JSON.parse(text) as RpcBlock }, CHAIN);
  if (first.height !== 766391 || first.transactionIds.length !== BLOCK_TRANSACTIONS) {
    throw new Error(`block 766391 normalised to height ${first.height} with ${first.transactionIds.length} transactions`);
  }
  // Every 5th transaction and every 5th output address (in order of appearance) of the block: 200 each.
  const step = (n: number, of: number) => Math.max(1, Math.floor(of / n));
  const hitTransactions = first.transactionIds.filter((_, i) => i % step(HITS.transaction, first.transactionIds.length) === 0).slice(0, HITS.transaction);
  const credited = [...new Set(first.coinMovements.filter((m) => m.delta > 0n).map((m) => m.address))];
  const hitAddresses = credited.filter((_, i) => i % step(HITS.address, credited.length) === 0).slice(0, HITS.address);
  if (hitTransactions.length !== HITS.transaction || hitAddresses.length !== HITS.address) throw new Error('not enough hits in block 766391');

  log(`(a) building an index of ${(SUBSCRIPTIONS.transaction + SUBSCRIPTIONS.address).toLocaleString('en')} bitcoin/mainnet subscriptions ...`);
  const { index, addMs, wallMs } = buildIndex(hitTransactions, hitAddresses);
  log(`(a) index built in ${Math.round(addMs)} ms of add() (${Math.round(wallMs)} ms with row generation)`);

  const normalizeTimes: number[] = [];
  const matchTimes: number[] = [];
  const totalTimes: number[] = [];
  const parseTimes: number[] = [];
  let matches = 0;
  for (let run = 0; run < WARMUP + MEASURED; run++) {
    const p0 = performance.now();
    const block = JSON.parse(text) as RpcBlock;
    const t0 = performance.now();
    const normalized = normalizeUtxoBlock({ block }, CHAIN);
    const t1 = performance.now();
    const found = matchBlock(index, normalized, 'bitcoin');
    const t2 = performance.now();
    if (found.length !== HITS.transaction || found.some((m) => m.eventType !== 'TRANSACTION_MINED')) {
      throw new Error(`block 766391 matched ${found.length} subscriptions, expected the ${HITS.transaction} TRANSACTION_MINED hits`);
    }
    matches = found.length;
    if (run < WARMUP) continue;
    parseTimes.push(t0 - p0);
    normalizeTimes.push(t1 - t0);
    matchTimes.push(t2 - t1);
    totalTimes.push(t2 - t0);
  }
  const figures = (times: number[]) => {
    const sorted = [...times].sort((a, b) => a - b);
    return { median: round(median(times)), p90: round(percentile(sorted, 90) ?? 0), min: round(sorted[0] ?? 0), max: round(sorted.at(-1) ?? 0) };
  };
  const total = figures(totalTimes);
  log(
    `(a) block 766391: normalise + match median ${total.median} ms (target <= ${TARGETS.blockMsMedian} ms); ` +
      `normalise ${round(median(normalizeTimes))} ms, match ${round(median(matchTimes))} ms; JSON.parse ${round(median(parseTimes))} ms (not counted)`,
  );
  return {
    block: { height: 766391, transactions: first.transactionIds.length, coinMovements: first.coinMovements.length, jsonBytes: text.length },
    subscriptions: { ...SUBSCRIPTIONS, hits: HITS, customers: CUSTOMERS, buildMs: Math.round(addMs), buildWallMs: Math.round(wallMs) },
    runs: { warmup: WARMUP, measured: MEASURED },
    matchesPerRun: matches,
    normalizeAndMatchMs: total,
    normalizeMs: figures(normalizeTimes),
    matchMs: figures(matchTimes),
    jsonParseMsMedian: round(median(parseTimes)),
    breakdown: addressValidation(text),
    crossing: crossing(first),
    pass: total.median <= TARGETS.blockMsMedian,
  };
}

// ---------------------------------------------------------------------------------------------------
// (b) Catching up from a fake node.

const FAKE_NODE = join(ROOT, 'bench', 'utxo-fake-node.ts');
const CHAIN_B = { blockchain: 'bitcoin', network: 'testnet' } as const;
/** The chain entry's default concurrency. */
const CONCURRENCY = 8;
const SUBS_B = { transaction: 50_000, address: 50_000, matchingAddresses: 200 };
const WALLETS = 100;
const ADDRESSES_PER_WALLET = 5;
const WATCHED_CHAIN_ADDRESSES = 400;
/** The service's runs: the chain's blockWorkers setting (0: blocks read on the main thread, as before workers). */
const DEFAULT_WORKER_COUNTS = '0,1,2';

/** Starts the fake node child and waits for its one line of FakeUtxoNodeInfo (the chain is rendered by then). */
async function startFakeNode(blocks: number, txPerBlock: number): Promise<{ child: Child; info: FakeUtxoNodeInfo }> {
  // A larger young generation: rendering the chain makes mostly short-lived strings.
  const child = startChild(process.execPath, ['--max-semi-space-size=64', '--import', 'tsx', FAKE_NODE, '--child', String(blocks), String(txPerBlock)], {
    label: 'fake Bitcoin node',
  });
  return { child, info: await firstStdoutLine<FakeUtxoNodeInfo>(child, { what: 'fake Bitcoin node', timeoutMs: 900_000, intervalMs: 100 }) };
}

interface LoopFigures {
  blocks: number;
  transactions: number;
  seconds: number;
  blocksPerSecond: number;
  transactionsPerSecond: number;
  /** Of JSON read (counted by the bare client only). */
  megabytes?: number;
}

type Fetch = (method: string, params: unknown[]) => Promise<unknown>;

/** The service client's HTTP settings (src/chains/node-http.ts): undici request() on a keep-alive Agent, Basic auth, the body read to text, JSON.parse. */
function bareClient(info: FakeUtxoNodeInfo, bytes: { n: number }): { fetch: Fetch; close(): Promise<void> } {
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  const authorization = `Basic ${Buffer.from(`${info.user}:${info.password}`).toString('base64')}`;
  let id = 0;
  return {
    async fetch(method, params) {
      const response = await undiciRequest(info.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify({ jsonrpc: '1.0', id: ++id, method, params }),
        dispatcher: agent,
      });
      const chunks: Buffer[] = [];
      for await (const chunk of response.body as AsyncIterable<Buffer>) chunks.push(chunk);
      const text = (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8');
      bytes.n += text.length;
      const answer = JSON.parse(text) as { result?: unknown; error?: { message: string } | null };
      if (response.statusCode !== 200 || answer.error) throw new Error(`${method}: HTTP ${response.statusCode} ${answer.error?.message ?? ''}`);
      return answer.result;
    },
    close: () => agent.close(),
  };
}

/** The service's own node client (it also rewrites the amounts to decimal text before parsing). */
function serviceClient(info: FakeUtxoNodeInfo): { fetch: Fetch; close(): Promise<void> } {
  const rpc = createUtxoRpcClient({ url: info.url, auth: { user: info.user, password: info.password } });
  return { fetch: (method, params) => rpc.request(method, params), close: () => rpc.close() };
}

/** getblockhash then getblock <hash> 3, block after block. */
async function bareLoop(client: { fetch: Fetch; close(): Promise<void> }, heights: number[], bytes?: { n: number }): Promise<LoopFigures> {
  let transactions = 0;
  const started = performance.now();
  try {
    for (const h of heights) {
      const hash = await client.fetch('getblockhash', [h]);
      const block = (await client.fetch('getblock', [hash, 3])) as { height: number; tx: unknown[] };
      if (block.height !== h) throw new Error(`block ${h} answered as ${block.height}`);
      transactions += block.tx.length;
    }
  } finally {
    await client.close();
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    blocks: heights.length,
    transactions,
    seconds: round(seconds, 2),
    blocksPerSecond: round(heights.length / seconds, 2),
    transactionsPerSecond: Math.round(transactions / seconds),
    ...(bytes && { megabytes: round(bytes.n / 1e6, 1) }),
  };
}

interface Seeded {
  subscriptions: number;
  matchingTransactions: number;
  matchingAddresses: number;
  walletAddresses: number;
  watchedChainAddresses: number;
  seedMs: number;
}

async function seed(database: OpenDatabase, info: FakeUtxoNodeInfo): Promise<Seeded> {
  const started = performance.now();
  const db = database.db;
  const customer = await createCustomer(db, 'bench', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n);
  const randomTxid = () => randomBytes(32).toString('hex');
  // Testnet P2WPKH addresses nobody pays (the index compares strings; they need not be valid).
  const idleAddress = (i: number) => `tb1q${i.toString(36).padStart(38, 'q')}`;
  type Row = [eventType: string, transactionId: string | null, address: string | null, target: string, receiveOn: number | null];
  const rows: Row[] = [];
  for (let i = 0; i < SUBS_B.transaction; i++) {
    const txid = info.minedSample[i] ?? randomTxid();
    rows.push(['TRANSACTION_MINED', txid, null, txid, null]);
  }
  const matching = info.paidAddresses.slice(0, SUBS_B.matchingAddresses);
  for (let i = 0; i < SUBS_B.address; i++) {
    const address = matching[i] ?? idleAddress(i);
    const normalized = validateAddress(CHAIN_B.blockchain, CHAIN_B.network, address);
    rows.push(['ADDRESS_TOKENS_TRANSACTION_CONFIRMED', null, address, normalized.ok ? normalized.normalized : address, 1 + (i % 5)]);
  }
  const CHUNK = 20_000;
  await db.transaction('bench:seed-subscriptions', async (tx) => {
    // No announcement per row: nobody listens yet.
    await tx.query('bench:replica', 'SET LOCAL session_replication_role = replica');
    for (let start = 0; start < rows.length; start += CHUNK) {
      const chunk = rows.slice(start, start + CHUNK);
      await tx.query(
        'bench:insert-subscriptions',
        `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, address, target, receive_callback_on,
           callback_url, callback_host, callback_secret_key, allow_duplicates, duplicate_key, api_version)
         SELECT id, $1, event_type, $2, $3, transaction_id, address, target, receive_on,
           'https://hooks.example.com/bench/' || n, 'hooks.example.com', 'bench-secret', true, key, '2021-03-20'
         FROM unnest($4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::bytea[])
           WITH ORDINALITY AS s (id, event_type, transaction_id, address, target, receive_on, key, n)`,
        [
          customer.id,
          CHAIN_B.blockchain,
          CHAIN_B.network,
          chunk.map(() => randomUUID()),
          chunk.map((r) => r[0]),
          chunk.map((r) => r[1]),
          chunk.map((r) => r[2]),
          chunk.map((r) => r[3]),
          chunk.map((r) => r[4]),
          chunk.map(() => randomBytes(32)),
        ],
      );
    }
  });
  // Wallets: addresses the chain pays, and addresses it never touches.
  const watched = info.paidAddresses.slice(0, WATCHED_CHAIN_ADDRESSES);
  const walletIds: string[] = [];
  for (let w = 0; w < WALLETS; w++) walletIds.push((await insertWallet(db, customer.id, randomUUID(), `bench-${w}`)).id);
  const addresses = Array.from({ length: WALLETS * ADDRESSES_PER_WALLET }, (_, i) => watched[i] ?? idleAddress(1_000_000 + i));
  await db.query(
    'bench:insert-wallet-addresses',
    `INSERT INTO wallet_addresses (wallet_id, blockchain, network, address, normalized_address)
     SELECT w, $3, $4, a, a FROM unnest($1::uuid[], $2::text[]) AS s (w, a)`,
    [addresses.map((_, i) => walletIds[i % WALLETS]), addresses, CHAIN_B.blockchain, CHAIN_B.network],
  );
  await db.query('bench:analyze', 'ANALYZE');
  return {
    subscriptions: rows.length,
    matchingTransactions: Math.min(SUBS_B.transaction, info.minedSample.length),
    matchingAddresses: matching.length,
    walletAddresses: addresses.length,
    watchedChainAddresses: watched.length,
    seedMs: Math.round(performance.now() - started),
  };
}

interface ServiceRun extends Omit<IngestRun<'callbacks' | 'pendingEvents' | 'ledgerEntries'>, 'committedAt' | 'readyMs'> {
  blocksPerSecond: number;
  transactionsPerSecond: number;
}

async function serviceRun(
  run: number,
  options: {
    baseUrl: string;
    info: FakeUtxoNodeInfo;
    dataDir: string;
    nodePid: number;
    postgresPid: number | undefined;
    nodeArgs: string[];
    blockWorkers: number;
  },
): Promise<ServiceRun> {
  const { info } = options;
  const r = await ingestRun({
    run,
    baseUrl: options.baseUrl,
    database: `bench_utxo_run_${options.blockWorkers}_${run}`,
    dataDir: options.dataDir,
    chain: {
      ...CHAIN_B,
      rpcUrl: info.url,
      rpcUser: info.user,
      rpcPassword: info.password,
      pollIntervalMs: 2000,
      startHeight: info.first,
      concurrency: CONCURRENCY,
      blockWorkers: options.blockWorkers,
    },
    last: info.last,
    nodeArgs: options.nodeArgs,
    nodePid: options.nodePid,
    postgresPid: options.postgresPid,
    timeoutMs: 1_800_000,
    followTimeoutMs: 120_000,
    progress: { everyMs: 10_000, line: (height) => `cursor at ${height} of ${info.last}` },
    counts: {
      callbacks: 'SELECT count(*) AS n FROM callbacks',
      pendingEvents: 'SELECT count(*) AS n FROM pending_events',
      ledgerEntries: 'SELECT count(*) AS n FROM ledger_entries',
    },
  });
  const blocks = info.last - info.first + 1;
  return {
    blocksPerSecond: round(blocks / r.seconds, 2),
    transactionsPerSecond: Math.round((blocks * info.txPerBlock) / r.seconds),
    seconds: round(r.seconds, 2),
    followingMs: r.followingMs,
    maxRssMb: round(r.maxRssMb, 1),
    cpuPct: r.cpuPct,
    work: r.work,
    stepFailures: r.stepFailures,
  };
}

async function catchUp(): Promise<Record<string, unknown>> {
  const blocks = envInt('BENCH_UTXO_BLOCKS', 500);
  const txPerBlock = envInt('BENCH_UTXO_TX_PER_BLOCK', 2000);
  const runs = envInt('BENCH_UTXO_RUNS', 3);
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const workersText = process.env.BENCH_UTXO_WORKERS ?? DEFAULT_WORKER_COUNTS;
  const workerCounts = workersText.split(',').map((w) => Number(w.trim()));
  if (workerCounts.some((w) => !Number.isInteger(w) || w < 0))
    throw new Error(`BENCH_UTXO_WORKERS must list worker counts (e.g. 0,1,2), not '${workersText}'.`);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-utxo-'));
  let database: OpenDatabase | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.embedded?.stop());
  try {
    log(`(b) rendering ${blocks} blocks of ${txPerBlock} transactions in the fake node (child process) ...`);
    const [{ child: node, info }, opened] = await Promise.all([
      startFakeNode(blocks, txPerBlock),
      openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 4 }),
    ]);
    database = opened;
    log(
      `(b) fake node ${info.url}: blocks ${info.first}..${info.last}, ${round(info.bytes / 1e6, 1)} MB of verbosity-3 JSON, rendered in ${info.generateMs} ms`,
    );
    const seeded = await seed(database, info);
    log(`(b) template database: ${seeded.subscriptions} subscriptions, ${seeded.walletAddresses} wallet addresses, in ${seeded.seedMs} ms`);
    await database.db.close(); // the template must have no connection while it is copied
    const baseUrl = database.url;
    const postgresPid = postmasterPid(dataDir);

    const heights = Array.from({ length: info.last - info.first + 1 }, (_, i) => info.first + i);
    const baseline = async (label: string, loop: () => Promise<LoopFigures>) => {
      const cpu = measureCpu({ node: () => processCpuSeconds(node.pid), loop: selfCpuSeconds, machine: machineBusySeconds });
      const figures = await loop();
      const cpuPct = cpu.stop();
      log(
        `(b) ${label}: ${figures.blocks} blocks in ${figures.seconds} s = ${figures.blocksPerSecond} blocks/s, ${figures.transactionsPerSecond} tx/s (CPU % ${JSON.stringify(cpuPct)})`,
      );
      return { ...figures, cpuPct };
    };
    await bareLoop(bareClient(info, { n: 0 }), heights.slice(0, 20)); // warm-up: connections, JIT
    const bare = await baseline('bare loop (getblockhash + getblock 3, JSON.parse): the target baseline', () => {
      const bytes = { n: 0 };
      return bareLoop(bareClient(info, bytes), heights, bytes);
    });
    const withClient = await baseline("the same loop through the service's node client", () => bareLoop(serviceClient(info), heights));

    const byWorkers: Record<string, unknown> = {};
    const ratios: Record<string, number> = {};
    for (const blockWorkers of workerCounts) {
      const results: (ServiceRun & { bareBlocksPerSecond: number; ratioToBare: number })[] = [];
      for (let run = 1; run <= runs; run++) {
        // Each run against a bare loop measured just before it: on a shared machine the bare loop alone
        // varied by up to a third between invocations (16.3 and 25.6 blocks/s on 2026-11-28), so one
        // baseline for the whole series said as much about the machine's minute as about the service.
        const bareNow = await baseline(`bare loop before blockWorkers ${blockWorkers}, run ${run}`, () => bareLoop(bareClient(info, { n: 0 }), heights));
        const r = await serviceRun(run, { baseUrl, info, dataDir, nodePid: node.pid, postgresPid, nodeArgs, blockWorkers });
        const ratio = round(r.blocksPerSecond / bareNow.blocksPerSecond, 3);
        log(
          `(b) blockWorkers ${blockWorkers}, run ${run}: ${blocks} blocks in ${r.seconds} s = ${r.blocksPerSecond} blocks/s, ${r.transactionsPerSecond} tx/s ` +
            `(${ratio} of the bare loop just before it, ${round(r.blocksPerSecond / bare.blocksPerSecond, 3)} of the first); RSS max ${r.maxRssMb} MB; CPU % ${JSON.stringify(r.cpuPct)}; work ${JSON.stringify(r.work)}` +
            (r.stepFailures > 0 ? `; ${r.stepFailures} failed steps (retried)` : ''),
        );
        results.push({ ...r, bareBlocksPerSecond: bareNow.blocksPerSecond, ratioToBare: ratio });
      }
      const blocksPerSecond = median(results.map((r) => r.blocksPerSecond));
      const ratioToBare = median(results.map((r) => r.ratioToBare));
      const maxRssMb = Math.max(...results.map((r) => r.maxRssMb));
      log(
        `(b) blockWorkers ${blockWorkers}: median ${blocksPerSecond} blocks/s; median ratio to the bare loop before each run ${ratioToBare} (target >= ${TARGETS.ratioToBare}); RSS max ${maxRssMb} MB`,
      );
      ratios[blockWorkers] = ratioToBare;
      byWorkers[blockWorkers] = {
        runs: results,
        blocksPerSecond,
        transactionsPerSecond: median(results.map((r) => r.transactionsPerSecond)),
        ratioToBare,
        ratioToServiceClientLoop: round(blocksPerSecond / withClient.blocksPerSecond, 3),
        maxRssMb,
      };
    }
    const best = Math.max(...workerCounts.filter((w) => w > 0).map((w) => ratios[w] ?? 0), 0);
    return {
      ...((blocks !== 500 || txPerBlock !== 2000 || runs !== 3 || nodeArgs.length > 0 || workersText !== DEFAULT_WORKER_COUNTS) && {
        experiment: { blocks, txPerBlock, runs, serverNodeArgs: nodeArgs, blockWorkers: workerCounts },
      }),
      chain: { ...CHAIN_B, blocks, transactionsPerBlock: txPerBlock, verbosity3Megabytes: round(info.bytes / 1e6, 1), renderMs: info.generateMs },
      seeded,
      concurrency: CONCURRENCY,
      baselines: { bare, serviceClient: withClient },
      service: { roles: ['ingest'], byBlockWorkers: byWorkers },
      ratioToBareByBlockWorkers: ratios,
      pass: best >= TARGETS.ratioToBare,
    };
  } finally {
    await runCleanups();
  }
}

// ---------------------------------------------------------------------------------------------------

export default async function utxoBlockBenchmark(): Promise<Record<string, unknown>> {
  const part = process.env.BENCH_UTXO_PART ?? '';
  if (part !== '' && part !== 'a' && part !== 'b') throw new Error(`BENCH_UTXO_PART must be a or b, not '${part}'.`);
  const a = part === 'b' ? undefined : await recordedBlock();
  const b = part === 'a' ? undefined : await catchUp();
  const pass = { ...(a && { recordedBlockMs: a.pass as boolean }), ...(b && { catchUpRatio: b.pass as boolean }) };
  return {
    bench: 'utxo-block',
    node: process.version,
    ...(part !== '' && { experiment: { part } }),
    ...(a && { recordedBlock: a }),
    ...(b && { catchUp: b }),
    loadavg1m: round(loadavg()[0] ?? 0, 2),
    targets: { recordedBlockMsMedian: `<=${TARGETS.blockMsMedian}`, catchUpRatioToBare: `>=${TARGETS.ratioToBare}` },
    pass: { ...pass, all: Object.values(pass).every(Boolean) },
  };
}

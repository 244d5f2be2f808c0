/**
 * The EVM ingest benchmark, on two real nodes, each in its own run (BENCH_EVM_NODES=anvil,edr, the default;
 * `anvil` or `edr` for one):
 *
 * - Anvil (the target, issue 16): "herald's catch-up >= 0.7 of a bare loop that fetches, for each block,
 *   exactly what herald needs from that node (block with transactions, block receipts, block traces), with
 *   the same HTTP settings, with 100,000 subscriptions and 500 watched addresses". Anvil serves
 *   eth_getBlockReceipts and trace_block (and debug_traceBlockByNumber, which it answers by re-executing the
 *   block: 0.5 to 1 s for 50 transactions, so herald asks trace_block first, as the baseline does). The
 *   baseline asks the three at once for each block, block after block, on undici's request() with the pool
 *   settings of herald's node client.
 * - EDR, the per-transaction tracing path (the earlier target: "at least 70 % of the blocks/s of a bare viem
 *   loop fetching the same blocks and receipts"): EDR has no block-level method, so herald asks a receipt per
 *   transaction and a trace per transaction that can move value. Its figures are kept for that path.
 *
 * Processes:
 *   - the node: Anvil (test/support/anvil-node.ts, a process started by the node child) or an EDR node
 *     (test/support/evm-node.ts, inside the node child), the node child being this file run with
 *     --node-child, so the node's HTTP serving has its own event loop and its CPU is counted apart. It
 *     builds the chain with automine off: 50 transactions per block (15 ETH transfers, 15 ERC-20
 *     transfers, 5 ERC-721 mints and 5 transfers of the minted tokens, 5 Forwarder.forward and 5
 *     Forwarder.split calls: 15 internal transfers per block, one of 5 ETH every 10th block), signed
 *     by the node (eth_sendTransaction with the nonces given, straight to EDR's provider or over HTTP to
 *     Anvil, from 20 funded accounts, to a pool of 20,000 addresses), then evm_mine;
 *   - this process: owns the embedded PostgreSQL of a fresh temporary data directory, seeds a template
 *     database (100,000 subscriptions in bulk, 100 wallets of 5 watched addresses), and runs the bare
 *     loops (the baseline);
 *   - the service under test: `herald serve --roles ingest` (delivery is not part of ingest
 *     throughput: callbacks stay queued), with DATABASE_URL on a fresh copy of the template for each
 *     run (CREATE DATABASE ... TEMPLATE) and the chain's startHeight at the first built block.
 *
 * What is measured on Anvil: the bare block-level loop above (the target's baseline) and the service.
 *
 * What is measured on EDR, on the same heights and the same node:
 *   - that path's baseline: a bare viem loop (viem's HTTP transport, raw JSON through client.request,
 *     no formatting): eth_getBlockByNumber(h, true), then eth_getTransactionReceipt of each transaction
 *     with the adapter's concurrency (8), block after block (EDR has no eth_getBlockReceipts);
 *   - the same loop on undici's request(), which the adapter's client uses (src/chains/evm/rpc.ts): the
 *     viem loop is bound by viem's CPU per request, not by the node;
 *   - for scale, what the adapter asks on top: EDR has no debug_traceBlockByNumber, so internal transfers
 *     come from debug_traceTransaction, which EDR answers by re-executing the block up to the transaction
 *     (its cost grows with the position in the block). The adapter traces only the transactions that can
 *     move value below their top frame: here the 10 Forwarder calls of each block (the ETH transfers have
 *     gas 21,000; the token and NFT contracts cannot call out). Two viem loops on a sample of the heights:
 *     blocks + receipts + the Forwarder calls' traces (the same requests as the adapter), and blocks +
 *     receipts + every transaction's trace;
 *   - the service: from its 'following chain' log line (the matching index is loaded, the follower
 *     starts) to the commit of the last block (chain_cursors.updated_at): blocks/s, median of the runs,
 *     and over the second half of the blocks (after the first blocks' one-off ledger lookups: the opening
 *     balance of each watched address, the first token balances). Also its RSS (max) and each process's CPU.
 *
 * Subscriptions (one customer, ethereum/goerli): 40,000 TRANSACTION_MINED (2,000 of them on
 * transactions of the chain, one per block), 50,000 ADDRESS_TOKENS_TRANSACTION_CONFIRMED (200 of them
 * on pool addresses, 2 on senders; receiveCallbackOn 1 to 5), 10,000 thresholds (10 at 1 ETH, the
 * others at 100 ETH and more). Wallets: 400 pool addresses and 2 senders among the 500 watched ones.
 *
 * Environment: BENCH_EVM_BLOCKS (default 2000) and BENCH_EVM_RUNS (default 3) change the work (an
 * experiment); BENCH_SERVER_NODE_ARGS, extra node arguments for the service (e.g. '--cpu-prof
 * --cpu-prof-dir=/tmp/prof'); BENCH_SERVER_CONFIG, a JSON file merged over the service's chain entry
 * (e.g. {"concurrency": 16}). Any of these makes the figures an experiment (listed under `experiment`).
 * BENCH_EVM_COMPARE, the path of another checkout (e.g. a worktree of the code before a change): each run then
 * also runs that checkout's service on the same chain and template, alternating which goes first, and the
 * figures give its medians and this checkout's rate over its (`anvil.compared`).
 * BENCH_DURATION does not apply. Duration on 2 cores, EDR: about 40 s to build the chain, 65 s of baselines
 * and 90 s per catch-up (the node's tracing bounds it), so 6 to 7 minutes with 3 runs. Anvil builds the
 * chain slower (over HTTP, and each evm_mine takes longer as the chain grows): about 100 s on a quiet
 * machine, 200 s on a loaded one.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request as undiciRequest } from 'undici';
import { createPublicClient, http } from 'viem';
import { loadConfig } from '../src/config/config.ts';
import { createCustomer } from '../src/store/customers.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { insertWallet } from '../src/store/wallets.ts';
import {
  type Child,
  envInt,
  firstStdoutLine,
  forEachLimited,
  type IngestRun,
  ingestRun,
  log,
  machineBusySeconds,
  measureCpu,
  median,
  postmasterPid,
  processCpuSeconds,
  removeDataDirOnCleanup,
  runCleanups,
  selfCpuSeconds,
  startChild,
} from './lib.ts';

const THIS_FILE = fileURLToPath(import.meta.url);

const TX_PER_BLOCK = 50;
const SENDERS = 20;
const POOL = 20_000;
/** The chain entry's default concurrency: per-transaction requests in flight, in the adapter and in the bare loop. */
const CONCURRENCY = 8;
/** The baselines with traces run on a sample of the heights (a trace's cost depends on its position in the block, not on the height). */
const ALL_TRACES_EVERY = 40;
const NEEDED_TRACES_EVERY = 10;
const SUBSCRIPTIONS = { transaction: 40_000, address: 50_000, threshold: 10_000 };
const MATCHING_POOL_ADDRESSES = 200;
const WALLETS = 100;
const ADDRESSES_PER_WALLET = 5;
const WATCHED_POOL_ADDRESSES = 400;
const TARGETS = { ratioToBare: 0.7 };
const ETH = 10n ** 18n;

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

// ---------------------------------------------------------------------------------------------------
// The chain: deterministic, so both processes know the addresses.

/** The i-th address of the recipient pool (never a funded account, never a contract). */
export function poolAddress(i: number): string {
  return `0xbe${(i + 1).toString(16).padStart(38, '0')}`;
}

/** A 32-bit hash of (a, b), to spread recipients over the pool. */
function mix(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul((b + 0x632be5ab) | 0, 0xc2b2ae35);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

export const SELECTOR = {
  transfer: '0xa9059cbb',
  mint: '0x40c10f19',
  transferFrom: '0x23b872dd',
  forward: '0x101e8952',
  split: '0x0f2c9329',
} as const;
export const word = (v: string | bigint) => (typeof v === 'bigint' ? v.toString(16) : v.slice(2).toLowerCase()).padStart(64, '0');
const hex = (n: number | bigint) => `0x${n.toString(16)}`;

export interface ChainInfo {
  node: NodeKind;
  /** The process serving the node's RPC (the node child for EDR, Anvil's own for Anvil). */
  nodePid: number;
  url: string;
  wsUrl: string;
  first: number;
  last: number;
  buildMs: number;
  transactions: number;
  token: string;
  nft: string;
  forwarder: string;
  senders: string[];
  /** One transaction hash per block (the block's (b % 50)-th), for TRANSACTION_MINED subscriptions that match. */
  minedSample: string[];
}

/** The 50 transactions of the b-th built block, as eth_sendTransaction parameters. */
function blockTransactions(b: number, senders: string[], c: { token: string; nft: string; forwarder: string }): Record<string, string>[] {
  const txs: Record<string, string>[] = [];
  const recipient = (i: number) => poolAddress(mix(b, i) % POOL);
  for (let i = 0; i < TX_PER_BLOCK; i++) {
    const kind = i % 10;
    // Kinds 6 and 7 (NFT mint, then its transfer) share a sender, so the transfer follows the mint.
    const from = senders[(b * 7 + i - (kind === 7 ? 1 : 0)) % SENDERS] as string;
    const to = recipient(i);
    if (kind <= 2) {
      txs.push({ from, to, value: hex(1_000_000_000_000n + BigInt(i)), gas: hex(21_000) });
    } else if (kind <= 5) {
      txs.push({ from, to: c.token, gas: hex(120_000), data: `${SELECTOR.transfer}${word(to)}${word(BigInt(1_000 + i) * 1_000_000n)}` });
    } else if (kind === 6) {
      txs.push({ from, to: c.nft, gas: hex(150_000), data: `${SELECTOR.mint}${word(from)}${word(BigInt(b * 100 + i))}` });
    } else if (kind === 7) {
      txs.push({ from, to: c.nft, gas: hex(150_000), data: `${SELECTOR.transferFrom}${word(from)}${word(to)}${word(BigInt(b * 100 + i - 1))}` });
    } else if (kind === 8) {
      // Every 10th block, the first forward carries 5 ETH: over the 1 ETH threshold subscriptions.
      const value = b % 10 === 0 && i === 8 ? 5n * ETH : 1_000_000_000_000_000n;
      txs.push({ from, to: c.forwarder, gas: hex(150_000), value: hex(value), data: `${SELECTOR.forward}${word(to)}` });
    } else {
      txs.push({
        from,
        to: c.forwarder,
        gas: hex(200_000),
        value: hex(2_000_000_000_000_000n),
        data: `${SELECTOR.split}${word(to)}${word(recipient(i + 100))}`,
      });
    }
  }
  return txs;
}

/** The two real EVM nodes: Anvil serves block-level receipts and traces, EDR only per-transaction ones. */
export type NodeKind = 'anvil' | 'edr';

/** Starts the node, builds `blocks` blocks of mixed transactions, prints ChainInfo as one line, serves until SIGTERM. */
async function nodeChild(blocks: number, kind: NodeKind): Promise<void> {
  const { startEvmNode } = await import('../test/support/evm-node.ts');
  const { startAnvilNode } = await import('../test/support/anvil-node.ts');
  const { compileContracts, deployContract } = await import('../test/support/evm-contracts.ts');
  const started = performance.now();
  const options = { automine: true, accounts: SENDERS, balance: 1_000_000n * ETH };
  // EDR runs inside this process; Anvil is a process of its own (its CPU is counted by its pid).
  const node = kind === 'anvil' ? await startAnvilNode(options) : await startEvmNode(options);
  const nodePid = 'pid' in node ? (node.pid as number) : process.pid;
  await compileContracts();
  const contracts = {
    token: (await deployContract(node, 'TestToken', ['Bench Token', 'BT', 6])).toLowerCase(),
    nft: (await deployContract(node, 'TestNft', ['Bench NFT', 'BNFT'])).toLowerCase(),
    forwarder: (await deployContract(node, 'Forwarder')).toLowerCase(),
  };
  const senders = node.accounts.map((a) => a.address.toLowerCase());
  for (const from of senders) {
    await node.request('eth_sendTransaction', [{ from, to: contracts.token, gas: hex(120_000), data: `${SELECTOR.mint}${word(from)}${word(10n ** 30n)}` }]);
  }
  await node.setAutomine(false);
  // Anvil may answer eth_sendTransaction before its automine has mined it: a block now takes what is left.
  await node.mine(1);
  const first = Number(await node.request<string>('eth_blockNumber')) + 1;
  const minedSample: string[] = [];
  // Nonces given, not left to the node: Anvil's requests are sent at once over several connections and may
  // arrive in any order, and an NFT's transfer must follow its mint.
  const nonces = new Map<string, number>();
  for (const from of senders) nonces.set(from, Number(await node.request<string>('eth_getTransactionCount', [from, 'pending'])));
  const withNonce = (tx: Record<string, string>) => {
    const nonce = nonces.get(tx.from as string) as number;
    nonces.set(tx.from as string, nonce + 1);
    return { ...tx, nonce: hex(nonce) };
  };
  let lastLog = performance.now();
  for (let b = 0; b < blocks; b++) {
    const txs = blockTransactions(b, senders, contracts).map(withNonce);
    const hashes = await Promise.all(txs.map((tx) => node.request<string>('eth_sendTransaction', [tx])));
    minedSample.push(hashes[b % TX_PER_BLOCK] as string);
    await node.mine(1);
    if (performance.now() - lastLog > 5000) {
      process.stderr.write(`[bench] node: ${b + 1} of ${blocks} blocks built\n`);
      lastLog = performance.now();
    }
  }
  const last = Number(await node.request<string>('eth_blockNumber'));
  const check = await node.request<{ transactions: unknown[] }>('eth_getBlockByNumber', [hex(last), false]);
  if (last - first + 1 !== blocks || check.transactions.length !== TX_PER_BLOCK) {
    throw new Error(`built blocks ${first}..${last} with ${check.transactions.length} transactions in the last; expected ${blocks} of ${TX_PER_BLOCK}`);
  }
  if (kind === 'anvil') {
    const failed = (await node.request<{ status: string }[]>('eth_getBlockReceipts', [hex(last)])).filter((r) => r.status !== '0x1');
    if (failed.length > 0) throw new Error(`${failed.length} transactions of block ${last} failed`);
  }
  const info: ChainInfo = {
    node: kind,
    nodePid,
    url: node.url,
    wsUrl: node.wsUrl,
    first,
    last,
    buildMs: Math.round(performance.now() - started),
    transactions: blocks * TX_PER_BLOCK,
    ...contracts,
    senders,
    minedSample,
  };
  process.stdout.write(`${JSON.stringify(info)}\n`);
  serveUntilStopped(node);
}

/** What the node child of the latency benchmark (`--node-child live`) prints: automine on, contracts deployed. */
export interface LiveNodeInfo {
  url: string;
  wsUrl: string;
  chainId: number;
  token: string;
  forwarder: string;
  /** The account holding tokens for the benchmark (no transaction sent from it yet): a well-known test key. */
  sender: { address: string; privateKey: string };
}

/** An EDR node with automine on (a block per transaction), a token and a Forwarder, for bench/e2e-latency.ts. */
async function liveNodeChild(): Promise<void> {
  const { startEvmNode } = await import('../test/support/evm-node.ts');
  const { compileContracts, deployContract } = await import('../test/support/evm-contracts.ts');
  const node = await startEvmNode({ automine: true, accounts: SENDERS, balance: 1_000_000n * ETH });
  await compileContracts();
  const token = (await deployContract(node, 'TestToken', ['Bench Token', 'BT', 6])).toLowerCase();
  const forwarder = (await deployContract(node, 'Forwarder')).toLowerCase();
  const account = node.accounts[SENDERS - 1] as { address: string; privateKey: string };
  const sender = { address: account.address.toLowerCase(), privateKey: account.privateKey };
  await node.request('eth_sendTransaction', [
    { from: node.accounts[0]?.address, to: token, gas: hex(120_000), data: `${SELECTOR.mint}${word(sender.address)}${word(10n ** 30n)}` },
  ]);
  const info: LiveNodeInfo = { url: node.url, wsUrl: node.wsUrl, chainId: node.chainId, token, forwarder, sender };
  process.stdout.write(`${JSON.stringify(info)}\n`);
  serveUntilStopped(node);
}

function serveUntilStopped(node: { close(): Promise<void> }): void {
  const parent = process.ppid;
  const orphanCheck = setInterval(() => process.ppid !== parent && stop(), 1000);
  const stop = () => {
    clearInterval(orphanCheck);
    void node.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/** Starts the node child (`args` after --node-child) and waits for its first stdout line (the chain is built by then). */
export async function startNodeChild<T = ChainInfo>(args: string[], timeoutMs: number): Promise<{ child: Child; info: T }> {
  const child = startChild(process.execPath, ['--import', 'tsx', THIS_FILE, '--node-child', ...args], { label: 'EVM node' });
  child.process.stderr?.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.startsWith('[bench]')) process.stderr.write(`${line}\n`);
  });
  return { child, info: await firstStdoutLine<T>(child, { what: 'EVM node child', timeoutMs, intervalMs: 50 }) };
}

// ---------------------------------------------------------------------------------------------------
// The baseline: bare viem loops over the same heights.

interface LoopFigures {
  blocks: number;
  seconds: number;
  blocksPerSecond: number;
  requests: number;
}

type RawRequest = (method: string, params: unknown[]) => Promise<unknown>;

/** viem's HTTP transport, raw JSON (client.request): what the issue's baseline names. */
function viemRequest(url: string): { request: RawRequest; close(): Promise<void> } {
  const client = createPublicClient({ transport: http(url, { retryCount: 0, timeout: 30_000 }), cacheTime: 0 });
  const request = client.request as unknown as (args: { method: string; params: unknown[] }) => Promise<unknown>;
  return { request: (method, params) => request({ method, params }), close: async () => {} };
}

/** undici's request() on a keep-alive pool, as the adapter's client (src/chains/evm/rpc.ts) does it. */
function leanRequest(url: string): { request: RawRequest; close(): Promise<void> } {
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  let id = 0;
  return {
    async request(method, params) {
      const response = await undiciRequest(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
        dispatcher: agent,
      });
      const answer = (await response.body.json()) as { result?: unknown; error?: { message: string } };
      if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
      return answer.result;
    },
    close: () => agent.close(),
  };
}

/**
 * eth_getBlockByNumber(h, true), then each transaction's receipt with CONCURRENCY in flight, and the
 * traces of the transactions `trace` picks (as many in flight, alongside), block after block.
 */
async function bareLoop(
  client: { request: RawRequest; close(): Promise<void> },
  heights: number[],
  trace: (tx: { hash: string; to: string | null }) => boolean = () => false,
): Promise<LoopFigures> {
  let requests = 0;
  const started = performance.now();
  try {
    for (const h of heights) {
      const block = (await client.request('eth_getBlockByNumber', [hex(h), true])) as { transactions: { hash: string; to: string | null }[] };
      requests++;
      const txs = block.transactions;
      if (txs.length !== TX_PER_BLOCK) throw new Error(`block ${h} has ${txs.length} transactions`);
      const traced = txs.filter(trace).map((t) => t.hash);
      await Promise.all([
        forEachLimited(
          txs.map((t) => t.hash),
          CONCURRENCY,
          async (id) => {
            if ((await client.request('eth_getTransactionReceipt', [id])) === null) throw new Error(`no receipt for ${id}`);
          },
        ),
        forEachLimited(traced, CONCURRENCY, async (id) => void (await client.request('debug_traceTransaction', [id, { tracer: 'callTracer' }]))),
      ]);
      requests += txs.length + traced.length;
    }
  } finally {
    await client.close();
  }
  const seconds = (performance.now() - started) / 1000;
  return { blocks: heights.length, seconds: round(seconds, 2), blocksPerSecond: round(heights.length / seconds), requests };
}

/**
 * For each block, at once: eth_getBlockByNumber(h, true), eth_getBlockReceipts(h) and trace_block(h), what herald
 * asks of a node with the block-level methods; block after block.
 */
async function blockLevelLoop(client: { request: RawRequest; close(): Promise<void> }, heights: number[]): Promise<LoopFigures> {
  let requests = 0;
  const started = performance.now();
  try {
    for (const h of heights) {
      const [block, receipts, traces] = (await Promise.all([
        client.request('eth_getBlockByNumber', [hex(h), true]),
        client.request('eth_getBlockReceipts', [hex(h)]),
        client.request('trace_block', [hex(h)]),
      ])) as [{ transactions: unknown[] }, unknown[], unknown[]];
      requests += 3;
      if (block.transactions.length !== TX_PER_BLOCK || receipts.length !== TX_PER_BLOCK || traces.length < TX_PER_BLOCK) {
        throw new Error(`block ${h}: ${block.transactions.length} transactions, ${receipts.length} receipts, ${traces.length} traces`);
      }
    }
  } finally {
    await client.close();
  }
  const seconds = (performance.now() - started) / 1000;
  return { blocks: heights.length, seconds: round(seconds, 2), blocksPerSecond: round(heights.length / seconds), requests };
}

// ---------------------------------------------------------------------------------------------------
// The database: a template with the subscriptions and wallets, copied for each run.

const randomHex = (bytes: number) => `0x${randomBytes(bytes).toString('hex')}`;

interface Seeded {
  subscriptions: number;
  matchingTransactions: number;
  matchingAddresses: number;
  thresholdsAtOneEth: number;
  walletAddresses: number;
  watchedChainAddresses: number;
  seedMs: number;
}

async function seed(database: OpenDatabase, info: ChainInfo): Promise<Seeded> {
  const started = performance.now();
  const db = database.db;
  const customer = await createCustomer(db, 'bench', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n);

  type Row = [eventType: string, transactionId: string | null, address: string | null, target: string | null, receiveOn: number | null, amount: string | null];
  const rows: Row[] = [];
  for (let i = 0; i < SUBSCRIPTIONS.transaction; i++) {
    const txid = info.minedSample[i] ?? randomHex(32);
    rows.push(['TRANSACTION_MINED', txid, null, txid.toLowerCase(), null, null]);
  }
  const matchingAddresses = [...Array.from({ length: MATCHING_POOL_ADDRESSES }, (_, k) => poolAddress(k * 100)), ...info.senders.slice(0, 2)];
  for (let i = 0; i < SUBSCRIPTIONS.address; i++) {
    const address = matchingAddresses[i] ?? randomHex(20);
    rows.push(['ADDRESS_TOKENS_TRANSACTION_CONFIRMED', null, address, address.toLowerCase(), 1 + (i % 5), null]);
  }
  const atOneEth = 10;
  for (let i = 0; i < SUBSCRIPTIONS.threshold; i++) {
    rows.push(['CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', null, null, null, null, String(i < atOneEth ? 1 : 100 + ((i * 7919) % 999_900))]);
  }
  // Interleaved, as customers create them over time.
  const order = rows.map((_, i) => i).sort((a, b) => mix(a, 17) - mix(b, 17));
  const CHUNK = 20_000;
  await db.transaction('bench:seed-subscriptions', async (tx) => {
    // No announcement per row: nobody listens yet, and 100,000 notifications would only fill the queue.
    await tx.query('bench:replica', 'SET LOCAL session_replication_role = replica');
    for (let start = 0; start < order.length; start += CHUNK) {
      const chunk = order.slice(start, start + CHUNK).map((i) => rows[i] as Row);
      await tx.query(
        'bench:insert-subscriptions',
        `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, address, target, receive_callback_on,
           amount_higher_than, callback_url, callback_host, callback_secret_key, allow_duplicates, duplicate_key, api_version)
         SELECT id, $1, event_type, 'ethereum', 'goerli', transaction_id, address, target, receive_on, amount,
           'https://hooks.example.com/bench/' || n, 'hooks.example.com', 'bench-secret', true, key, '2021-03-20'
         FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::numeric[], $9::bytea[])
           WITH ORDINALITY AS s (id, event_type, transaction_id, address, target, receive_on, amount, key, n)`,
        [
          customer.id,
          chunk.map(() => randomUUID()),
          chunk.map((r) => r[0]),
          chunk.map((r) => r[1]),
          chunk.map((r) => r[2]),
          chunk.map((r) => r[3]),
          chunk.map((r) => r[4]),
          chunk.map((r) => r[5]),
          chunk.map(() => randomBytes(32)),
        ],
      );
    }
  });

  // Wallets: pool addresses the chain pays, two senders, and addresses the chain never touches.
  const watched = [...Array.from({ length: WATCHED_POOL_ADDRESSES }, (_, k) => poolAddress(k * 50 + 25)), ...info.senders.slice(2, 4)];
  const walletIds: string[] = [];
  for (let w = 0; w < WALLETS; w++) walletIds.push((await insertWallet(db, customer.id, randomUUID(), `bench-${w}`)).id);
  const addresses = Array.from({ length: WALLETS * ADDRESSES_PER_WALLET }, (_, i) => watched[i] ?? randomHex(20));
  await db.query(
    'bench:insert-wallet-addresses',
    `INSERT INTO wallet_addresses (wallet_id, blockchain, network, address, normalized_address)
     SELECT w, 'ethereum', 'goerli', a, lower(a) FROM unnest($1::uuid[], $2::text[]) AS s (w, a)`,
    [addresses.map((_, i) => walletIds[i % WALLETS]), addresses],
  );
  await db.query('bench:analyze', 'ANALYZE');
  return {
    subscriptions: rows.length,
    matchingTransactions: Math.min(SUBSCRIPTIONS.transaction, info.minedSample.length),
    matchingAddresses: matchingAddresses.length,
    thresholdsAtOneEth: atOneEth,
    walletAddresses: addresses.length,
    watchedChainAddresses: watched.length,
    seedMs: Math.round(performance.now() - started),
  };
}

// ---------------------------------------------------------------------------------------------------
// One catch-up by the service.

interface ServiceRun extends Omit<IngestRun<'callbacks' | 'pendingEvents' | 'ledgerEntries' | 'openingsRead' | 'tokenBalances'>, 'committedAt'> {
  blocksPerSecond: number;
  /** Over the second half of the blocks (from the cursor's first poll at or past the middle height). */
  steadyBlocksPerSecond: number;
}

async function serviceRun(
  run: number,
  options: {
    baseUrl: string;
    info: ChainInfo;
    dataDir: string;
    nodePid: number;
    postgresPid: number | undefined;
    nodeArgs: string[];
    chainOverrides: object;
    herald?: string;
  },
): Promise<ServiceRun> {
  const { info } = options;
  const middle = info.first + Math.floor((info.last - info.first) / 2);
  let middleSeen: { height: number; at: number } | undefined;
  const { seconds, committedAt, ...r } = await ingestRun({
    run,
    baseUrl: options.baseUrl,
    database: `bench_run_${run}`,
    dataDir: options.dataDir,
    chain: {
      blockchain: 'ethereum',
      network: 'goerli',
      rpcUrl: info.url,
      pollIntervalMs: 2000,
      startHeight: info.first,
      concurrency: CONCURRENCY,
      ...options.chainOverrides,
    },
    last: info.last,
    nodeArgs: options.nodeArgs,
    herald: options.herald,
    nodePid: options.nodePid,
    postgresPid: options.postgresPid,
    timeoutMs: 900_000,
    progress: { everyMs: 5000, line: (height) => `cursor at ${height} (${height - info.first + 1} of ${info.last - info.first + 1} blocks)` },
    logCopy: true,
    onCursor: (height, at) => {
      if (!middleSeen && height >= middle && height < info.last) middleSeen = { height, at };
    },
    counts: {
      callbacks: 'SELECT count(*) AS n FROM callbacks',
      pendingEvents: 'SELECT count(*) AS n FROM pending_events',
      ledgerEntries: 'SELECT count(*) AS n FROM ledger_entries',
      openingsRead: `SELECT count(*) AS n FROM wallet_addresses WHERE opening_state = 'read'`,
      tokenBalances: 'SELECT count(*) AS n FROM wallet_token_balances',
    },
  });
  const blocks = info.last - info.first + 1;
  return {
    blocksPerSecond: round(blocks / seconds),
    seconds: round(seconds, 2),
    steadyBlocksPerSecond: middleSeen ? round((info.last - middleSeen.height) / ((committedAt - middleSeen.at) / 1000)) : 0,
    readyMs: r.readyMs,
    followingMs: r.followingMs,
    maxRssMb: round(r.maxRssMb),
    cpuPct: r.cpuPct,
    catchUpCpuSeconds: r.catchUpCpuSeconds,
    work: r.work,
    stepFailures: r.stepFailures,
  };
}

// ---------------------------------------------------------------------------------------------------

interface Settings {
  blocks: number;
  runs: number;
  nodeArgs: string[];
  chainOverrides: object;
  /** Another checkout whose service runs beside this one's, run for run (BENCH_EVM_COMPARE): codes compared in the same conditions. */
  compare?: string;
}

/** The node's chain built, the template database seeded: what both nodes' benchmarks start from. */
interface Prepared {
  node: Child;
  info: ChainInfo;
  seeded: Seeded;
  baseUrl: string;
  dataDir: string;
  postgresPid: number | undefined;
  heights: number[];
  /** A bare loop timed, with each process's CPU. */
  baseline(label: string, run: () => Promise<LoopFigures>): Promise<LoopFigures & { cpuPct: Record<string, number> }>;
  /** The service's catch-ups, logged against `bare` (the target baseline); with `compare`, the other checkout's runs too, alternating. */
  serviceRuns(bare: LoopFigures, settings: Settings): Promise<{ runs: ServiceRun[]; compared: ServiceRun[] }>;
}

async function prepare(kind: NodeKind, blocks: number): Promise<Prepared> {
  const dataDir = mkdtempSync(join(tmpdir(), `herald-bench-evm-ingest-${kind}-`));
  let database: OpenDatabase | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.embedded?.stop());
  log(`building ${blocks} blocks of ${TX_PER_BLOCK} transactions on ${kind === 'anvil' ? 'Anvil' : 'an EDR node'} (child process) ...`);
  const [{ child: node, info }, opened] = await Promise.all([
    startNodeChild([String(blocks), kind], 900_000),
    openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 4 }),
  ]);
  database = opened;
  log(`chain: blocks ${info.first}..${info.last} (${info.transactions} transactions) built in ${info.buildMs} ms; node ${info.url}`);
  const seeded = await seed(database, info);
  log(`template database: ${seeded.subscriptions} subscriptions, ${seeded.walletAddresses} wallet addresses, in ${seeded.seedMs} ms`);
  // The template must have no connection while it is copied.
  await database.db.close();
  const baseUrl = database.url;
  const postgresPid = postmasterPid(dataDir);
  const heights = Array.from({ length: info.last - info.first + 1 }, (_, i) => info.first + i);
  return {
    node,
    info,
    seeded,
    baseUrl,
    dataDir,
    postgresPid,
    heights,
    async baseline(label, run) {
      const cpu = measureCpu({ node: () => processCpuSeconds(info.nodePid), loop: selfCpuSeconds, machine: machineBusySeconds });
      const figures = await run();
      const cpuPct = cpu.stop();
      log(`${kind} ${label}: ${figures.blocks} blocks in ${figures.seconds} s = ${figures.blocksPerSecond} blocks/s (CPU % ${JSON.stringify(cpuPct)})`);
      return { ...figures, cpuPct };
    },
    async serviceRuns(bare, { runs, nodeArgs, chainOverrides, compare }) {
      const results: ServiceRun[] = [];
      const compared: ServiceRun[] = [];
      const one = async (run: number, herald: string | undefined) => {
        const r = await serviceRun(run, { baseUrl, info, dataDir, nodePid: info.nodePid, postgresPid, nodeArgs, chainOverrides, herald });
        log(
          `${kind} run ${run}${herald ? ` (${herald})` : ''}: ${blocks} blocks in ${r.seconds} s = ${r.blocksPerSecond} blocks/s (${round(r.blocksPerSecond / bare.blocksPerSecond, 3)} of bare; second half ${r.steadyBlocksPerSecond} blocks/s); ` +
            `following ${r.followingMs} ms after spawn; RSS max ${r.maxRssMb} MB; CPU % ${JSON.stringify(r.cpuPct)}; catch-up CPU s ${JSON.stringify(r.catchUpCpuSeconds)}; work ${JSON.stringify(r.work)}` +
            (r.stepFailures > 0 ? `; ${r.stepFailures} failed steps (retried)` : ''),
        );
        return r;
      };
      const other = compare && join(resolve(compare), 'bin', 'herald.js');
      for (let run = 1; run <= runs; run++) {
        // The other checkout first on odd runs, second on even ones: neither always gets the quieter minute.
        if (other && run % 2 === 1) compared.push(await one(run, other));
        results.push(await one(run, undefined));
        if (other && run % 2 === 0) compared.push(await one(run, other));
      }
      return { runs: results, compared };
    },
  };
}

const serviceFigures = (results: ServiceRun[]) => ({
  roles: ['ingest'],
  runs: results,
  blocksPerSecond: median(results.map((r) => r.blocksPerSecond)),
  steadyBlocksPerSecond: median(results.map((r) => r.steadyBlocksPerSecond)),
  maxRssMb: Math.max(...results.map((r) => r.maxRssMb)),
});

/**
 * Anvil: block-level receipts and traces, the path of production nodes and the target. The baseline fetches
 * for each block exactly what herald asks of this node, the three requests at once, block after block, on
 * undici's request() with the pool settings of herald's node client (src/chains/node-http.ts).
 */
async function anvilBench(settings: Settings): Promise<Record<string, unknown>> {
  const p = await prepare('anvil', settings.blocks);
  try {
    await blockLevelLoop(leanRequest(p.info.url), p.heights.slice(0, 50)); // warm-up: connections, JIT
    const bare = await p.baseline('bare undici loop, block + eth_getBlockReceipts + trace_block (the target baseline)', () =>
      blockLevelLoop(leanRequest(p.info.url), p.heights),
    );
    const { runs, compared } = await p.serviceRuns(bare, settings);
    const service = serviceFigures(runs);
    const ratioToBare = round(service.blocksPerSecond / bare.blocksPerSecond, 3);
    log(
      `anvil service: median ${service.blocksPerSecond} blocks/s = ${ratioToBare} of the bare loop (target >= ${TARGETS.ratioToBare}); RSS max ${service.maxRssMb} MB`,
    );
    const other = compared.length > 0 ? { checkout: settings.compare, ...serviceFigures(compared) } : undefined;
    if (other) {
      log(
        `anvil service of ${settings.compare}: median ${other.blocksPerSecond} blocks/s = ${round(other.blocksPerSecond / bare.blocksPerSecond, 3)} of the bare loop; ` +
          `this checkout / that one: ${round(service.blocksPerSecond / other.blocksPerSecond, 3)}`,
      );
    }
    return {
      node: 'Anvil 1.7.1 (eth_getBlockReceipts, trace_block: the block-level path)',
      chain: { blocks: settings.blocks, transactionsPerBlock: TX_PER_BLOCK, buildMs: p.info.buildMs },
      seeded: p.seeded,
      baselines: { bareUndiciBlockLevel: bare },
      service,
      ratioToBare,
      ...(other && {
        compared: {
          ...other,
          ratioToBare: round(other.blocksPerSecond / bare.blocksPerSecond, 3),
          thisOverThat: round(service.blocksPerSecond / other.blocksPerSecond, 3),
        },
      }),
      maxRssMb: service.maxRssMb,
      pass: { ratioToBare: ratioToBare >= TARGETS.ratioToBare },
    };
  } finally {
    await p.node.stop();
  }
}

/**
 * EDR: no block-level receipts or traces, so herald takes the per-transaction path (a receipt per transaction,
 * a trace per transaction that can move value). Kept for the figures of that path; not the target's node.
 */
async function edrBench(settings: Settings): Promise<Record<string, unknown>> {
  const p = await prepare('edr', settings.blocks);
  try {
    const { info, heights } = p;
    const forwarder = info.forwarder.toLowerCase();
    await bareLoop(viemRequest(info.url), heights.slice(0, 50)); // warm-up: connections, JIT
    const bare = await p.baseline('bare viem loop, blocks + receipts', () => bareLoop(viemRequest(info.url), heights));
    const lean = await p.baseline('bare undici loop, blocks + receipts', () => bareLoop(leanRequest(info.url), heights));
    const allTracesHeights = heights.filter((_, i) => i % ALL_TRACES_EVERY === 0);
    const bareAllTraces = await p.baseline(`bare viem loop, blocks + receipts + every transaction's trace (every ${ALL_TRACES_EVERY}th height)`, () =>
      bareLoop(viemRequest(info.url), allTracesHeights, () => true),
    );
    const neededHeights = heights.filter((_, i) => i % NEEDED_TRACES_EVERY === 0);
    const bareNeededTraces = await p.baseline(`bare viem loop, blocks + receipts + traces of the Forwarder calls (every ${NEEDED_TRACES_EVERY}th height)`, () =>
      bareLoop(viemRequest(info.url), neededHeights, (tx) => tx.to?.toLowerCase() === forwarder),
    );
    const service = serviceFigures((await p.serviceRuns(bare, settings)).runs);
    const ratio = (of: LoopFigures) => round(service.blocksPerSecond / of.blocksPerSecond, 3);
    log(
      `edr service (per-transaction tracing path): median ${service.blocksPerSecond} blocks/s = ${ratio(bare)} of the bare viem loop's blocks + receipts; ` +
        `${ratio(lean)} of the bare undici loop's; ${ratio(bareNeededTraces)} of bare blocks + receipts + the Forwarder calls' traces; ` +
        `${ratio(bareAllTraces)} of bare blocks + receipts + every trace; RSS max ${service.maxRssMb} MB`,
    );
    return {
      node: 'EDR 0.22 (no block-level methods: the per-transaction tracing path)',
      chain: { blocks: settings.blocks, transactionsPerBlock: TX_PER_BLOCK, buildMs: info.buildMs },
      seeded: p.seeded,
      concurrency: CONCURRENCY,
      baselines: {
        bareViem: bare,
        bareUndici: lean,
        bareViemNeededTraces: { ...bareNeededTraces, heights: `every ${NEEDED_TRACES_EVERY}th`, traced: 'the 10 Forwarder calls per block' },
        bareViemAllTraces: { ...bareAllTraces, heights: `every ${ALL_TRACES_EVERY}th`, traced: 'all 50 per block' },
      },
      service,
      ratioToBare: ratio(bare),
      ratioToBareUndici: ratio(lean),
      ratioToBareNeededTraces: ratio(bareNeededTraces),
      ratioToBareAllTraces: ratio(bareAllTraces),
      maxRssMb: service.maxRssMb,
    };
  } finally {
    await p.node.stop();
  }
}

export default async function evmIngestBenchmark(): Promise<Record<string, unknown>> {
  const blocks = envInt('BENCH_EVM_BLOCKS', 2000);
  const runs = envInt('BENCH_EVM_RUNS', 3);
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const chainOverrides = process.env.BENCH_SERVER_CONFIG ? (JSON.parse(readFileSync(resolve(process.env.BENCH_SERVER_CONFIG), 'utf8')) as object) : {};
  const nodes = (process.env.BENCH_EVM_NODES ?? 'anvil,edr').split(',').map((n) => n.trim());
  for (const n of nodes) if (n !== 'anvil' && n !== 'edr') throw new Error(`BENCH_EVM_NODES: unknown node ${n} (anvil, edr)`);
  const compare = process.env.BENCH_EVM_COMPARE || undefined;
  const experiment = blocks !== 2000 || runs !== 3 || nodeArgs.length > 0 || Object.keys(chainOverrides).length > 0;
  const settings: Settings = { blocks, runs, nodeArgs, chainOverrides, compare };
  try {
    const anvil = nodes.includes('anvil') ? await anvilBench(settings) : undefined;
    const edr = nodes.includes('edr') ? await edrBench(settings) : undefined;
    const pass = anvil ? { anvilRatioToBare: (anvil.pass as { ratioToBare: boolean }).ratioToBare } : {};
    return {
      bench: 'evm-ingest',
      ...(experiment && { experiment: { blocks, runs, serverNodeArgs: nodeArgs, chainOverrides } }),
      mix: '15 ETH (gas 21000), 15 ERC-20 transfers, 5 ERC-721 mints + 5 transfers, 5 Forwarder.forward + 5 Forwarder.split (15 internal transfers)',
      ...(anvil && { anvil }),
      ...(edr && { perTransactionTracingPath: edr }),
      targets: { anvilRatioToBare: `>=${TARGETS.ratioToBare}` },
      pass: { ...pass, all: anvil !== undefined && Object.values(pass).every(Boolean) },
    };
  } finally {
    await runCleanups();
  }
}

if (process.argv[2] === '--node-child' && resolve(process.argv[1] ?? '') === THIS_FILE) {
  if (process.argv[3] === 'live') await liveNodeChild();
  else await nodeChild(Number(process.argv[3] ?? 2000), process.argv[4] === 'anvil' ? 'anvil' : 'edr');
}

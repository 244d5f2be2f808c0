/**
 * Chain following survives its process and its node: herald runs as a child process (`herald serve`,
 * every role) following ethereum/goerli on an in-process EDR node, delivering to an HTTPS receiver in
 * this process, on a database of its own.
 *
 * 1. Restart: blocks are mined every ~40 ms with subscribed transactions (~200 TRANSACTION_MINED
 *    subscriptions on pre-signed transactions, one ADDRESS_TOKENS_TRANSACTION_CONFIRMED on an address
 *    receiving ERC-20 transfers in every other block); the child is SIGKILLed mid-stream, blocks pile up
 *    while it is down, a new child is started on the same database while mining goes on. Every event
 *    must be called back with the node's block, duplicates only as exact copies (same key, same bytes),
 *    and the cursor and window must end at the node's head with no gap.
 * 2. Node down: the node answers 503 (and drops its WebSockets) while blocks with subscribed
 *    transactions are mined; the follower retries with growing backoff and stays at its height, then
 *    catches up once the node is back, every callback included.
 */
import type { ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Address, encodeFunctionData, type Hex, keccak256 } from 'viem';
import { privateKeyToAccount, privateKeyToAddress } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { formatUnits } from '../src/domain/amounts.ts';
import type { ChainKey } from '../src/domain/chains.ts';
import { DEFAULT_WINDOW } from '../src/ingest/follower.ts';
import { getCursor } from '../src/store/chain-state.ts';
import { createApiKey, createCustomer } from '../src/store/customers.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { freePort } from '../src/store/embedded.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { createTestDatabase } from './harness.ts';
import { compileContracts, deployContract, writeContract } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { killAllHeralds, spawnHerald } from './support/herald-process.ts';
import { type ReceivedRequest, type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until as waitUntil } from './support/wait.ts';

const CHAIN: ChainKey = { blockchain: 'ethereum', network: 'goerli' };
const SUBSCRIPTIONS = '/blockchain-events/ethereum/goerli/subscriptions';
const SECRET = 'whsec-evm-restart';
const TOKEN_DECIMALS = 6;

// Test 1: block i of the mining loop carries the mined transactions j with floor(j * BLOCKS / MINED_TXS) = i
// and, when i is even, one ERC-20 transfer to the watched address.
const MINED_TXS = 200;
const BLOCKS = 120;
const BLOCK_INTERVAL_MS = 40;
/** The child is killed once this many loop blocks are mined (and it has processed some of them). */
const KILL_AT = 30;
/** A new child is started once this many loop blocks are mined. */
const RESTART_AT = 60;
/** Blocks mined at least once the new child is ready, and applied by it, before the loop stops. */
const AFTER_RESTART = 15;
// Test 2: blocks mined while the node is down (each with mined transactions and a token transfer), and how long it stays down.
const DOWN_BLOCKS = 10;
const DOWN_MS = 2_000;

let node: EvmNode;
let receiver: Receiver;
let token: Address;
let caFile: string;
let dir: string;
let configFile: string;
const databases: OpenDatabase[] = [];

beforeAll(async () => {
  const ca = await createTestCa();
  [node, receiver] = await Promise.all([startEvmNode({ automine: true }), startReceiver({ ca })]);
  await compileContracts();
  token = await deployContract(node, 'TestToken', ['Herald Test Token', 'HTT', TOKEN_DECIMALS]);
  await writeContract(node, 'TestToken', token, 'mint', [node.accounts[0]?.address, 1_000_000_000n * 10n ** BigInt(TOKEN_DECIMALS)]);
  await node.setAutomine(false);
  caFile = writeCaFile(ca.caPem);
  dir = mkdtempSync(join(tmpdir(), 'herald-evm-restart-'));
  configFile = join(dir, 'herald.config.json');
  // The node's URLs come from HERALD_RPC_/HERALD_WS_ETHEREUM_GOERLI; the file adds the chain's timings.
  // A short lease: callbacks claimed by a killed child are due again 2 s later.
  writeFileSync(
    configFile,
    JSON.stringify({
      chains: [{ blockchain: 'ethereum', network: 'goerli', pollIntervalMs: 50, requestTimeoutMs: 5000 }],
      delivery: { pollIntervalMs: 100, leaseSeconds: 2, retryScheduleSeconds: [1, 1, 2] },
    }),
  );
}, 60_000);

afterAll(async () => {
  killAllHeralds();
  for (const database of databases) await database.close();
  await receiver?.close();
  await node?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// --- herald as a child process ----------------------------------------------------------------------

interface Herald {
  child: ChildProcess;
  url: string;
  exited: Promise<number | string | null>;
  output(): string;
  /** pino's JSON lines written so far. */
  logs(): { msg?: string; retryInMs?: number; time?: number }[];
}

async function startHerald(databaseUrl: string): Promise<Herald> {
  const port = await freePort();
  const { child, exited, output } = spawnHerald(['--port', String(port)], {
    DATABASE_URL: databaseUrl,
    HERALD_CONFIG: configFile,
    HERALD_ROLES: '',
    HERALD_RPC_ETHEREUM_GOERLI: node.url,
    HERALD_WS_ETHEREUM_GOERLI: node.wsUrl,
    HERALD_DELIVERY_ALLOW_NETWORKS: '127.0.0.1/32,::1/128',
    HERALD_DELIVERY_CA_FILE: caFile,
    HERALD_LOG_LEVEL: 'warn',
  });
  const url = `http://127.0.0.1:${port}`;
  const herald: Herald = {
    child,
    url,
    exited,
    output: () => output().slice(-6000),
    logs: () =>
      output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .flatMap((line) => {
          try {
            return [JSON.parse(line)];
          } catch {
            return [];
          }
        }),
  };
  await until(
    'herald to be ready',
    async () => {
      if (child.exitCode !== null) throw new Error(`herald exited (${child.exitCode}):\n${herald.output()}`);
      return await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
    },
    30_000,
  );
  return herald;
}

async function stopHerald(herald: Herald): Promise<void> {
  herald.child.kill('SIGTERM');
  expect(await herald.exited, herald.output()).toBe(0);
}

// --- helpers -----------------------------------------------------------------------------------------

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The restart test waits longer: a child process starts through tsx. */
const until = <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 20_000) => waitUntil(what, probe, timeoutMs);

/** A migrated database with a customer whose key may call back to localhost. */
async function setUpDatabase(): Promise<{ database: OpenDatabase; key: string }> {
  const database = await openDatabase(loadConfig({ databaseUrl: await createTestDatabase() }, {}), { poolSize: 4 });
  databases.push(database);
  const customer = await createCustomer(
    database.db,
    `restart-${randomBytes(3).toString('hex')}`,
    { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 100_000 },
    100_000_000n,
  );
  await upsertDomain(database.db, customer.id, 'localhost', 'operator');
  const { key } = await createApiKey(database.db, customer.id);
  return { database, key };
}

async function call(herald: Herald, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${herald.url}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

async function subscribe(herald: Herald, key: string, event: string, item: Record<string, unknown>): Promise<string> {
  const res = await call(herald, key, 'POST', `${SUBSCRIPTIONS}/${event}`, {
    data: { item: { callbackUrl: `${receiver.url}/hooks/${event}`, callbackSecretKey: SECRET, ...item } },
  });
  expect(res.status, res.text).toBeLessThan(300);
  return res.json.data.item.referenceId as string;
}

interface ChainStatus {
  processedHeight: number | null;
  processedHash: string | null;
  nodeHeight: number | null;
  state: string;
}

async function status(herald: Herald, key: string): Promise<ChainStatus | undefined> {
  const res = await call(herald, key, 'GET', '/blockchain-events/status');
  expect(res.status, res.text).toBe(200);
  return res.json.data.items.find((i: { blockchain: string; network: string }) => i.blockchain === 'ethereum' && i.network === 'goerli');
}

async function processed(herald: Herald, key: string, height: number, timeoutMs = 20_000): Promise<ChainStatus> {
  return await until(
    `the follower to process block ${height}`,
    async () => {
      const item = await status(herald, key);
      return item && (item.processedHeight ?? -1) >= height ? item : undefined;
    },
    timeoutMs,
  );
}

const head = async () => Number(await node.request<Hex>('eth_blockNumber'));

const blocks = new Map<number, { height: number; hash: string; timestamp: number }>();
async function blockOf(height: number) {
  let block = blocks.get(height);
  if (!block) {
    const b = await node.request<{ hash: string; timestamp: Hex }>('eth_getBlockByNumber', [`0x${height.toString(16)}`, false]);
    block = { height, hash: b.hash, timestamp: Number(b.timestamp) };
    blocks.set(height, block);
  }
  return block;
}

async function minedIn(hash: Hex): Promise<number> {
  const receipt = await node.request<{ blockNumber: Hex; status: Hex } | null>('eth_getTransactionReceipt', [hash]);
  if (!receipt) throw new Error(`transaction ${hash} was not mined`);
  expect(receipt.status, `status of ${hash}`).toBe('0x1');
  return Number(receipt.blockNumber);
}

const nonces = new Map<number, number>();
/** A signed EIP-1559 transaction from node.accounts[from] (nonces counted here, from the node's), and its hash. */
async function signTx(from: number, tx: { to: Address; value?: bigint; data?: Hex; gas?: bigint }): Promise<{ raw: Hex; hash: Hex }> {
  const account = node.accounts[from];
  if (!account) throw new Error(`no account ${from}`);
  let nonce = nonces.get(from);
  if (nonce === undefined) nonce = Number(await node.request<Hex>('eth_getTransactionCount', [account.address, 'pending']));
  nonces.set(from, nonce + 1);
  const raw = await privateKeyToAccount(account.privateKey).signTransaction({
    type: 'eip1559',
    chainId: node.chainId,
    nonce,
    to: tx.to,
    value: tx.value ?? 0n,
    data: tx.data,
    gas: tx.gas ?? 21_000n,
    maxFeePerGas: 20_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  });
  return { raw, hash: keccak256(raw) };
}

async function signTokenTransfer(to: Address, amount: bigint) {
  const { abi } = (await compileContracts()).TestToken;
  return { ...(await signTx(0, { to: token, data: encodeFunctionData({ abi, functionName: 'transfer', args: [to, amount] }), gas: 100_000n })), amount };
}

const send = (raw: Hex) => node.request<Hex>('eth_sendRawTransaction', [raw]);

/**
 * Makes sure the child's matching index holds every subscription created so far: announcements are
 * applied one after the other, so once a subscription created last gets its callback, the ones before
 * it are indexed. Returns the probe's subscription id (its callback is one of the expected ones).
 */
async function syncIndex(herald: Herald, key: string): Promise<{ id: string; hash: Hex }> {
  const probe = await signTx(5, { to: privateKeyToAddress(`0x${randomBytes(32).toString('hex')}`), value: 1n });
  const id = await subscribe(herald, key, 'transaction-mined', { transactionId: probe.hash });
  await send(probe.raw);
  await node.mine(1);
  await until('the probe callback', async () => callbacksOf(id).length > 0, 10_000);
  return { id, hash: probe.hash };
}

type Callback = ReceivedRequest & { json: { referenceId: string; idempotencyKey: string; data: { item: Record<string, unknown> } } };

function callbacksOf(referenceId: string): Callback[] {
  return receiver.received.map((r) => ({ ...r, json: JSON.parse(r.rawBody.toString('utf8')) })).filter((r) => r.json.referenceId === referenceId);
}

/** Every copy of one key has the same bytes, the key of its header, and a valid signature; returns the copies per key. */
function copiesByKey(callbacks: Callback[]): Map<string, Callback[]> {
  const byKey = new Map<string, Callback[]>();
  for (const cb of callbacks) {
    expect(cb.headers['webhook-id'], 'webhook-id is the idempotencyKey').toBe(cb.json.idempotencyKey);
    expect(cb.headers['x-signature']).toBe(createHmac('sha256', SECRET).update(cb.rawBody).digest('hex'));
    const copies = byKey.get(cb.json.idempotencyKey) ?? [];
    copies.push(cb);
    byKey.set(cb.json.idempotencyKey, copies);
  }
  for (const [key, copies] of byKey) {
    for (const copy of copies) expect(copy.rawBody.equals((copies[0] as Callback).rawBody), `duplicate of ${key} with other bytes`).toBe(true);
  }
  return byKey;
}

/**
 * The window is contiguous, linked by parent hash, equal to the node's chain, ends at the cursor and
 * holds every block since `from` (the first one followed), or the last DEFAULT_WINDOW of them.
 */
async function expectWindowWithoutGap(database: OpenDatabase, from: number, top: number): Promise<number> {
  const rows = await database.db.query<{ height: string; hash: string; parent_hash: string }>(
    'test:window',
    'SELECT height, hash, parent_hash FROM chain_blocks WHERE blockchain = $1 AND network = $2 ORDER BY height',
    [CHAIN.blockchain, CHAIN.network],
  );
  expect(rows.length).toBeGreaterThan(0);
  const first = Number(rows[0]?.height);
  for (const [i, row] of rows.entries()) {
    expect(Number(row.height), 'window heights are contiguous').toBe(first + i);
    expect(row.hash).toBe((await blockOf(Number(row.height))).hash);
    if (i > 0) expect(row.parent_hash).toBe(rows[i - 1]?.hash);
  }
  expect(first).toBe(Math.max(from, top - DEFAULT_WINDOW + 1));
  expect(Number(rows.at(-1)?.height)).toBe(top);
  return rows.length;
}

async function callbackStates(database: OpenDatabase): Promise<Record<string, number>> {
  const rows = await database.db.query<{ status: string; n: number }>(
    'test:callback-states',
    'SELECT status, count(*)::int AS n FROM callbacks GROUP BY status',
    [],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

function expectTokenItem(cb: Callback, holder: Address, transfer: { hash: Hex; amount: bigint }, block: { height: number; hash: string; timestamp: number }) {
  expect(cb.json.data.item).toEqual({
    blockchain: 'ethereum',
    network: 'goerli',
    address: holder, // as subscribed (checksummed), not the lower-case form matching uses
    minedInBlock: block,
    transactionId: transfer.hash,
    tokenType: 'ERC-20',
    token: {
      name: 'Herald Test Token',
      symbol: 'HTT',
      decimals: String(TOKEN_DECIMALS),
      amount: formatUnits(transfer.amount, TOKEN_DECIMALS),
      contractAddress: token.toLowerCase(),
    },
    direction: 'incoming',
    safety: { verdict: 'ok', flags: [] },
  });
}

// --- tests -------------------------------------------------------------------------------------------

describe('EVM chain following across a restart and a node outage (herald as a child process)', () => {
  it('Restart: kill the service (SIGKILL) while blocks are being mined, restart it: no block missed, no callback lost, duplicates only with the same idempotencyKey', {
    timeout: 50_000,
  }, async () => {
    const { database, key } = await setUpDatabase();
    let herald = await startHerald(database.url);
    const followedFrom = (await processed(herald, key, await head())).processedHeight as number;

    // Pre-signed transactions and their subscriptions, created through the child's API.
    const payee = node.accounts[7]?.address as Address;
    const holder = node.accounts[9]?.address as Address;
    const mined: { raw: Hex; hash: Hex; block: number }[] = [];
    for (let j = 0; j < MINED_TXS; j++) {
      const tx = await signTx(1 + (j % 4), { to: payee, value: 1000n + BigInt(j) });
      mined.push({ ...tx, block: Math.floor((j * BLOCKS) / MINED_TXS) });
    }
    const transfers: { raw: Hex; hash: Hex; amount: bigint; block: number }[] = [];
    for (let i = 0; i < BLOCKS; i += 2) transfers.push({ ...(await signTokenTransfer(holder, 1_000_000n + BigInt(i))), block: i });
    const minedSubs = new Map<string, (typeof mined)[number]>();
    for (let j = 0; j < mined.length; j += 20) {
      const chunk = mined.slice(j, j + 20);
      const ids = await Promise.all(chunk.map((tx) => subscribe(herald, key, 'transaction-mined', { transactionId: tx.hash })));
      for (const [k, id] of ids.entries()) minedSubs.set(id, chunk[k] as (typeof mined)[number]);
    }
    const tokenSub = await subscribe(herald, key, 'address-tokens-transactions-confirmed', { address: holder, receiveCallbackOn: 2 });
    const probe = await syncIndex(herald, key);

    // The mining loop: transactions, one block, a pause; past the schedule, empty blocks until told to stop.
    const schedule: Hex[][] = Array.from({ length: BLOCKS }, () => []);
    for (const tx of [...mined, ...transfers]) schedule[tx.block]?.push(tx.raw);
    const loopStart = await head();
    let loopMined = 0;
    let stopMining = false;
    const loop = (async () => {
      for (let i = 0; !stopMining; i++) {
        for (const raw of schedule[i] ?? []) await send(raw);
        await node.mine(1);
        loopMined = i + 1;
        await sleep(BLOCK_INTERVAL_MS);
      }
    })();
    const stopLoop = async () => {
      stopMining = true;
      await loop;
    };

    try {
      // Kill it while it follows: blocks are coming and it has processed some of them.
      await until(
        'the loop to reach the kill point with the child following',
        async () => loopMined >= KILL_AT && ((await getCursor(database.db, CHAIN))?.height ?? 0) > loopStart + 10,
      );
      herald.child.kill('SIGKILL');
      expect(await herald.exited).toBe('SIGKILL');
      const headAtKill = await head();
      const cursorAtKill = (await getCursor(database.db, CHAIN))?.height ?? -1;
      const receivedAtKill = receiver.received.length;

      await until('the loop to reach the restart point', async () => loopMined >= RESTART_AT);
      // Nobody followed while the child was dead.
      expect((await getCursor(database.db, CHAIN))?.height).toBe(cursorAtKill);
      const headAtRestart = await head();
      const restartedAt = Date.now();
      herald = await startHerald(database.url);
      const headWhenReady = await head();
      const minedWhenReady = loopMined;
      // Keep mining a while with the new child following: the schedule done, some blocks more, and the
      // child applying blocks past where the old one died (it catches up on the rest after the loop).
      await until(
        'the schedule to be mined while the new child follows',
        async () =>
          loopMined >= Math.max(BLOCKS, minedWhenReady + AFTER_RESTART) && ((await getCursor(database.db, CHAIN))?.height ?? 0) > cursorAtKill + AFTER_RESTART,
        30_000,
      );
      await stopLoop();
      const final = await node.mine(1); // the receiveCallbackOn-th confirmation of the last transfer
      const caughtUp = await processed(herald, key, final);
      const catchUpMs = Date.now() - restartedAt;
      expect(caughtUp.processedHeight).toBe(final);
      expect(caughtUp.processedHash).toBe((await blockOf(final)).hash);

      // Every event's callback, delivered (the dead child's claims included, after their lease).
      const expected = MINED_TXS + transfers.length + 1;
      await until(
        'every callback to be delivered',
        async () => {
          const states = await callbackStates(database);
          return states.delivered === expected && Object.keys(states).length === 1;
        },
        20_000,
      );

      const all = receiver.received.map((r) => ({ ...r, json: JSON.parse(r.rawBody.toString('utf8')) })) as Callback[];
      const byKey = copiesByKey(all);
      let missing = 0;
      for (const [id, tx] of minedSubs) {
        const copies = callbacksOf(id);
        if (copies.length === 0) missing++;
        const keys = new Set(copies.map((c) => c.json.idempotencyKey));
        expect(keys.size, `one event for ${tx.hash}`).toBe(1);
        const height = await minedIn(tx.hash);
        expect(height).toBe(loopStart + 1 + tx.block);
        expect(copies[0]?.json.data.item).toEqual({ blockchain: 'ethereum', network: 'goerli', transactionId: tx.hash, minedInBlock: await blockOf(height) });
      }
      const tokenCallbacks = callbacksOf(tokenSub);
      const tokenByTx = new Map<string, Callback>(tokenCallbacks.map((c) => [c.json.data.item.transactionId as string, c]));
      for (const transfer of transfers) {
        const cb = tokenByTx.get(transfer.hash);
        if (!cb) {
          missing++;
          continue;
        }
        expectTokenItem(cb, holder, transfer, await blockOf(await minedIn(transfer.hash)));
      }
      expect(new Set(tokenCallbacks.map((c) => c.json.idempotencyKey)).size).toBe(transfers.length);
      expect(callbacksOf(probe.id).length).toBeGreaterThan(0);
      expect(missing).toBe(0);
      // Nothing else: one key per event, and every request is one of them.
      expect(byKey.size).toBe(expected);
      const duplicates = all.length - byKey.size;

      const cursor = await getCursor(database.db, CHAIN);
      expect(cursor?.height).toBe(await head());
      const windowSize = await expectWindowWithoutGap(database, followedFrom, final);
      await stopHerald(herald);

      console.log(
        `restart test: ${final - loopStart} blocks mined (${headWhenReady - headAtKill} while herald was down), killed at processed ${cursorAtKill} ` +
          `of head ${headAtKill} after ${receivedAtKill} callbacks, restarted at head ${headAtRestart}, caught up ${catchUpMs} ms after restart; ` +
          `${expected} callbacks, ${all.length} requests, ${duplicates} duplicate(s), ${missing} missing; window ${windowSize} blocks, no gap`,
      );
    } finally {
      await stopLoop();
    }
  });

  it('Node down for a while: the follower retries with backoff, never skips, and catches up', { timeout: 40_000 }, async () => {
    const { database, key } = await setUpDatabase();
    const herald = await startHerald(database.url);
    const followedFrom = (await processed(herald, key, await head())).processedHeight as number;

    const holder = privateKeyToAddress(`0x${randomBytes(32).toString('hex')}`);
    const payee = node.accounts[7]?.address as Address;
    const mined: { raw: Hex; hash: Hex; block: number }[] = [];
    const transfers: { raw: Hex; hash: Hex; amount: bigint; block: number }[] = [];
    for (let i = 0; i < DOWN_BLOCKS; i++) {
      for (let k = 0; k < 2; k++) mined.push({ ...(await signTx(6, { to: payee, value: 1n + BigInt(i) })), block: i });
      transfers.push({ ...(await signTokenTransfer(holder, 500_000n + BigInt(i))), block: i });
    }
    const minedSubs = new Map<string, (typeof mined)[number]>();
    for (const tx of mined) minedSubs.set(await subscribe(herald, key, 'transaction-mined', { transactionId: tx.hash }), tx);
    const tokenSub = await subscribe(herald, key, 'address-tokens-transactions-confirmed', { address: holder, receiveCallbackOn: 2 });
    const probe = await syncIndex(herald, key);
    const before = await processed(herald, key, await head());
    const beforeHeight = before.processedHeight as number;

    // Down: blocks are mined straight on the provider (HTTP answers 503, WebSockets are refused).
    const logsBefore = herald.logs().length;
    node.down();
    const downAt = Date.now();
    try {
      for (let i = 0; i < DOWN_BLOCKS; i++) {
        for (const tx of mined.filter((t) => t.block === i)) await send(tx.raw);
        await send((transfers[i] as (typeof transfers)[number]).raw);
        await node.mine(1);
      }
      const last = await node.mine(1); // the 2nd confirmation of the last transfer
      expect(last).toBe(beforeHeight + DOWN_BLOCKS + 1);
      await sleep(DOWN_MS - (Date.now() - downAt));

      // Still at its height: every step failed and was retried, none skipped ahead.
      const during = await status(herald, key);
      expect(during?.processedHeight).toBe(beforeHeight);
      expect(during?.processedHash).toBe(before.processedHash);
      expect(during?.state).not.toBe('stopped');
      expect((await getCursor(database.db, CHAIN))?.height).toBe(beforeHeight);
      expect(callbacksOf(tokenSub)).toHaveLength(0);
      for (const id of minedSubs.keys()) expect(callbacksOf(id)).toHaveLength(0);
      const retries = herald
        .logs()
        .slice(logsBefore)
        .filter((l) => l.msg?.startsWith('chain following step failed; retrying'));
      expect(retries.length, herald.output()).toBeGreaterThanOrEqual(2);
      const delays = retries.map((l) => l.retryInMs as number);
      // Backoff: each retry waits longer than the one before (doubling), not a tight loop.
      for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThan(delays[i - 1] as number);
      expect(retries.length).toBeLessThanOrEqual(5);

      node.up();
      const upAt = Date.now();
      const caughtUp = await processed(herald, key, last, 15_000);
      const catchUpMs = Date.now() - upAt;
      expect(caughtUp.processedHash).toBe((await blockOf(last)).hash);

      const expected = mined.length + transfers.length + 1;
      await until('every callback to be delivered', async () => {
        const states = await callbackStates(database);
        return states.delivered === expected && Object.keys(states).length === 1;
      });
      let missing = 0;
      let requests = 0;
      for (const [id, tx] of minedSubs) {
        const copies = callbacksOf(id);
        requests += copies.length;
        if (copies.length === 0) missing++;
        expect(copiesByKey(copies).size).toBe(1);
        const height = await minedIn(tx.hash);
        expect(height).toBe(beforeHeight + 1 + tx.block);
        expect(copies[0]?.json.data.item).toEqual({ blockchain: 'ethereum', network: 'goerli', transactionId: tx.hash, minedInBlock: await blockOf(height) });
      }
      const tokenCallbacks = callbacksOf(tokenSub);
      requests += tokenCallbacks.length;
      expect(copiesByKey(tokenCallbacks).size).toBe(transfers.length);
      for (const transfer of transfers) {
        const cb = tokenCallbacks.find((c) => c.json.data.item.transactionId === transfer.hash);
        if (!cb) {
          missing++;
          continue;
        }
        expectTokenItem(cb, holder, transfer, await blockOf(beforeHeight + 1 + transfer.block));
      }
      expect(callbacksOf(probe.id).length).toBeGreaterThan(0);
      expect(missing).toBe(0);
      await expectWindowWithoutGap(database, followedFrom, last);
      await stopHerald(herald);
      console.log(
        `node-down test: ${DOWN_BLOCKS + 1} blocks mined while the node was down ${DOWN_MS} ms; ${retries.length} failed steps retried after ` +
          `${delays.join(', ')} ms; caught up ${catchUpMs} ms after up(); ${expected - 1} callbacks expected, ${requests} received, ${missing} missing`,
      );
    } finally {
      node.up();
    }
  });
});

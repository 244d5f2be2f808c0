/**
 * `npm run demo`: herald end to end on one machine, in about 15 seconds, with nothing to set up.
 *
 * It starts a local EVM node (Hardhat's EDR engine, in this process) standing in for ethereum/goerli,
 * an HTTPS receiver on loopback with a freshly made CA, and herald itself on an embedded PostgreSQL in
 * a temporary directory (or on a fresh database of the server named by DATABASE_URL). Then, as a
 * customer would, through the HTTP API with an API key only: three subscriptions and a wallet. It sends
 * an ERC-20 transfer, an ERC-721 transfer and an internal ETH transfer, mines blocks, prints every
 * callback as it arrives (with its signature checked) and the wallet's assets, and stops everything.
 *
 *   npm run demo                 # quiet: the demo's own output only
 *   npm run demo -- --verbose    # with herald's logs (pino JSON lines)
 *
 * Exit code 0 when every expected callback arrived, 1 otherwise (with the reason).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type Address, encodeFunctionData, keccak256 } from 'viem';
import { createLogger, type RunningApp, startApp } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { createApiKey, createCustomer } from '../src/store/customers.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { compileContracts, deployContract, walletClient, writeContract } from '../test/support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from '../test/support/evm-node.ts';
import { type ReceivedRequest, type Receiver, startReceiver } from '../test/support/receiver.ts';
import { createTestCa } from '../test/support/tls.ts';

const VERBOSE = process.argv.includes('--verbose') || process.argv.includes('-v');
const CALLBACK_TIMEOUT_MS = 30_000;
const SECRET = 'demo-callback-secret';
const CHAIN = '/blockchain-events/ethereum/goerli';
const ETH = 10n ** 18n;
const started = Date.now();

// --- output --------------------------------------------------------------------------------------

const say = (line = '') => console.log(line);
const step = (n: number, text: string) => say(`\n${n}/6 ${text}`);
const detail = (text: string) => say(`    ${text}`);
const indent = (text: string, spaces = 6) => text.replace(/^/gm, ' '.repeat(spaces));
const short = (hex: string) => `${hex.slice(0, 10)}…${hex.slice(-4)}`;

class DemoError extends Error {}

// --- cleanup: everything started registers how to stop it; run in reverse order ------------------

const cleanups: { what: string; fn: () => Promise<void> | void }[] = [];
const onCleanup = (what: string, fn: () => Promise<void> | void) => cleanups.push({ what, fn });

async function cleanup(): Promise<void> {
  for (const { what, fn } of cleanups.splice(0).reverse()) {
    try {
      await fn();
    } catch (error) {
      console.error(`    (could not stop ${what}: ${(error as Error).message})`);
    }
  }
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    say(`\n${signal}: stopping...`);
    void cleanup().finally(() => process.exit(130));
  });
}

// --- the API, as a customer calls it --------------------------------------------------------------

let baseUrl = '';
let apiKey = '';

// biome-ignore lint/suspicious/noExplicitAny: the demo prints whatever JSON the API answers
async function api(method: string, path: string, item?: Record<string, unknown>): Promise<any> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'x-api-key': apiKey, ...(item && { 'content-type': 'application/json' }) },
    body: item ? JSON.stringify({ data: { item } }) : undefined,
  });
  const text = await response.text();
  if (!response.ok) throw new DemoError(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

// --- callbacks, printed as they arrive -------------------------------------------------------------

interface Callback {
  event: string;
  referenceId: string;
  item: Record<string, unknown> & { minedInBlock?: { height: number } };
}

const arrivedByEvent = new Map<string, number>();

function summary(cb: Callback): string {
  const i = cb.item as Record<string, string> & { minedInBlock?: { height: number }; token?: Record<string, string> };
  const block = i.minedInBlock?.height;
  switch (cb.event) {
    case 'TRANSACTION_MINED':
      return `transaction ${short(i.transactionId ?? '')} was mined in block ${block}`;
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED': {
      const t = i.token ?? {};
      const what = i.tokenType === 'ERC-721' ? `${t.symbol} #${t.tokenId}` : `${t.amount} ${t.symbol}`;
      return `${i.direction} ${i.tokenType} transfer of ${what} to ${short(i.address ?? '')} (block ${block}, confirmed)`;
    }
    case 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER':
      return `${i.amount} ${i.unit} moved to ${short(i.address ?? '')} inside transaction ${short(i.parentTransactionId ?? '')} (block ${block}, confirmed)`;
    default:
      return '(an event this demo does not know)';
  }
}

function signatureCheck(request: ReceivedRequest): string {
  const given = request.headers['x-signature'];
  if (typeof given !== 'string') return 'NOT SIGNED (no x-signature header)';
  const expected = createHmac('sha256', SECRET).update(request.rawBody).digest('hex');
  const ok = given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
  return ok ? 'valid (x-signature = HMAC-SHA256 of the raw body, keyed with the subscription secret)' : `INVALID (got ${given}, expected ${expected})`;
}

function printCallback(n: number, request: ReceivedRequest): void {
  const body = JSON.parse(request.rawBody.toString('utf8')) as { referenceId: string; data: { event: string; item: Callback['item'] } };
  const cb: Callback = { event: body.data.event, referenceId: body.referenceId, item: body.data.item };
  say(`\n    <- callback #${n} received: ${cb.event}`);
  detail(`  ${summary(cb)}`);
  detail(`  signature: ${signatureCheck(request)}`);
  detail(`  POST ${request.path}`);
  say(indent(JSON.stringify(body, null, 2)));
  arrivedByEvent.set(cb.event, (arrivedByEvent.get(cb.event) ?? 0) + 1);
}

/** Prints each request the receiver gets, in order, as soon as it has it. */
function printArrivals(receiver: Receiver, isClosed: () => boolean): void {
  void (async () => {
    for (let n = 1; ; ) {
      try {
        await receiver.waitFor(n, 600_000);
      } catch {
        if (isClosed()) return;
        continue;
      }
      printCallback(n, receiver.received[n - 1] as ReceivedRequest);
      n++;
    }
  })();
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new DemoError(what);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function expectCallback(event: string, count: number): Promise<void> {
  await until(
    `no ${event} callback arrived within ${CALLBACK_TIMEOUT_MS / 1000} s (expected ${count}, got ${arrivedByEvent.get(event) ?? 0}). ` +
      'Run `npm run demo -- --verbose` to see the service logs.',
    () => ((arrivedByEvent.get(event) ?? 0) >= count ? true : undefined),
    CALLBACK_TIMEOUT_MS,
  );
}

/** Waits until herald has processed block `height`, as GET /blockchain-events/status reports it. */
async function processed(height: number): Promise<void> {
  await until(
    `herald did not process block ${height} within ${CALLBACK_TIMEOUT_MS / 1000} s`,
    async () => {
      const status = await api('GET', '/blockchain-events/status');
      const goerli = status.data.items.find((i: { blockchain: string; network: string }) => i.blockchain === 'ethereum' && i.network === 'goerli');
      return goerli?.processedHeight >= height ? true : undefined;
    },
    CALLBACK_TIMEOUT_MS,
  );
}

// --- the demo ------------------------------------------------------------------------------------

async function main(): Promise<void> {
  say('herald demo: ethereum/goerli on a local EVM node, callbacks to a local HTTPS receiver');

  // 1. The chain -----------------------------------------------------------------------------------
  step(1, "Starting an in-process EVM node (Hardhat's EDR) as ethereum/goerli, deploying the demo contracts...");
  // A development chain's own id (Hardhat's and Anvil's), not goerli's 5: herald is told so below (chainId).
  const node: EvmNode = await startEvmNode({ automine: true, chainId: 31337 });
  onCleanup('the EVM node', () => node.close());
  await compileContracts(); // solc from npm; cached under node_modules/.cache after the first run
  const account = (i: number) => node.accounts[i]?.address as Address;
  const watched = account(5); // the customer's address: token subscription and wallet
  const token = await deployContract(node, 'TestToken', ['Herald Demo Token', 'HDT', 6]);
  const nft = await deployContract(node, 'TestNft', ['Herald Demo NFT', 'HDN']);
  const forwarder = await deployContract(node, 'Forwarder');
  await writeContract(node, 'TestToken', token, 'mint', [account(0), 1_000_000n * 10n ** 6n]);
  await writeContract(node, 'TestNft', nft, 'mint', [account(1), 42n]);
  await node.setAutomine(false); // from now on, blocks are mined explicitly, one at a time
  detail(`node     ${node.url} (JSON-RPC) and ${node.wsUrl} (newHeads), chain id ${node.chainId}`);
  detail(`ERC-20   ${token} (HDT, 6 decimals)`);
  detail(`ERC-721  ${nft} (HDN)`);
  detail(`internal ${forwarder} (Forwarder: forward(to) passes its ETH on in an internal call)`);
  detail(`watched  ${watched} (the customer's address)`);

  // 2. The customer's receiver ---------------------------------------------------------------------
  step(2, 'Starting an HTTPS receiver on loopback with a freshly made CA...');
  const ca = await createTestCa();
  const receiver = await startReceiver({ ca, hostnames: ['localhost'] });
  let receiverClosed = false;
  onCleanup('the receiver', async () => {
    receiverClosed = true;
    await receiver.close();
  });
  printArrivals(receiver, () => receiverClosed);
  detail(`receiver ${receiver.url} (certificate for localhost, signed by the demo CA)`);

  // 3. herald --------------------------------------------------------------------------------------
  const dir = mkdtempSync(join(tmpdir(), 'herald-demo-'));
  chmodSync(dir, 0o711); // run as root, the embedded PostgreSQL runs as `postgres` and must reach data/ inside
  onCleanup('the temporary directory', () => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = process.env.DATABASE_URL ? await freshDatabase(process.env.DATABASE_URL) : undefined;
  const where = databaseUrl ? 'on a fresh database of DATABASE_URL' : 'embedded PostgreSQL in a temporary directory';
  step(3, `Starting herald (${where}), following ethereum/goerli...`);
  const caFile = join(dir, 'demo-ca.pem');
  writeFileSync(caFile, ca.caPem);
  // What an operator would put in herald.config.json for this setup.
  const configFile = join(dir, 'herald.config.json');
  const fileConfig = {
    // chainId: the node is a local development chain, not goerli (docs/reference/chains.md "Chain identity").
    chains: [{ blockchain: 'ethereum', network: 'goerli', chainId: node.chainId, rpcUrl: node.url, wsUrl: node.wsUrl, pollIntervalMs: 200 }],
    delivery: { allowNetworks: ['127.0.0.1/32', '::1/128'], caFile, pollIntervalMs: 50 },
    logLevel: VERBOSE ? 'info' : 'warn',
  };
  writeFileSync(configFile, JSON.stringify(fileConfig, null, 2));
  const config = loadConfig({ configFile, dataDir: join(dir, 'data'), port: 0, host: '127.0.0.1', databaseUrl }, {});
  const starting = startApp(config, createLogger(config));
  // Registered before the start finishes: a Ctrl-C while herald starts still stops its PostgreSQL.
  onCleanup('herald', async () => (await starting.catch(() => undefined))?.close());
  const app: RunningApp = await starting;
  baseUrl = app.url as string;
  detail(`herald   ${baseUrl}  (API docs at ${baseUrl}/docs)`);
  detail(`config   ${indent(JSON.stringify(fileConfig, null, 2), 13).trimStart()}`);

  // The operator's part (what `herald customers create`, `herald keys create` and
  // `herald domains add --verified` do): a customer, an API key, and `localhost` as a verified domain.
  const db = app.database.db;
  const plan = config.defaultPlan;
  const customer = await createCustomer(db, `demo-${randomBytes(3).toString('hex')}`, plan, BigInt(plan.credits));
  apiKey = (await createApiKey(db, customer.id, { label: 'demo' })).key;
  await upsertDomain(db, customer.id, 'localhost', 'operator');
  detail(`operator created customer '${customer.name}', an API key (${apiKey.slice(0, 10)}…) and the verified callback domain 'localhost'`);
  await processed(Number(await node.request<string>('eth_blockNumber')));

  // 4. Subscriptions and a wallet, through the API ---------------------------------------------------
  step(4, 'Creating three subscriptions and a wallet through the HTTP API (x-api-key)...');
  // The ERC-20 transfer is signed now but sent later: its hash is known before it exists on chain.
  const signer = walletClient(node, 0);
  const prepared = await signer.prepareTransactionRequest({
    account: signer.account as NonNullable<typeof signer.account>,
    chain: signer.chain,
    to: token,
    data: encodeFunctionData({ abi: (await compileContracts()).TestToken.abi, functionName: 'transfer', args: [watched, 2_500_000n] }),
  });
  const signedTransfer = await signer.signTransaction(prepared as Parameters<typeof signer.signTransaction>[0]);
  const transferHash = keccak256(signedTransfer);

  const subscribe = async (path: string, item: Record<string, unknown>) => {
    const res = await api('POST', `${CHAIN}/subscriptions/${path}`, { callbackUrl: `${receiver.url}/hooks/${path}`, callbackSecretKey: SECRET, ...item });
    const s = res.data.item;
    detail(`${s.eventType.padEnd(58)} referenceId ${s.referenceId}`);
    return s.referenceId as string;
  };
  await subscribe('transaction-mined', { transactionId: transferHash });
  await subscribe('address-tokens-transactions-confirmed', { address: watched, receiveCallbackOn: 2 });
  await subscribe('internal-transactions-for-specific-amount', { amountHigherThan: 1 });
  detail(`  (TRANSACTION_MINED watches ${short(transferHash)}, the ERC-20 transfer signed but not sent yet;`);
  detail(`   token transfers of ${short(watched)} call back at 2 confirmations; internal transfers of >= 1 ETH at 3)`);
  const wallet = (await api('POST', '/wallet-as-a-service/wallets', { walletName: 'demo treasury' })).data.item;
  const added = (await api('POST', `/wallet-as-a-service/wallets/${wallet.walletId}/ethereum/goerli/addresses`, { address: watched })).data.item;
  detail(`wallet '${wallet.walletName}' ${wallet.walletId} watches ${short(watched)} from block ${added.watchedFromBlock}`);
  // herald learns of new subscriptions through a database notification; give it that instant before
  // the first block, so the demo never races its own setup.
  await app.ingest?.settled();

  // 5. Transactions and blocks ---------------------------------------------------------------------
  step(5, 'Sending an ERC-20 transfer, an ERC-721 transfer and an internal transfer; mining blocks...');
  const mine = async (what: string) => {
    const height = await node.mine(1);
    detail(`mined block ${height}: ${what}`);
    await processed(height);
    return height;
  };

  await node.request('eth_sendRawTransaction', [signedTransfer]);
  detail(`sent ERC-20 transfer of 2.5 HDT to ${short(watched)}: ${short(transferHash)}`);
  await mine('the ERC-20 transfer');
  await expectCallback('TRANSACTION_MINED', 1);

  const nftTransfer = await writeContract(node, 'TestNft', nft, 'transferFrom', [account(1), watched, 42n], { from: 1, wait: false });
  say();
  detail(`sent ERC-721 transfer of HDN #42 to ${short(watched)}: ${short(nftTransfer.hash)}`);
  await mine('the ERC-721 transfer (and the ERC-20 transfer now has 2 confirmations)');
  await expectCallback('ADDRESS_TOKENS_TRANSACTION_CONFIRMED', 1);

  const internal = await writeContract(node, 'Forwarder', forwarder, 'forward', [watched], { value: (3n * ETH) / 2n, from: 2, wait: false });
  say();
  detail(`sent 1.5 ETH through the Forwarder contract to ${short(watched)} (an internal transfer): ${short(internal.hash)}`);
  await mine('the internal transfer (and the ERC-721 transfer now has 2 confirmations)');
  await expectCallback('ADDRESS_TOKENS_TRANSACTION_CONFIRMED', 2);
  say();
  await mine('empty (the internal transfer has 2 confirmations)');
  await mine('empty (the internal transfer has 3 confirmations)');
  await expectCallback('CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', 1);

  // 6. What herald knows now ------------------------------------------------------------------------
  step(6, "The wallet's assets and the chain status, through the API...");
  const assets = (await api('GET', `/wallet-as-a-service/wallets/${wallet.walletId}`)).data.item;
  for (const c of assets.coins ?? []) detail(`coin   ${c.confirmedBalance} ${c.unit} confirmed (received ${c.totalReceived}, spent ${c.totalSpent})`);
  for (const t of assets.fungibleTokens ?? []) detail(`token  ${t.amount} ${t.symbol} (${t.type} ${t.identifier})`);
  for (const t of assets.nonFungibleTokens ?? []) detail(`NFT    ${t.symbol} #${t.tokenId} (${t.type} ${t.identifier})`);
  detail(`GET /wallet-as-a-service/wallets/${wallet.walletId}`);
  say(indent(JSON.stringify(assets, null, 2)));
  const status = (await api('GET', '/blockchain-events/status')).data.items;
  detail('GET /blockchain-events/status');
  say(indent(JSON.stringify(status, null, 2)));

  say(`\nStopping: herald, the receiver, the EVM node${databaseUrl ? ', the demo database' : ''}, the temporary directory...`);
}

/** On a DATABASE_URL server, a database of the demo's own (dropped at the end): a chain cursor left by another run would not match this new chain. */
async function freshDatabase(serverUrl: string): Promise<string> {
  const name = `herald_demo_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (error) {
    throw new DemoError(
      `DATABASE_URL is set: the demo makes a database of its own on that server and could not (${(error as Error).message}). ` +
        'Give the role CREATEDB, or unset DATABASE_URL to use the embedded PostgreSQL.',
    );
  } finally {
    await admin.end().catch(() => undefined);
  }
  onCleanup('the demo database', async () => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await client.end();
    }
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  exitCode = 1;
  // After Ctrl-C, what fails is only the demo meeting its own teardown: nothing to report.
  if (stopping) await new Promise(() => {});
  const message = error instanceof DemoError ? error.message : ((error as Error).stack ?? String(error));
  console.error(`\nThe demo failed: ${message}`);
}
if (!stopping) {
  await cleanup();
  say(exitCode === 0 ? `Done in ${((Date.now() - started) / 1000).toFixed(1)} s.` : 'Stopped.');
  // The EDR engine is a native addon that may keep the event loop alive: exit explicitly.
  process.exit(exitCode);
}

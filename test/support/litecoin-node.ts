/**
 * A real litecoind (Litecoin Core 0.21: Bitcoin Core 0.21's RPC) in regtest, for tests, and the ChainDriver
 * over it that the shared follow scenarios (test/support/follow-scenarios.ts) use.
 *
 * The node (startLitecoinNode):
 * - `litecoind -regtest` as a child process (not -daemon, so it can be stopped and killed by pid) in a
 *   fresh temporary data directory, removed by close(). RPC on a free loopback port; `-listen=0` opens no
 *   P2P socket at all (litecoind refuses -bind together with -listen=0, and a P2P port is one more port
 *   that could collide with a parallel test file). Options p2pPort and connect make a node with peers.
 * - RPC authentication: the `.cookie` file (`<datadir>/regtest/.cookie`, rewritten with a new secret at
 *   every start) by default, or -rpcuser/-rpcpassword. `rpc(method, ...params)` is JSON-RPC over HTTP with
 *   Basic authentication on keep-alive connections.
 * - A wallet ('herald', legacy) is created and 101 blocks are mined to it: the first coinbase is then
 *   mature (coinbase maturity 100), so the wallet has 50 LTC to spend.
 * - MWEB: in regtest the MWEB soft fork activates at height 432 and no block can be mined after 431 without
 *   an MWEB peg-in transaction (`bad-txns-vin-empty`). mine() and the driver refuse to go past
 *   MAX_REGTEST_HEIGHT with a clear error: a test file has about 330 blocks to spend.
 * - stop()/start() keep the data directory (regtest state and the mempool persist; the cookie changes).
 *
 * The driver (startLitecoinDriver), for herald's 'litecoin' 'testnet' (herald has no regtest network):
 * - newAddress(): `getnewaddress "" legacy` by default (option addressType). Regtest legacy addresses (m…/n…)
 *   use testnet's version bytes; herald's litecoin testnet also accepts regtest's bech32 `rltc1…`.
 * - send(): at start the driver splits the mature coinbase into `fundingCoins` coins (default 100 × 0.49
 *   LTC, mined at height 102). Each send spends only such coins (the fewest that cover the amount), with
 *   the change to a new wallet address. So sends never depend on one another: dropping one in a reorg
 *   cannot invalidate another, no chain of unconfirmed change outputs grows, and no input is a coinbase
 *   that a reorg could make immature again. (sendtoaddress would pick any wallet coin, e.g. the change of
 *   the transaction a reorg is about to drop.) Over a node's life the sends can pay about 49 LTC in total.
 * - reorg(depth, { drop }): invalidateblock at height - depth + 1 (its transactions go back to the mempool),
 *   then depth + 1 blocks to a fresh address with generateblock, which takes an explicit transaction list:
 *   the mempool less `drop` and anything spending from it. Dropped transactions stay in the mempool (as on
 *   a real node after a double-spend that never arrived) and every later mine() leaves them out too.
 * - balance(): scantxoutset over the UTXO set at the tip, exact base units.
 * - down()/up(): stop and start the process on the same port and data directory.
 *
 * Two nodes of one chain (startLitecoinPair): peered over loopback, with controls to stop either, cut and
 * restore their connection, fork them and wait until they agree again (see LitecoinPair).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request as httpRequest } from 'undici';
import { parseCoinAmount } from '../../src/chains/utxo/normalize.ts';
import { formatUnits } from '../../src/domain/amounts.ts';
import { freePort } from '../../src/store/embedded.ts';
import type { ChainDriver } from './chain-driver.ts';
import { findBinary, type RealNodeBinary } from './real-node.ts';
import { until } from './wait.ts';

/** litecoind on this machine (path undefined when not installed; see real-node.ts for the skip/fail policy). */
export const litecoind: RealNodeBinary = findBinary('litecoind');

/** Regtest height at which MWEB activates; the block at this height cannot be mined without a peg-in. */
export const MWEB_ACTIVATION_HEIGHT = 432;
/** The highest block a regtest chain can reach here. */
export const MAX_REGTEST_HEIGHT = MWEB_ACTIVATION_HEIGHT - 1;
export const COINBASE_MATURITY = 100;
const DECIMALS = 8;
/** Per request; generating 300 blocks takes well under a second. */
const RPC_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;
const OUTPUT_LIMIT = 64 * 1024;

/** An error answer of litecoind (code -28 while it is still loading, -8 bad parameter, -26 rejected transaction, ...). */
export class LitecoinRpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    readonly rpcMessage: string,
  ) {
    super(`litecoind ${method}: ${rpcMessage} (code ${code})`);
    this.name = 'LitecoinRpcError';
  }
}

export type LitecoinRpcAuth = 'cookie' | { user: string; password: string };

export interface LitecoinNodeOptions {
  /** 'cookie' (default): the node's `.cookie` file; or -rpcuser/-rpcpassword. */
  rpcAuth?: LitecoinRpcAuth;
  /** Blocks mined to the wallet at start; default 101 (one mature coinbase: 50 LTC). */
  initialBlocks?: number;
  /** Name of the wallet created at start; default 'herald'. */
  wallet?: string;
  /** More litecoind arguments. */
  args?: string[];
  /** The litecoind executable; default the one found in PATH. */
  binary?: string;
  /** How long start() waits for the RPC; default 60 s (litecoind is usually ready in half a second). */
  startTimeoutMs?: number;
  /**
   * Accept peers on this loopback P2P port (kept across stop/start). Default: no P2P socket at all
   * (-listen=0). See startLitecoinPair.
   */
  p2pPort?: number;
  /** Loopback P2P ports of the only peers to connect to (-connect); default none. */
  connect?: number[];
}

export interface LitecoinNode {
  /** http://127.0.0.1:PORT, without credentials. */
  readonly url: string;
  readonly rpcPort: number;
  readonly datadir: string;
  /** `<datadir>/regtest/.cookie` in cookie mode (rewritten at each start), undefined with user and password. */
  readonly cookieFile: string | undefined;
  readonly rpcAuth: LitecoinRpcAuth;
  /** The credentials rpc() uses now (from the cookie file in cookie mode). */
  readonly credentials: { user: string; password: string };
  readonly walletName: string;
  /** A legacy wallet address the initial blocks and mine() pay to. */
  readonly miningAddress: string;
  readonly running: boolean;
  /** A JSON-RPC call (positional parameters). Throws LitecoinRpcError for an error answer. */
  rpc<T = unknown>(method: string, ...params: unknown[]): Promise<T>;
  height(): Promise<number>;
  /** generatetoaddress; throws (mining nothing) when the chain would pass MAX_REGTEST_HEIGHT. Returns the new height. */
  mine(count?: number, address?: string): Promise<number>;
  /**
   * Flushes the chain to disk, then SIGTERM (a clean shutdown also saves the mempool), SIGKILL after 5 s; keeps
   * the data directory. Takes about 0.2 s, up to 1 s more while another client holds an idle connection.
   */
  stop(): Promise<void>;
  /**
   * SIGKILL (as a crash); keeps the data directory. litecoind flushes blocks to disk rarely in regtest: after
   * a kill it comes back at an older height (the blocks since its last flush are gone), as after a real crash.
   */
  kill(): Promise<void>;
  /** Starts the stopped node on the same port and data directory and loads the wallet; `rpcAuth` switches the authentication. */
  start(options?: { rpcAuth?: LitecoinRpcAuth }): Promise<void>;
  restart(options?: { rpcAuth?: LitecoinRpcAuth }): Promise<void>;
  /** What litecoind wrote on stdout and stderr (the last 64 KiB). */
  output(): string;
  /** Stops the node and removes the data directory. */
  close(): Promise<void>;
}

/**
 * The P2P arguments: by default no socket and no peer. With p2pPort, a listening socket on loopback only
 * (no Tor, no address discovery); with connect, outbound connections to those ports and to nothing else.
 * Peers on loopback are whitelisted (noban).
 */
function p2pArgs(options: LitecoinNodeOptions): string[] {
  const { p2pPort, connect = [] } = options;
  if (p2pPort === undefined && connect.length === 0) return ['-listen=0'];
  const listen = p2pPort === undefined ? ['-listen=0'] : ['-listen=1', `-bind=127.0.0.1:${p2pPort}`, `-port=${p2pPort}`, '-listenonion=0', '-discover=0'];
  // -connect=0: no automatic outbound connection at all (regtest has no seeds, but an address learnt from a
  // peer would be tried).
  const outbound = connect.length > 0 ? connect.map((port) => `-connect=127.0.0.1:${port}`) : ['-connect=0'];
  // noban on loopback: transactions are announced to such a peer at once and requested from it at once
  // (otherwise after Poisson delays of 2-5 s, for privacy on a real network).
  return [...listen, ...outbound, '-dnsseed=0', '-whitelist=noban@127.0.0.1'];
}

/** Throws when mining `count` blocks on top of `height` would pass MAX_REGTEST_HEIGHT. */
export function assertBelowMweb(height: number, count: number): void {
  if (!Number.isSafeInteger(count) || count < 0) throw new Error(`cannot mine ${count} blocks`);
  if (height + count > MAX_REGTEST_HEIGHT) {
    throw new Error(
      `mining ${count} block(s) at height ${height} would reach height ${height + count}: litecoind regtest activates MWEB at height ` +
        `${MWEB_ACTIVATION_HEIGHT} and then cannot mine without an MWEB peg-in (bad-txns-vin-empty); keep regtest chains at or below ${MAX_REGTEST_HEIGHT}`,
    );
  }
}

// Nodes still running when the test process exits are killed and their directories removed.
const liveNodes = new Set<{ child: ChildProcess | undefined; datadir: string }>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const node of liveNodes) {
      node.child?.kill('SIGKILL');
      try {
        rmSync(node.datadir, { recursive: true, force: true });
      } catch {
        // the killed litecoind may still be writing: a leftover temporary directory is all that is lost
      }
    }
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startLitecoinNode(options: LitecoinNodeOptions = {}): Promise<LitecoinNode> {
  const binary = options.binary ?? litecoind.path;
  if (!binary) throw new Error(`litecoind is not installed: ${litecoind.install}`);
  const walletName = options.wallet ?? 'herald';
  const initialBlocks = options.initialBlocks ?? COINBASE_MATURITY + 1;
  assertBelowMweb(0, initialBlocks);
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;

  const datadir = mkdtempSync(join(tmpdir(), 'herald-litecoind-'));
  const regtestCookie = join(datadir, 'regtest', '.cookie');
  const rpcPort = await freePort();
  const url = `http://127.0.0.1:${rpcPort}`;
  const newAgent = () => new Agent({ keepAliveTimeout: 10_000, connections: 8 });
  let agent = newAgent();
  const state: { child: ChildProcess | undefined; datadir: string } = { child: undefined, datadir };
  liveNodes.add(state);
  installExitHook();

  let rpcAuth: LitecoinRpcAuth = options.rpcAuth ?? 'cookie';
  let credentials = { user: '', password: '' };
  let exited: Promise<void> = Promise.resolve();
  let walletCreated = false;
  let closed = false;
  let miningAddress = '';
  let out = '';
  let nextId = 0;

  const rpc = <T = unknown>(method: string, ...params: unknown[]): Promise<T> => call<T>(method, params, RPC_TIMEOUT_MS);

  const call = async <T>(method: string, params: unknown[], timeoutMs: number): Promise<T> => {
    const authorization = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
    const post = () =>
      httpRequest(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify({ jsonrpc: '1.0', id: ++nextId, method, params }),
        dispatcher: agent,
        signal: AbortSignal.timeout(timeoutMs),
      });
    // A kept-alive connection the node closed just as a request went out ('other side closed', seen under
    // load): tried once more on a new connection, as herald's own node client does. The request did not
    // reach the node, except perhaps a sendrawtransaction, whose second answer is then "already known".
    let retried = false;
    const response = await post().catch((error: { code?: string }) => {
      if (error?.code !== 'UND_ERR_SOCKET') throw error;
      retried = true;
      return post();
    });
    const text = await response.body.text();
    // Errors come with HTTP 500 (404 for an unknown method) and a JSON body; 401 has an empty body.
    let parsed: { result?: unknown; error?: { code: number; message: string } | null } | undefined;
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw new Error(`litecoind ${method}: HTTP ${response.statusCode} ${text.slice(0, 200)}`.trim());
    }
    if (parsed?.error && retried && method === 'sendrawtransaction' && /already/i.test(parsed.error.message)) return undefined as T;
    if (parsed?.error) throw new LitecoinRpcError(method, parsed.error.code, parsed.error.message);
    if (response.statusCode !== 200) throw new Error(`litecoind ${method}: HTTP ${response.statusCode} ${text.slice(0, 200)}`);
    return parsed?.result as T;
  };

  const height = () => rpc<number>('getblockcount');

  const readCookie = (): { user: string; password: string } | undefined => {
    let text: string;
    try {
      text = readFileSync(regtestCookie, 'utf8').trim();
    } catch {
      return undefined;
    }
    const colon = text.indexOf(':');
    return colon > 0 ? { user: text.slice(0, colon), password: text.slice(colon + 1) } : undefined;
  };

  const debugLogTail = (): string => {
    try {
      return readFileSync(join(datadir, 'regtest', 'debug.log'), 'utf8')
        .split('\n')
        .slice(-30)
        .join('\n');
    } catch {
      return '(no debug.log)';
    }
  };

  const start = async (startOptions: { rpcAuth?: LitecoinRpcAuth } = {}): Promise<void> => {
    if (state.child) throw new Error('litecoind is already running');
    rpcAuth = startOptions.rpcAuth ?? rpcAuth;
    // A cookie left by a killed node would be read before the new one is written.
    rmSync(regtestCookie, { force: true });
    const args = [
      '-regtest',
      `-datadir=${datadir}`,
      `-rpcport=${rpcPort}`,
      '-rpcbind=127.0.0.1',
      '-rpcallowip=127.0.0.1',
      ...p2pArgs(options),
      '-server',
      '-txindex=1',
      '-fallbackfee=0.0001',
      '-printtoconsole=0',
      // Idle keep-alive connections (herald's) are closed after 1 s: a stop waits for them (see stop()).
      '-rpcservertimeout=1',
      // A legacy wallet derives its whole key pool when created: 2 × 1000 keys by default take seconds.
      '-keypool=10',
      ...(rpcAuth === 'cookie' ? [] : [`-rpcuser=${rpcAuth.user}`, `-rpcpassword=${rpcAuth.password}`]),
      ...(options.args ?? []),
    ];
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    state.child = child;
    let exitInfo: string | undefined;
    exited = new Promise<void>((resolve) => {
      const gone = (info: string) => {
        exitInfo ??= info;
        if (state.child === child) state.child = undefined;
        resolve();
      };
      child.once('exit', (code, signal) => gone(`code ${code ?? signal}`));
      child.once('error', (error) => gone(`spawn error: ${error.message}`)); // e.g. ENOENT: no 'exit' follows
    });
    const keep = (chunk: Buffer) => {
      out = (out + chunk.toString('utf8')).slice(-OUTPUT_LIMIT);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);

    // Ready when an RPC answers: until then the port refuses connections, or litecoind answers -28 (warming up).
    const deadline = Date.now() + startTimeoutMs;
    for (;;) {
      if (exitInfo !== undefined) throw new Error(`litecoind exited (${exitInfo}) while starting:\n${out}\n${debugLogTail()}`);
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`litecoind did not answer within ${startTimeoutMs} ms:\n${out}\n${debugLogTail()}`);
      }
      const current = rpcAuth === 'cookie' ? readCookie() : rpcAuth;
      if (current) {
        credentials = current;
        try {
          await rpc('getblockcount');
          break;
        } catch (error) {
          if (!(error instanceof LitecoinRpcError && error.code === -28) && !isConnectionError(error)) throw error;
        }
      }
      await sleep(20);
    }
    if (walletCreated) {
      try {
        await rpc('loadwallet', walletName);
      } catch (error) {
        if (!(error instanceof LitecoinRpcError && error.code === -35)) throw error; // -35: already loaded
      }
    }
  };

  const stop = async (): Promise<void> => {
    const child = state.child;
    if (!child) return;
    // Writes blocks, block index and UTXO set to disk (litecoind otherwise flushes rarely): a stop that ends
    // in SIGKILL, below, then keeps the chain instead of restarting from an older height.
    await call('gettxoutsetinfo', ['none'], STOP_GRACE_MS).catch(() => {});
    // litecoind 0.21's shutdown waits until every idle keep-alive connection is closed (by the client or after
    // -rpcservertimeout): close ours first.
    const closing = agent;
    agent = newAgent();
    await closing.close();
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  };

  const mine = async (count = 1, address?: string): Promise<number> => {
    assertBelowMweb(await height(), count);
    if (count > 0) await rpc('generatetoaddress', count, address ?? miningAddress);
    return await height();
  };

  const node: LitecoinNode = {
    url,
    rpcPort,
    datadir,
    get cookieFile() {
      return rpcAuth === 'cookie' ? regtestCookie : undefined;
    },
    get rpcAuth() {
      return rpcAuth;
    },
    get credentials() {
      return { ...credentials };
    },
    walletName,
    get miningAddress() {
      return miningAddress;
    },
    get running() {
      return state.child !== undefined;
    },
    rpc,
    height,
    mine,
    stop,
    async kill() {
      const child = state.child;
      if (!child) return;
      child.kill('SIGKILL');
      await exited;
    },
    start,
    async restart(restartOptions) {
      await stop();
      await start(restartOptions);
    },
    output: () => out,
    async close() {
      if (closed) return;
      closed = true;
      try {
        await stop();
        await agent.close();
      } finally {
        rmSync(datadir, { recursive: true, force: true });
        liveNodes.delete(state);
      }
    },
  };

  try {
    await start();
    await rpc('createwallet', walletName);
    walletCreated = true;
    miningAddress = await rpc<string>('getnewaddress', '', 'legacy');
    await mine(initialBlocks);
  } catch (error) {
    await node.close();
    throw error;
  }
  return node;
}

function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'EPIPE'].includes(code);
}

// ---------------------------------------------------------------------------------------------------------
// The ChainDriver

export type LitecoinAddressType = 'legacy' | 'p2sh-segwit' | 'bech32';

export interface LitecoinDriverOptions extends LitecoinNodeOptions {
  /** Type of newAddress(); default 'legacy' (m…/n…). */
  addressType?: LitecoinAddressType;
  /** Coins send() pays from, made at start; default 100. */
  fundingCoins?: number;
  /** Value of each, base units; default 49,000,000 (0.49 LTC; 100 of them use up the first coinbase). */
  fundingCoinValue?: bigint;
}

export interface LitecoinDriver extends ChainDriver {
  node: LitecoinNode;
  /** The highest height mine() and reorg() reach (MAX_REGTEST_HEIGHT). */
  maxHeight: number;
  spend(from: string, to: string, amount: bigint): Promise<{ transactionId: string; fee: bigint }>;
  down(): Promise<void>;
  up(): Promise<void>;
  /** Transactions reorg() dropped: pending on the node, never mined by this driver. */
  readonly excluded: ReadonlySet<string>;
  /** What send() can still pay in all, base units (less about 0.001 LTC per send for fees). */
  readonly fundingLeft: bigint;
}

interface Coin {
  txid: string;
  vout: number;
  value: bigint;
}

interface UnspentEntry {
  txid: string;
  vout: number;
  amount: number;
  address?: string;
}

interface DecodedTransaction {
  txid: string;
  vout: { value: number; n: number; scriptPubKey: { address?: string; addresses?: string[] } }[];
}

interface MempoolEntry {
  depends: string[];
  ancestorcount: number;
}

/** Upper bound of the fee of a small transaction here (-fallbackfee 0.0001 LTC/kvB: 1 kvB costs 10,000). */
const FEE_ALLOWANCE = 100_000n;

/** A Bitcoin-style CompactSize integer at `offset` of `hex`: [value, hex characters used]. */
function readCompactSize(hex: string, offset: number): [number, number] {
  const first = Number.parseInt(hex.slice(offset, offset + 2), 16);
  const width = first < 0xfd ? 0 : first === 0xfd ? 2 : first === 0xfe ? 4 : 8;
  if (width === 0) return [first, 2];
  const bytes = hex.slice(offset + 2, offset + 2 + width * 2).match(/../g) ?? [];
  return [Number.parseInt(bytes.reverse().join(''), 16), 2 + width * 2];
}

function writeCompactSize(value: number): string {
  const le = (n: number, bytes: number) =>
    (
      n
        .toString(16)
        .padStart(bytes * 2, '0')
        .match(/../g) ?? []
    )
      .reverse()
      .join('');
  if (value < 0xfd) return le(value, 1);
  if (value <= 0xffff) return `fd${le(value, 2)}`;
  return `fe${le(value, 4)}`;
}

/**
 * A raw transaction without witness data (as createrawtransaction makes it) with its only output repeated
 * `count` times: version | inputs | outputs | lock time.
 */
export function repeatOutput(hex: string, count: number): string {
  let at = 8; // version
  const [inputs, inputsWidth] = readCompactSize(hex, at);
  at += inputsWidth;
  for (let i = 0; i < inputs; i++) {
    at += 72; // previous txid and output index
    const [scriptLength, width] = readCompactSize(hex, at);
    at += width + scriptLength * 2 + 8; // script and sequence
  }
  if (inputs === 0) throw new Error('repeatOutput: no inputs (or witness serialization, which this does not read)');
  const [outputs, outputsWidth] = readCompactSize(hex, at);
  if (outputs !== 1) throw new Error(`repeatOutput: the transaction has ${outputs} outputs, not 1`);
  const output = hex.slice(at + outputsWidth, hex.length - 8);
  return `${hex.slice(0, at)}${writeCompactSize(count)}${output.repeat(count)}${hex.slice(hex.length - 8)}`;
}

function outputAddress(output: DecodedTransaction['vout'][number]): string | undefined {
  return output.scriptPubKey.address ?? output.scriptPubKey.addresses?.[0];
}

function ltc(amount: bigint): string {
  return formatUnits(amount, DECIMALS);
}

function checkAmount(amount: bigint): void {
  if (typeof amount !== 'bigint' || amount <= 0n) throw new Error(`amount must be a positive bigint of base units, got ${String(amount)}`);
}

export async function startLitecoinDriver(options: LitecoinDriverOptions = {}): Promise<LitecoinDriver> {
  const node = await startLitecoinNode(options);
  try {
    return await createDriver(node, options);
  } catch (error) {
    await node.close();
    throw error;
  }
}

async function createDriver(node: LitecoinNode, options: LitecoinDriverOptions): Promise<LitecoinDriver> {
  const { rpc } = node;
  const addressType = options.addressType ?? 'legacy';
  const excluded = new Set<string>();
  let funding: Coin[] = [];

  // mine, reorg and balance run one at a time: two mines could both pass the height guard, and litecoind
  // runs one scantxoutset at a time.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => {});
    return run;
  };

  const walletAddress = () => rpc<string>('getnewaddress', '', 'legacy');

  /** Funds (inputs fixed, change to a new wallet address), signs and broadcasts; the txid and the decoded transaction. */
  const payFrom = async (inputs: { txid: string; vout: number }[], outputs: Record<string, string>[]): Promise<DecodedTransaction> =>
    fundAndSend(await rpc<string>('createrawtransaction', inputs, outputs));

  /** Adds the fee and the change (to a new wallet address) to a raw transaction with all its inputs, signs and broadcasts it. */
  const fundAndSend = async (raw: string): Promise<DecodedTransaction> => {
    const funded = await rpc<{ hex: string }>('fundrawtransaction', raw, { add_inputs: false, changeAddress: await walletAddress() });
    const signed = await rpc<{ hex: string; complete: boolean; errors?: unknown }>('signrawtransactionwithwallet', funded.hex);
    if (!signed.complete) throw new Error(`the wallet could not sign all inputs: ${JSON.stringify(signed.errors)}`);
    const decoded = await rpc<DecodedTransaction>('decoderawtransaction', signed.hex);
    await rpc<string>('sendrawtransaction', signed.hex);
    return decoded;
  };

  /**
   * The pending transactions in an order a block can hold them (parents have fewer ancestors than their
   * children), leaving out the excluded ones and their descendants; undefined when none is excluded.
   */
  const minablePending = async (): Promise<string[] | undefined> => {
    const mempool = await rpc<Record<string, MempoolEntry>>('getrawmempool', true);
    if (!Object.keys(mempool).some((txid) => excluded.has(txid))) return undefined;
    const ordered = Object.entries(mempool).sort(([, a], [, b]) => a.ancestorcount - b.ancestorcount);
    const blocked = new Set<string>();
    const minable: string[] = [];
    for (const [txid, entry] of ordered) {
      if (excluded.has(txid) || entry.depends.some((parent) => blocked.has(parent))) blocked.add(txid);
      else minable.push(txid);
    }
    return minable;
  };

  /** `count` blocks to `address`, the first with what is pending (less the excluded). Caller holds the queue. */
  const mineBlocks = async (count: number, address: string): Promise<number> => {
    assertBelowMweb(await node.height(), count);
    if (count > 0) {
      const minable = await minablePending();
      if (minable === undefined) {
        await rpc('generatetoaddress', count, address);
      } else {
        // generatetoaddress would take the excluded ones: every block gets an explicit list.
        await rpc('generateblock', address, minable);
        for (let i = 1; i < count; i++) await rpc('generateblock', address, []);
      }
    }
    return await node.height();
  };

  const makeFunding = async (): Promise<void> => {
    const count = options.fundingCoins ?? 100;
    const value = options.fundingCoinValue ?? 49_000_000n;
    if (!Number.isSafeInteger(count) || count < 1) throw new Error(`fundingCoins must be a positive integer, got ${count}`);
    checkAmount(value);
    const mature = await rpc<UnspentEntry[]>('listunspent', 1);
    mature.sort((a, b) => b.amount - a.amount);
    const need = BigInt(count) * value + FEE_ALLOWANCE;
    const inputs: Coin[] = [];
    let total = 0n;
    for (const entry of mature) {
      if (total >= need) break;
      inputs.push({ txid: entry.txid, vout: entry.vout, value: parseCoinAmount(entry.amount) });
      total += parseCoinAmount(entry.amount);
    }
    if (total < need) throw new Error(`the wallet has ${ltc(total)} LTC spendable, the funding coins need ${ltc(need)} (mine more initial blocks)`);
    // All the coins at one address: createrawtransaction refuses an address twice, so its one output is
    // repeated in the raw transaction (a new wallet address for each would cost 100 slow wallet writes).
    const address = await walletAddress();
    const raw = repeatOutput(
      await rpc<string>(
        'createrawtransaction',
        inputs.map(({ txid, vout }) => ({ txid, vout })),
        [{ [address]: ltc(value) }],
      ),
      count,
    );
    const decoded = await fundAndSend(raw);
    funding = decoded.vout.flatMap((output) => (outputAddress(output) === address ? [{ txid: decoded.txid, vout: output.n, value }] : []));
    if (funding.length !== count) throw new Error(`the funding transaction has ${funding.length} coins, not ${count}`);
    await mineBlocks(1, node.miningAddress);
  };

  /** Takes (synchronously, so concurrent sends never share a coin) the fewest largest coins covering amount + fee. */
  const takeFunding = (amount: bigint): Coin[] => {
    funding.sort((a, b) => (a.value === b.value ? 0 : a.value > b.value ? -1 : 1));
    const taken: Coin[] = [];
    let total = 0n;
    while (total < amount + FEE_ALLOWANCE && funding.length > 0) {
      const coin = funding.shift() as Coin;
      taken.push(coin);
      total += coin.value;
    }
    if (total < amount + FEE_ALLOWANCE) {
      funding.push(...taken);
      const left = funding.reduce((sum, coin) => sum + coin.value, 0n);
      throw new Error(`send(${ltc(amount)} LTC): the driver's funding coins hold ${ltc(left)} LTC in all (see fundingCoins)`);
    }
    return taken;
  };

  await makeFunding();

  return {
    blockchain: 'litecoin',
    network: 'testnet',
    rpcUrl: node.url,
    get chainConfig(): Record<string, unknown> {
      const auth = node.rpcAuth;
      // A regtest node behind the testnet label: declared (docs/reference/chains.md "Chain identity").
      return { chainId: 'regtest', ...(auth === 'cookie' ? { rpcCookieFile: node.cookieFile } : { rpcUser: auth.user, rpcPassword: auth.password }) };
    },
    node,
    maxHeight: MAX_REGTEST_HEIGHT,
    excluded,
    get fundingLeft() {
      return funding.reduce((sum, coin) => sum + coin.value, 0n);
    },
    height: () => node.height(),
    blockHash: (height) => rpc<string>('getblockhash', height),
    mine: (count) => serial(() => mineBlocks(count, node.miningAddress)),
    newAddress: () => rpc<string>('getnewaddress', '', addressType),

    async send(to, amount) {
      checkAmount(amount);
      const coins = takeFunding(amount);
      try {
        const decoded = await payFrom(
          coins.map(({ txid, vout }) => ({ txid, vout })),
          [{ [to]: ltc(amount) }],
        );
        return decoded.txid;
      } catch (error) {
        funding.push(...coins); // not broadcast: the coins are still unspent
        throw new Error(`send(${to}, ${ltc(amount)} LTC): ${(error as Error).message}`, { cause: error });
      }
    },

    async spend(from, to, amount) {
      checkAmount(amount);
      // minconf 0: `from` may have been funded by a send that is still pending.
      const utxos = await rpc<UnspentEntry[]>('listunspent', 0, 9_999_999, [from]);
      if (utxos.length === 0) throw new Error(`spend: the wallet has no unspent output at ${from}`);
      const total = utxos.reduce((sum, entry) => sum + parseCoinAmount(entry.amount), 0n);
      try {
        const decoded = await payFrom(
          utxos.map(({ txid, vout }) => ({ txid, vout })),
          [{ [to]: ltc(amount) }],
        );
        const paid = decoded.vout.reduce((sum, output) => sum + parseCoinAmount(output.value), 0n);
        return { transactionId: decoded.txid, fee: total - paid };
      } catch (error) {
        throw new Error(`spend(${from} → ${to}, ${ltc(amount)} LTC of ${ltc(total)}): ${(error as Error).message}`, { cause: error });
      }
    },

    reorg: (depth, reorgOptions = {}) =>
      serial(async () => {
        const tip = await node.height();
        if (!Number.isSafeInteger(depth) || depth < 1 || depth > tip) throw new Error(`reorg depth must be 1..${tip}, got ${depth}`);
        assertBelowMweb(tip, 1);
        const fork = tip - depth; // the last block kept
        for (const txid of reorgOptions.drop ?? []) {
          // Only a transaction of a dropped block (or a pending one) can be left out of the new blocks.
          const tx = await rpc<{ blockhash?: string }>('getrawtransaction', txid, true).catch((error: unknown) => {
            throw new Error(`reorg: transaction ${txid} to drop is unknown to the node`, { cause: error });
          });
          if (tx.blockhash !== undefined) {
            const header = await rpc<{ height: number }>('getblockheader', tx.blockhash);
            if (header.height <= fork) throw new Error(`reorg(${depth}): transaction ${txid} to drop is at height ${header.height}, below the reorganisation`);
          }
        }
        await rpc('invalidateblock', await rpc<string>('getblockhash', fork + 1));
        for (const txid of reorgOptions.drop ?? []) excluded.add(txid);
        // A fresh address: the new blocks differ from the dropped ones even with the same transactions in the same second.
        return await mineBlocks(depth + 1, await walletAddress());
      }),

    balance: (address) =>
      serial(async () => {
        const scan = await rpc<{ success: boolean; total_amount: number }>('scantxoutset', 'start', [`addr(${address})`]);
        if (!scan.success) throw new Error(`scantxoutset for ${address} did not complete`);
        return parseCoinAmount(scan.total_amount);
      }),

    down: () => node.stop(),
    up: () => node.start(),
    close: () => node.close(),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Two nodes of one chain

export interface LitecoinPairOptions {
  /** RPC authentication of both nodes; default a user and password shared by both (one chain entry of herald can give only one). */
  rpcAuth?: LitecoinRpcAuth;
  /** Blocks b mines to its wallet at start (a syncs them); default 101. */
  initialBlocks?: number;
  /** More litecoind arguments for both. */
  args?: string[];
}

export interface ChainTip {
  height: number;
  hash: string;
}

/**
 * Two regtest nodes of one chain, peered over loopback: `b` listens on a P2P port, `a` connects to it
 * (-connect) and to nothing else. Each has its own wallet; b mined the initial blocks and a synced them.
 *
 * - Stop/start either with a.stop()/a.start() (data directory, RPC and P2P ports kept). A restarted `a`
 *   connects again by itself; after a restart of `b`, call reconnect() (a's -connect retries back off to 5 s).
 * - disconnect(): `setnetworkactive false` on both running nodes, and waits until neither has a peer. Each
 *   then mines its own branch. reconnect(): network active again on both, an immediate connection attempt
 *   from a (`addnode … onetry`), and waits for the handshake; then synced() waits for one tip: the branch
 *   with more work wins on both (equal work: each keeps the branch it saw first, so a test makes them differ).
 * - mineEmpty(): blocks without the pending transactions (generateblock with an empty list), so that a
 *   transaction both mempools hold can be mined on one branch only.
 */
export interface LitecoinPair {
  readonly a: LitecoinNode;
  readonly b: LitecoinNode;
  readonly p2pPort: number;
  /** Both nodes see the other as a peer with the version handshake done. */
  connected(): Promise<boolean>;
  disconnect(): Promise<void>;
  reconnect(): Promise<void>;
  /** Waits until both nodes have the same best block; gives it. */
  synced(timeoutMs?: number): Promise<ChainTip>;
  tip(node: LitecoinNode): Promise<ChainTip>;
  /** `count` blocks on `node` holding no pending transaction; the new height. */
  mineEmpty(node: LitecoinNode, count?: number): Promise<number>;
  close(): Promise<void>;
}

export async function startLitecoinPair(options: LitecoinPairOptions = {}): Promise<LitecoinPair> {
  const rpcAuth = options.rpcAuth ?? { user: 'herald', password: `pair-${process.pid}-${Date.now()}` };
  const p2pPort = await freePort();
  const b = await startLitecoinNode({ rpcAuth, p2pPort, initialBlocks: options.initialBlocks, wallet: 'b', args: options.args });
  let a: LitecoinNode;
  try {
    a = await startLitecoinNode({ rpcAuth, connect: [p2pPort], initialBlocks: 0, wallet: 'a', args: options.args });
  } catch (error) {
    await b.close();
    throw error;
  }
  const peer = `127.0.0.1:${p2pPort}`;

  /** Peers with the version handshake done (getpeerinfo lists a connection before it, with version 0). */
  const peers = async (node: LitecoinNode) => (await node.rpc<{ version: number }[]>('getpeerinfo')).filter((p) => p.version > 0).length;
  const connected = async () => (await peers(a)) > 0 && (await peers(b)) > 0;
  const tip = async (node: LitecoinNode): Promise<ChainTip> => {
    const info = await node.rpc<{ blocks: number; bestblockhash: string }>('getblockchaininfo');
    return { height: info.blocks, hash: info.bestblockhash };
  };

  const pair: LitecoinPair = {
    a,
    b,
    p2pPort,
    connected,
    tip,
    async disconnect() {
      const running = [a, b].filter((node) => node.running);
      for (const node of running) await node.rpc('setnetworkactive', false);
      await until(
        'both nodes to drop their peers',
        async () => {
          for (const node of running) if ((await node.rpc<number>('getconnectioncount')) > 0) return false;
          return true;
        },
        10_000,
      );
    },
    async reconnect() {
      for (const node of [a, b]) await node.rpc('setnetworkactive', true);
      await until(
        'the nodes to connect',
        async () => {
          if (await connected()) return true;
          await a.rpc('addnode', peer, 'onetry'); // returns at once; a no-op while a connection to b is open
          return false;
        },
        15_000,
      );
    },
    async synced(timeoutMs = 30_000) {
      let last: ChainTip[] = [];
      try {
        return await until(
          'both nodes on one tip',
          async () => {
            const [atA, atB] = [await tip(a), await tip(b)];
            last = [atA, atB];
            return atA.hash === atB.hash && atA;
          },
          timeoutMs,
        );
      } catch (error) {
        throw new Error(`${(error as Error).message}: a ${JSON.stringify(last[0])}, b ${JSON.stringify(last[1])}, connected ${await connected()}`);
      }
    },
    async mineEmpty(node, count = 1) {
      assertBelowMweb(await node.height(), count);
      for (let i = 0; i < count; i++) await node.rpc('generateblock', node.miningAddress, []);
      return await node.height();
    },
    async close() {
      await Promise.allSettled([a.close(), b.close()]);
    },
  };
  try {
    await pair.synced();
  } catch (error) {
    await pair.close();
    throw error;
  }
  return pair;
}

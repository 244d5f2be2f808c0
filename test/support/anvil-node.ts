/**
 * A real Anvil (Foundry's EVM node, from npm: @foundry-rs/anvil-linux-amd64, the binary inside the package)
 * for tests and benchmarks: the second real EVM node beside EDR (evm-node.ts), and the production-like one.
 * Anvil serves what EDR lacks and geth, erigon, reth and nethermind serve: `eth_getBlockReceipts`,
 * `debug_traceBlockByNumber` with callTracer and `trace_block`, so herald's block-level path runs against
 * it (one request per block for receipts, one for traces) rather than the per-transaction fallback.
 *
 * - A child process on a loopback port of its own choosing (`--port 0`, read from its "Listening on"
 *   line), HTTP and WebSocket (eth_subscribe newHeads) on that port; ready in well under a second.
 * - The accounts of TEST_MNEMONIC (the same keys as EDR's), prefunded; coinbase set as on the EDR node.
 * - mine / snapshot / revert / setAutomine are Anvil's evm_* methods, so reorganisations are built as on EDR.
 * - No down(): a test that needs a node playing dead uses EDR's (it can answer 503 on cue).
 *
 * Nodes still running when the process exits are killed (no stray anvil after a failed test run).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Agent, request as httpRequest } from 'undici';
import { COINBASE, DEFAULT_BALANCE, type EvmNodeOptions, type EvmRpcNode, JsonRpcError, TEST_MNEMONIC, testAccounts } from './evm-node.ts';
import type { RealNodeBinary } from './real-node.ts';

const PACKAGE = '@foundry-rs/anvil-linux-amd64';
const START_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 3_000;
const ETH = 10n ** 18n;

/** The anvil binary of the npm package (path undefined where npm did not install it: not Linux x64). */
export const anvil: RealNodeBinary = (() => {
  const install = `npm install brings it (${PACKAGE}, a dev dependency; Linux x64 only)`;
  try {
    const manifest = createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`);
    return { name: 'anvil', path: join(dirname(manifest), 'bin', 'anvil'), install };
  } catch {
    return { name: 'anvil', path: undefined, install };
  }
})();

export interface AnvilNode extends EvmRpcNode {
  /** The child's process id (for CPU accounting in benchmarks). */
  readonly pid: number;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function killOnExit(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const c of running) c.kill('SIGKILL');
  });
}

/**
 * Starts Anvil with EDR's defaults (evm-node.ts): chain id 5, automine on, 10 accounts of 10,000 ETH.
 * `slotsInAnEpoch`: Anvil's `finalized` block tag is two epochs below the head (default 32 slots: 64
 * blocks), so a small epoch makes finality a few blocks behind, as a test needs (EDR's is the head itself).
 */
export async function startAnvilNode(options: Omit<EvmNodeOptions, 'failRequests'> & { slotsInAnEpoch?: number } = {}): Promise<AnvilNode> {
  if (!anvil.path) throw new Error(`anvil is not installed: ${anvil.install}`);
  const chainId = options.chainId ?? 5;
  const accounts = testAccounts(options.accounts ?? 10);
  const balance = options.balance ?? DEFAULT_BALANCE;
  if (balance % ETH !== 0n) throw new Error('Anvil takes balances in whole ether');
  const args = [
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--chain-id',
    String(chainId),
    '--mnemonic',
    TEST_MNEMONIC,
    '--accounts',
    String(accounts.length),
    '--balance',
    String(balance / ETH),
    // EDR's block gas limit, so the same blocks fit on both nodes.
    '--gas-limit',
    '60000000',
    ...(options.hardfork ? ['--hardfork', options.hardfork] : []),
    ...(options.automine === false ? ['--no-mining'] : []),
    ...(options.slotsInAnEpoch === undefined ? [] : ['--slots-in-an-epoch', String(options.slotsInAnEpoch)]),
  ];
  const child = spawn(anvil.path, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  // Anvil logs every request on stdout: keep draining it (a full pipe would stall the node), keep the start.
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => fail(`anvil did not start in ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${why}:\n${output.slice(-2000)}`));
    };
    const onData = (chunk: Buffer) => {
      if (output.length < 64 * 1024) output += chunk.toString('utf8');
      const listening = /Listening on 127\.0\.0\.1:(\d+)/.exec(output);
      if (listening) {
        clearTimeout(timer);
        resolve(Number(listening[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (error) => fail(`anvil failed to start: ${error.message}`));
    child.once('exit', (code, signal) => fail(`anvil exited (${code ?? signal}) while starting`));
  });
  child.stdout?.removeAllListeners('data').resume();
  child.stderr?.removeAllListeners('data').resume();

  const url = `http://127.0.0.1:${port}`;
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  let nextId = 0;
  const request = async <T = unknown>(method: string, params: unknown[] = []): Promise<T> => {
    const response = await httpRequest(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method, params }),
      dispatcher: agent,
    });
    const answer = (await response.body.json()) as { result?: T; error?: { code: number; message: string; data?: unknown } };
    if (answer.error) throw new JsonRpcError(answer.error.code, answer.error.message, answer.error.data);
    return answer.result as T;
  };

  // The EDR node's coinbase, so `miner` is the same non-zero address on both nodes.
  await request('anvil_setCoinbase', [COINBASE]);

  return {
    url,
    wsUrl: `ws://127.0.0.1:${port}`,
    chainId,
    accounts,
    pid: child.pid as number,
    request,
    async mine(blocks = 1, mineOptions = {}) {
      for (let i = 0; i < blocks; i++) {
        await request('evm_mine', mineOptions.timestamp === undefined ? [] : [mineOptions.timestamp + i]);
      }
      return Number(await request<string>('eth_blockNumber'));
    },
    snapshot: () => request<string>('evm_snapshot'),
    async revert(id) {
      if (!(await request<boolean>('evm_revert', [id]))) throw new Error(`evm_revert: unknown snapshot ${id}`);
    },
    async setAutomine(on) {
      await request('evm_setAutomine', [on]);
    },
    async close() {
      await agent.close();
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

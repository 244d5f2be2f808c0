/**
 * The test contracts (./contracts/*.sol), compiled with solc from npm, and small viem helpers to deploy
 * and call them on a real EVM test node (EDR: evm-node.ts, or Anvil: anvil-node.ts).
 *
 * compileContracts() is memoised in-process and cached on disk under
 * node_modules/.cache/herald-contracts/<sha256 of sources, settings and solc version>.json, so only the
 * first run after a source change pays for loading and running solc.
 *
 * The transaction helpers wait for the receipt by default (immediate with automine; with automine off
 * they wait until someone mines, so pass `wait: false` and mine yourself).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type Abi,
  type Address,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  type PublicClient,
  type TransactionReceipt,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { EvmRpcNode } from './evm-node.ts';

export type ContractName = 'TestToken' | 'TestNft' | 'Forwarder' | 'Swallower' | 'RevertingSender' | 'Bytes32Token' | 'NoDecimalsToken';

export interface CompiledContract {
  abi: Abi;
  /** Creation bytecode, 0x-prefixed. */
  bytecode: Hex;
}

export type CompiledContracts = Record<ContractName, CompiledContract>;

const here = dirname(fileURLToPath(import.meta.url));
const contractsDir = join(here, 'contracts');
const cacheDir = join(here, '..', '..', 'node_modules', '.cache', 'herald-contracts');
const require = createRequire(import.meta.url);

const settings = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
};

let compiled: Promise<CompiledContracts> | undefined;

/** All contracts of ./contracts/*.sol by contract name (memoised; disk-cached). */
export function compileContracts(): Promise<CompiledContracts> {
  compiled ??= compile();
  return compiled;
}

async function compile(): Promise<CompiledContracts> {
  const sources: Record<string, { content: string }> = {};
  for (const file of readdirSync(contractsDir)
    .filter((f) => f.endsWith('.sol'))
    .sort()) {
    sources[file] = { content: readFileSync(join(contractsDir, file), 'utf8') };
  }
  const solcVersion = (require('solc/package.json') as { version: string }).version;
  const input = { language: 'Solidity', sources, settings };
  const key = createHash('sha256').update(solcVersion).update('\0').update(JSON.stringify(input)).digest('hex');
  const cacheFile = join(cacheDir, `${key}.json`);
  try {
    return JSON.parse(readFileSync(cacheFile, 'utf8')) as CompiledContracts;
  } catch {
    // not cached yet (or unreadable): compile
  }

  const solc = (await import('solc')).default;
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  const result: Record<string, CompiledContract> = {};
  for (const contracts of Object.values(output.contracts ?? {})) {
    for (const [name, contract] of Object.entries(contracts)) {
      result[name] = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
    }
  }

  // Parallel test workers may compile at once: write to a unique temporary file, then rename atomically.
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${cacheFile}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, JSON.stringify(result));
  renameSync(tmp, cacheFile);
  return result as CompiledContracts;
}

export function nodeChain(node: EvmRpcNode): Chain {
  return defineChain({
    id: node.chainId,
    name: `EVM test node ${node.chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [node.url], webSocket: [node.wsUrl] } },
  });
}

const publicClients = new WeakMap<EvmRpcNode, PublicClient>();
const walletClients = new WeakMap<EvmRpcNode, Map<number, WalletClient>>();

/** A viem public client over HTTP to the node (polling every 20 ms). */
export function publicClient(node: EvmRpcNode): PublicClient {
  let client = publicClients.get(node);
  if (!client) {
    client = createPublicClient({ chain: nodeChain(node), transport: http(node.url), pollingInterval: 20 }) as PublicClient;
    publicClients.set(node, client);
  }
  return client;
}

/** A viem wallet client signing locally with node.accounts[accountIndex]. */
export function walletClient(node: EvmRpcNode, accountIndex = 0): WalletClient {
  let byIndex = walletClients.get(node);
  if (!byIndex) {
    byIndex = new Map();
    walletClients.set(node, byIndex);
  }
  let client = byIndex.get(accountIndex);
  if (!client) {
    const account = node.accounts[accountIndex];
    if (!account) throw new Error(`the node has no account ${accountIndex}`);
    client = createWalletClient({ account: privateKeyToAccount(account.privateKey), chain: nodeChain(node), transport: http(node.url), pollingInterval: 20 });
    byIndex.set(accountIndex, client);
  }
  return client;
}

export interface TxOptions {
  /** Index into node.accounts of the sender. Default 0. */
  from?: number;
  /** Wei sent along. */
  value?: bigint;
  /** Wait for the receipt (default true). */
  wait?: boolean;
  /** Gas limit; given, the node does not estimate it (so a transaction that reverts can still be sent). */
  gas?: bigint;
}

export interface TxResult {
  hash: Hex;
  /** null when called with wait: false. */
  receipt: TransactionReceipt | null;
}

async function finish(node: EvmRpcNode, hash: Hex, wait: boolean | undefined): Promise<TxResult> {
  if (wait === false) return { hash, receipt: null };
  return { hash, receipt: await publicClient(node).waitForTransactionReceipt({ hash, pollingInterval: 20 }) };
}

async function abiOf(name: ContractName): Promise<Abi> {
  return (await compileContracts())[name].abi;
}

/** Deploys a contract from ./contracts and returns its address (waits for the receipt). */
export async function deployContract(node: EvmRpcNode, name: ContractName, args: readonly unknown[] = [], fromAccountIndex = 0): Promise<Address> {
  const { abi, bytecode } = (await compileContracts())[name];
  const wallet = walletClient(node, fromAccountIndex);
  const hash = await wallet.deployContract({ abi, bytecode, args, account: wallet.account ?? null, chain: wallet.chain });
  const receipt = await publicClient(node).waitForTransactionReceipt({ hash, pollingInterval: 20 });
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`deploying ${name} failed (${hash})`);
  return receipt.contractAddress;
}

/** Sends plain ETH. */
export async function sendEth(node: EvmRpcNode, to: Address, value: bigint, options: Omit<TxOptions, 'value'> = {}): Promise<TxResult> {
  const wallet = walletClient(node, options.from ?? 0);
  const hash = await wallet.sendTransaction({ to, value, account: wallet.account ?? null, chain: wallet.chain });
  return finish(node, hash, options.wait);
}

/** Calls a state-changing function of one of the test contracts (`contract` names the ABI to use). */
export async function writeContract(
  node: EvmRpcNode,
  contract: ContractName,
  address: Address,
  functionName: string,
  args: readonly unknown[] = [],
  options: TxOptions = {},
): Promise<TxResult> {
  const wallet = walletClient(node, options.from ?? 0);
  const abi = await abiOf(contract);
  const hash = await wallet.writeContract({
    address,
    abi,
    functionName,
    args,
    value: options.value,
    gas: options.gas,
    account: wallet.account ?? null,
    chain: wallet.chain,
  });
  return finish(node, hash, options.wait);
}

/** Calls a view function of one of the test contracts. */
export async function readContract<T = unknown>(
  node: EvmRpcNode,
  contract: ContractName,
  address: Address,
  functionName: string,
  args: readonly unknown[] = [],
): Promise<T> {
  return (await publicClient(node).readContract({ address, abi: await abiOf(contract), functionName, args })) as T;
}

/**
 * A ChainDriver (chain-driver.ts) over a real EVM test node, EDR (evm-node.ts: no block-level receipts or
 * traces, so herald takes its per-transaction path) or Anvil (anvil-node.ts: eth_getBlockReceipts and
 * debug_traceBlockByNumber, the path of production nodes), for the shared follow
 * scenarios on any EVM chain herald follows: the node runs with the chain id of the network herald is told
 * it follows (ethereum-classic/mordor 63, binance-smart-chain/testnet 97, ...), and the chain's own test
 * tokens (the TestToken and TestNft contracts, compiled from source) and a Forwarder (internal transfers)
 * are deployed at start.
 *
 * Automine is off: transactions wait in the pool until mine(). Every transaction is signed here (legacy
 * gas price, so a transfer's fee is exactly 21000 x GAS_PRICE and spend() can sweep an address to zero) and
 * kept, so that reorg() can put the transactions of the dropped blocks back: the node is snapshotted after
 * each block, a reorganisation reverts to the snapshot of the fork point, sends the dropped transactions
 * again and mines a longer branch with later timestamps (so every replacement block has a new hash).
 */
import { type Address, encodeFunctionData, type Hex, keccak256 } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Blockchain, Network } from '../../src/domain/chains.ts';
import { startAnvilNode } from './anvil-node.ts';
import type { ChainDriver, InternalDriver, TokenDriver } from './chain-driver.ts';
import { compileContracts, deployContract, writeContract } from './evm-contracts.ts';
import { type EvmRpcNode, startEvmNode } from './evm-node.ts';
import type { FollowedNode } from './followed-app.ts';

/** 10 gwei: above the test node's base fee, which only falls while blocks stay nearly empty. */
export const GAS_PRICE = 10_000_000_000n;
const TRANSFER_GAS = 21_000n;
/** Enough for a token transfer, an NFT mint or transferFrom of the test contracts. */
const CONTRACT_GAS = 150_000n;

export interface EvmDriverOptions {
  blockchain: Blockchain;
  network: Network;
  chainId: number;
  /** The fungible test token: its name, symbol, decimals, and the type herald must report (ERC-20, BEP-20). */
  token: { name: string; symbol: string; decimals: number; type: 'ERC-20' | 'BEP-20' };
  nft: { name: string; symbol: string };
  /** Which node runs the chain; default 'edr'. */
  node?: 'edr' | 'anvil';
  /** Anvil only: its finalized block is 2 × this below the head (anvil-node.ts). */
  slotsInAnEpoch?: number;
}

/** The test token and NFT the driver deploys, as most EVM tests name them. */
export const TEST_CONTRACTS = {
  token: { name: 'Herald Test Token', symbol: 'HTT', decimals: 6, type: 'ERC-20' },
  nft: { name: 'Herald Test NFT', symbol: 'HNFT' },
} as const satisfies Pick<EvmDriverOptions, 'token' | 'nft'>;

/** ethereum/goerli (chain id 5) with the test contracts: startEvmDriver({ ...GOERLI_TEST_CHAIN, node: 'anvil' }). */
export const GOERLI_TEST_CHAIN = { blockchain: 'ethereum', network: 'goerli', chainId: 5, ...TEST_CONTRACTS } as const satisfies EvmDriverOptions;

export type EvmDriver = ChainDriver & { node: EvmRpcNode; tokens: TokenDriver; internal: InternalDriver };

/** What followedEvmNode puts between herald and the node. */
export interface EvmNodeVia {
  /** herald's rpcUrl instead of the node's own (a fault proxy's). */
  rpcUrl?: string;
  /** More of herald's chain entry (a relay's wsUrl). */
  chainConfig?: Record<string, unknown>;
  /** Stops what stands between (before the node is closed). */
  close?: () => Promise<void>;
}

/**
 * A bare EVM test node (EDR or Anvil, no driver: the test signs and sends itself, with automine off for a real
 * pending pool) as the node of startFollowedApp or useFollowedApp (followed-app.ts): herald follows it as
 * ethereum/goerli (chain id 5, the nodes' default) at its HTTP URL and without its WebSocket (it polls),
 * unless `via` says otherwise. Everything of the node (accounts, request, mine, setAutomine...) reads through.
 */
export function followedEvmNode<N extends EvmRpcNode>(node: N, via: EvmNodeVia = {}): N & FollowedNode {
  const followed: Omit<FollowedNode, 'mine'> = {
    blockchain: 'ethereum',
    network: 'goerli',
    rpcUrl: via.rpcUrl ?? node.url,
    chainConfig: via.chainConfig,
    height: async () => Number(await node.request<string>('eth_blockNumber', [])),
    async close() {
      await via.close?.();
      await node.close();
    },
  };
  // A new object over the node (its getters stay live), so that close() can still reach the node's own.
  return Object.assign(Object.create(node) as N, followed);
}

export async function startEvmDriver(options: EvmDriverOptions): Promise<EvmDriver> {
  const edr = options.node === 'anvil' ? undefined : await startEvmNode({ chainId: options.chainId, automine: true });
  const node: EvmRpcNode = edr ?? (await startAnvilNode({ chainId: options.chainId, automine: true, slotsInAnEpoch: options.slotsInAnEpoch }));
  const contracts = await compileContracts();
  const token = await deployContract(node, 'TestToken', [options.token.name, options.token.symbol, options.token.decimals]);
  const nft = await deployContract(node, 'TestNft', [options.nft.name, options.nft.symbol]);
  const forwarder = await deployContract(node, 'Forwarder');
  const wallet = node.accounts[0] as { address: Address; privateKey: Hex };
  await writeContract(node, 'TestToken', token, 'mint', [wallet.address, 10n ** 30n]);
  await node.setAutomine(false);

  const keys = new Map<string, Hex>([[wallet.address.toLowerCase(), wallet.privateKey]]);
  const keyOf = (address: string): Hex => {
    const key = keys.get(address.toLowerCase());
    if (!key) throw new Error(`EVM driver: no key for ${address}`);
    return key;
  };
  /** Every raw transaction sent, by hash: what a reorganisation sends again. */
  const raws = new Map<string, Hex>();
  /** Sent since the last block: the pool, which a revert to an older snapshot forgets. */
  let pool: string[] = [];
  /** Height → snapshot of the node right after that block was mined. */
  const snapshots = new Map<number, string>();

  const quantity = (n: bigint | number) => `0x${n.toString(16)}`;
  const height = async () => Number(BigInt(await node.request<string>('eth_blockNumber')));
  const blockAt = (h: number) => node.request<{ hash: string; timestamp: string; transactions: string[] } | null>('eth_getBlockByNumber', [quantity(h), false]);

  async function submit(from: string, tx: { to: Address; value?: bigint; data?: Hex; gas: bigint }): Promise<string> {
    const account = privateKeyToAccount(keyOf(from));
    const nonce = Number(BigInt(await node.request<string>('eth_getTransactionCount', [account.address, 'pending'])));
    const raw = await account.signTransaction({
      type: 'legacy',
      chainId: options.chainId,
      nonce,
      to: tx.to,
      value: tx.value ?? 0n,
      data: tx.data,
      gas: tx.gas,
      gasPrice: GAS_PRICE,
    });
    const hash = keccak256(raw);
    raws.set(hash, raw);
    await node.request('eth_sendRawTransaction', [raw]);
    pool.push(hash);
    return hash;
  }

  async function mineOne(timestamp?: number): Promise<number> {
    const h = await node.mine(1, timestamp === undefined ? {} : { timestamp });
    pool = [];
    snapshots.set(h, await node.snapshot());
    return h;
  }
  snapshots.set(await height(), await node.snapshot());

  const call = (abi: 'TestToken' | 'TestNft' | 'Forwarder', functionName: string, args: readonly unknown[]) =>
    encodeFunctionData({ abi: contracts[abi].abi, functionName, args });
  let nextNftId = 0n;

  const tokens: TokenDriver = {
    fungible: {
      contract: token.toLowerCase(),
      name: options.token.name,
      symbol: options.token.symbol,
      decimals: options.token.decimals,
      type: options.token.type,
    },
    nft: { contract: nft.toLowerCase(), name: options.nft.name, symbol: options.nft.symbol, type: 'ERC-721' },
    feeBudget: 10n ** 16n,
    transferToken: (to, amount, from = wallet.address) => submit(from, { to: token, data: call('TestToken', 'transfer', [to, amount]), gas: CONTRACT_GAS }),
    async freshNftId() {
      // The first id beyond 64 bits (as the callbacks must print it in decimal), then 1, 2, ...
      const id = nextNftId === 0n ? 2n ** 128n + 1n : nextNftId;
      nextNftId++;
      return id;
    },
    async transferNft(to, tokenId, from) {
      if (from === undefined) {
        // The wallet mints it to itself and passes it on in the same block: the mint's Transfer is the wallet's, not `to`'s.
        await submit(wallet.address, { to: nft, data: call('TestNft', 'mint', [wallet.address, tokenId]), gas: CONTRACT_GAS });
        return submit(wallet.address, { to: nft, data: call('TestNft', 'transferFrom', [wallet.address, to, tokenId]), gas: CONTRACT_GAS });
      }
      return submit(from, { to: nft, data: call('TestNft', 'transferFrom', [from, to, tokenId]), gas: CONTRACT_GAS });
    },
  };

  return {
    blockchain: options.blockchain,
    network: options.network,
    rpcUrl: node.url,
    chainConfig: { wsUrl: node.wsUrl, chainId: node.chainId },
    node,
    tokens,
    internal: {
      // The first CALL frame inside the top-level call (callTracer's path), as herald names it.
      operationId: 'call_0',
      forward: (to, amount) => submit(wallet.address, { to: forwarder, value: amount, data: call('Forwarder', 'forward', [to]), gas: CONTRACT_GAS }),
    },
    height,
    async blockHash(h) {
      const block = await blockAt(h);
      if (!block) throw new Error(`EVM driver: no block ${h}`);
      return block.hash;
    },
    async mine(count) {
      let h = await height();
      for (let i = 0; i < count; i++) h = await mineOne();
      return h;
    },
    async newAddress() {
      const key = generatePrivateKey();
      const address = privateKeyToAccount(key).address;
      keys.set(address.toLowerCase(), key);
      return address;
    },
    send: (to, amount) => submit(wallet.address, { to: to as Address, value: amount, gas: TRANSFER_GAS }),
    async spend(from, to, amount) {
      const balance = BigInt(await node.request<string>('eth_getBalance', [from, 'pending']));
      const fee = TRANSFER_GAS * GAS_PRICE;
      const transactionId = await submit(from, { to: to as Address, value: amount, gas: TRANSFER_GAS });
      const rest = balance - amount - 2n * fee;
      if (rest < 0n) throw new Error(`EVM driver: ${from} cannot pay ${amount} and two fees`);
      await submit(from, { to: wallet.address, value: rest, gas: TRANSFER_GAS });
      return { transactionId, fee: 2n * fee };
    },
    async reorg(depth, o = {}) {
      const tip = await height();
      const fork = tip - depth;
      const snapshot = snapshots.get(fork);
      if (depth < 1 || snapshot === undefined) throw new Error(`EVM driver: cannot reorganise ${depth} blocks from ${tip} (no snapshot at ${fork})`);
      const drop = new Set((o.drop ?? []).map((h) => h.toLowerCase()));
      const again: string[] = [];
      for (let h = fork + 1; h <= tip; h++) again.push(...((await blockAt(h))?.transactions ?? []));
      again.push(...pool);
      const forkTime = Number(BigInt((await blockAt(fork))?.timestamp ?? '0x0'));
      // Reverting consumes the snapshot and every later one.
      await node.revert(snapshot);
      for (const h of [...snapshots.keys()]) if (h >= fork) snapshots.delete(h);
      snapshots.set(fork, await node.snapshot());
      pool = [];
      for (const hash of again) {
        if (drop.has(hash.toLowerCase())) continue;
        const raw = raws.get(hash.toLowerCase());
        if (!raw) throw new Error(`EVM driver: transaction ${hash} was not sent by this driver`);
        await node.request('eth_sendRawTransaction', [raw]);
      }
      // Another producer's branch: later in time, so each replacement block has a new hash.
      let h = fork;
      for (let i = 0; i <= depth; i++) h = await mineOne(forkTime + 1000 + i);
      return h;
    },
    balance: async (address) => BigInt(await node.request<string>('eth_getBalance', [address, 'latest'])),
    // Only EDR's node can play dead (HTTP 503, WebSockets dropped) on cue.
    ...(edr && { down: async () => edr.down(), up: async () => edr.up() }),
    close: () => node.close(),
  };
}

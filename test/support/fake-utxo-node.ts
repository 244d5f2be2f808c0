/**
 * Fake Bitcoin-family nodes for tests: a real node:http JSON-RPC server on 127.0.0.1 (ephemeral port,
 * HTTP Basic auth) that speaks the wire format of Bitcoin Core 30 ('bitcoin'), Omni Core 0.12 ('omni'),
 * Bitcoin Cash Node 29 ('bitcoin-cash'), Dogecoin Core 1.14 ('dogecoin'), Dash Core ('dash') or zcashd
 * ('zcash') over an in-memory chain, plus an in-process control API (mine, send, spend, reorganise, take the
 * node down, and the Omni and zcash shielded operations). The shapes are checked against the recorded
 * fixtures in fake-utxo-node.test.ts. Pieces: fake-utxo/{chain,tx,script,format,rpc,server,omni}.ts.
 *
 * The node behaves as if started with -txindex=1 (getrawtransaction finds any transaction) and its wallet
 * holds the key of every address it hands out; the miner's address is the faucet.
 */
import type { ChainDriver } from './chain-driver.ts';
import { type Block, FakeChain } from './fake-utxo/chain.ts';
import { type DialectParams, dialectParams, type FakeNetwork, type UtxoDialect } from './fake-utxo/dialects.ts';
import { OmniLayer } from './fake-utxo/omni.ts';
import { RpcMethods } from './fake-utxo/rpc.ts';
import type { AddressType } from './fake-utxo/script.ts';
import { RpcHttpServer } from './fake-utxo/server.ts';

export { UTXO_DIALECTS, type UtxoDialect } from './fake-utxo/dialects.ts';

export interface FakeUtxoNodeOptions {
  /** Default 'testnet' (the chain's test network parameters; getblockchaininfo.chain "test"). */
  network?: FakeNetwork;
  /** Default 'herald' / a random password. */
  user?: string;
  password?: string;
  /** Blocks mined at start (so the faucet has coins). Default 101. */
  initialBlocks?: number;
  /** Unix seconds for new blocks. Default: the wall clock. */
  clock?: () => number;
}

export interface OmniPropertySpec {
  name: string;
  divisible?: boolean;
  /** Base units (1e-8 tokens when divisible, whole tokens otherwise). */
  amount: bigint;
  category?: string;
  subcategory?: string;
  url?: string;
  data?: string;
}

export interface FakeUtxoNode {
  readonly dialect: UtxoDialect;
  readonly params: DialectParams;
  /** http://127.0.0.1:PORT/ (no credentials). */
  readonly url: string;
  /** http://user:password@127.0.0.1:PORT/ */
  readonly urlWithCredentials: string;
  readonly user: string;
  readonly password: string;
  readonly chain: FakeChain;
  /** How many times each RPC method was answered without error. */
  readonly calls: Map<string, number>;
  height(): number;
  blockHash(height: number): string;
  newAddress(type?: AddressType): string;
  /** Mines `count` blocks (the first takes the pending transactions); returns their hashes. */
  mine(count: number, to?: string): string[];
  /** Pays `amount` base units from the faucet; returns the txid (pending until mined). */
  send(to: string, amount: bigint): string;
  /** Spends `from`'s coins: `amount` to `to`, the rest less the fee back to the faucet. */
  spend(from: string, to: string, amount: bigint): { txid: string; fee: bigint };
  /** RBF: pending `txid` (a spend of `from`) leaves the mempool for a new spend of the same coins of `from` to `to`; returns its txid. */
  replace(txid: string, from: string, to: string, amount: bigint): string;
  /** Replaces the last `depth` blocks with `depth + 1` new ones; returns the new blocks' hashes. */
  reorg(depth: number, options?: { drop?: string[] }): string[];
  /** Confirmed balance of `address` at the tip (sum of its unspent outputs), base units. */
  balance(address: string): bigint;
  /** Calls a method the way a client would, through the HTTP handler (works while down). */
  rpc<T = unknown>(method: string, params?: unknown[]): T;
  down(): Promise<void>;
  up(): Promise<void>;
  readonly isDown: boolean;
  /**
   * Makes the node claim it is not in step with its network (getblockchaininfo: initialblockdownload, and
   * headers beyond its blocks), as a node catching up does; undefined: in step again. Blocks are still served.
   */
  setSyncing(state: { initialBlockDownload?: boolean; headersAhead?: number } | undefined): void;
  // zcash
  /** zcash: moves `amount` of `from`'s coins into the Sapling pool; returns the txid. */
  shield(from: string, amount: bigint): string;
  /** zcash: pays `amount` from the Sapling pool to `to` (a transaction without transparent inputs). */
  unshield(to: string, amount: bigint): string;
  // omni
  /** Omni "Create Property - Fixed" from `issuer`; the id the property will get once mined. */
  createProperty(issuer: string, spec: OmniPropertySpec): { txid: string; propertyId: number };
  /**
   * Omni Simple Send. Like omni_sendrawtx, nothing is checked here: a send above the sender's balance or
   * of an unknown property is mined and marked invalid (valid:false, invalidreason) as Omni Core does.
   * `from` needs bitcoins for the fee (send it some first).
   */
  omniSend(from: string, to: string, propertyId: number, amount: bigint): string;
  /** Omni Send All of the main ecosystem. */
  omniSendAll(from: string, to: string): string;
  /** Omni balance at the tip, base units. */
  omniBalance(address: string, propertyId: number): bigint;
  close(): Promise<void>;
}

export class RpcCallError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'RpcCallError';
  }
}

export async function startFakeUtxoNode(dialect: UtxoDialect, options: FakeUtxoNodeOptions = {}): Promise<FakeUtxoNode> {
  const params = dialectParams(dialect, options.network ?? 'testnet');
  const clock = options.clock ?? (() => Math.floor(Date.now() / 1000));
  const chain = new FakeChain(params, clock, options.initialBlocks ?? 101);
  const omni = dialect === 'omni' ? new OmniLayer(chain) : undefined;
  chain.onChange = () => omni?.invalidate();
  const methods = new RpcMethods(chain, omni, clock());
  const user = options.user ?? 'herald';
  const password = options.password ?? `pw-${Math.random().toString(36).slice(2)}`;
  const calls = new Map<string, number>();
  const server = new RpcHttpServer(methods, {
    user,
    password,
    jsonRpc2: params.profile === 'core',
    onCall: (m) => calls.set(m, (calls.get(m) ?? 0) + 1),
  });
  await server.listen();
  const url = server.url;
  const hashes = (blocks: Block[]) => blocks.map((b) => b.hash);
  const needOmni = (): OmniLayer => {
    if (!omni) throw new Error(`Omni operations need the 'omni' dialect, not '${dialect}'`);
    return omni;
  };
  const needZcash = () => {
    if (params.profile !== 'zcash') throw new Error(`shielded operations need the 'zcash' dialect, not '${dialect}'`);
  };

  return {
    dialect,
    params,
    url,
    urlWithCredentials: url.replace('http://', `http://${encodeURIComponent(user)}:${encodeURIComponent(password)}@`),
    user,
    password,
    chain,
    calls,
    height: () => chain.height,
    blockHash(height) {
      const block = chain.main[height];
      if (!block) throw new Error(`no block at height ${height} (tip ${chain.height})`);
      return block.hash;
    },
    newAddress: (type) => chain.newAddress(type),
    mine: (count, to) => hashes(chain.mine(count, to)),
    send: (to, amount) => chain.send(to, amount).txid,
    spend(from, to, amount) {
      const tx = chain.spend(from, to, amount);
      return { txid: tx.txid, fee: tx.fee ?? 0n };
    },
    replace: (txid, from, to, amount) => chain.replace(txid, from, to, amount).txid,
    reorg: (depth, o = {}) => hashes(chain.reorg(depth, o.drop)),
    balance: (address) => chain.confirmedCoins(address).reduce((n, c) => n + c.value, 0n),
    rpc<T>(method: string, rpcParams: unknown[] = []): T {
      const reply = server.handle(JSON.stringify({ jsonrpc: '1.0', id: 'rpc', method, params: rpcParams }));
      const parsed = JSON.parse(reply.body) as { result: T; error: { code: number; message: string } | null };
      if (parsed.error) throw new RpcCallError(parsed.error.code, parsed.error.message);
      return parsed.result;
    },
    down: () => server.setDown(true),
    up: () => server.setDown(false),
    get isDown() {
      return server.isDown;
    },
    setSyncing(state) {
      chain.syncState = state;
    },
    shield(from, amount) {
      needZcash();
      return chain.shield(from, amount).txid;
    },
    unshield(to, amount) {
      needZcash();
      return chain.unshield(to, amount).txid;
    },
    createProperty(issuer, spec) {
      const propertyId = needOmni().nextPropertyId();
      const tx = chain.sendOmni({
        type: 50,
        sender: issuer,
        ecosystem: 1,
        divisible: spec.divisible ?? true,
        category: spec.category ?? '',
        subcategory: spec.subcategory ?? '',
        name: spec.name,
        url: spec.url ?? '',
        data: spec.data ?? '',
        amount: spec.amount,
      });
      return { txid: tx.txid, propertyId };
    },
    omniSend(from, to, propertyId, amount) {
      needOmni();
      return chain.sendOmni({ type: 0, sender: from, reference: to, propertyId, amount }).txid;
    },
    omniSendAll(from, to) {
      needOmni();
      return chain.sendOmni({ type: 4, sender: from, reference: to, ecosystem: 1 }).txid;
    },
    omniBalance: (address, propertyId) => needOmni().balance(address, propertyId),
    close: () => server.stop(),
  };
}

export interface FakeUtxoDriverOptions extends FakeUtxoNodeOptions {
  /** Where herald gets the credentials: in rpcUrl (user:password@, default) or chainConfig rpcUser/rpcPassword. */
  credentials?: 'url' | 'config';
  /** The chain's blockWorkers setting (herald's default when not given: blocks read in a worker thread). */
  blockWorkers?: number;
}

/** A ChainDriver (test/support/chain-driver.ts) over a fake node of `dialect`. */
export async function startFakeUtxoDriver(dialect: UtxoDialect, options: FakeUtxoDriverOptions = {}): Promise<ChainDriver & { node: FakeUtxoNode }> {
  const node = await startFakeUtxoNode(dialect, options);
  const inConfig = options.credentials === 'config';
  return {
    node,
    blockchain: node.params.blockchain,
    network: node.params.network,
    rpcUrl: inConfig ? node.url : node.urlWithCredentials,
    chainConfig: {
      // The fake's chain is its own (its genesis block is not the network's): declared, as a test node is.
      chainId: node.params.chainName,
      ...(inConfig && { rpcUser: node.user, rpcPassword: node.password }),
      ...(options.blockWorkers !== undefined && { blockWorkers: options.blockWorkers }),
    },
    height: async () => node.height(),
    blockHash: async (height) => node.blockHash(height),
    async mine(count) {
      node.mine(count);
      return node.height();
    },
    newAddress: async () => node.newAddress(),
    send: async (to, amount) => node.send(to, amount),
    async spend(from, to, amount) {
      const { txid, fee } = node.spend(from, to, amount);
      return { transactionId: txid, fee };
    },
    async reorg(depth, o) {
      node.reorg(depth, o);
      return node.height();
    },
    balance: async (address) => node.balance(address),
    down: () => node.down(),
    up: () => node.up(),
    close: () => node.close(),
  };
}

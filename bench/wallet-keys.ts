/**
 * What extended keys in wallets cost the follower (docs/concepts/wallets.md#extended-keys-in-a-wallet): blocks
 * applied (applyNextBlock, the block's own transaction on a real PostgreSQL) against wallets whose addresses come
 * from keys, and against the same addresses watched one by one, in the same run.
 *
 * WALLETS wallets each hold one tpub (gapLimit 20, both chains: 40 addresses each); in the baseline database the
 * same 40 addresses of each are plain watched addresses of a wallet. Each block pays PER_BLOCK of them, each at the
 * receive index after the highest paid so far of its wallet (0, 1, 2, ...): with keys every payment is a first
 * use that marks the address used and grows its key's window by one address (derived and inserted in the block's
 * transaction, and the block's ledger computed again), the worst case of a key's bookkeeping; plain addresses only
 * get their ledger entries. Blocks alternate between the two databases; the figure is the median time to apply a
 * block with keys over the median without (the ratio), each over BLOCKS blocks. An in-memory UTXO chain serves
 * both (no node: the follower's own work and PostgreSQL's are measured).
 *
 * Environment: BENCH_WALLET_KEYS_WALLETS (50), BENCH_WALLET_KEYS_PER_BLOCK (50), BENCH_WALLET_KEYS_BLOCKS (15).
 * BENCH_DURATION does not apply.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { ChainAdapter, NormalizedBlock, UtxoOutput } from '../src/chains/types.ts';
import { loadConfig } from '../src/config/config.ts';
import type { ChainKey } from '../src/domain/chains.ts';
import type { SubscribedWalletKey } from '../src/domain/subscriptions.ts';
import { parseExtendedKey } from '../src/domain/wallet-keys.ts';
import { deriveWindow } from '../src/domain/wallet-windows.ts';
import { applyNextBlock, type FollowerDeps } from '../src/ingest/follower.ts';
import { SubscriptionIndex } from '../src/matching/index.ts';
import { getCursor, lockChain } from '../src/store/chain-state.ts';
import { createCustomer } from '../src/store/customers.ts';
import type { Db } from '../src/store/db.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { insertDerivedWalletAddresses, insertWalletXpub } from '../src/store/wallet-xpubs.ts';
import { insertWallet, insertWalletAddress } from '../src/store/wallets.ts';
import { testPublicKey } from '../test/support/hd-keys.ts';
import { log, removeDataDirOnCleanup } from './lib.ts';
import type { Benchmark } from './run.ts';

const WALLETS = Number(process.env.BENCH_WALLET_KEYS_WALLETS ?? 50);
const PER_BLOCK = Number(process.env.BENCH_WALLET_KEYS_PER_BLOCK ?? 50);
const BLOCKS = Number(process.env.BENCH_WALLET_KEYS_BLOCKS ?? 15);
const GAP = 20;
/** The keys' chain; the baseline's plain addresses (the same tb1 strings) are followed as another chain of the same database. */
const KEYS_CHAIN: ChainKey = { blockchain: 'bitcoin', network: 'testnet' };
const PLAIN_CHAIN: ChainKey = { blockchain: 'bitcoin', network: 'mainnet' };

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** An in-memory UTXO chain: blocks of outputs paying the addresses given. */
class Chain implements ChainAdapter {
  blocks: NormalizedBlock[] = [];
  constructor() {
    this.grow([]);
  }
  grow(payees: string[]): void {
    const height = this.blocks.length;
    const hash = createHash('sha256').update(`wallet-keys ${height}`).digest('hex');
    const outputs: UtxoOutput[] = payees.map((address, i) => {
      const transactionId = createHash('sha256').update(`tx ${height} ${i}`).digest('hex');
      return { transactionId, outpoint: `${transactionId}:0`, address, value: 100_000n + BigInt(i) };
    });
    this.blocks.push({
      height,
      hash,
      parentHash: this.blocks.at(-1)?.hash ?? '0'.repeat(64),
      timestamp: 1_700_000_000 + height * 600,
      transactionIds: outputs.map((o) => o.transactionId),
      tokenTransfers: [],
      internalTransfers: [],
      coinMovements: outputs.map((o) => ({ transactionId: o.transactionId, address: o.address, delta: o.value })),
      utxo: { outputs, spends: [] },
    });
  }
  async getHead(): Promise<number> {
    return this.blocks.length - 1;
  }
  async getBlock(height: number): Promise<NormalizedBlock> {
    const block = this.blocks[height];
    if (!block) throw new Error(`no block at ${height}`);
    return structuredClone(block);
  }
}

interface Side {
  key: ChainKey;
  chain: Chain;
  deps: FollowerDeps;
}

async function side(db: Db, key: ChainKey): Promise<Side> {
  const chain = new Chain();
  const index = new SubscriptionIndex(key.blockchain, key.network);
  const deps: FollowerDeps = { db, adapter: chain, index: () => index, logger: pino({ level: 'warn' }), defaultConfirmations: 1, startHeight: 0 };
  await applyNextBlock(deps, key); // block 0: the cursor exists, the addresses below are watched from it
  return { key, chain, deps };
}

const run: Benchmark = async () => {
  log(`wallet-keys: ${WALLETS} wallets of one key each (gap ${GAP}, ${2 * GAP} addresses), ${PER_BLOCK} payments a block, ${BLOCKS} blocks`);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-wallet-keys-'));
  let database: OpenDatabase | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.embedded?.stop());
  database = await openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 4 });
  const db = database.db;
  const customer = (await createCustomer(db, 'bench', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n)).id;
  const [keys, plain] = [await side(db, KEYS_CHAIN), await side(db, PLAIN_CHAIN)];
  // The wallets' keys: accounts 0.. of the BIP84 test seed, regtest spelling off (tb1 addresses on testnet).
  const receive: string[][] = [];
  for (let w = 0; w < WALLETS; w++) {
    const text = testPublicKey(`m/84'/1'/${w}'`, 0x043587cf);
    const parsed = parseExtendedKey(KEYS_CHAIN.blockchain, KEYS_CHAIN.network, text, 'segwit');
    if (!parsed.ok) throw new Error(parsed.message);
    const key: SubscribedWalletKey = { field: 'extendedPublicKey', text, derivation: 'segwit', gapLimit: GAP, regtest: false };
    const window = [...deriveWindow(parsed.key, false, 0, GAP - 1, false), ...deriveWindow(parsed.key, true, 0, GAP - 1, false)];
    // Payments beyond the first window are to addresses the key derives later: listed far enough for every block.
    receive.push(deriveWindow(parsed.key, false, 0, BLOCKS + GAP, false).map((r) => r.address));
    await db.transaction('bench:key', async (tx) => {
      await lockChain(tx, KEYS_CHAIN);
      const cursor = await getCursor(tx, KEYS_CHAIN);
      const wallet = (await insertWallet(tx, customer, randomUUID(), `keys ${w}`)).id;
      const xpubId = randomUUID();
      await insertWalletXpub(tx, { id: xpubId, walletId: wallet, ...KEYS_CHAIN, key });
      await insertDerivedWalletAddresses(tx, { walletId: wallet, xpubId, ...KEYS_CHAIN, watchedFromBlock: BigInt(cursor?.height ?? 0) }, window);
    });
    await db.transaction('bench:plain', async (tx) => {
      await lockChain(tx, PLAIN_CHAIN);
      const cursor = await getCursor(tx, PLAIN_CHAIN);
      const wallet = (await insertWallet(tx, customer, randomUUID(), `plain ${w}`)).id;
      for (const r of window) {
        await insertWalletAddress(tx, wallet, {
          ...PLAIN_CHAIN,
          address: r.address,
          normalizedAddress: r.address,
          watchedFromBlock: BigInt(cursor?.height ?? 0),
        });
      }
    });
  }
  // One block with nothing to load each side's set of watched addresses before the timing.
  for (const s of [keys, plain]) {
    s.chain.grow([]);
    await applyNextBlock(s.deps, s.key);
  }

  const times = { keys: [] as number[], plain: [] as number[] };
  for (let b = 1; b <= BLOCKS; b++) {
    // Wallet w's receive index b - 1 (first use: its key's window grows by one); the same addresses on both sides.
    const payees = Array.from({ length: PER_BLOCK }, (_, i) => receive[i % WALLETS]?.[b - 1] as string);
    for (const [name, s] of [
      ['keys', keys],
      ['plain', plain],
    ] as const) {
      s.chain.grow(payees);
      const started = process.hrtime.bigint();
      const step = await applyNextBlock(s.deps, s.key);
      times[name].push(Number(process.hrtime.bigint() - started) / 1e6);
      if (step.kind !== 'applied') throw new Error(`${name}: block ${b} not applied (${step.kind})`);
    }
  }
  const [grown] = await db.query<{ n: number }>('bench:grown', 'SELECT count(*)::int AS n FROM wallet_addresses WHERE wallet_xpub_id IS NOT NULL');
  const expected = WALLETS * 2 * GAP + BLOCKS * Math.min(WALLETS, PER_BLOCK);
  if (grown?.n !== expected) throw new Error(`the keys' windows hold ${grown?.n} addresses, not ${expected}`);
  // The addresses the windows grew by are the key's own (the first wallet's receive chain, index by index).
  const first = await db.query<{ normalized_address: string }>(
    'bench:first-wallet',
    `SELECT a.normalized_address FROM wallet_addresses a JOIN wallets w ON w.id = a.wallet_id
     WHERE w.name = 'keys 0' AND a.wallet_xpub_id IS NOT NULL AND NOT a.xpub_change ORDER BY a.xpub_index`,
  );
  const derivedFirst = receive[0] ?? [];
  if (first.map((r) => r.normalized_address).join() !== derivedFirst.slice(0, first.length).join() || first.length !== GAP + BLOCKS) {
    throw new Error("the first wallet's receive window is not its key's addresses");
  }
  const result = {
    wallets: WALLETS,
    gapLimit: GAP,
    paymentsPerBlock: PER_BLOCK,
    blocks: BLOCKS,
    keysMedianMs: round(median(times.keys)),
    plainMedianMs: round(median(times.plain)),
    ratio: round(median(times.keys) / median(times.plain), 2),
    watchedAddressesAfter: grown.n,
  };
  log(`wallet-keys: ${JSON.stringify(result)}`);
  await database.close();
  return result;
};

export default run;

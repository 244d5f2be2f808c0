/**
 * The wallet ledger on a UTXO chain, against a real database and an in-memory chain: outputs paid to a
 * watched address are recorded by the ledger, so an input that spends one is that address's spending
 * even when the node tells nothing about inputs (getblock verbosity 2); the opening balance comes from the
 * node's unspent outputs, which are recorded too; a reorganisation forgets the outputs of orphaned blocks.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChainAdapter, CoinMovement, NormalizedBlock, UnspentOutput, UnspentOutputs, UtxoOutput, UtxoSpend } from '../src/chains/types.ts';
import { applyNextBlock, type FollowerDeps } from '../src/ingest/follower.ts';
import { SubscriptionIndex } from '../src/matching/index.ts';
import { readOpenings } from '../src/wallets/openings.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { testnetAddress } from './support/utxo-blocks.ts';

const CHAIN = { blockchain: 'bitcoin', network: 'testnet' } as const;
const BTC = 100_000_000n;

interface FakeTx {
  id: string;
  /** Outputs paid (address, value). */
  outputs: [string, bigint][];
  /** Outpoints spent. */
  spends?: string[];
}

/** Blocks as a verbosity-2 node gives them: outputs known, inputs only as outpoints. */
class UtxoChain implements ChainAdapter {
  blocks: NormalizedBlock[] = [];
  unspent = new Map<string, UnspentOutput[]>();
  private nonce = 0;

  /** `listsAddresses`: each block lists its addresses (NormalizedBlock.addresses), as the block workers' blocks do. */
  constructor(private readonly listsAddresses = false) {
    this.blocks.push(this.make(0, '0'.repeat(64), []));
  }

  private make(height: number, parentHash: string, txs: FakeTx[]): NormalizedBlock {
    const hash = createHash('sha256')
      .update(`block ${height} ${++this.nonce}`)
      .digest('hex');
    const outputs: UtxoOutput[] = txs.flatMap((t) =>
      t.outputs.map(([address, value], i) => ({ transactionId: t.id, outpoint: `${t.id}:${i}`, address, value })),
    );
    const spends: UtxoSpend[] = txs.flatMap((t) => (t.spends ?? []).map((outpoint) => ({ transactionId: t.id, outpoint })));
    const coinMovements: CoinMovement[] = outputs.map((o) => ({ transactionId: o.transactionId, address: o.address, delta: o.value }));
    return {
      height,
      hash,
      parentHash,
      timestamp: 1_700_000_000 + height * 600,
      transactionIds: txs.map((t) => t.id),
      tokenTransfers: [],
      internalTransfers: [],
      coinMovements,
      utxo: { outputs, spends },
      ...(this.listsAddresses ? { addresses: [...new Set(outputs.map((o) => o.address))] } : {}),
    };
  }

  grow(txs: FakeTx[] = []): void {
    this.blocks.push(this.make(this.blocks.length, (this.blocks.at(-1) as NormalizedBlock).hash, txs));
  }

  fork(height: number): void {
    this.blocks.length = height;
  }

  async getHead(): Promise<number> {
    return this.blocks.length - 1;
  }

  async getBlock(height: number): Promise<NormalizedBlock> {
    const block = this.blocks[height];
    if (!block) throw new Error(`no block at ${height}`);
    return structuredClone(block);
  }

  async getUnspentOutputs(address: string): Promise<UnspentOutputs | undefined> {
    const outputs = this.unspent.get(address);
    return outputs && { outputs, tipHeight: this.blocks.length - 1 };
  }
}

const txid = (n: number) => n.toString(16).padStart(64, '0');

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function setup(listsAddresses = false) {
  t = await startTestApp({ roles: ['api'] });
  const app = t;
  const db = app.app.database.db;
  const customer = await app.customer();
  const chain = new UtxoChain(listsAddresses);
  const index = new SubscriptionIndex(CHAIN.blockchain, CHAIN.network);
  const logger = { error: vi.fn(), warn: vi.fn(), info: vi.fn() };
  const deps: FollowerDeps = { db, adapter: chain, index: () => index, logger, defaultConfirmations: 1, startHeight: 1 };
  /** Applies blocks until caught up, reading openings after each (as the ingest service does). */
  const follow = async () => {
    for (let i = 0; i < 100; i++) {
      const step = await applyNextBlock(deps, CHAIN);
      await readOpenings({ db, chain: CHAIN, node: chain, confirmations: 1 });
      if (step.kind === 'caught-up') return;
    }
  };
  const wallet = (await app.request('POST', '/wallet-as-a-service/wallets', { key: customer.key, body: { data: { item: { walletName: 'cold' } } } })).body.data
    .item.walletId as string;
  const watch = async (address: string) => {
    const r = await app.request('POST', `/wallet-as-a-service/wallets/${wallet}/bitcoin/testnet/addresses`, {
      key: customer.key,
      body: { data: { item: { address } } },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data.item;
  };
  const coin = async () => {
    const r = await app.request('GET', `/wallet-as-a-service/wallets/${wallet}`, { key: customer.key });
    expect(r.status, r.text).toBe(200);
    return r.body.data.item.coins.find((c: { blockchain: string }) => c.blockchain === 'bitcoin');
  };
  return { chain, follow, watch, coin };
}

describe('UTXO wallet ledger (own record of watched outputs)', () => {
  // With the block's own address list too (block workers): block 4's spender is in none of its outputs, so only
  // resolveSpends adding it to the list gets it looked up among the watched.
  it.each([
    ['', false],
    [' (blocks that list their addresses)', true],
  ])('counts the spending of outputs it recorded, from the opening and from applied blocks; nets change per transaction%s', async (_, listsAddresses) => {
    const s = await setup(listsAddresses);
    const mine = testnetAddress('mine');
    const other = testnetAddress('other');
    s.chain.grow([{ id: txid(1), outputs: [[mine, 5n * BTC]] }]); // 1: before the address is watched
    await s.follow();
    // The node's unspent outputs of the address at its watchedFromBlock (1): the output of block 1.
    s.chain.unspent.set(mine, [{ outpoint: `${txid(1)}:0`, value: 5n * BTC, height: 1 }]);
    expect((await s.watch(mine)).watchedFromBlock).toBe(1);

    s.chain.grow([{ id: txid(2), outputs: [[mine, 2n * BTC]] }]); // 2: received 2
    // 3: spends the opening output (5) paying 1 to other and 3.9 back to itself: one spending of 1.1.
    s.chain.grow([
      {
        id: txid(3),
        outputs: [
          [other, BTC],
          [mine, 39n * (BTC / 10n)],
        ],
        spends: [`${txid(1)}:0`, `${txid(99)}:7`],
      },
    ]);
    // 4: spends the output of block 2 (recorded by the ledger when block 2 was applied) entirely to other.
    s.chain.grow([{ id: txid(4), outputs: [[other, 2n * BTC - 1000n]], spends: [`${txid(2)}:0`] }]);
    await s.follow();

    expect(await s.coin()).toMatchObject({ confirmedBalance: '3.9', totalReceived: '2', totalSpent: '3.1' });
  });

  it('a reorganisation forgets the outputs of orphaned blocks: the competing branch spends only what it knows', async () => {
    const s = await setup();
    const mine = testnetAddress('mine-2');
    const other = testnetAddress('other-2');
    s.chain.grow(); // 1
    await s.follow();
    s.chain.unspent.set(mine, []);
    await s.watch(mine);
    s.chain.grow([{ id: txid(10), outputs: [[mine, 3n * BTC]] }]); // 2 (to be orphaned)
    await s.follow();
    expect(await s.coin()).toMatchObject({ confirmedBalance: '3', totalReceived: '3' });

    // The branch replacing block 2 pays the address from another transaction, and its next block spends
    // both that output and (a transaction that tries) the orphaned one: only the known output counts.
    s.chain.fork(2);
    s.chain.grow([{ id: txid(11), outputs: [[mine, BTC]] }]); // 2'
    s.chain.grow([{ id: txid(12), outputs: [[other, BTC]], spends: [`${txid(11)}:0`, `${txid(10)}:0`] }]); // 3'
    await s.follow();
    expect(await s.coin()).toMatchObject({ confirmedBalance: '0', totalReceived: '1', totalSpent: '1' });
  });

  it('a node that cannot list unspent outputs leaves the opening unknown, and says so', async () => {
    const s = await setup();
    const mine = testnetAddress('mine-3');
    s.chain.grow(); // 1
    await s.follow();
    await s.watch(mine);
    s.chain.grow(); // 2
    await s.follow();
    expect(await s.coin()).toMatchObject({ confirmedBalance: '0', openingBalance: 'unavailable' });
  });
});

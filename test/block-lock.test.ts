/**
 * The follower's per-block prelude (store/block-apply.ts blockTransactionPrelude, sent with BEGIN): the chain's
 * advisory lock, and the block transaction's commit not waiting for the WAL flush, for that transaction only
 * (the pooled connection goes back with the server's setting).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockTransactionPrelude } from '../src/store/block-apply.ts';
import { lockChain } from '../src/store/chain-state.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { createTestDatabase } from './harness.ts';

const CHAIN = { blockchain: 'bitcoin', network: 'testnet' } as const;
let url: string;
let db: Db;
beforeAll(async () => {
  url = await createTestDatabase();
  db = createDb(url, { poolSize: 1 });
});
afterAll(() => db.close());

const setting = async (q: Pick<Db, 'query'>) =>
  ((await q.query<{ synchronous_commit: string }>('test:show', 'SHOW synchronous_commit'))[0] as { synchronous_commit: string }).synchronous_commit;

describe('blockTransactionPrelude', () => {
  it('turns synchronous commit off for the block transaction only', async () => {
    expect(await setting(db)).toBe('on');
    const inside = await db.transaction('test:block', async (tx) => await setting(tx), { prelude: blockTransactionPrelude(CHAIN) });
    expect(inside).toBe('off');
    // The same (only) pooled connection, after the transaction: the server's setting again.
    expect(await setting(db)).toBe('on');
    // The other chain-state transactions keep waiting for the flush.
    expect(
      await db.transaction('test:other', async (tx) => {
        await lockChain(tx, CHAIN);
        return await setting(tx);
      }),
    ).toBe('on');
  });

  it('takes the chain lock that lockChain takes', async () => {
    // A second pool on the same database: the two transactions wait for the lock, not for a connection.
    const other = createDb(url, { poolSize: 1 });
    try {
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const order: string[] = [];
      const first = db.transaction(
        'test:first',
        async () => {
          order.push('first locked');
          await held;
          order.push('first done');
        },
        { prelude: blockTransactionPrelude(CHAIN) },
      );
      await new Promise((r) => setTimeout(r, 50));
      const second = other.transaction('test:second', async (tx) => {
        await lockChain(tx, CHAIN);
        order.push('second locked');
      });
      await new Promise((r) => setTimeout(r, 100));
      release();
      await Promise.all([first, second]);
      expect(order).toEqual(['first locked', 'first done', 'second locked']);
    } finally {
      await other.close();
    }
  });
});

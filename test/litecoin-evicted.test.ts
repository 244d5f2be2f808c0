/**
 * The `evicted` reason of ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED (docs/concepts/deposit-safety.md#evicted)
 * on a REAL litecoind 0.21 in regtest. The node runs with -persistmempool=0 (a restart empties its mempool)
 * and -walletbroadcast=0 (its wallet puts nothing back into the mempool at start; the driver broadcasts with
 * sendrawtransaction). The chain's mempoolEvictionSpanMs is 600 ms: three checks 300 ms apart.
 *
 * - A deposit announced, then gone with the node's restart: DROPPED, evicted, once (a restart of herald and
 *   more blocks send nothing again), and the same for a payment to a wallet key (XPUB_..._DROPPED); its child, which spends only the deposit's unconfirmed output, is never
 *   called evicted (no outpoint of it is in the confirmed UTXO set): its announcement stays open.
 * - The race the rule is built for: a mempool loop reads the transaction pending, herald's follower applies
 *   the block that mines it, then the loop commits its announcement: open, for a mined transaction. The node
 *   says "not in mempool" at every check, yet it is never called evicted: the outpoint it spends is spent at
 *   the tip herald applied.
 */

import pino from 'pino';
import { expect, it } from 'vitest';
import type { MempoolReader } from '../src/chains/types.ts';
import { createUtxoMempoolReader } from '../src/chains/utxo/mempool.ts';
import { createUtxoRpcClient } from '../src/chains/utxo/rpc.ts';
import { type MempoolDeps, newMempoolState, pollMempool } from '../src/ingest/mempool.ts';
import { SubscriptionIndex } from '../src/matching/index.ts';
import { loadIndexableByIds } from '../src/store/chain-state.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { litecoinTestAccount } from './support/hd-keys.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-litecoin-evicted';
const SPAN_MS = 600;
const chain = { blockchain: 'litecoin', network: 'testnet' } as const;
const { tpub, at } = litecoinTestAccount("m/84'/1'/0'");

describeWithRealNode('the evicted reason on a real litecoind (regtest, restarted without -persistmempool)', litecoind, () => {
  const f = useFollowedApp(() => startLitecoinDriver({ addressType: 'bech32', fundingCoins: 10, args: ['-persistmempool=0', '-walletbroadcast=0'] }), {
    chain: { confirmations: 1, mempoolPollIntervalMs: 50, mempoolEvictionSpanMs: SPAN_MS },
    secret: SECRET,
  });
  const { subscribe, indexed, callbacksOf, expectSigned } = f;

  const events = (id: string) => callbacksOf(id).map((cb) => [(cb.json.data as { event?: string }).event, cb.json.data.item.transactionId]);
  const openRows = (ids: string[]) =>
    f.t.app.database.db.query<{ transaction_id: string; missing_checks: number }>(
      'test:open',
      'SELECT transaction_id, missing_checks FROM mempool_announced WHERE transaction_id = ANY ($1::text[]) ORDER BY transaction_id',
      [ids],
    );
  /** Long enough for several eviction checks (one every SPAN_MS / 2) and the worker to deliver what they queued. */
  const settle = async () => {
    await new Promise((r) => setTimeout(r, 4 * SPAN_MS));
    await f.t.app.worker?.settled();
  };

  it('a deposit gone from the mempool with the node restart is DROPPED, evicted, once; its child spending only the unconfirmed deposit is never called evicted', {
    timeout: 120_000,
  }, async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'evicted')).referenceId;
    await indexed();
    const deposit = await f.node.send(address, 20_000_000n);
    await until('the deposit', async () => callbacksOf(sub).length === 1);
    // Spends the deposit's output, unconfirmed, paying the address again: announced too.
    const child = (await f.node.spend(address, address, 10_000_000n)).transactionId;
    await until('the child', async () => callbacksOf(sub).length === 2);
    // A wallet key's payment, gone with the same restart: XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED.
    const xpub = (await subscribe('xpub-coins-transactions-unconfirmed', { extendedPublicKey: tpub, derivation: 'segwit' }, 'evicted-xpub')).referenceId;
    await indexed();
    const toKey = await f.node.send(at(0, 3), 5_000_000n);
    await until('the payment to the wallet key', async () => callbacksOf(xpub).length === 1);
    // Still in the mempool: checks come and go, nothing is dropped.
    await settle();
    expect(callbacksOf(sub)).toHaveLength(2);
    expect((await openRows([deposit, child])).map((r) => r.missing_checks)).toEqual([0, 0]);
    expect(callbacksOf(xpub)).toHaveLength(1);

    await f.node.node.restart();
    expect(await f.node.node.rpc<string[]>('getrawmempool')).toEqual([]);
    await until('the evicted deposit', async () => callbacksOf(sub).length >= 3, 60_000);
    expect(events(sub)[2]).toEqual(['ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED', deposit]);
    const dropped = callbacksOf(sub)[2];
    expectSigned(dropped);
    const announced = callbacksOf(sub).find((cb) => cb.json.data.item.transactionId === deposit);
    expect(dropped?.json.data).toEqual({
      product: 'BLOCKCHAIN_EVENTS',
      event: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
      item: { ...announced?.json.data.item, safety: undefined, reason: 'evicted' },
    });
    expect(dropped?.json.data.item).not.toHaveProperty('replacedByTransactionId');
    expect(dropped?.json.idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
    await until('the evicted payment to the wallet key', async () => callbacksOf(xpub).length >= 2, 60_000);
    const xpubDropped = callbacksOf(xpub)[1];
    expectSigned(xpubDropped);
    expect(xpubDropped?.json.data).toEqual({
      product: 'BLOCKCHAIN_EVENTS',
      event: 'XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
      item: { ...callbacksOf(xpub)[0]?.json.data.item, safety: undefined, reason: 'evicted' },
    });
    expect(xpubDropped?.json.data.item.transactionId).toBe(toKey);
    // The child: missing at every check, but its only input is the deposit's output, in no block.
    await settle();
    const [open] = await openRows([child]);
    expect(open?.missing_checks).toBeGreaterThanOrEqual(3);
    expect(await openRows([deposit])).toEqual([]);

    await f.t.restart();
    await f.mineAndProcess();
    await settle();
    expect(events(sub)).toEqual([
      ['ADDRESS_COINS_TRANSACTION_UNCONFIRMED', deposit],
      ['ADDRESS_COINS_TRANSACTION_UNCONFIRMED', child],
      ['ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED', deposit],
    ]);
    expect(events(xpub)).toEqual([
      ['XPUB_COINS_TRANSACTION_UNCONFIRMED', toKey],
      ['XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED', toKey],
    ]);
  });

  it('the race: a block applied between the mempool read and the announcement commit leaves an announcement open for a mined transaction; it is never called evicted', {
    timeout: 120_000,
  }, async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'mined-race')).referenceId;
    await indexed();
    const { db } = f.t.app.database;
    // A second mempool loop on herald's database and node (as a second ingest process would run), whose
    // batch is read while the transaction is pending and committed only after herald's follower applied
    // the block that mines it.
    const rpc = createUtxoRpcClient({ url: f.node.rpcUrl, auth: { cookieFile: f.node.node.cookieFile as string }, exactAmounts: true });
    const listing = createUtxoMempoolReader(rpc, chain);
    let mined = '';
    const reader: MempoolReader = {
      method: 'raced',
      newTransactionIds: () => listing.newTransactionIds(),
      async readPending(ids) {
        const read = await listing.readPending(ids);
        if (read.transactionIds.includes(mined)) await f.mineAndProcess();
        return read;
      },
    };
    const index = new SubscriptionIndex(chain.blockchain, chain.network);
    for (const s of await loadIndexableByIds(db, [sub])) index.add(s);
    index.settle();
    const deps: MempoolDeps = { db, reader, chain, index: () => index, logger: pino({ level: 'silent' }) };
    const state = newMempoolState();
    await pollMempool(deps, state); // the node's mempool as it is: nothing of ours
    mined = await f.node.send(address, 30_000_000n);
    await until('the raced round', async () => {
      await pollMempool(deps, state);
      return state.seen.has(mined);
    });
    const { blockhash: minedIn } = await f.node.node.rpc<{ blockhash?: string }>('getrawtransaction', mined, true);
    expect(minedIn).toMatch(/^[0-9a-f]{64}$/);
    // The block was applied first (it closed whatever herald's own loop had announced); the raced commit came after.
    expect(await openRows([mined])).toHaveLength(1);
    // Missing at check after check, well past the span: never proven unmined (its outpoint is spent at the tip).
    await until(
      'many missing checks',
      async () => {
        const [row] = await openRows([mined]);
        return row === undefined || row.missing_checks >= 6;
      },
      60_000,
    );
    await settle();
    expect(await openRows([mined])).toHaveLength(1);
    expect(events(sub)).toEqual([['ADDRESS_COINS_TRANSACTION_UNCONFIRMED', mined]]);
    await rpc.close();
  });
});

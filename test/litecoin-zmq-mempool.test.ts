/**
 * Unconfirmed coin events pushed by ZMQ `rawtx` (docs/reference/api.md#address-coins-transactions-unconfirmed). Debian's litecoind has no ZMQ,
 * so herald's zmqUrl points at a publisher of our own (an XPUB socket: it also tells when herald's
 * subscriber has subscribed) that sends the REAL raw transactions of a real litecoind in regtest, which
 * herald's rpcUrl points at. getrawmempool polling (the safety net) is set to a minute, so whatever fires
 * within seconds came by ZMQ, or by a poll a gap asked for.
 */

import { afterAll, beforeAll, expect, it } from 'vitest';
import { XPublisher } from 'zeromq';
import { rawTransactionId } from '../src/chains/utxo/raw-tx.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-litecoin-zmq';
/** Well past every wait of this file: a callback within it did not come from the periodic poll. */
const SAFETY_POLL_MS = 60_000;
const FAST = 8000;

describeWithRealNode('unconfirmed coin events pushed by ZMQ rawtx (our publisher, real litecoind transactions)', litecoind, () => {
  let publisher: XPublisher;
  let zmqUrl: string;
  let sequence = 0;
  let subscribed: Promise<void>;

  beforeAll(async () => {
    publisher = new XPublisher();
    await publisher.bind('tcp://127.0.0.1:*');
    zmqUrl = publisher.lastEndpoint as string;
    // XPUB hands us each subscription message (0x01 + topic): herald's subscriber is there once it came.
    subscribed = (async () => {
      for await (const [message] of publisher) if (message?.[0] === 1 && message.subarray(1).toString() === 'rawtx') return;
    })();
  });
  afterAll(() => publisher?.close());

  // Started after the publisher (the hook above): herald's chain entry names its address.
  const f = useFollowedApp(() => startLitecoinDriver({ addressType: 'bech32', fundingCoins: 20 }), {
    chain: () => ({ zmqUrl, confirmations: 1, mempoolPollIntervalMs: SAFETY_POLL_MS }),
    secret: SECRET,
  });
  const { subscribe, indexed, callbacksOf } = f;

  /** Publishes a transaction as a node's -zmqpubrawtx does: [topic, raw bytes, 4-byte LE sequence]. */
  async function publish(txid: string, seq = sequence++): Promise<void> {
    const hex = await f.node.node.rpc<string>('getrawtransaction', txid, false);
    const counter = Buffer.alloc(4);
    counter.writeUInt32LE(seq >>> 0);
    await publisher.send(['rawtx', Buffer.from(hex, 'hex'), counter]);
  }

  const items = (id: string) => callbacksOf(id).map((cb) => cb.json.data.item);
  const settle = async (ms = 500) => {
    await new Promise((r) => setTimeout(r, ms));
    await f.t.app.worker?.settled();
  };
  const mempoolStatus = async () => {
    const res = await f.t.request('GET', '/blockchain-events/status', { key: f.c.key });
    return res.body.data.items.find((i: { blockchain: string }) => i.blockchain === 'litecoin').mempool;
  };

  it('the ids of real legacy and segwit transactions and of a coinbase, computed from the raw bytes as the node does', async () => {
    const rawOf = async (id: string) => Buffer.from(await f.node.node.rpc<string>('getrawtransaction', id, false), 'hex');
    const address = await f.node.newAddress();
    const legacy = await f.node.send(address, 3_000_000n); // from the driver's legacy funding coins
    const legacyRaw = await rawOf(legacy);
    expect(legacyRaw[4]).not.toBe(0);
    expect(rawTransactionId(legacyRaw)).toEqual({ txid: legacy, coinbase: false });
    const height = await f.mineAndProcess();
    const { transactionId: segwit } = await f.node.spend(address, await f.node.newAddress(), 1_000_000n); // from a bech32 address
    const segwitRaw = await rawOf(segwit);
    expect([segwitRaw[4], segwitRaw[5]]).toEqual([0, 1]); // marker and flag: the witnesses are left out of the id
    expect(rawTransactionId(segwitRaw)).toEqual({ txid: segwit, coinbase: false });
    const block = await f.node.node.rpc<{ tx: string[] }>('getblock', await f.node.node.rpc<string>('getblockhash', height), 1);
    expect(rawTransactionId(await rawOf(block.tx[0] as string))).toEqual({ txid: block.tx[0], coinbase: true });
    expect(rawTransactionId(segwitRaw.subarray(0, segwitRaw.length - 3))).toBeUndefined();
    // Zcash v5 (overwintered, version 5): ZIP-244 ids are left to the node's decoderawtransaction.
    expect(rawTransactionId(Buffer.from('050000800a27a726b4d0d6c2', 'hex'))).toBeUndefined();
    await f.mineAndProcess();
  });

  it('a deposit published on ZMQ fires once within seconds (the poll is a minute away); mined and published again with its block, nothing more', async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'zmq-deposit')).referenceId;
    await indexed();
    await subscribed; // herald subscribed at the first round with an unconfirmed subscription
    await until('the first poll', async () => (await mempoolStatus())?.lastPolledAt != null);
    const txid = await f.node.send(address, 25_000_000n);
    await publish(txid);
    await until('the deposit by ZMQ', async () => callbacksOf(sub).length === 1, FAST);
    expect(items(sub)).toEqual([expect.objectContaining({ transactionId: txid, amount: '0.25', direction: 'incoming' })]);
    // A node publishes every transaction of a block again when it connects: mined, it fires nothing.
    const height = await f.mineAndProcess();
    const block = await f.node.node.rpc<{ tx: string[] }>('getblock', await f.node.node.rpc<string>('getblockhash', height), 1);
    for (const id of block.tx) await publish(id);
    await settle();
    expect(callbacksOf(sub)).toHaveLength(1);
    expect(await mempoolStatus()).toMatchObject({ method: 'zmq rawtx + getrawmempool polling', state: 'following' });
  });

  it('a transaction published only as its block connects (mined before herald saw it) fires nothing', async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'zmq-mined')).referenceId;
    await indexed();
    const txid = await f.node.send(address, 15_000_000n);
    const height = await f.mineAndProcess();
    const block = await f.node.node.rpc<{ tx: string[] }>('getblock', await f.node.node.rpc<string>('getblockhash', height), 1);
    expect(block.tx).toContain(txid);
    for (const id of block.tx) await publish(id);
    await settle();
    expect(callbacksOf(sub)).toHaveLength(0);
  });

  it('a spend from the watched address pushed by ZMQ is outgoing (its input resolved by the ledger, as for a polled one)', async () => {
    const address = await f.node.newAddress();
    const other = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'zmq-spender')).referenceId;
    await indexed();
    const deposit = await f.node.send(address, 30_000_000n);
    await publish(deposit);
    await until('the incoming deposit', async () => callbacksOf(sub).length === 1, FAST);
    await f.mineAndProcess();
    const { transactionId: spend } = await f.node.spend(address, other, 10_000_000n);
    await publish(spend);
    await until('the outgoing spend', async () => callbacksOf(sub).length === 2, FAST);
    expect(items(sub)).toEqual([
      expect.objectContaining({ transactionId: deposit, amount: '0.3', direction: 'incoming' }),
      expect.objectContaining({ transactionId: spend, amount: '0.3', direction: 'outgoing' }),
    ]);
    await f.mineAndProcess();
  });

  it('a sequence gap polls getrawmempool at once: a transaction ZMQ lost fires, and one both ZMQ and the poll saw fires once', async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'zmq-gap')).referenceId;
    await indexed();
    const pushed = await f.node.send(address, 21_000_000n);
    await publish(pushed);
    await until('the pushed transaction', async () => callbacksOf(sub).length === 1, FAST);
    // Lost on the way (never published), then a message whose sequence skips: herald polls the node.
    const lost = await f.node.send(address, 22_000_000n);
    await settle(300);
    expect(callbacksOf(sub)).toHaveLength(1);
    expect(await f.node.node.rpc<string[]>('getrawmempool')).toEqual(expect.arrayContaining([pushed, lost]));
    sequence += 5;
    await publish(pushed);
    await until('the lost transaction, by the poll the gap asked for', async () => callbacksOf(sub).length === 2, FAST);
    await settle();
    // The poll listed both; the one ZMQ brought first is in the seen-set and fired only once.
    expect(items(sub).map((i) => i.transactionId)).toEqual([pushed, lost]);
    await f.mineAndProcess();
  });
  it('a lost ZMQ connection (the publisher gone and back) polls getrawmempool at once: a transaction sent meanwhile fires', async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'zmq-reconnect')).referenceId;
    await indexed();
    const missed = await f.node.send(address, 23_000_000n); // never published
    await settle(300);
    expect(callbacksOf(sub)).toHaveLength(0);
    // The node's publisher restarts: herald's subscriber sees the disconnection, and reconnects.
    publisher.close();
    publisher = new XPublisher();
    // ZMQ releases the port in the background after close.
    await until('the port free again', () =>
      publisher.bind(zmqUrl).then(
        () => true,
        () => new Promise<false>((r) => setTimeout(() => r(false), 50)),
      ),
    );
    subscribed = (async () => {
      for await (const [message] of publisher) if (message?.[0] === 1 && message.subarray(1).toString() === 'rawtx') return;
    })();
    await until('the transaction missed, by the poll the disconnection asked for', async () => callbacksOf(sub).length === 1, FAST);
    expect(items(sub)).toEqual([expect.objectContaining({ transactionId: missed, amount: '0.23' })]);
    // Subscribed again (a node's sequence starts over after its restart: not a gap to report twice).
    await subscribed;
    sequence = 0;
    const pushed = await f.node.send(address, 24_000_000n);
    await publish(pushed);
    await until('a transaction pushed after the reconnection', async () => callbacksOf(sub).length === 2, FAST);
    await f.mineAndProcess();
  });
});

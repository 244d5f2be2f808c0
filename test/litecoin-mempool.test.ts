/**
 * Unconfirmed coin events (docs/reference/api.md#address-coins-transactions-unconfirmed) on a REAL litecoind 0.21 in regtest, read by polling
 * getrawmempool (Debian's litecoind has no ZMQ): a deposit seen before it is mined, a spend from the
 * watched address (outgoing, by the output the ledger recorded), a restart that resends nothing, an RBF
 * replacement that fires nothing more (litecoind takes replacements with -mempoolreplacement=1 only), and a transaction mined before it was read that fires nothing.
 */
import { expect, it } from 'vitest';
import { createUtxoMempoolReader } from '../src/chains/utxo/mempool.ts';
import { createUtxoRpcClient } from '../src/chains/utxo/rpc.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-litecoin-mempool';
/** RBF signalling (BIP 125): any nSequence below 0xfffffffe. */
const REPLACEABLE = 0xfffffffd;

describeWithRealNode('unconfirmed coin events on a real litecoind (regtest, getrawmempool polling)', litecoind, () => {
  const f = useFollowedApp(() => startLitecoinDriver({ addressType: 'bech32', fundingCoins: 20, args: ['-mempoolreplacement=1'] }), {
    chain: { confirmations: 1, mempoolPollIntervalMs: 50 },
    secret: SECRET,
  });
  const { subscribe, indexed, callbacksOf, expectSigned } = f;

  const items = (id: string) => callbacksOf(id).map((cb) => cb.json.data.item);
  /** Lets the mempool loop run a few more rounds (50 ms apart) and the worker deliver what they queued. */
  const settle = async () => {
    await new Promise((r) => setTimeout(r, 400));
    await f.t.app.worker?.settled();
  };
  const mempoolStatus = async () => {
    const res = await f.t.request('GET', '/blockchain-events/status', { key: f.c.key });
    return res.body.data.items.find((i: { blockchain: string }) => i.blockchain === 'litecoin').mempool;
  };

  it('a deposit fires once when first seen, signed, without minedInBlock; mining it fires the confirmed subscription and no second unconfirmed callback', async () => {
    const address = await f.node.newAddress();
    const created = await subscribe('address-coins-transactions-unconfirmed', { address }, 'deposit');
    expect(created.item).toEqual({
      address,
      callbackSecretKey: SECRET,
      callbackUrl: `${f.receiver.url}/hooks/deposit`,
      createdTimestamp: expect.any(Number),
      eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
      isActive: true,
      referenceId: expect.any(String),
    });
    const confirmed = (await subscribe('address-coins-transactions-confirmed', { address, receiveCallbackOn: 1 }, 'deposit-confirmed')).referenceId;
    await indexed();
    const before = Math.floor(Date.now() / 1000);
    const txid = await f.node.send(address, 20_000_000n);
    const [seen] = await until('the unconfirmed deposit', async () => callbacksOf(created.referenceId).length === 1 && callbacksOf(created.referenceId));
    expectSigned(seen);
    expect(seen?.json.data).toEqual({
      product: 'BLOCKCHAIN_EVENTS',
      event: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
      item: {
        blockchain: 'litecoin',
        network: 'testnet',
        address,
        transactionId: txid,
        amount: '0.2',
        unit: 'LTC',
        direction: 'incoming',
        firstSeenInMempoolTimestamp: expect.any(Number),
        safety: { verdict: 'ok', flags: [] },
      },
    });
    // Not replaceable, as the node itself says: no `rbf` flag (docs/concepts/deposit-safety.md#rbf).
    expect((await f.node.node.rpc<{ 'bip125-replaceable': boolean }>('getmempoolentry', txid))['bip125-replaceable']).toBe(false);
    expect(seen?.json.data.item.firstSeenInMempoolTimestamp).toBeGreaterThanOrEqual(before - 1);
    await f.mineAndProcess();
    await until('the confirmed deposit', async () => callbacksOf(confirmed).length === 1);
    await settle();
    expect(callbacksOf(created.referenceId)).toHaveLength(1);
    const status = await mempoolStatus();
    expect(status).toMatchObject({ state: 'following', method: 'getrawmempool polling', backlog: 0 });
    expect(status.callbacksFired).toBeGreaterThanOrEqual(1);
  });

  it('a spend from the watched address is outgoing by the sum of its inputs (the output the ledger recorded when it was mined)', async () => {
    const address = await f.node.newAddress();
    const other = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'spender')).referenceId;
    await indexed();
    const deposit = await f.node.send(address, 30_000_000n);
    await until('the incoming deposit', async () => callbacksOf(sub).length === 1);
    await f.mineAndProcess();
    const { transactionId: spend } = await f.node.spend(address, other, 10_000_000n);
    await until('the outgoing spend', async () => callbacksOf(sub).length === 2);
    expect(items(sub)).toEqual([
      expect.objectContaining({ transactionId: deposit, amount: '0.3', direction: 'incoming' }),
      expect.objectContaining({ transactionId: spend, amount: '0.3', direction: 'outgoing' }),
    ]);
    await f.mineAndProcess();
  });

  it('after a restart, a transaction fired before is not read nor sent again; one sent while herald was down fires once', async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'restart')).referenceId;
    await indexed();
    const first = await f.node.send(address, 11_000_000n);
    await until('the first transaction', async () => callbacksOf(sub).length === 1);
    let second = '';
    await f.t.restart(async () => {
      second = await f.node.send(address, 12_000_000n);
    });
    await until('the transaction sent while down', async () => callbacksOf(sub).length === 2);
    await settle();
    expect(items(sub).map((i) => i.transactionId)).toEqual([first, second]);
    // The seen-set came back from the store: only the new transaction was read after the restart.
    expect((await mempoolStatus()).transactionsSeen).toBe(1);
    await f.mineAndProcess();
  });

  it('an RBF replacement of a transaction already reported fires nothing more; the original, signalling BIP125, was flagged rbf; the confirmed subscription reports the replacement when mined', async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'rbf')).referenceId;
    const confirmed = (await subscribe('address-coins-transactions-confirmed', { address, receiveCallbackOn: 1 }, 'rbf-confirmed')).referenceId;
    await indexed();
    // A coin of our own to spend twice, with the replaceable flag.
    const wallet = await f.node.newAddress();
    const funding = await f.node.send(wallet, 50_000_000n);
    await f.mineAndProcess();
    const funded = await f.node.node.rpc<{ vout: { n: number; value: number; scriptPubKey: { address?: string; addresses?: string[] } }[] }>(
      'getrawtransaction',
      funding,
      true,
    );
    const vout = funded.vout.find((o) => (o.scriptPubKey.address ?? o.scriptPubKey.addresses?.[0]) === wallet)?.n as number;
    const change = await f.node.newAddress();
    const payWithFee = async (changeAmount: number) => {
      const raw = await f.node.node.rpc<string>(
        'createrawtransaction',
        [{ txid: funding, vout, sequence: REPLACEABLE }],
        [{ [address]: 0.2 }, { [change]: changeAmount }],
      );
      const signed = await f.node.node.rpc<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', raw);
      expect(signed.complete).toBe(true);
      return await f.node.node.rpc<string>('sendrawtransaction', signed.hex);
    };
    const original = await payWithFee(0.2999);
    await until('the original', async () => callbacksOf(sub).length === 1);
    // It signals BIP125 (an input's nSequence below 0xfffffffe), as the node says too: the callback is flagged.
    expect((await f.node.node.rpc<{ 'bip125-replaceable': boolean }>('getmempoolentry', original))['bip125-replaceable']).toBe(true);
    expect(items(sub)[0]?.safety).toEqual({ verdict: 'review', flags: ['rbf'] });
    const replacement = await payWithFee(0.299);
    expect(replacement).not.toBe(original);
    const mempool = await f.node.node.rpc<string[]>('getrawmempool');
    expect(mempool).toContain(replacement);
    expect(mempool).not.toContain(original);
    await settle();
    await f.mineAndProcess();
    await until('the confirmed replacement', async () => callbacksOf(confirmed).length === 1);
    await settle();
    // The original's only further callback: DROPPED, replaced by the replacement (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md).
    expect(callbacksOf(sub).map((cb) => (cb.json.data as { event?: string }).event)).toEqual([
      'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
      'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
    ]);
    expect(items(sub).map((i) => i.transactionId)).toEqual([original, original]);
    expect(items(sub)[1]).toEqual({
      blockchain: 'litecoin',
      network: 'testnet',
      address,
      transactionId: original,
      amount: '0.2',
      unit: 'LTC',
      direction: 'incoming',
      firstSeenInMempoolTimestamp: items(sub)[0]?.firstSeenInMempoolTimestamp,
      reason: 'replaced',
      replacedByTransactionId: replacement,
    });
    expectSigned(callbacksOf(sub)[1]);
    expect(items(confirmed).map((i) => i.transactionId)).toEqual([replacement]);
    // Mined, it is no longer replaceable: the confirmed callback carries no `rbf`.
    expect(items(confirmed)[0]?.safety).toEqual({ verdict: 'ok', flags: [] });
  });

  /** A coin of the node's wallet at a fresh address, mined: the outpoint to spend twice. */
  const fundedOutpoint = async (): Promise<{ txid: string; vout: number }> => {
    const wallet = await f.node.newAddress();
    const txid = await f.node.send(wallet, 50_000_000n);
    await f.mineAndProcess();
    const funded = await f.node.node.rpc<{ vout: { n: number; scriptPubKey: { address?: string; addresses?: string[] } }[] }>('getrawtransaction', txid, true);
    const vout = funded.vout.find((o) => (o.scriptPubKey.address ?? o.scriptPubKey.addresses?.[0]) === wallet)?.n as number;
    return { txid, vout };
  };
  /** A signed transaction spending `input` to `outputs`, not sent. */
  const signedSpend = async (input: { txid: string; vout: number }, outputs: Record<string, number>[]): Promise<string> => {
    const raw = await f.node.node.rpc<string>('createrawtransaction', [input], outputs);
    const signed = await f.node.node.rpc<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', raw);
    expect(signed.complete).toBe(true);
    return signed.hex;
  };

  it("an announced transaction whose outpoint a mined transaction spends is DROPPED, conflicted, naming the miner's transaction, once (a restart sends nothing again); one announced then mined gets no DROPPED", async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'conflicted')).referenceId;
    await indexed();
    const input = await fundedOutpoint();
    const original = await f.node.node.rpc<string>(
      'sendrawtransaction',
      await signedSpend(input, [{ [address]: 0.2 }, { [await f.node.newAddress()]: 0.2999 }]),
    );
    await until('the original', async () => callbacksOf(sub).length === 1);
    // The double spend, mined directly: the node's mempool would refuse it (txn-mempool-conflict).
    const doubleSpend = await signedSpend(input, [{ [await f.node.newAddress()]: 0.4999 }]);
    const conflicting = (await f.node.node.rpc<{ txid: string }>('decoderawtransaction', doubleSpend)).txid;
    await f.node.node.rpc('generateblock', f.node.node.miningAddress, [doubleSpend]);
    expect(await f.node.node.rpc<string[]>('getrawmempool')).not.toContain(original);
    await f.mineAndProcess();
    await until('the dropped callback', async () => callbacksOf(sub).length === 2);
    const dropped = callbacksOf(sub)[1];
    expectSigned(dropped);
    expect(dropped?.json.data).toEqual({
      product: 'BLOCKCHAIN_EVENTS',
      event: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
      item: {
        blockchain: 'litecoin',
        network: 'testnet',
        address,
        transactionId: original,
        amount: '0.2',
        unit: 'LTC',
        direction: 'incoming',
        firstSeenInMempoolTimestamp: items(sub)[0]?.firstSeenInMempoolTimestamp,
        reason: 'conflicted',
        replacedByTransactionId: conflicting,
      },
    });
    expect(dropped?.json.idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
    expect(dropped?.json.idempotencyKey).not.toBe(callbacksOf(sub)[0]?.json.idempotencyKey);
    // A deposit announced then mined: its announcement is closed by the block, and nothing more is sent.
    const deposit = await f.node.send(address, 15_000_000n);
    await until('the deposit', async () => callbacksOf(sub).length === 3);
    await f.mineAndProcess();
    const open = await f.t.app.database.db.query<{ n: string }>(
      'test:open',
      'SELECT count(*) AS n FROM mempool_announced WHERE transaction_id = ANY ($1::text[])',
      [[deposit, original]],
    );
    expect(Number(open[0]?.n)).toBe(0);
    await f.t.restart();
    await f.mineAndProcess();
    await settle();
    expect(callbacksOf(sub).map((cb) => [(cb.json.data as { event?: string }).event, cb.json.data.item.transactionId])).toEqual([
      ['ADDRESS_COINS_TRANSACTION_UNCONFIRMED', original],
      ['ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED', original],
      ['ADDRESS_COINS_TRANSACTION_UNCONFIRMED', deposit],
    ]);
  });

  it('a transaction mined before it is read fires nothing (the reader leaves it out); one mined before it is listed is never listed', async () => {
    const address = await f.node.newAddress();
    const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'mined-first')).referenceId;
    await indexed();
    // The reader on its own, against the same node: listed, then mined, then read.
    const rpc = createUtxoRpcClient({ url: f.node.rpcUrl, auth: { cookieFile: f.node.node.cookieFile as string }, exactAmounts: true });
    const reader = createUtxoMempoolReader(rpc, { blockchain: 'litecoin', network: 'testnet' });
    await reader.newTransactionIds();
    // Sent and mined while herald is down: never in a mempool herald reads.
    await f.t.restart(async () => {
      await f.node.send(address, 13_000_000n);
      await f.node.mine(1);
    });
    const listed = await reader.newTransactionIds();
    expect(listed).toEqual([]);
    const pendingThenMined = await f.node.send(await f.node.newAddress(), 14_000_000n);
    expect(await reader.newTransactionIds()).toEqual([pendingThenMined]);
    await f.mineAndProcess();
    const read = await reader.readPending([pendingThenMined]);
    expect(read.transactionIds).toEqual([]);
    await settle();
    expect(callbacksOf(sub)).toHaveLength(0);
    await rpc.close();
  });
});

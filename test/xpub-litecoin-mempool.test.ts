/**
 * XPUB_COINS_TRANSACTION_UNCONFIRMED on a REAL litecoind 0.21 (regtest, getrawmempool polling;
 * docs/concepts/wallet-keys.md): a tpub of the BIP84 test seed subscribed with gapLimit 20 and paid from litecoind's
 * wallet. The payment to index 0 is called back before its block is mined, signed, with its path and the safety
 * verdict, and once only (mining it marks index 0 used: addresses/next moves, no second callback); payments to
 * index 20 (the window's last) and then 40 sit in the mempool together and both fire (the mempool widens the
 * window); a spend from index 0 is `outgoing` with the fee and the change address; a BIP125-replaceable payment
 * is flagged `rbf`, and its replacement sends XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED.
 */
import { expect, it } from 'vitest';
import { useFollowedApp } from './support/followed-app.ts';
import { litecoinTestAccount, wifOf } from './support/hd-keys.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-xpub-litecoin-mempool';
const ACCOUNT = "m/84'/1'/0'";
const { tpub, at } = litecoinTestAccount(ACCOUNT);
/** RBF signalling (BIP 125): any nSequence below 0xfffffffe. */
const REPLACEABLE = 0xfffffffd;

describeWithRealNode('unconfirmed wallet-key events on a real litecoind (regtest, getrawmempool polling)', litecoind, () => {
  const f = useFollowedApp(() => startLitecoinDriver({ addressType: 'bech32', fundingCoins: 10, args: ['-mempoolreplacement=1'] }), {
    chain: { confirmations: 1, mempoolPollIntervalMs: 50 },
    secret: SECRET,
  });
  const { subscribe, callbacksOf, expectSigned, indexed } = f;

  const events = (id: string) => callbacksOf(id).map((cb) => (cb.json.data as { event?: string }).event);
  const items = (id: string) => callbacksOf(id).map((cb) => cb.json.data.item as Record<string, unknown>);
  const next = async (id: string) => (await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses/next`, { key: f.c.key })).body.data.item;
  const settle = async () => {
    await new Promise((r) => setTimeout(r, 400));
    await f.t.app.worker?.settled();
  };

  it('before the block, once, with the window widened in the mempool, an outgoing spend, rbf and DROPPED', async () => {
    const created = await subscribe('xpub-coins-transactions-unconfirmed', { extendedPublicKey: tpub, derivation: 'segwit' });
    expect(created.item).toEqual({
      referenceId: expect.any(String),
      eventType: 'XPUB_COINS_TRANSACTION_UNCONFIRMED',
      callbackUrl: `${f.receiver.url}/hooks/xpub-coins-transactions-unconfirmed`,
      callbackSecretKey: SECRET,
      createdTimestamp: expect.any(Number),
      isActive: true,
      extendedPublicKey: tpub,
      derivation: 'segwit',
      gapLimit: 20,
    });
    const id = created.referenceId;
    await indexed();

    // Index 0: called back while the transaction is only in the mempool (no block is mined until it is).
    const height = await f.node.height();
    const first = await f.node.send(at(0, 0), 10_000_000n);
    const [seen] = await until('the unconfirmed payment to index 0', async () => callbacksOf(id).length === 1 && callbacksOf(id));
    expect(await f.node.height()).toBe(height);
    expect(await f.node.node.rpc<string[]>('getrawmempool')).toContain(first);
    expectSigned(seen);
    expect(seen?.json.data).toEqual({
      product: 'BLOCKCHAIN_EVENTS',
      event: 'XPUB_COINS_TRANSACTION_UNCONFIRMED',
      item: {
        blockchain: 'litecoin',
        network: 'testnet',
        extendedPublicKey: tpub,
        transactionId: first,
        direction: 'incoming',
        amount: '0.1',
        unit: 'LTC',
        addresses: [{ address: at(0, 0), derivationPath: 'm/0/0', change: false, received: '0.1', sent: '0' }],
        firstSeenInMempoolTimestamp: expect.any(Number),
        safety: { verdict: 'ok', flags: [] },
      },
    });
    // Mined: index 0 is used (the blocks set the used flags of unconfirmed subscriptions too), nothing more is sent.
    expect((await next(id)).index).toBe(0);
    await f.mineAndProcess();
    await until('index 0 used', async () => (await next(id)).index === 1);
    await settle();
    expect(callbacksOf(id)).toHaveLength(1);

    // Index 20 is the last of the window (0 used, gap 20); 40 is watched only once 20 is seen: both wait in the mempool together.
    const twenty = await f.node.send(at(0, 20), 2_000_000n);
    await until('the payment to index 20', async () => items(id).some((i) => i.transactionId === twenty));
    const forty = await f.node.send(at(0, 40), 4_000_000n);
    await until('the payment to index 40', async () => items(id).some((i) => i.transactionId === forty));
    expect(await f.node.node.rpc<string[]>('getrawmempool')).toEqual(expect.arrayContaining([twenty, forty]));
    expect(items(id).find((i) => i.transactionId === forty)?.addresses).toEqual([
      { address: at(0, 40), derivationPath: 'm/0/40', change: false, received: '0.04', sent: '0' },
    ]);
    // Seen in the mempool is not used: addresses/next still follows the blocks.
    expect((await next(id)).index).toBe(1);
    await f.mineAndProcess();
    await until('index 40 used', async () => (await next(id)).index === 41);

    // A spend from index 0 (its key given to litecoind): outgoing, with the fee and the change address, before its block.
    await f.node.node.rpc('importprivkey', wifOf(`${ACCOUNT}/0/0`), 'xpub-0', false);
    const decoded = await f.node.node.rpc<{ vout: { n: number; scriptPubKey: { address?: string; addresses?: string[] } }[] }>(
      'getrawtransaction',
      first,
      true,
    );
    const vout = decoded.vout.find((o) => (o.scriptPubKey.address ?? o.scriptPubKey.addresses?.[0]) === at(0, 0))?.n;
    const raw = await f.node.node.rpc<string>(
      'createrawtransaction',
      [{ txid: first, vout }],
      [{ [await f.node.newAddress()]: '0.05' }, { [at(1, 0)]: '0.0499' }],
    );
    const signed = await f.node.node.rpc<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', raw);
    expect(signed.complete).toBe(true);
    const spend = await f.node.node.rpc<string>('sendrawtransaction', signed.hex);
    const [out] = await until('the unconfirmed spend', async () => {
      const found = items(id).filter((i) => i.transactionId === spend);
      return found.length === 1 && found;
    });
    expect(out).toMatchObject({
      direction: 'outgoing',
      amount: '0.0501',
      fee: '0.0001',
      addresses: [
        { address: at(0, 0), derivationPath: 'm/0/0', change: false, received: '0', sent: '0.1' },
        { address: at(1, 0), derivationPath: 'm/1/0', change: true, received: '0.0499', sent: '0' },
      ],
    });
    await f.mineAndProcess();

    // A BIP125-replaceable payment to index 41: flagged rbf; its replacement (a lower change) sends DROPPED, replaced.
    const wallet = await f.node.newAddress();
    const funding = await f.node.send(wallet, 50_000_000n);
    await f.mineAndProcess();
    const funded = await f.node.node.rpc<{ vout: { n: number; scriptPubKey: { address?: string; addresses?: string[] } }[] }>(
      'getrawtransaction',
      funding,
      true,
    );
    const fundedVout = funded.vout.find((o) => (o.scriptPubKey.address ?? o.scriptPubKey.addresses?.[0]) === wallet)?.n as number;
    const change = await f.node.newAddress();
    const pay = async (changeAmount: number) => {
      const unsigned = await f.node.node.rpc<string>(
        'createrawtransaction',
        [{ txid: funding, vout: fundedVout, sequence: REPLACEABLE }],
        [{ [at(0, 41)]: 0.2 }, { [change]: changeAmount }],
      );
      const done = await f.node.node.rpc<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', unsigned);
      expect(done.complete).toBe(true);
      return await f.node.node.rpc<string>('sendrawtransaction', done.hex);
    };
    const original = await pay(0.2999);
    await until('the replaceable payment', async () => items(id).some((i) => i.transactionId === original));
    expect(items(id).find((i) => i.transactionId === original)?.safety).toEqual({ verdict: 'review', flags: ['rbf'] });
    const replacement = await pay(0.299);
    await until('the DROPPED callback', async () => events(id).includes('XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED'));
    const dropped = callbacksOf(id).find((cb) => (cb.json.data as { event?: string }).event === 'XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED');
    expectSigned(dropped);
    const announced = items(id).find((i) => i.transactionId === original) as Record<string, unknown>;
    const { safety: _safety, ...withoutSafety } = announced;
    expect(dropped?.json.data.item).toEqual({ ...withoutSafety, reason: 'replaced', replacedByTransactionId: replacement });
    // The replacement fires nothing (the replaced one was reported); mined, nothing more.
    await f.mineAndProcess();
    await settle();
    expect(items(id).filter((i) => i.transactionId === replacement)).toEqual([]);
    expect(events(id).filter((e) => e === 'XPUB_COINS_TRANSACTION_UNCONFIRMED')).toHaveLength(5);
  }, 90_000);
});

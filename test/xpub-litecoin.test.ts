/**
 * Wallet-key subscriptions on a REAL litecoind 0.21 (regtest; docs/concepts/wallet-keys.md): a tpub of the BIP84
 * test seed (segwit, regtest's rltc1 addresses) subscribed with gapLimit 20, paid from litecoind's own
 * wallet. Payments to receive indexes 0, 19 and 38 in successive blocks each give one callback with the
 * right path (the window is extended in the block that first sees an address used); one transaction paying
 * two derived addresses gives one callback listing both; a spend from index 0 (its key imported into
 * litecoind) with change to the change chain's index 0 is `outgoing` with the fee; addresses/next moves as
 * the payments land; a reorganisation re-fires a callback with a new idempotencyKey, and one that drops a
 * payment clears the used flag it set (the window stays). A window jump within one block: payments to 19 and 38
 * in the same block both fire (the block is matched again while its window grows), and so does one transaction
 * paying 58 and 77.
 */
import { expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { litecoinTestAccount, wifOf } from './support/hd-keys.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-xpub-litecoin';
const ACCOUNT = "m/84'/1'/0'";
const { tpub, at } = litecoinTestAccount(ACCOUNT);

const ltc = (units: bigint) => formatUnits(units, 8);

describeWithRealNode('wallet-key subscriptions on a real litecoind (regtest)', litecoind, () => {
  const f = useFollowedApp(() => startLitecoinDriver({ addressType: 'bech32', fundingCoins: 20 }), { secret: SECRET });
  const { subscribe, callbacksOf, expectSigned, indexed } = f;

  const items = (id: string) => callbacksOf(id).map((cb) => cb.json.data.item as Record<string, unknown>);
  const next = async (id: string) => (await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses/next`, { key: f.c.key })).body.data.item;

  it('indexes 0, 19, 38 in successive blocks, two addresses in one transaction, a spend with change, next, a reorganisation', async () => {
    const { referenceId: id } = await subscribe('xpub-coins-transactions-confirmed', { extendedPublicKey: tpub, derivation: 'segwit', receiveCallbackOn: 1 });
    await indexed();
    expect((await next(id)).address).toBe(at(0, 0));
    expect(at(0, 0)).toMatch(/^rltc1/);

    // 0, then 19 (the last of the first window), then 38 (watched only since 19 was used).
    const paid: Record<number, string> = {};
    for (const [n, index] of [0, 19, 38].entries()) {
      paid[index] = await f.node.send(at(0, index), 10_000_000n + BigInt(index));
      const height = await f.mineAndProcess();
      const got = await until(`the callback of index ${index}`, async () => items(id).length === n + 1 && items(id));
      const item = got[n] as Record<string, unknown>;
      expect(item).toMatchObject({
        blockchain: 'litecoin',
        network: 'testnet',
        extendedPublicKey: tpub,
        transactionId: paid[index],
        minedInBlock: { height, hash: await f.node.blockHash(height) },
        direction: 'incoming',
        amount: ltc(10_000_000n + BigInt(index)),
        unit: 'LTC',
        addresses: [{ address: at(0, index), derivationPath: `m/0/${index}`, change: false, received: ltc(10_000_000n + BigInt(index)), sent: '0' }],
        safety: { verdict: 'ok', flags: [] },
      });
      expect(item.fee).toBeUndefined();
      expect((await next(id)).index).toBe(index + 1);
    }
    expectSigned(callbacksOf(id)[0]);
    const used = await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?used=true&change=false`, { key: f.c.key });
    expect(used.body.data.items.map((a: { index: number; firstSeenHeight: number }) => a.index)).toEqual([0, 19, 38]);
    const receive = await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?change=false&limit=1`, { key: f.c.key });
    expect(receive.body.data.total).toBe(38 + 20 + 1);
    const change = await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?change=true&limit=1`, { key: f.c.key });
    expect(change.body.data.total).toBe(20);

    // One transaction paying two derived addresses: one callback listing both.
    const both = await f.node.node.rpc<string>('sendmany', '', { [at(0, 40)]: '0.03', [at(0, 39)]: '0.02' });
    await f.mineAndProcess();
    const [pair] = await until('the callback of the two-address payment', async () => {
      const found = items(id).filter((i) => i.transactionId === both);
      return found.length === 1 && found;
    });
    expect(pair).toMatchObject({
      direction: 'incoming',
      amount: '0.05',
      addresses: [
        { address: at(0, 39), derivationPath: 'm/0/39', change: false, received: '0.02', sent: '0' },
        { address: at(0, 40), derivationPath: 'm/0/40', change: false, received: '0.03', sent: '0' },
      ],
    });
    expect((await next(id)).index).toBe(41);

    // A spend from index 0 (its key given to litecoind): 0.05 out, change to the change chain's index 0.
    await f.node.node.rpc('importprivkey', wifOf(`${ACCOUNT}/0/0`), 'xpub-0', false);
    const decoded = await f.node.node.rpc<{ vout: { n: number; value: number; scriptPubKey: { address?: string; addresses?: string[] } }[] }>(
      'getrawtransaction',
      paid[0],
      true,
    );
    const vout = decoded.vout.find((o) => (o.scriptPubKey.address ?? o.scriptPubKey.addresses?.[0]) === at(0, 0))?.n;
    const external = await f.node.newAddress();
    const raw = await f.node.node.rpc<string>('createrawtransaction', [{ txid: paid[0], vout }], [{ [external]: '0.05' }, { [at(1, 0)]: '0.0499' }]);
    const signed = await f.node.node.rpc<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', raw);
    expect(signed.complete).toBe(true);
    const spend = await f.node.node.rpc<string>('sendrawtransaction', signed.hex);
    await f.mineAndProcess();
    const [out] = await until('the outgoing callback', async () => {
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
    const usedChange = await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?used=true&change=true`, { key: f.c.key });
    expect(usedChange.body.data.items.map((a: { index: number }) => a.index)).toEqual([0]);

    // A reorganisation of the last block: the spend is mined again in the new block, and called back again with a new key.
    const before = callbacksOf(id).find((cb) => cb.json.data.item.transactionId === spend)?.json.idempotencyKey;
    const height = await f.node.reorg(1);
    await f.t.app.ingest?.settled();
    await f.mineAndProcess(0);
    const again = await until('the spend called back from its new block', async () => {
      const found = callbacksOf(id).filter((cb) => cb.json.data.item.transactionId === spend);
      return found.length === 2 && found;
    });
    expect(again[1]?.json.idempotencyKey).not.toBe(before);
    expect((again[1]?.json.data.item.minedInBlock as { height: number } | undefined)?.height).toBeLessThanOrEqual(height);

    // A payment whose block is dropped and not mined again: the used flag it set is cleared, the window stays.
    const lost = await f.node.send(at(0, 41), 1_000_000n);
    await f.mineAndProcess();
    await until('index 41 used', async () => (await next(id)).index === 42);
    await f.node.reorg(1, { drop: [lost] });
    await f.mineAndProcess(0);
    await until('index 41 unused again', async () => (await next(id)).index === 41);
    const window = await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?change=false&limit=1`, { key: f.c.key });
    expect(window.body.data.total).toBe(41 + 20 + 1);
  }, 60_000);

  it('a window jump within one block: payments to index 19 and 38 in the same block both fire (the block is matched again as the window grows), and one transaction paying 58 and 77 lists both', async () => {
    // Another account of the test seed: a wallet of its own, none of its addresses used yet.
    const { tpub: other, at: otherAt } = litecoinTestAccount("m/84'/1'/1'");
    const addr = (index: number) => otherAt(0, index);
    const { referenceId: id } = await subscribe(
      'xpub-coins-transactions-confirmed',
      { extendedPublicKey: other, derivation: 'segwit', receiveCallbackOn: 1 },
      'jump',
    );
    await indexed();
    // 38 is beyond the first window (0..19): watched only once the block's payment to 19 is seen.
    const nineteen = await f.node.send(addr(19), 1_900_000n);
    const thirtyEight = await f.node.send(addr(38), 3_800_000n);
    const height = await f.mineAndProcess();
    expect(await f.node.node.rpc<string[]>('getrawmempool')).not.toEqual(expect.arrayContaining([nineteen]));
    expect(await f.node.node.rpc<string[]>('getrawmempool')).not.toEqual(expect.arrayContaining([thirtyEight]));
    const got = await until('both callbacks of the block', async () => items(id).length === 2 && items(id));
    expect(new Set(got.map((i) => i.transactionId))).toEqual(new Set([nineteen, thirtyEight]));
    for (const item of got) expect((item.minedInBlock as { height: number }).height).toBe(height);
    expect(got.find((i) => i.transactionId === thirtyEight)?.addresses).toEqual([
      { address: addr(38), derivationPath: 'm/0/38', change: false, received: '0.038', sent: '0' },
    ]);
    expect((await next(id)).index).toBe(39);
    const receive = await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?change=false&limit=1`, { key: f.c.key });
    expect(receive.body.data.total).toBe(38 + 20 + 1);

    // One transaction paying 58 (the window's last) and 77 (beyond it until 58 is seen): one callback listing both.
    const both = await f.node.node.rpc<string>('sendmany', '', { [addr(58)]: '0.058', [addr(77)]: '0.077' });
    await f.mineAndProcess();
    const [pair] = await until('the callback of the two-address payment', async () => {
      const found = items(id).filter((i) => i.transactionId === both);
      return found.length === 1 && found;
    });
    expect(pair).toMatchObject({
      direction: 'incoming',
      amount: '0.135',
      addresses: [
        { address: addr(58), derivationPath: 'm/0/58', change: false, received: '0.058', sent: '0' },
        { address: addr(77), derivationPath: 'm/0/77', change: false, received: '0.077', sent: '0' },
      ],
    });
    expect((await next(id)).index).toBe(78);
  }, 60_000);

  it('past use at subscribe: the used flags and addresses/next are right from the first answer (scantxoutset, the window grown past them), with no callback for the past', async () => {
    const { tpub: account, at: addr } = litecoinTestAccount("m/84'/1'/2'");
    // Before the subscription: receive 3, then 22 (beyond the first window, within 3 + 20), change 5, and 45
    // (beyond 22 + 20: a wallet keeping the gap never hands it out, and herald does not look that far).
    await f.node.send(addr(0, 3), 300_000n);
    const early = await f.mineAndProcess();
    await f.node.send(addr(0, 22), 2_200_000n);
    await f.node.send(addr(1, 5), 500_000n);
    await f.node.send(addr(0, 45), 4_500_000n);
    const later = await f.mineAndProcess();
    const { referenceId: id } = await subscribe(
      'xpub-coins-transactions-confirmed',
      { extendedPublicKey: account, derivation: 'segwit', receiveCallbackOn: 1 },
      'past',
    );
    const used = async (change: boolean) =>
      (await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?used=true&change=${change}`, { key: f.c.key })).body.data.items.map(
        (a: { index: number; firstSeenHeight: number }) => [a.index, a.firstSeenHeight],
      );
    expect(await used(false)).toEqual([
      [3, early],
      [22, later],
    ]);
    expect(await used(true)).toEqual([[5, later]]);
    expect((await next(id)).index).toBe(23);
    const receive = await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?change=false&limit=1`, { key: f.c.key });
    expect(receive.body.data.total).toBe(22 + 20 + 1);
    const change = await f.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?change=true&limit=1`, { key: f.c.key });
    expect(change.body.data.total).toBe(5 + 20 + 1);
    // Nothing is called back for the past; the next payment is.
    await indexed();
    const paid = await f.node.send(addr(0, 23), 2_300_000n);
    await f.mineAndProcess();
    const got = await until('the callback of the payment after the subscription', async () => items(id).length >= 1 && items(id));
    expect(got.map((i) => i.transactionId)).toEqual([paid]);
    expect((await next(id)).index).toBe(24);
  }, 60_000);
});

/**
 * An extended key held by a wallet on a REAL litecoind 0.21 (regtest; docs/concepts/wallets.md#extended-keys-in-a-wallet):
 * a tpub of the BIP84 test seed (segwit, rltc1 addresses) added with gapLimit 20, paid from litecoind's own wallet.
 * The wallet's coin balance is the sum over the derived addresses it watches: payments to receive indexes 0, 19
 * and 38 in successive blocks all count (the window is extended in the block that first sees an address used),
 * so do 58 and 77 paid in ONE block (the block's entries are computed again while the window grows); a spend
 * from index 0 with change to the change chain counts its net; a reorganisation that drops a payment takes it
 * back and clears its used flag (the window stays). A second wallet adding the same key afterwards finds the
 * past use (scantxoutset), grows its window past it and reaches the same balance from the opening balances.
 * Deleting the key takes its addresses out of the wallet.
 */
import { expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { litecoinTestAccount, wifOf } from './support/hd-keys.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const ACCOUNT = "m/84'/1'/0'";
const { tpub, at } = litecoinTestAccount(ACCOUNT);

const ltc = (units: bigint) => formatUnits(units, 8);

describeWithRealNode('extended keys in wallets on a real litecoind (regtest)', litecoind, () => {
  // One confirmation: a block's ledger entries count as soon as it is applied.
  const f = useFollowedApp(() => startLitecoinDriver({ addressType: 'bech32', fundingCoins: 20 }), { chain: { confirmations: 1 } });

  async function newWallet(name: string): Promise<string> {
    const res = await f.t.request('POST', '/wallet-as-a-service/wallets', { key: f.c.key, body: { data: { item: { walletName: name } } } });
    expect(res.status, res.text).toBe(201);
    return res.body.data.item.walletId;
  }
  async function walletOf(id: string) {
    const res = await f.t.request('GET', `/wallet-as-a-service/wallets/${id}`, { key: f.c.key });
    expect(res.status, res.text).toBe(200);
    return res.body.data.item as {
      coins: { blockchain: string; confirmedBalance: string; totalReceived: string; totalSpent: string; openingBalance: string }[];
      xpubs: { xpubId: string; watchedAddresses: number; usedAddresses: number }[];
    };
  }
  /** Waits until the wallet's litecoin balance (all openings read) and its key's window are as expected. */
  async function settledAt(id: string, balance: bigint, watchedAddresses: number, usedAddresses: number) {
    let last: unknown;
    const what = `wallet ${id}: balance ${ltc(balance)}, ${watchedAddresses} watched, ${usedAddresses} used`;
    const settled = until(
      what,
      async () => {
        const w = await walletOf(id);
        last = w;
        const coin = w.coins.find((x) => x.blockchain === 'litecoin');
        const x = w.xpubs[0];
        return coin?.openingBalance === 'read' &&
          coin.confirmedBalance === ltc(balance) &&
          x?.watchedAddresses === watchedAddresses &&
          x.usedAddresses === usedAddresses
          ? { coin, xpub: x }
          : undefined;
      },
      30_000,
    );
    return await settled.catch((error: Error) => {
      throw new Error(`${error.message}; last seen ${JSON.stringify(last)}`);
    });
  }

  it('sums every derived address watched: 0, 19, 38 in successive blocks, 58 and 77 in one block, a spend with change, a reorganisation; past use at add; delete', async () => {
    const wallet = await newWallet('deposits');
    const added = await f.t.request('POST', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs`, {
      key: f.c.key,
      body: { data: { item: { extendedPublicKey: tpub, derivation: 'segwit' } } },
    });
    expect(added.status, added.text).toBe(201);
    expect(added.body.data.item).toMatchObject({ gapLimit: 20, watchedAddresses: 40, usedAddresses: 0, watchedFromBlock: await f.node.height() });
    const xpubId = added.body.data.item.xpubId;
    await settledAt(wallet, 0n, 40, 0);

    // 0, then 19 (the last of the first window), then 38 (watched only since 19 was used): receive window 0..58.
    let total = 0n;
    for (const index of [0, 19, 38]) {
      const amount = 10_000_000n + BigInt(index);
      await f.node.send(at(0, index), amount);
      total += amount;
      await f.mineAndProcess();
    }
    await settledAt(wallet, total, 59 + 20, 3);

    // One block paying 58 (the window's last) and 77 (watched only once the block's payment to 58 is seen).
    await f.node.send(at(0, 58), 5_800_000n);
    await f.node.send(at(0, 77), 7_700_000n);
    total += 5_800_000n + 7_700_000n;
    await f.mineAndProcess();
    const { coin } = await settledAt(wallet, total, 98 + 20, 5);
    expect(coin).toMatchObject({ totalReceived: ltc(total), totalSpent: '0' });
    // The addresses that count, with their part of the balance.
    const used = await f.t.request('GET', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs/${xpubId}/addresses?used=true`, { key: f.c.key });
    expect(used.status, used.text).toBe(200);
    expect(used.body.data.total).toBe(5);
    expect(used.body.data.items.map((a: { derivationPath: string; confirmedBalance: string }) => [a.derivationPath, a.confirmedBalance])).toEqual([
      ['m/0/0', '0.1'],
      ['m/0/19', '0.10000019'],
      ['m/0/38', '0.10000038'],
      ['m/0/58', '0.058'],
      ['m/0/77', '0.077'],
    ]);
    expect(used.body.data.items[4]).toMatchObject({ address: at(0, 77), index: 77, change: false, used: true, openingBalance: 'read' });
    const receive = await f.t.request('GET', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs/${xpubId}/addresses?change=false&limit=1`, {
      key: f.c.key,
    });
    expect(receive.body.data.total).toBe(98);

    // A spend from index 0 (its key given to litecoind): 0.05 out, 0.0499 back to the change chain's index 0.
    await f.node.node.rpc('importprivkey', wifOf(`${ACCOUNT}/0/0`), 'wallet-xpub-0', false);
    const utxos = await f.node.node.rpc<{ txid: string; vout: number }[]>('listunspent', 0, 9_999_999, [at(0, 0)]);
    const raw = await f.node.node.rpc<string>('createrawtransaction', utxos, [{ [await f.node.newAddress()]: '0.05' }, { [at(1, 0)]: '0.0499' }]);
    const signed = await f.node.node.rpc<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', raw);
    expect(signed.complete).toBe(true);
    await f.node.node.rpc<string>('sendrawtransaction', signed.hex);
    await f.mineAndProcess();
    total -= 5_010_000n;
    const spent = await settledAt(wallet, total, 98 + 21, 6);
    expect(spent.coin).toMatchObject({ totalSpent: ltc(10_000_000n) });

    // A payment whose block is dropped and not mined again: taken back, its used flag cleared, the window stays.
    const lost = await f.node.send(at(0, 78), 1_000_000n);
    await f.mineAndProcess();
    await settledAt(wallet, total + 1_000_000n, 99 + 21, 7);
    await f.node.reorg(1, { drop: [lost] });
    await f.mineAndProcess(0);
    await settledAt(wallet, total, 99 + 21, 6);

    // The same key added to another wallet now: past use (the unspent outputs at 19, 38, 58, 77 and change 0)
    // grows its window at once, and the opening balances give the same total.
    const later = await newWallet('later');
    const again = await f.t.request('POST', `/wallet-as-a-service/wallets/${later}/litecoin/testnet/xpubs`, {
      key: f.c.key,
      body: { data: { item: { extendedPublicKey: tpub, derivation: 'segwit' } } },
    });
    expect(again.status, again.text).toBe(201);
    expect(again.body.data.item).toMatchObject({ watchedAddresses: 98 + 21, usedAddresses: 5 });
    await f.mineAndProcess(); // the opening balances are read once the block they are anchored on is confirmed
    await settledAt(later, total, 98 + 21, 5);

    // Deleted: its addresses leave the wallet, and so does their balance.
    const deleted = await f.t.request('DELETE', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs/${xpubId}`, { key: f.c.key });
    expect(deleted.status, deleted.text).toBe(200);
    expect(await walletOf(wallet)).toMatchObject({ coins: [], xpubs: [] });
    await settledAt(later, total, 98 + 21, 5);
  }, 120_000);

  it('out-of-order deposits: coins paid beyond the window before it reached them are found by the opening balances, which grow the window in turn', async () => {
    // Another account of the seed, nothing paid yet: the window is 0..19 on each chain.
    const { tpub: other, at: otherAt } = litecoinTestAccount("m/84'/1'/1'");
    const addr = (index: number) => otherAt(0, index);
    const wallet = await newWallet('out of order');
    const added = await f.t.request('POST', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs`, {
      key: f.c.key,
      body: { data: { item: { extendedPublicKey: other, derivation: 'segwit' } } },
    });
    expect(added.status, added.text).toBe(201);
    await settledAt(wallet, 0n, 40, 0);
    // 25 and 44 are beyond the window when paid: not watched, nothing counted.
    await f.node.send(addr(25), 2_500_000n);
    await f.node.send(addr(44), 4_400_000n);
    await f.mineAndProcess();
    await settledAt(wallet, 0n, 40, 0);
    // 5 is paid: the window reaches 25 (watched from the block before), whose opening holds 0.025, so 25 is used and
    // the window reaches 45, whose 44 holds 0.044 in turn: the window ends at 64.
    await f.node.send(addr(5), 500_000n);
    await f.mineAndProcess();
    await settledAt(wallet, 7_400_000n, 65 + 20, 3);
    const used = await f.t.request('GET', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs/${added.body.data.item.xpubId}/addresses?used=true`, {
      key: f.c.key,
    });
    expect(used.body.data.items.map((a: { index: number; confirmedBalance: string }) => [a.index, a.confirmedBalance])).toEqual([
      [5, '0.005'],
      [25, '0.025'],
      [44, '0.044'],
    ]);
  }, 120_000);
});

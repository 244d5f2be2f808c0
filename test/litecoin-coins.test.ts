/**
 * Coin events on a REAL litecoind 0.21 (regtest): deposits to a legacy and a bech32 address, and the
 * spending of the bech32 one. litecoind answers getblock at verbosity 2, whose inputs name only the output
 * they spend: the outgoing callback exists only because herald recorded the output paid to the subscribed
 * address (ledger_outputs) and resolved the spend once for the ledger and the coin events alike. The
 * legacy address is also in a wallet: the signed sum of its coin callbacks equals its balance change in
 * all-assets over the same blocks (a payment without change back to the payer).
 */
import { expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-litecoin-coins';
const CONFIRMATIONS = 2;
const AMOUNT = 20_000_000n; // 0.2 LTC

describeWithRealNode('coin events on a real litecoind (regtest, getblock verbosity 2)', litecoind, () => {
  const f = useFollowedApp(() => startLitecoinDriver({ addressType: 'bech32' }), { chain: { confirmations: CONFIRMATIONS }, secret: SECRET });
  const { processed, subscribe, callbacksOf, expectSigned } = f;

  const coinsOf = (id: string) => callbacksOf(id).map((cb) => cb.json.data.item);

  it('a legacy and a bech32 deposit are incoming; the bech32 address spending its output (no input address from the node) is outgoing by that input; the signed sum is the all-assets balance change', async () => {
    const bech32 = await f.node.newAddress();
    const legacy = await f.node.node.rpc<string>('getnewaddress', '', 'legacy');
    expect(bech32).toMatch(/^rltc1/);
    expect(legacy).toMatch(/^[mn]/);
    const wallet = (await f.t.request('POST', '/wallet-as-a-service/wallets', { key: f.c.key, body: { data: { item: { walletName: 'ltc' } } } })).body.data.item
      .walletId as string;
    const added = await f.t.request('POST', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/addresses`, {
      key: f.c.key,
      body: { data: { item: { address: legacy } } },
    });
    expect(added.status, added.text).toBe(201);
    const balance = async () => {
      const r = await f.t.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: f.c.key });
      return r.body.data.items.find((w: { walletId: string }) => w.walletId === wallet).coins[0];
    };
    await f.mineAndProcess(CONFIRMATIONS);
    const before = await until('the opening balance', async () => {
      const coin = await balance();
      return coin?.openingBalance === 'read' && coin;
    });
    expect(before.confirmedBalance).toBe('0');

    const onBech32 = (await subscribe('address-coins-transactions-confirmed', { address: bech32.toUpperCase() }, 'bech32')).referenceId;
    const onLegacy = (await subscribe('address-coins-transactions-confirmed', { address: legacy, receiveCallbackOn: 1 }, 'legacy')).referenceId;
    await f.t.app.ingest?.settled();

    const toBech32 = await f.node.send(bech32, AMOUNT);
    const toLegacy = await f.node.send(legacy, 2n * AMOUNT);
    const depositedAt = await f.mineAndProcess();
    const hash = await f.node.blockHash(depositedAt);
    const [legacyIn] = await until('the legacy deposit (receiveCallbackOn 1)', async () => callbacksOf(onLegacy).length === 1 && callbacksOf(onLegacy));
    expectSigned(legacyIn);
    expect(legacyIn?.json.data.item).toEqual({
      blockchain: 'litecoin',
      network: 'testnet',
      address: legacy,
      minedInBlock: { height: depositedAt, hash, timestamp: expect.any(Number) },
      transactionId: toLegacy,
      amount: '0.4',
      unit: 'LTC',
      direction: 'incoming',
      safety: { verdict: 'ok', flags: [] },
    });
    expect(callbacksOf(onBech32)).toHaveLength(0); // receiveCallbackOn defaults to 3
    await f.mineAndProcess(2);
    await until('the bech32 deposit', async () => callbacksOf(onBech32).length === 1);
    // Subscribed in upper case (bech32 is case-insensitive): the callback echoes that spelling.
    expect(coinsOf(onBech32)).toEqual([
      expect.objectContaining({ address: bech32.toUpperCase(), transactionId: toBech32, amount: '0.2', direction: 'incoming' }),
    ]);

    // Spends: the node's getblock (verbosity 2) says only which outputs are spent, not by whom.
    const other = await f.node.newAddress();
    const fromBech32 = await f.node.spend(bech32, other, AMOUNT / 4n);
    const fromLegacy = await f.node.spend(legacy, other, AMOUNT);
    const spentAt = await f.mineAndProcess();
    await f.mineAndProcess(2);
    await until('both outgoing callbacks', async () => callbacksOf(onBech32).length === 2 && callbacksOf(onLegacy).length === 2);
    expect(coinsOf(onBech32)[1]).toEqual({
      blockchain: 'litecoin',
      network: 'testnet',
      address: bech32.toUpperCase(),
      minedInBlock: { height: spentAt, hash: await f.node.blockHash(spentAt), timestamp: expect.any(Number) },
      transactionId: fromBech32.transactionId,
      amount: '0.2', // the sum of the address's inputs (docs/reference/events/README.md#amount-and-direction), not what it paid
      unit: 'LTC',
      direction: 'outgoing',
      safety: { verdict: 'ok', flags: [] },
    });
    expect(coinsOf(onLegacy)[1]).toMatchObject({ transactionId: fromLegacy.transactionId, amount: '0.4', direction: 'outgoing' });

    // The legacy address's callbacks against its wallet balance over the same (now confirmed) blocks.
    const after = await balance();
    const sats = (text: string) => {
      const [whole = '0', fraction = ''] = text.split('.');
      return BigInt(whole + fraction.padEnd(8, '0'));
    };
    const signed = coinsOf(onLegacy).reduce(
      (sum, item) => (item.direction === 'incoming' ? sum + sats(String(item.amount)) : sum - sats(String(item.amount))),
      0n,
    );
    expect(sats(after.confirmedBalance) - sats(before.confirmedBalance)).toBe(signed);
    expect(after).toMatchObject({ totalReceived: '0.4', totalSpent: '0.4' });
    // The Callback Data address read counts the same confirmed transactions: one in, one out.
    const read = await f.t.request('GET', `/blockchain-events/litecoin/testnet/addresses/${legacy}`, { key: f.c.key });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data.item).toMatchObject({
      incomingTransactionsCount: 1,
      outgoingTransactionsCount: 1,
      transactionsCount: 2,
      totalReceived: { amount: '0.4', unit: 'LTC' },
      totalSpent: { amount: '0.4', unit: 'LTC' },
    });
  });

  it("dust: a deposit below litecoind's own dust threshold of its output type is flagged (legacy 5460, bech32 key hash 2940: ten times Bitcoin Core's), one at the threshold is ok; litecoind refuses to relay exactly the flagged ones", async () => {
    const rpc = f.node.node.rpc.bind(f.node.node);
    const legacy = () => rpc<string>('getnewaddress', '', 'legacy');
    const cases = [
      { address: await legacy(), amount: 5459n, dust: true },
      { address: await legacy(), amount: 5460n, dust: false },
      { address: await f.node.newAddress(), amount: 2939n, dust: true },
      { address: await f.node.newAddress(), amount: 2940n, dust: false },
    ];
    const ids: string[] = [];
    for (const [i, c] of cases.entries())
      ids.push((await subscribe('address-coins-transactions-confirmed', { address: c.address, receiveCallbackOn: 1 }, `dust-${i}`)).referenceId);
    await f.t.app.ingest?.settled();
    // One coin of 0.01 LTC to split; the wallet's coinbases and the driver's funding coins stay untouched.
    const source = await f.node.newAddress();
    await f.node.send(source, 1_000_000n);
    await f.mineAndProcess();
    const [coin] = await rpc<{ txid: string; vout: number }[]>('listunspent', 1, 9_999_999, [source]);
    const change = await f.node.newAddress();
    const ltc = (amount: bigint) => formatUnits(amount, 8);
    const signedPaying = async (outputs: { address: string; amount: bigint }[]) => {
      const paid = outputs.reduce((sum, o) => sum + o.amount, 0n);
      const raw = await rpc<string>(
        'createrawtransaction',
        [{ txid: coin?.txid, vout: coin?.vout }],
        [...outputs.map((o) => ({ [o.address]: ltc(o.amount) })), { [change]: ltc(1_000_000n - paid - 100_000n) }],
      );
      const signed = await rpc<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', raw);
      expect(signed.complete).toBe(true);
      return signed.hex;
    };
    // The node's own verdict on each output alone: herald's thresholds are litecoind's.
    for (const c of cases) {
      const [accepted] = await rpc<{ allowed: boolean; 'reject-reason'?: string }[]>('testmempoolaccept', [await signedPaying([c])]);
      expect(accepted?.allowed ? 'relayed' : accepted?.['reject-reason'], `${c.amount} to ${c.address}`).toBe(c.dust ? 'dust' : 'relayed');
    }
    // Dust is valid in a block: one transaction paying all four, mined directly.
    await rpc('generateblock', f.node.node.miningAddress, [await signedPaying(cases)]);
    await processed(await f.node.height());
    for (const [i, c] of cases.entries()) {
      const [cb] = await until(`the deposit of ${c.amount}`, async () => callbacksOf(ids[i] as string).length === 1 && callbacksOf(ids[i] as string));
      expectSigned(cb);
      expect(cb?.json.data.item).toMatchObject({ address: c.address, amount: ltc(c.amount), direction: 'incoming' });
      expect(cb?.json.data.item.safety, `${c.amount} to ${c.address}`).toEqual(c.dust ? { verdict: 'review', flags: ['dust'] } : { verdict: 'ok', flags: [] });
    }
  });

  it('each confirmation: a deposit to a bech32 address gives one callback at each confirmation 1..3 with its counts; after invalidateblock the count starts again at 1 in the new block', async () => {
    const address = await f.node.newAddress();
    const id = (await subscribe('address-coins-transactions-confirmed-each-confirmation', { address, confirmationsCount: 3 }, 'each')).referenceId;
    await f.t.app.ingest?.settled();
    const deposit = await f.node.send(address, AMOUNT);
    const firstAt = await f.mineAndProcess(); // confirmation 1
    await f.mineAndProcess(); // confirmation 2
    await until('confirmations 1 and 2', async () => callbacksOf(id).length === 2);
    const firstHash = await f.node.blockHash(firstAt);

    // A reorganisation drops both blocks: the deposit goes back to the mempool and is mined again.
    await f.node.reorg(2);
    const tip = await f.node.height();
    await processed(tip);
    await f.mineAndProcess(3);
    const all = await until('confirmations 1 to 3 in the new block', async () => callbacksOf(id).length === 5 && callbacksOf(id));
    for (const cb of all) expectSigned(cb);
    const items = all.map((cb) => cb.json.data.item);
    const byBlock = (hash: string) =>
      items
        .filter((i) => (i.minedInBlock as { hash: string }).hash === hash)
        .map((i) => i.currentConfirmations)
        .sort();
    expect(byBlock(firstHash)).toEqual([1, 2]); // never 3 for the dropped block
    const hashes = new Set(items.map((i) => (i.minedInBlock as { hash: string }).hash));
    hashes.delete(firstHash);
    expect(hashes.size).toBe(1); // the block that holds the deposit now
    const [newHash] = [...hashes] as [string];
    expect(byBlock(newHash)).toEqual([1, 2, 3]);
    for (const item of items) {
      expect(item).toMatchObject({ address, transactionId: deposit, amount: '0.2', unit: 'LTC', direction: 'incoming', targetConfirmations: 3 });
    }
    expect(new Set(all.map((cb) => cb.json.idempotencyKey)).size).toBe(5);
  });
});

/**
 * Wallet-key subscriptions on the account chains (docs/concepts/wallet-keys.md): a BIP44 account key of Hardhat's
 * test mnemonic ("test" x11 "junk"), subscribed with gapLimit 20, its receive chain only.
 *
 * - ethereum/goerli on the real EVM test nodes (EDR and Anvil, test/support/evm-driver.ts): payments to receive
 *   indexes 0, 19 and 38 in successive blocks each give one callback with the right path (the window is extended
 *   in the block that first sees an address used); coins through a contract (an internal transfer) fire, a
 *   token transfer does not (the event is about coins); a payment out of index 0 (signed with its derived key) is
 *   `outgoing` with the fee, one to index 1 of the wallet `self`; a reorganisation re-fires a callback with a
 *   new idempotencyKey, and one that drops a payment clears the used flag it set (the window stays).
 * - tron/nile on the fake java-tron node (test/support/fake-tron-node.ts): a payment to index 19 then 38,
 *   and a payment out of index 19 with its fee.
 */
import { type Hex, keccak256, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { deriveAddress, parseExtendedKey, type WalletKey } from '../src/domain/wallet-keys.ts';
import type { TestApp, TestCustomer } from './harness.ts';
import { anvil } from './support/anvil-node.ts';
import { type EvmDriver, GAS_PRICE, GOERLI_TEST_CHAIN, startEvmDriver } from './support/evm-driver.ts';
import { FEES, startFakeTronDriver, type TronAccount, type TronDriver } from './support/fake-tron-node.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { type FollowedApp, startFollowedApp } from './support/followed-app.ts';
import { HARDHAT_MASTER, testPublicKey } from './support/hd-keys.ts';
import { describeWithRealNode } from './support/real-node.ts';
import type { Receiver } from './support/receiver.ts';
import { until } from './support/wait.ts';

const XPUB = 0x0488b21e;
const OK = { verdict: 'ok', flags: [] };

function keyOf(blockchain: 'ethereum' | 'tron', network: string, xpub: string): WalletKey {
  const parsed = parseExtendedKey(blockchain, network as never, xpub);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.key;
}

/** The private key at `path` of the test mnemonic, 0x hex. */
const privateKeyAt = (path: string): Hex => toHex(HARDHAT_MASTER.derive(path).privateKey as Uint8Array);

type Item = Record<string, unknown>;

function followedChain<D extends EvmDriver | TronDriver>(start: () => Promise<D>, secret: string, blockchain: string, network: string) {
  const s = {} as { node: D; receiver: Receiver; t: TestApp; c: TestCustomer; env: FollowedApp<D> };
  const helpers = followHelpers(() => ({ t: s.t, customer: s.c, receiver: s.receiver, blockchain, network }), secret);
  beforeAll(async () => {
    s.env = await startFollowedApp(start);
    ({ node: s.node, receiver: s.receiver, t: s.t, c: s.c } = s.env);
  }, 60_000);
  afterAll(() => s.env?.close());
  const items = (id: string) => helpers.callbacksOf(id).map((cb) => cb.json.data.item as Item);
  const next = async (id: string) => (await s.t.request('GET', `/blockchain-events/subscriptions/${id}/addresses/next`, { key: s.c.key })).body.data.item;
  /** The one callback of `transactionId` (waited for). */
  const callbackOf = async (id: string, transactionId: string) => {
    const [item] = await until(`the callback of ${transactionId}`, async () => {
      const found = items(id).filter((i) => i.transactionId === transactionId);
      return found.length === 1 && found;
    });
    return item as Item;
  };
  return { s, helpers, items, next, callbackOf };
}

/**
 * The EVM scenario on `node`: EDR (herald's per-transaction path: eth_getTransactionReceipt, debug_traceTransaction)
 * or Anvil (the block-level path of production nodes: eth_getBlockReceipts, debug_traceBlockByNumber).
 */
function evmScenario(nodeName: 'edr' | 'anvil') {
  // Account 1' of the mnemonic: none of its addresses is one of the node's funded accounts (those are account 0').
  const ACCOUNT = "m/44'/60'/1'";
  const xpub = testPublicKey(ACCOUNT, XPUB, HARDHAT_MASTER);
  const key = keyOf('ethereum', 'goerli', xpub);
  const at = (index: number) => deriveAddress(key, key.branches[0] as WalletKey['branches'][number], index).address;
  const eth = (wei: bigint) => formatUnits(wei, 18);
  const { s, helpers, items, next, callbackOf } = followedChain(
    () =>
      startEvmDriver({
        ...GOERLI_TEST_CHAIN,
        node: nodeName,
      }),
    'whsec-xpub-evm',
    'ethereum',
    'goerli',
  );

  it('indexes 0, 19, 38 in successive blocks; an internal transfer, not a token transfer; outgoing with the fee and self; next; a reorganisation re-fires; a dropped payment is unused again', async () => {
    const { node, t, c } = s;
    const { referenceId: id, item: created } = await helpers.subscribe('xpub-coins-transactions-confirmed', { extendedPublicKey: xpub, receiveCallbackOn: 1 });
    expect(created).toMatchObject({ extendedPublicKey: xpub, gapLimit: 20, eventType: 'XPUB_COINS_TRANSACTION_CONFIRMED' });
    await helpers.indexed();
    expect(await next(id)).toMatchObject({ address: at(0), derivationPath: 'm/0/0', index: 0, change: false });
    const all = await t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?limit=1`, { key: c.key });
    expect(all.body.data.total).toBe(20); // the receive chain only

    for (const [n, index] of [0, 19, 38].entries()) {
      const amount = 10n ** 17n + BigInt(index);
      const transactionId = await node.send(at(index), amount);
      const height = await s.env.mineAndProcess();
      const got = await until(`the callback of index ${index}`, async () => items(id).length === n + 1 && items(id));
      const item = got[n] as Item;
      expect(item).toMatchObject({
        blockchain: 'ethereum',
        network: 'goerli',
        extendedPublicKey: xpub,
        transactionId,
        minedInBlock: { height, hash: await node.blockHash(height) },
        direction: 'incoming',
        amount: eth(amount),
        unit: 'ETH',
        addresses: [{ address: at(index), derivationPath: `m/0/${index}`, change: false, received: eth(amount), sent: '0' }],
        safety: OK,
      });
      expect(item.fee).toBeUndefined();
      expect(item.descriptor).toBeUndefined();
      expect((await next(id)).index).toBe(index + 1);
    }
    helpers.expectSigned(helpers.callbacksOf(id)[0] as never);
    const receive = await t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?limit=1`, { key: c.key });
    expect(receive.body.data.total).toBe(38 + 20 + 1);

    // In one block: coins to index 2 through a contract (an internal transfer), tokens to index 3 (no coins: nothing).
    const forwarded = await node.internal.forward(at(2), 5n * 10n ** 15n);
    const tokens = await node.tokens.transferToken(at(3), 1_000n);
    await s.env.mineAndProcess();
    expect(await callbackOf(id, forwarded)).toMatchObject({
      direction: 'incoming',
      amount: eth(5n * 10n ** 15n),
      addresses: [{ address: at(2), derivationPath: 'm/0/2', received: eth(5n * 10n ** 15n), sent: '0' }],
    });
    expect(items(id).filter((i) => i.transactionId === tokens)).toEqual([]);
    expect(items(id)).toHaveLength(4);

    // Out of index 0 (its key derived from the mnemonic): 0.01 ETH to an outside address, then 0.02 ETH to index 1.
    const signer = privateKeyToAccount(privateKeyAt(`${ACCOUNT}/0/0`));
    expect(signer.address.toLowerCase()).toBe(at(0));
    const send = async (nonce: number, to: string, value: bigint) => {
      const raw = await signer.signTransaction({ type: 'legacy', chainId: 5, nonce, to: to as Hex, value, gas: 21_000n, gasPrice: GAS_PRICE });
      await node.node.request('eth_sendRawTransaction', [raw]);
      return keccak256(raw);
    };
    const outside = await node.newAddress();
    const out = await send(0, outside, 10n ** 16n);
    const self = await send(1, at(1), 2n * 10n ** 16n);
    await s.env.mineAndProcess();
    const fee = 21_000n * GAS_PRICE;
    expect(await callbackOf(id, out)).toMatchObject({
      direction: 'outgoing',
      amount: eth(10n ** 16n + fee),
      fee: eth(fee),
      addresses: [{ address: at(0), derivationPath: 'm/0/0', received: '0', sent: eth(10n ** 16n + fee) }],
      safety: OK,
    });
    expect(await callbackOf(id, self)).toMatchObject({
      direction: 'self',
      amount: eth(fee),
      fee: eth(fee),
      addresses: [
        { address: at(0), derivationPath: 'm/0/0', received: '0', sent: eth(2n * 10n ** 16n + fee) },
        { address: at(1), derivationPath: 'm/0/1', received: eth(2n * 10n ** 16n), sent: '0' },
      ],
    });
    expect((await next(id)).index).toBe(39);

    // A reorganisation of the last block: the payment is mined again in the new block and called back again with a new key.
    const again = await node.send(at(39), 10n ** 15n);
    await s.env.mineAndProcess();
    await callbackOf(id, again);
    const before = helpers.callbacksOf(id).find((cb) => cb.json.data.item.transactionId === again)?.json.idempotencyKey;
    const height = await node.reorg(1);
    await t.app.ingest?.settled();
    await s.env.mineAndProcess(0);
    const twice = await until('the payment called back from its new block', async () => {
      const found = helpers.callbacksOf(id).filter((cb) => cb.json.data.item.transactionId === again);
      return found.length === 2 && found;
    });
    expect(twice[1]?.json.idempotencyKey).not.toBe(before);
    expect((twice[1]?.json.data.item.minedInBlock as { height: number } | undefined)?.height).toBeLessThanOrEqual(height);
    expect((await next(id)).index).toBe(40);

    // A payment whose block is dropped and not mined again: the used flag it set is cleared, the window stays.
    const lost = await node.send(at(40), 10n ** 15n);
    await s.env.mineAndProcess();
    await until('index 40 used', async () => (await next(id)).index === 41);
    await node.reorg(1, { drop: [lost] });
    await s.env.mineAndProcess(0);
    await until('index 40 unused again', async () => (await next(id)).index === 40);
    const window = await t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?limit=1`, { key: c.key });
    expect(window.body.data.total).toBe(40 + 20 + 1);
  }, 120_000);
}

describe('ethereum/goerli on the EVM test node (EDR): a BIP44 account key', () => evmScenario('edr'));

describeWithRealNode('ethereum/goerli on Anvil (block-level receipts and traces): a BIP44 account key', anvil, () => evmScenario('anvil'));

describe('tron/nile on the fake java-tron node: a BIP44 account key', () => {
  const ACCOUNT = "m/44'/195'/0'";
  const xpub = testPublicKey(ACCOUNT, XPUB, HARDHAT_MASTER);
  const key = keyOf('tron', 'nile', xpub);
  const at = (index: number) => deriveAddress(key, key.branches[0] as WalletKey['branches'][number], index).address;
  const trx = (sun: bigint) => formatUnits(sun, 6);
  const { s, helpers, items, next, callbackOf } = followedChain(() => startFakeTronDriver(), 'whsec-xpub-tron', 'tron', 'nile');

  it('index 19 then 38 in successive blocks, each one callback with its path; a payment out of 19 with its fee', async () => {
    const { node } = s;
    const { referenceId: id } = await helpers.subscribe('xpub-coins-transactions-confirmed', { extendedPublicKey: xpub, receiveCallbackOn: 1 });
    await helpers.indexed();
    for (const [n, index] of [19, 38].entries()) {
      const amount = 5_000_000n + BigInt(index);
      const transactionId = await node.send(at(index), amount);
      const height = await s.env.mineAndProcess();
      const got = await until(`the callback of index ${index}`, async () => items(id).length === n + 1 && items(id));
      expect(got[n]).toMatchObject({
        blockchain: 'tron',
        network: 'nile',
        extendedPublicKey: xpub,
        transactionId,
        minedInBlock: { height, hash: await node.blockHash(height) },
        direction: 'incoming',
        amount: trx(amount),
        unit: 'TRX',
        addresses: [{ address: at(index), derivationPath: `m/0/${index}`, change: false, received: trx(amount), sent: '0' }],
        safety: OK,
      });
      expect((got[n] as Item).fee).toBeUndefined();
      expect((await next(id)).index).toBe(index + 1);
    }

    // Out of index 19, signed with its derived key: to a new account, so the transfer burns the account-creation fee.
    const privateKey = privateKeyAt(`${ACCOUNT}/0/19`);
    const evm = privateKeyToAccount(privateKey).address.slice(2).toLowerCase();
    const account: TronAccount = { address: at(19), hex: `41${evm}`, privateKey };
    const outside = await node.newAddress();
    const fee = node.node.transferFee(outside);
    expect(fee).toBe(FEES.transferNewAccount);
    const out = await node.node.sendTrx(account, outside, 1_000_000n);
    await s.env.mineAndProcess();
    expect(await callbackOf(id, out)).toMatchObject({
      direction: 'outgoing',
      amount: trx(1_000_000n + fee),
      fee: trx(fee),
      addresses: [{ address: at(19), derivationPath: 'm/0/19', received: '0', sent: trx(1_000_000n + fee) }],
    });
  }, 120_000);
});

/**
 * A BIP44 account key held by a wallet on the EVM test node (EDR; docs/concepts/wallets.md#extended-keys-in-a-wallet):
 * Hardhat's test mnemonic, account 2' (none of the node's funded accounts), gapLimit 20, the receive chain only.
 * The wallet's ETH balance is the sum over the derived addresses it watches: payments to indexes 0, 19 and 38 in
 * successive blocks all count (the window grows in the block that first moves an address); a token transfer to
 * index 39 marks it used too (a wallet counts tokens) and its amount is in the wallet's fungible tokens; a
 * payment out of index 0, signed with its derived key, takes the value and the fee off the balance.
 */
import { type Hex, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { deriveAddress, parseExtendedKey, type WalletKey } from '../src/domain/wallet-keys.ts';
import type { TestApp, TestCustomer } from './harness.ts';
import { type EvmDriver, GAS_PRICE, GOERLI_TEST_CHAIN, startEvmDriver } from './support/evm-driver.ts';
import { type FollowedApp, startFollowedApp } from './support/followed-app.ts';
import { HARDHAT_MASTER, testPublicKey } from './support/hd-keys.ts';
import { until } from './support/wait.ts';

const ACCOUNT = "m/44'/60'/2'";
const xpub = testPublicKey(ACCOUNT, 0x0488b21e, HARDHAT_MASTER);
const parsed = parseExtendedKey('ethereum', 'goerli', xpub);
if (!parsed.ok) throw new Error(parsed.message);
const key = parsed.key;
const at = (index: number) => deriveAddress(key, key.branches[0] as WalletKey['branches'][number], index).address;
const eth = (wei: bigint) => formatUnits(wei, 18);

let node: EvmDriver;
let t: TestApp;
let c: TestCustomer;
let env: FollowedApp<EvmDriver>;

beforeAll(async () => {
  env = await startFollowedApp(
    () =>
      startEvmDriver({
        ...GOERLI_TEST_CHAIN,
        node: 'edr',
      }),
    { chain: { confirmations: 1 } },
  );
  ({ node, t, c } = env);
}, 60_000);

afterAll(() => env?.close());

type WalletItem = {
  coins: { blockchain: string; confirmedBalance: string; openingBalance: string }[];
  fungibleTokens: { amount: string; symbol: string }[];
  xpubs: { watchedAddresses: number; usedAddresses: number }[];
};

async function settledAt(wallet: string, balance: bigint, watchedAddresses: number, usedAddresses: number): Promise<WalletItem> {
  let last: unknown;
  return await until(
    `the wallet at ${eth(balance)} ETH, ${watchedAddresses} watched, ${usedAddresses} used`,
    async () => {
      const res = await t.request('GET', `/wallet-as-a-service/wallets/${wallet}`, { key: c.key });
      const w = res.body.data.item as WalletItem;
      last = w;
      const coin = w.coins.find((x) => x.blockchain === 'ethereum');
      const x = w.xpubs[0];
      return coin?.openingBalance === 'read' &&
        coin.confirmedBalance === eth(balance) &&
        x?.watchedAddresses === watchedAddresses &&
        x.usedAddresses === usedAddresses
        ? w
        : undefined;
    },
    30_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; last seen ${JSON.stringify(last)}`);
  });
}

it('sums the derived addresses watched: 0, 19, 38 in successive blocks; a token transfer marks its address used; a payment out with its fee', async () => {
  const created = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: 'eth deposits' } } } });
  const wallet = created.body.data.item.walletId as string;
  const added = await t.request('POST', `/wallet-as-a-service/wallets/${wallet}/ethereum/goerli/xpubs`, {
    key: c.key,
    body: { data: { item: { extendedPublicKey: xpub } } },
  });
  expect(added.status, added.text).toBe(201);
  expect(added.body.data.item).toMatchObject({ extendedPublicKey: xpub, gapLimit: 20, watchedAddresses: 20, usedAddresses: 0 });
  await settledAt(wallet, 0n, 20, 0);

  let total = 0n;
  for (const index of [0, 19, 38]) {
    const amount = 10n ** 17n + BigInt(index);
    await node.send(at(index), amount);
    total += amount;
    await env.mineAndProcess();
  }
  await settledAt(wallet, total, 59, 3);

  // Tokens to index 39: no coins, but the wallet counts tokens, so the address is used and the window grows.
  await node.tokens.transferToken(at(39), 1_500_000n);
  await env.mineAndProcess();
  const withTokens = await settledAt(wallet, total, 60, 4);
  expect(withTokens.fungibleTokens).toEqual([expect.objectContaining({ amount: '1.5', symbol: 'HTT' })]);

  // Out of index 0, signed with its derived key: 0.01 ETH to an outside address, and the fee.
  const signer = privateKeyToAccount(toHex(HARDHAT_MASTER.derive(`${ACCOUNT}/0/0`).privateKey as Uint8Array) as Hex);
  expect(signer.address.toLowerCase()).toBe(at(0));
  const raw = await signer.signTransaction({
    type: 'legacy',
    chainId: 5,
    nonce: 0,
    to: (await node.newAddress()) as Hex,
    value: 10n ** 16n,
    gas: 21_000n,
    gasPrice: GAS_PRICE,
  });
  await node.node.request('eth_sendRawTransaction', [raw]);
  await env.mineAndProcess();
  total -= 10n ** 16n + 21_000n * GAS_PRICE;
  await settledAt(wallet, total, 60, 4);
  const used = await t.request('GET', `/wallet-as-a-service/wallets/${wallet}/ethereum/goerli/xpubs/${added.body.data.item.xpubId}/addresses?used=true`, {
    key: c.key,
  });
  expect(used.body.data.items.map((a: { derivationPath: string; confirmedBalance: string }) => [a.derivationPath, a.confirmedBalance])).toEqual([
    ['m/0/0', eth(10n ** 17n - 10n ** 16n - 21_000n * GAS_PRICE)],
    ['m/0/19', eth(10n ** 17n + 19n)],
    ['m/0/38', eth(10n ** 17n + 38n)],
    ['m/0/39', '0'],
  ]);
}, 120_000);

it('past use on an account chain: coins held before the key is added are found by the opening balances, which grow the window (index 3, then 22 beyond the first window)', async () => {
  const account = "m/44'/60'/4'";
  const other = testPublicKey(account, 0x0488b21e, HARDHAT_MASTER);
  const otherKey = parseExtendedKey('ethereum', 'goerli', other);
  if (!otherKey.ok) throw new Error(otherKey.message);
  const k = otherKey.key;
  const addr = (index: number) => deriveAddress(k, k.branches[0] as WalletKey['branches'][number], index).address;
  await node.send(addr(3), 3n * 10n ** 16n);
  await node.send(addr(22), 22n * 10n ** 15n);
  await env.mineAndProcess();
  const created = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: 'eth history' } } } });
  const wallet = created.body.data.item.walletId as string;
  const added = await t.request('POST', `/wallet-as-a-service/wallets/${wallet}/ethereum/goerli/xpubs`, {
    key: c.key,
    body: { data: { item: { extendedPublicKey: other } } },
  });
  expect(added.status, added.text).toBe(201);
  // No scantxoutset here: nothing is known used at the add.
  expect(added.body.data.item).toMatchObject({ watchedAddresses: 20, usedAddresses: 0 });
  await env.mineAndProcess(); // the openings are read at the add's block once it is processed
  await settledAt(wallet, 3n * 10n ** 16n + 22n * 10n ** 15n, 43, 2);
}, 120_000);

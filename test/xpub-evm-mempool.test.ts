/**
 * XPUB_COINS_TRANSACTION_UNCONFIRMED on an account chain (docs/concepts/wallet-keys.md#account-chains): a BIP44 account
 * key of Hardhat's test mnemonic (account 3', none of the node's funded accounts) on the EVM test node with automine
 * off (a real pending pool, read as the address events read it: chains/evm/mempool.ts). A pending payment to index 0
 * is called back before any block, once; mined, the confirmed subscription of the same key fires and the
 * unconfirmed one nothing more. Payments to index 20 (the window's last once 0 is used) and 40 (watched only once
 * 20 is seen in the mempool) both fire from the pool. A pending payment out of index 0, signed with its derived key,
 * is `outgoing` with the value (no fee before mining); replaced (same nonce, higher fee) it is called back as
 * XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED, reason `replaced`.
 */
import { type Hex, keccak256, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { deriveAddress, parseExtendedKey, type WalletKey } from '../src/domain/wallet-keys.ts';
import { sendEth } from './support/evm-contracts.ts';
import { followedEvmNode } from './support/evm-driver.ts';
import { startEvmNode } from './support/evm-node.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { HARDHAT_MASTER, testPublicKey } from './support/hd-keys.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-xpub-evm-mempool';
const ACCOUNT = "m/44'/60'/3'";
const xpub = testPublicKey(ACCOUNT, 0x0488b21e, HARDHAT_MASTER);
const parsed = parseExtendedKey('ethereum', 'goerli', xpub);
if (!parsed.ok) throw new Error(parsed.message);
const key = parsed.key;
const at = (index: number) => deriveAddress(key, key.branches[0] as WalletKey['branches'][number], index).address as Hex;
const eth = (wei: bigint) => formatUnits(wei, 18);

const f = useFollowedApp(async () => followedEvmNode(await startEvmNode({ automine: false })), { chain: { mempoolPollIntervalMs: 50 }, secret: SECRET });
const { subscribe, indexed, callbacksOf, expectSigned, mineAndProcess } = f;

const items = (id: string) => callbacksOf(id).map((cb) => cb.json.data.item as Record<string, unknown>);
const events = (id: string) => callbacksOf(id).map((cb) => (cb.json.data as { event?: string }).event);
const height = () => f.node.height();

it('before the block and once; the window widened in the pool (20 then 40); outgoing from a derived address without a fee; a replacement gives DROPPED', async () => {
  const created = await subscribe('xpub-coins-transactions-unconfirmed', { extendedPublicKey: xpub });
  expect(created.item).toMatchObject({ eventType: 'XPUB_COINS_TRANSACTION_UNCONFIRMED', extendedPublicKey: xpub, gapLimit: 20 });
  const id = created.referenceId;
  const confirmed = (await subscribe('xpub-coins-transactions-confirmed', { extendedPublicKey: xpub, receiveCallbackOn: 1 }, 'confirmed')).referenceId;
  await indexed();

  // Index 0: called back while the payment is only in the pool.
  const before = await height();
  const { hash: first } = await sendEth(f.node, at(0), 10n ** 17n, { wait: false });
  const [seen] = await until('the unconfirmed payment to index 0', async () => callbacksOf(id).length === 1 && callbacksOf(id));
  expect(await height()).toBe(before);
  expectSigned(seen);
  expect(seen?.json.data).toEqual({
    product: 'BLOCKCHAIN_EVENTS',
    event: 'XPUB_COINS_TRANSACTION_UNCONFIRMED',
    item: {
      blockchain: 'ethereum',
      network: 'goerli',
      extendedPublicKey: xpub,
      transactionId: first,
      direction: 'incoming',
      amount: '0.1',
      unit: 'ETH',
      addresses: [{ address: at(0), derivationPath: 'm/0/0', change: false, received: '0.1', sent: '0' }],
      firstSeenInMempoolTimestamp: expect.any(Number),
      safety: { verdict: 'ok', flags: [] },
    },
  });
  // Mined: the confirmed subscription fires, the unconfirmed one nothing more.
  await mineAndProcess();
  await until('the confirmed callback', async () => callbacksOf(confirmed).length === 1);
  expect(items(confirmed)[0]).toMatchObject({ transactionId: first, direction: 'incoming' });
  await new Promise((r) => setTimeout(r, 300));
  await f.t.app.worker?.settled();
  expect(callbacksOf(id)).toHaveLength(1);

  // 20 is the window's last (0 used, gap 20); 40 is watched only once 20 is seen: both from the pool, before a block.
  const { hash: twenty } = await sendEth(f.node, at(20), 2n * 10n ** 16n, { wait: false });
  await until('the payment to index 20', async () => items(id).some((i) => i.transactionId === twenty));
  const { hash: forty } = await sendEth(f.node, at(40), 4n * 10n ** 16n, { wait: false });
  await until('the payment to index 40', async () => items(id).some((i) => i.transactionId === forty));
  expect(items(id).find((i) => i.transactionId === forty)?.addresses).toEqual([
    { address: at(40), derivationPath: 'm/0/40', change: false, received: '0.04', sent: '0' },
  ]);
  await mineAndProcess();

  // Out of index 0, signed with its derived key: outgoing, the value only (the fee is known once mined).
  const signer = privateKeyToAccount(toHex(HARDHAT_MASTER.derive(`${ACCOUNT}/0/0`).privateKey as Uint8Array) as Hex);
  expect(signer.address.toLowerCase()).toBe(at(0));
  const outside = f.node.accounts[9]?.address as Hex;
  const send = async (gasPrice: bigint) => {
    const raw = await signer.signTransaction({ type: 'legacy', chainId: 5, nonce: 0, to: outside, value: 10n ** 16n, gas: 21_000n, gasPrice });
    await f.node.request('eth_sendRawTransaction', [raw]);
    return keccak256(raw);
  };
  const out = await send(10_000_000_000n);
  await until('the outgoing payment', async () => items(id).some((i) => i.transactionId === out));
  const outgoing = items(id).find((i) => i.transactionId === out);
  expect(outgoing).toMatchObject({
    direction: 'outgoing',
    amount: eth(10n ** 16n),
    addresses: [{ address: at(0), derivationPath: 'm/0/0', change: false, received: '0', sent: eth(10n ** 16n) }],
  });
  expect(outgoing?.fee).toBeUndefined();

  // Replaced by the same nonce at a higher price: nothing more for the replacement, DROPPED (replaced) for the original.
  const replacement = await send(30_000_000_000n);
  await until('the dropped original', async () => events(id).includes('XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED'));
  const dropped = callbacksOf(id).find((cb) => (cb.json.data as { event?: string }).event === 'XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED');
  expect(dropped?.json.data.item).toMatchObject({ transactionId: out, reason: 'replaced', replacedByTransactionId: replacement });
  expectSigned(dropped);
  await mineAndProcess();
  await new Promise((r) => setTimeout(r, 300));
  await f.t.app.worker?.settled();
  expect(items(id).filter((i) => i.transactionId === replacement)).toEqual([]);
}, 120_000);

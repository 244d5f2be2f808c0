/** The derivation pool (derive-workers.ts) on real worker threads: the same rows as deriving on this thread, refusals, a large first window. */
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_MASTER, testPublicKey } from '../../test/support/hd-keys.ts';
import type { SubscribedWalletKey } from '../domain/subscriptions.ts';
import { deriveWindow, parseSubscribedKey } from '../domain/wallet-windows.ts';
import { createDerivePool, type DerivePool, deriveFirstWindow, IN_THREAD_ADDRESSES, windowRows } from './derive-workers.ts';

const pool = createDerivePool(2);
afterAll(async () => {
  await pool.close();
});

const zpub = testPublicKey("m/84'/0'/0'", 0x04b24746);
const keyOf = (text: string, gapLimit = 20, field: SubscribedWalletKey['field'] = 'extendedPublicKey'): SubscribedWalletKey => ({
  field,
  text,
  derivation: null,
  gapLimit,
  regtest: false,
});

function inThread(key: SubscribedWalletKey, change: boolean, from: number, to: number) {
  const parsed = parseSubscribedKey('bitcoin', 'mainnet', key);
  if (!parsed.ok) throw new Error(parsed.message);
  return deriveWindow(parsed.key, change, from, to, key.regtest);
}

describe('the derivation pool', () => {
  it('derives the windows of several keys, in order, as this thread does (an xpub and a receive-only descriptor)', async () => {
    const descriptor = `wpkh(${TEST_MASTER.derive("m/84'/0'/1'").publicExtendedKey}/0/*)`;
    const zpubKey = keyOf(zpub);
    const descriptorKey = keyOf(descriptor, 20, 'descriptor');
    const requests = [zpubKey, descriptorKey].map((key) => ({
      blockchain: 'bitcoin' as const,
      network: 'mainnet' as const,
      key,
      windows: [
        { change: false, from: 3, to: 40 },
        { change: true, from: 0, to: 9 },
      ],
    }));
    // Two jobs at once: each worker takes one.
    const [first, second] = await Promise.all([pool.derive(requests), pool.derive(requests.slice(1))]);
    expect(first?.length).toBe(2);
    const [zpubWindows, descriptorWindows] = first ?? [];
    expect(zpubWindows?.flatMap(windowRows)).toEqual([...inThread(zpubKey, false, 3, 40), ...inThread(zpubKey, true, 0, 9)]);
    // The descriptor has no change chain: its second window is empty.
    expect(descriptorWindows?.map((w) => w.addresses.length)).toEqual([38, 0]);
    expect(descriptorWindows?.flatMap(windowRows)).toEqual(inThread(descriptorKey, false, 3, 40));
    expect(second?.[0]?.flatMap(windowRows)).toEqual(descriptorWindows?.flatMap(windowRows));
  });

  it('rejects a job whose key is refused, and keeps serving', async () => {
    const bad = {
      blockchain: 'bitcoin' as const,
      network: 'mainnet' as const,
      key: keyOf(`${zpub.slice(0, -1)}x`),
      windows: [{ change: false, from: 0, to: 1 }],
    };
    await expect(pool.derive([bad])).rejects.toThrow(/deriving addresses failed/);
    const good = await pool.derive([{ ...bad, key: keyOf(zpub) }]);
    expect(good[0]?.[0]?.addresses.length).toBe(2);
  });

  it('deriveFirstWindow: a small window on this thread, a large one in the pool, the same rows either way', async () => {
    let asked = 0;
    const counting = (): DerivePool => {
      asked++;
      return pool;
    };
    const small = await deriveFirstWindow('bitcoin', 'mainnet', keyOf(zpub, IN_THREAD_ADDRESSES / 2), counting);
    expect(asked).toBe(0);
    expect(small.length).toBe(IN_THREAD_ADDRESSES);
    const gap = IN_THREAD_ADDRESSES / 2 + 50;
    const large = await deriveFirstWindow('bitcoin', 'mainnet', keyOf(zpub, gap), counting);
    expect(asked).toBe(1);
    expect(large).toEqual([...inThread(keyOf(zpub), false, 0, gap - 1), ...inThread(keyOf(zpub), true, 0, gap - 1)]);
    expect(large[0]?.derivationPath).toBe('m/0/0');
  });
});

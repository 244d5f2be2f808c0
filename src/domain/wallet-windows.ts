/**
 * The gap window of a wallet-key subscription (docs/concepts/wallet-keys.md): which derived addresses herald
 * watches. With the highest used index h of a chain (-1 when none is used), indexes 0 .. h + gapLimit are
 * watched, so gapLimit unused addresses always follow the highest used one. Pure.
 */
import type { Blockchain, Network } from './chains.ts';
import { childPublicKeys } from './child-keys.ts';
import type { DerivedAddressRow, SubscribedWalletKey } from './subscriptions.ts';
import { addressOfPublicKey, parseDescriptor, parseExtendedKey, type WalletKey, type WalletKeyResult } from './wallet-keys.ts';

/** The subscribed key parsed again (it was checked at create, so this succeeds unless the rules changed). */
export function parseSubscribedKey(blockchain: Blockchain, network: Network, key: SubscribedWalletKey): WalletKeyResult {
  return key.field === 'descriptor'
    ? parseDescriptor(blockchain, network, key.text)
    : parseExtendedKey(blockchain, network, key.text, key.derivation ?? undefined);
}

/** The highest index a chain's window holds: highest used + gapLimit (gapLimit - 1 when none is used). */
export function windowEnd(highestUsed: number, gapLimit: number): number {
  return highestUsed + gapLimit;
}

/**
 * The addresses of the branch `change` of `key` at indexes from..to (inclusive), in herald's spelling; none
 * when the key has no such branch (a descriptor over the receive chain only).
 */
export function deriveWindow(
  key: WalletKey,
  change: boolean,
  from: number,
  to: number,
  regtest: boolean,
): Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>[] {
  const rows: Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>[] = [];
  const branch = key.branches.find((b) => b.change === (change ? 1 : 0));
  if (!branch) return rows;
  if (to < from) return rows;
  // The branch's node derived once; its children by childPublicKeys (child-keys.ts: CKDpub without an HDKey per child).
  let hd = key.hd;
  for (const step of branch.steps) hd = hd.deriveChild(step);
  if (!hd.publicKey || !hd.chainCode) throw new Error('the branch key has no public key');
  const prefix = [key.origin ?? 'm', ...branch.steps].join('/');
  const keys = childPublicKeys(hd.publicKey, hd.chainCode, from, to);
  for (let i = 0; i < keys.length; i++) {
    const index = from + i;
    // The first address of a window goes through validateAddress too: an encoder spelling differently from it fails loudly.
    const address = addressOfPublicKey(key, keys[i] as Uint8Array, regtest, i === 0);
    rows.push({ address, derivationPath: `${prefix}/${index}`, change, index });
  }
  return rows;
}

/**
 * deriveWindow in slices of `slice` addresses, giving the event loop back between them: a gapLimit of 10,000
 * derives 20,000 addresses at create, seconds of CPU that must not stall the API's other requests.
 */
export async function deriveWindowYielding(
  key: WalletKey,
  change: boolean,
  from: number,
  to: number,
  regtest: boolean,
  slice = 100,
): Promise<Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>[]> {
  const rows: Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>[] = [];
  for (let start = from; start <= to; start += slice) {
    rows.push(...deriveWindow(key, change, start, Math.min(to, start + slice - 1), regtest));
    if (start + slice <= to) await new Promise((resolve) => setImmediate(resolve));
  }
  return rows;
}

/**
 * The gap window of a wallet-key subscription (docs/concepts/wallet-keys.md): which derived addresses herald
 * watches. With the highest used index h of a chain (-1 when none is used), indexes 0 .. h + gapLimit are
 * watched, so gapLimit unused addresses always follow the highest used one. Pure.
 */
import type { Blockchain, Network } from './chains.ts';
import { childKey, childPublicKeys } from './child-keys.ts';
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
  const window = deriveWindowAddresses(key, change, from, to, regtest);
  if (!window) return [];
  return window.addresses.map((address, i) => ({ address, derivationPath: `${window.prefix}/${from + i}`, change, index: from + i }));
}

/**
 * deriveWindow's addresses alone, with the derivation path up to the index (`${prefix}/${index}` is each
 * address's path): what the derivation workers send back (no row per address built and dropped); undefined
 * when the key has no such branch.
 */
export function deriveWindowAddresses(
  key: WalletKey,
  change: boolean,
  from: number,
  to: number,
  regtest: boolean,
): { prefix: string; addresses: string[] } | undefined {
  const branch = key.branches.find((b) => b.change === (change ? 1 : 0));
  if (!branch) return undefined;
  const prefix = [key.origin ?? 'm', ...branch.steps].join('/');
  const addresses: string[] = [];
  if (to < from) return { prefix, addresses };
  // The branch's node derived once, and its children, by CKDpub (child-keys.ts: no HDKey per node; @scure/bip32's
  // deriveChild cost as much as 20 children).
  let node = { publicKey: key.publicKey, chainCode: key.chainCode };
  for (const step of branch.steps) node = childKey(node.publicKey, node.chainCode, step);
  const keys = childPublicKeys(node.publicKey, node.chainCode, from, to);
  for (let i = 0; i < keys.length; i++) {
    // The first address of a window goes through validateAddress too: an encoder spelling differently from it fails loudly.
    addresses.push(addressOfPublicKey(key, keys[i] as Uint8Array, regtest, i === 0));
  }
  return { prefix, addresses };
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

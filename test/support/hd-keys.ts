/**
 * Extended public keys of the test mnemonic of BIP84 and BIP86 ("abandon" x11 "about"), for the wallet-key
 * tests (src/domain/wallet-keys.test.ts, test/xpub-litecoin.test.ts), and of Hardhat's and Anvil's
 * ("test" x11 "junk", whose m/44'/60'/0'/0/i are their well-known funded accounts; test/xpub-evm.test.ts).
 * For the tests on litecoind's regtest: an account of the test seed as a tpub with its addresses
 * (litecoinTestAccount) and the WIF of one of its keys (wifOf).
 */
import { createHash } from 'node:crypto';
import { createBase58check } from '@scure/base';
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync } from '@scure/bip39';
import { deriveAddress, parseExtendedKey, type WalletKey } from '../../src/domain/wallet-keys.ts';

export const TEST_MASTER = HDKey.fromMasterSeed(
  mnemonicToSeedSync('abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about'),
);

export const HARDHAT_MASTER = HDKey.fromMasterSeed(mnemonicToSeedSync('test test test test test test test test test test test junk'));

/** The key at `path` of the test seed (or of `master`), serialised as a public key with `version` (0x0488b21e xpub, ...). */
export function testPublicKey(path: string, version: number, master: HDKey = TEST_MASTER): string {
  const node = master.derive(path);
  return new HDKey({
    versions: { public: version, private: 0 },
    depth: node.depth,
    index: node.index,
    parentFingerprint: node.parentFingerprint,
    chainCode: node.chainCode ?? undefined,
    publicKey: node.publicKey ?? undefined,
  }).publicExtendedKey;
}

/** tpub's version bytes (testnet, regtest). */
const TPUB = 0x043587cf;

/**
 * An account of the test seed (BIP84, segwit) as the litecoind regtest tests subscribe it: its tpub, the key
 * as herald parses it, and `at(change, index)`, the regtest (rltc1) address at m/change/index of the account.
 */
export function litecoinTestAccount(account: string): { tpub: string; key: WalletKey; at: (change: 0 | 1, index: number) => string } {
  const tpub = testPublicKey(account, TPUB);
  const parsed = parseExtendedKey('litecoin', 'testnet', tpub, 'segwit');
  if (!parsed.ok) throw new Error(parsed.message);
  const key = parsed.key;
  const at = (change: 0 | 1, index: number) => deriveAddress(key, key.branches[change] as WalletKey['branches'][number], index, { regtest: true }).address;
  return { tpub, key, at };
}

/** The WIF of the key at `path` of the test seed, for litecoind's regtest (version 0xef, compressed): what importprivkey takes. */
export function wifOf(path: string): string {
  const privateKey = TEST_MASTER.derive(path).privateKey as Uint8Array;
  const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest();
  return createBase58check(sha256).encode(Uint8Array.from([0xef, ...privateKey, 0x01]));
}

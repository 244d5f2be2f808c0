/**
 * Extended public keys of the test mnemonic of BIP84 and BIP86 ("abandon" x11 "about"), for the wallet-key
 * tests (src/domain/wallet-keys.test.ts, test/xpub-litecoin.test.ts), and of Hardhat's and Anvil's
 * ("test" x11 "junk", whose m/44'/60'/0'/0/i are their well-known funded accounts; test/xpub-evm.test.ts).
 */
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync } from '@scure/bip39';

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

/**
 * Extended public keys of the test mnemonic of BIP84 and BIP86 ("abandon" x11 "about"), for the wallet-key
 * tests (src/domain/wallet-keys.test.ts, test/wallet-keys-litecoin.test.ts).
 */
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync } from '@scure/bip39';

export const TEST_MASTER = HDKey.fromMasterSeed(
  mnemonicToSeedSync('abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about'),
);

/** The key at `path` of the test seed, serialised as a public key with `version` (0x0488b21e xpub, ...). */
export function testPublicKey(path: string, version: number): string {
  const node = TEST_MASTER.derive(path);
  return new HDKey({
    versions: { public: version, private: 0 },
    depth: node.depth,
    index: node.index,
    parentFingerprint: node.parentFingerprint,
    chainCode: node.chainCode ?? undefined,
    publicKey: node.publicKey ?? undefined,
  }).publicExtendedKey;
}

/**
 * herald's derivation (src/domain/wallet-keys.ts) against litecoind's own: for every descriptor form
 * litecoind knows over one extended public key (pkh, sh(wpkh), wpkh; Litecoin Core 0.21 has no tr() and no
 * multipath), the checksum getdescriptorinfo computes and the addresses deriveaddresses gives must be
 * herald's, on the receive and the change branch.
 */

import { afterAll, beforeAll, expect, it } from 'vitest';
import { deriveAddress, descriptorChecksum, parseDescriptor, parseExtendedKey } from '../src/domain/wallet-keys.ts';
import { testPublicKey } from './support/hd-keys.ts';
import { type LitecoinNode, litecoind, startLitecoinNode } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';

const TPUB = 0x043587cf;
const tpubAt = (path: string): string => testPublicKey(path, TPUB);

describeWithRealNode('wallet keys: herald derives what litecoind derives', litecoind, () => {
  let node: LitecoinNode;
  beforeAll(async () => {
    node = await startLitecoinNode({ initialBlocks: 0 });
  });
  afterAll(() => node?.close());

  const forms = [
    { wrap: (k: string) => `pkh(${k})`, path: "m/44'/1'/0'", origin: "44'/1'/0'" },
    { wrap: (k: string) => `sh(wpkh(${k}))`, path: "m/49'/1'/0'", origin: "49'/1'/0'" },
    { wrap: (k: string) => `wpkh(${k})`, path: "m/84'/1'/0'", origin: "84'/1'/0'" },
  ];
  for (const form of forms) {
    it(`${form.wrap('KEY')}: the same checksum and the same first 25 receive and change addresses`, async () => {
      const tpub = tpubAt(form.path);
      for (const change of [0, 1] as const) {
        const body = form.wrap(`[73c5da0a/${form.origin}]${tpub}/${change}/*`);
        const info = await node.rpc<{ descriptor: string; checksum: string }>('getdescriptorinfo', body);
        expect(descriptorChecksum(body)).toBe(info.checksum);
        const theirs = await node.rpc<string[]>('deriveaddresses', `${body}#${info.checksum}`, [0, 24]);
        const parsed = parseDescriptor('litecoin', 'testnet', `${body}#${info.checksum}`);
        if (!parsed.ok) throw new Error(parsed.message);
        const branch = parsed.key.branches[0];
        if (!branch) throw new Error('no branch');
        const ours = theirs.map((_, i) => deriveAddress(parsed.key, branch, i, { regtest: true }));
        expect(ours.map((d) => d.address)).toEqual(theirs);
        expect(ours[3]?.derivationPath).toBe(`m/${form.origin}/${change}/3`);
      }
    });
  }

  it('an xpub-style key (tpub with derivation) gives the addresses of the matching descriptor, both branches', async () => {
    const tpub = tpubAt("m/84'/1'/0'");
    const parsed = parseExtendedKey('litecoin', 'testnet', tpub, 'segwit');
    if (!parsed.ok) throw new Error(parsed.message);
    for (const branch of parsed.key.branches) {
      const body = `wpkh(${tpub}/${branch.change}/*)`;
      const theirs = await node.rpc<string[]>('deriveaddresses', `${body}#${descriptorChecksum(body)}`, [0, 4]);
      expect(theirs.map((_, i) => deriveAddress(parsed.key, branch, i, { regtest: true }).address)).toEqual(theirs);
    }
  });
});

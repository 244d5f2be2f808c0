import { createHash } from 'node:crypto';
import { createBase58check, hex } from '@scure/base';
import { describe, expect, it } from 'vitest';
import { HARDHAT_MASTER, TEST_MASTER, testPublicKey } from '../../test/support/hd-keys.ts';
import { deriveAddress, descriptorChecksum, parseDescriptor, parseExtendedKey, type WalletKey } from './wallet-keys.ts';

const master = TEST_MASTER;
const VERSION = { xpub: 0x0488b21e, ypub: 0x049d7cb2, zpub: 0x04b24746, tpub: 0x043587cf, Ltub: 0x019da462 };
const accountKey = testPublicKey;
function must(result: ReturnType<typeof parseExtendedKey>): WalletKey {
  if (!result.ok) throw new Error(result.message);
  return result.key;
}
const at = (key: WalletKey, change: 0 | 1, index: number) => {
  const branch = key.branches.find((b) => b.change === change);
  if (!branch) throw new Error(`no branch ${change}`);
  return deriveAddress(key, branch, index).address;
};

describe('extended public keys: the BIP test vectors', () => {
  it('BIP84 (zpub, native segwit): the published key and addresses', () => {
    const zpub = accountKey("m/84'/0'/0'", VERSION.zpub);
    expect(zpub).toBe('zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs');
    const key = must(parseExtendedKey('bitcoin', 'mainnet', zpub));
    expect(key.scriptType).toBe('segwit');
    expect(at(key, 0, 0)).toBe('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu');
    expect(at(key, 0, 1)).toBe('bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g');
    expect(at(key, 1, 0)).toBe('bc1q8c6fshw2dlwun7ekn9qwf37cu2rn755upcp6el');
  });

  it('BIP86 (taproot through a tr() descriptor): the published addresses', () => {
    const xpub = accountKey("m/86'/0'/0'", VERSION.xpub);
    expect(xpub).toBe('xpub6BgBgsespWvERF3LHQu6CnqdvfEvtMcQjYrcRzx53QJjSxarj2afYWcLteoGVky7D3UKDP9QyrLprQ3VCECoY49yfdDEHGCtMMj92pReUsQ');
    const key = must(parseDescriptor('bitcoin', 'mainnet', `tr([73c5da0a/86h/0h/0h]${xpub}/<0;1>/*)`));
    expect(at(key, 0, 0)).toBe('bc1p5cyxnuxmeuwuvkwfem96lqzszd02n6xdcjrs20cac6yqjjwudpxqkedrcr');
    expect(at(key, 0, 1)).toBe('bc1p4qhjn9zdvkux4e44uhx8tc55attvtyu358kutcqkudyccelu0was9fqzwh');
    expect(at(key, 1, 0)).toBe('bc1p3qkhfews2uk44qtvauqyr2ttdsw7svhkl9nkm9s9c3x4ax5h60wqwruhk7');
    expect(deriveAddress(key, key.branches[1] as never, 0).derivationPath).toBe("m/86'/0'/0'/1/0");
  });

  it('BIP44 and BIP49 (xpub legacy, ypub nested segwit), and an xpub with derivation', () => {
    const legacy = must(parseExtendedKey('bitcoin', 'mainnet', accountKey("m/44'/0'/0'", VERSION.xpub)));
    expect(at(legacy, 0, 0)).toBe('1LqBGSKuX5yYUonjxT5qGfpUsXKYYWeabA');
    const nested = must(parseExtendedKey('bitcoin', 'mainnet', accountKey("m/49'/0'/0'", VERSION.ypub)));
    expect(at(nested, 0, 0)).toBe('37VucYSaXLCAsxYyAPfbSi9eh4iEcbShgf');
    const asXpub = must(parseExtendedKey('bitcoin', 'mainnet', accountKey("m/84'/0'/0'", VERSION.xpub), 'segwit'));
    expect(at(asXpub, 0, 0)).toBe('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu');
  });

  it('account chains: a BIP44 account key gives the receive addresses of ethereum and tron', () => {
    const eth = must(parseExtendedKey('ethereum', 'mainnet', accountKey("m/44'/60'/0'", VERSION.xpub)));
    expect(eth.branches).toHaveLength(1);
    expect(at(eth, 0, 0)).toBe('0x9858effd232b4033e47d90003d41ec34ecaeda94');
    const tron = must(parseExtendedKey('tron', 'mainnet', accountKey("m/44'/195'/0'", VERSION.xpub)));
    expect(at(tron, 0, 0)).toBe('TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH');
  });

  it("account chains: Hardhat's mnemonic at m/44'/60'/0' gives its well-known accounts on ethereum, ethereum-classic and binance-smart-chain", () => {
    const xpub = accountKey("m/44'/60'/0'", VERSION.xpub, HARDHAT_MASTER);
    // Hardhat's and Anvil's default accounts #0, #1, #2 and #19, lower-cased (herald's spelling of EVM addresses).
    const known: [number, string][] = [
      [0, '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266'],
      [1, '0x70997970c51812dc3a010c7d01b50e0d17dc79c8'],
      [2, '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc'],
      [19, '0x8626f6940e2eb28930efb4cef49b2d1f2c9c1199'],
    ];
    for (const blockchain of ['ethereum', 'ethereum-classic', 'binance-smart-chain'] as const) {
      const key = must(parseExtendedKey(blockchain, 'mainnet', xpub));
      expect(key.branches).toEqual([{ change: 0, steps: [0] }]);
      for (const [index, address] of known)
        expect(deriveAddress(key, key.branches[0] as WalletKey['branches'][number], index)).toEqual({
          address,
          derivationPath: `m/0/${index}`,
          change: 0,
          index,
        });
    }
    // The account chains' wallets write their keys as xpub on their test networks too.
    expect(at(must(parseExtendedKey('ethereum', 'sepolia', xpub)), 0, 19)).toBe('0x8626f6940e2eb28930efb4cef49b2d1f2c9c1199');
  });

  it('tron: the address is base58check of 0x41 and the same 20 bytes an EVM chain derives from that key', () => {
    const xpub = accountKey("m/44'/195'/0'", VERSION.xpub, HARDHAT_MASTER);
    const tron = must(parseExtendedKey('tron', 'mainnet', xpub));
    const evm = must(parseExtendedKey('ethereum', 'mainnet', xpub));
    const b58 = createBase58check((data: Uint8Array) => createHash('sha256').update(data).digest());
    for (const index of [0, 1, 38]) {
      const address = at(tron, 0, index);
      expect(address).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
      expect(hex.encode(b58.decode(address))).toBe(`41${at(evm, 0, index).slice(2)}`);
    }
    expect(at(must(parseExtendedKey('tron', 'nile', xpub)), 0, 0)).toBe(at(tron, 0, 0));
  });

  it('account chains refuse a ypub/zpub, a derivation and a descriptor', () => {
    const xpub = accountKey("m/44'/60'/0'", VERSION.xpub, HARDHAT_MASTER);
    const refused = (r: ReturnType<typeof parseExtendedKey>) => (r.ok ? '' : r.message);
    expect(refused(parseExtendedKey('ethereum', 'mainnet', xpub, 'segwit'))).toMatch(/one address form/);
    expect(refused(parseExtendedKey('tron', 'mainnet', accountKey("m/44'/195'/0'", VERSION.zpub, HARDHAT_MASTER)))).toMatch(/one address form/);
    expect(refused(parseDescriptor('binance-smart-chain', 'mainnet', `wpkh(${xpub}/0/*)`))).toMatch(/Bitcoin-family/);
  });

  it('bitcoin-cash addresses come out in cashaddr, zcash as t1, litecoin Ltub as L...', () => {
    const bch = must(parseExtendedKey('bitcoin-cash', 'mainnet', accountKey("m/44'/145'/0'", VERSION.xpub)));
    expect(at(bch, 0, 0)).toMatch(/^bitcoincash:q[a-z0-9]{41}$/);
    const zec = must(parseExtendedKey('zcash', 'mainnet', accountKey("m/44'/133'/0'", VERSION.xpub)));
    expect(at(zec, 0, 0)).toMatch(/^t1[1-9A-HJ-NP-Za-km-z]{33}$/);
    const ltc = must(parseExtendedKey('litecoin', 'mainnet', accountKey("m/44'/2'/0'", VERSION.Ltub)));
    expect(at(ltc, 0, 0)).toBe('LUWPbpM43E2p7ZSh8cyTBEkvpHmr3cB8Ez');
  });
});

describe('what is refused, with a message naming the problem', () => {
  const xprv = master.derive("m/84'/0'/0'").privateExtendedKey;
  const tpub = accountKey("m/84'/1'/0'", VERSION.tpub);
  const xpub = accountKey("m/84'/0'/0'", VERSION.xpub);
  it.each([
    ['a private key', () => parseExtendedKey('bitcoin', 'mainnet', xprv), /private key/],
    ['a private key in a descriptor', () => parseDescriptor('bitcoin', 'mainnet', `wpkh(${xprv}/0/*)`), /private key/],
    ['a testnet key on mainnet', () => parseExtendedKey('bitcoin', 'mainnet', tpub), /testnet and regtest.*bitcoin mainnet/],
    ['a typo', () => parseExtendedKey('bitcoin', 'mainnet', `${xpub.slice(0, -1)}${xpub.endsWith('a') ? 'b' : 'a'}`), /checksum/],
    ['a hardened step after the key', () => parseDescriptor('bitcoin', 'mainnet', `wpkh(${xpub}/0h/*)`), /hardened/],
    ['a wrong descriptor checksum', () => parseDescriptor('bitcoin', 'mainnet', `wpkh(${xpub}/0/*)#aaaaaaaa`), /checksum #aaaaaaaa does not match/],
    ['no /* at the end', () => parseDescriptor('bitcoin', 'mainnet', `wpkh(${xpub}/0/5)`), /must end with \/\*/],
    ['a multisig descriptor', () => parseDescriptor('bitcoin', 'mainnet', `wsh(multi(1,${xpub}/0/*))`), /multisig/],
    ['segwit on dogecoin', () => parseExtendedKey('dogecoin', 'mainnet', xpub, 'segwit'), /dogecoin has no segwit/],
    ['xrp', () => parseExtendedKey('xrp', 'mainnet', xpub), /cannot be subscribed on xrp/],
    ['a zpub with derivation legacy', () => parseExtendedKey('bitcoin', 'mainnet', accountKey("m/84'/0'/0'", VERSION.zpub), 'legacy'), /contradicts/],
    ['an Ltub on bitcoin', () => parseExtendedKey('bitcoin', 'mainnet', accountKey("m/44'/2'/0'", VERSION.Ltub)), /belongs to litecoin/],
  ])('%s', (_, parse, message) => {
    const result = parse();
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message).toMatch(message);
      expect(result.message).not.toContain(xprv.slice(4, 30));
    }
  });

  it('a descriptor with its right checksum is taken, and the checksum is that of BIP380', () => {
    // The example of BIP380's checksum section.
    expect(descriptorChecksum('raw(deadbeef)')).toBe('89f8spxm');
    const body = `wpkh(${xpub}/<0;1>/*)`;
    const parsed = parseDescriptor('bitcoin', 'mainnet', `${body}#${descriptorChecksum(body)}`);
    expect(parsed.ok).toBe(true);
  });
});

describe('the key decoded once: the checks @scure/bip32 HDKey.fromExtendedKey made, and its HDKey at first use', () => {
  const b58 = createBase58check((data) => createHash('sha256').update(data).digest());
  const raw = () => b58.decode(master.derive("m/84'/0'/0'").publicExtendedKey);
  const spelt = (bytes: Uint8Array) => {
    bytes.set([0x04, 0xb2, 0x47, 0x46], 0); // zpub
    return b58.encode(bytes);
  };

  it('the HDKey built later is the one fromExtendedKey gives; publicKey and chainCode are its own', async () => {
    const { HDKey } = await import('@scure/bip32');
    const text = spelt(raw());
    const key = must(parseExtendedKey('bitcoin', 'mainnet', text));
    const expected = HDKey.fromExtendedKey(text, { public: VERSION.zpub, private: 0 });
    expect(hex.encode(key.publicKey)).toBe(hex.encode(expected.publicKey as Uint8Array));
    expect(hex.encode(key.chainCode)).toBe(hex.encode(expected.chainCode as Uint8Array));
    expect(key.hd.publicExtendedKey).toBe(expected.publicExtendedKey);
    expect(key.hd).toBe(key.hd); // built once
  });

  it('refuses a public key off the curve, a depth of 0 with an index, and a private key marker', () => {
    const offCurve = raw();
    // x = 5: 5^3 + 7 = 132 is not a square modulo p (no point has it).
    offCurve.set([0x02, ...new Uint8Array(31), 5], 45);
    const bad = parseExtendedKey('bitcoin', 'mainnet', spelt(offCurve));
    expect(bad).toMatchObject({ ok: false, message: expect.stringMatching(/is not a usable extended public key: .+\.$/) });
    const rootWithIndex = raw();
    rootWithIndex[4] = 0;
    expect(parseExtendedKey('bitcoin', 'mainnet', spelt(rootWithIndex))).toMatchObject({ ok: false, message: expect.stringMatching(/zero depth/) });
    const marker = raw();
    marker[45] = 0;
    expect(parseExtendedKey('bitcoin', 'mainnet', spelt(marker))).toMatchObject({ ok: false, message: expect.stringMatching(/Version mismatch/) });
  });
});

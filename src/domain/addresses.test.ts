import { ripemd160 } from '@noble/hashes/legacy';
import { sha256 } from '@noble/hashes/sha256';
import { base58xrp, bech32, bech32m, createBase58check, hex } from '@scure/base';
import { describe, expect, it } from 'vitest';
import { type Validated, validateAddress, validateTransactionId } from './addresses.ts';
import { BLOCKCHAINS, type Blockchain, CHAINS, type Network } from './chains.ts';

const b58check = createBase58check(sha256);
const sha256d = (bytes: Uint8Array) => sha256(sha256(bytes));

/** The 20-byte hash of the BCH cashaddr spec's examples; reused to build addresses for version
 * bytes that have no trusted public vector (so each constructed address is right by construction). */
const HASH = hex.decode('f5bf48b397dae70be82b3cca4793f8eb2b6cdac9');
const HASH32 = sha256(HASH);
const legacy = (version: number[], hash = HASH) => b58check.encode(Uint8Array.of(...version, ...hash));
const segwit = (hrp: string, version: number, program: Uint8Array, coder = version === 0 ? bech32 : bech32m) =>
  coder.encode(hrp, [version, ...bech32.toWords(program)]);

const GENESIS = '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa';
const GENESIS_PUBKEY = '04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f';
const USDT_TRON = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';
const USDT_TRON_HEX = '41a614f803b6fd780986a42c78ec9c7f77e6ded13c';
const XRP_GENESIS = 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh';
const X_ADDRESS_MAIN = 'X7AcgcsBL6XDcUb289X4mJ8djcdyKaB5hJDWMArnXr61cqZ';
const X_ADDRESS_TEST = 'T7YChPFWifjCAXLEtg5N74c7fSAYsvSokwcmBPBUZWhxH5P';
const LTC_SEGWIT = 'ltc1qg42tkwuuxefutzxezdkdel39gfstuap288mfea';
const LTC_LEGACY = 'LM2WMpR1Rp6j3Sa59cMXMs1SPzj9eXpGc1';
const DOGE = 'DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L';
const DASH = 'XpESxaUmonkq8RaLLp46Brx2K39ggQe226';
const ZCASH_BAD_CHECKSUM = 't1Rv4exT7bqhZqi2j7xz8bUHDMxwosrjADU'; // from the brief; fails base58check
const BCH_SPEC_LEGACY = '1BpEi6DfDAUFd7GtittLSdBeYJvcoaVggu';
const BCH_SPEC_CASH = 'bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a';
const BCH_TEST_P2SH = 'bchtest:pr6m7j9njldwwzlg9v7v53unlr4jkmx6eyvwc0uz5t'; // cashaddr spec, hash = HASH
const BIP173_P2WPKH = 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4';
const BIP173_TESTNET_P2WSH = 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7';
const BIP350_TAPROOT = 'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0';

function messageOf(result: Validated): string {
  if (result.ok) throw new Error(`expected a failure, got ok with ${result.normalized}`);
  return result.message;
}

describe('the test vectors are what they claim to be', () => {
  it('the bitcoin genesis address is hash160 of the genesis block public key', () => {
    const hash = ripemd160(sha256(hex.decode(GENESIS_PUBKEY)));
    expect(b58check.encode(Uint8Array.of(0x00, ...hash))).toBe(GENESIS);
  });
  it('the xrp genesis address holds its known account id and a valid sha256d checksum', () => {
    const raw = base58xrp.decode(XRP_GENESIS);
    expect(hex.encode(raw.subarray(0, 21))).toBe('00b5f762798a53d543a014caf8b297cff8f2f937e8');
    expect(raw.subarray(21)).toEqual(sha256d(raw.subarray(0, 21)).subarray(0, 4));
  });
  it('the X-addresses are well formed (mainnet prefix 0x0544, testnet 0x0493, valid checksum)', () => {
    for (const [address, prefix] of [
      [X_ADDRESS_MAIN, '0544'],
      [X_ADDRESS_TEST, '0493'],
    ] as const) {
      const raw = base58xrp.decode(address);
      expect(hex.encode(raw.subarray(0, 2))).toBe(prefix);
      expect(raw.subarray(-4)).toEqual(sha256d(raw.subarray(0, -4)).subarray(0, 4));
    }
  });
  it('the tron USDT hex form is the base58check payload of its T... form', () => {
    expect(hex.encode(b58check.decode(USDT_TRON))).toBe(USDT_TRON_HEX);
  });
  it('the litecoin, dogecoin and dash vectors carry their chain version bytes', () => {
    expect(b58check.decode(LTC_LEGACY)[0]).toBe(0x30);
    expect(b58check.decode(DOGE)[0]).toBe(0x1e);
    expect(b58check.decode(DASH)[0]).toBe(0x4c);
    expect(bech32.decode(LTC_SEGWIT as `${string}1${string}`).prefix).toBe('ltc');
  });
  it('the zcash vector from the brief fails its checksum, so transparent zcash addresses are constructed', () => {
    expect(() => b58check.decode(ZCASH_BAD_CHECKSUM)).toThrow();
    expect(legacy([0x1c, 0xb8]).startsWith('t1')).toBe(true);
  });
  it('the BIP-173 P2WPKH vector encodes the expected witness program', () => {
    const { words } = bech32.decode(BIP173_P2WPKH.toLowerCase() as `${string}1${string}`);
    expect(hex.encode(bech32.fromWords(words.slice(1)))).toBe('751e76e8199196d454941c45d1b3a323f1433bd6');
  });
});

const VALID_ADDRESSES: [Blockchain, Network, string, string][] = [
  ['bitcoin', 'mainnet', GENESIS, GENESIS],
  ['bitcoin', 'mainnet', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy'],
  ['bitcoin', 'mainnet', BIP173_P2WPKH, BIP173_P2WPKH.toLowerCase()],
  ['bitcoin', 'mainnet', BIP350_TAPROOT, BIP350_TAPROOT],
  ['bitcoin', 'mainnet', 'BC1SW50QGDZ25J', 'bc1sw50qgdz25j'], // BIP-350: version 16, 2-byte program
  ['bitcoin', 'mainnet', 'bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs', 'bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs'], // BIP-350: v2
  ['bitcoin', 'testnet', BIP173_TESTNET_P2WSH, BIP173_TESTNET_P2WSH],
  ['bitcoin', 'testnet', 'tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c', 'tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c'],
  ['bitcoin', 'testnet', legacy([0x6f]), legacy([0x6f])],
  ['bitcoin', 'testnet', legacy([0xc4]), legacy([0xc4])],
  ['bitcoin', 'testnet', segwit('bcrt', 0, HASH), segwit('bcrt', 0, HASH)], // regtest counts as testnet
  ['litecoin', 'mainnet', LTC_LEGACY, LTC_LEGACY],
  ['litecoin', 'mainnet', LTC_SEGWIT, LTC_SEGWIT],
  ['litecoin', 'mainnet', legacy([0x30]), legacy([0x30])],
  ['litecoin', 'mainnet', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy'], // shares 0x05
  ['litecoin', 'testnet', legacy([0x3a]), legacy([0x3a])],
  ['litecoin', 'testnet', segwit('tltc', 0, HASH).toUpperCase(), segwit('tltc', 0, HASH)],
  ['litecoin', 'testnet', segwit('rltc', 1, HASH32), segwit('rltc', 1, HASH32)],
  ['dogecoin', 'mainnet', DOGE, DOGE],
  ['dogecoin', 'mainnet', legacy([0x16]), legacy([0x16])],
  ['dogecoin', 'testnet', legacy([0x71]), legacy([0x71])],
  ['dogecoin', 'testnet', legacy([0xc4]), legacy([0xc4])],
  ['dash', 'mainnet', DASH, DASH],
  ['dash', 'mainnet', legacy([0x10]), legacy([0x10])],
  ['dash', 'testnet', legacy([0x8c]), legacy([0x8c])],
  ['dash', 'testnet', legacy([0x13]), legacy([0x13])],
  ['zcash', 'mainnet', legacy([0x1c, 0xb8]), legacy([0x1c, 0xb8])],
  ['zcash', 'mainnet', legacy([0x1c, 0xbd]), legacy([0x1c, 0xbd])],
  ['zcash', 'testnet', legacy([0x1d, 0x25]), legacy([0x1d, 0x25])],
  ['zcash', 'testnet', legacy([0x1c, 0xba]), legacy([0x1c, 0xba])],
  // The cashaddr spec's translation table: legacy and cashaddr spellings normalize to one form.
  ['bitcoin-cash', 'mainnet', BCH_SPEC_LEGACY, BCH_SPEC_CASH],
  ['bitcoin-cash', 'mainnet', BCH_SPEC_CASH, BCH_SPEC_CASH],
  ['bitcoin-cash', 'mainnet', BCH_SPEC_CASH.slice('bitcoincash:'.length), BCH_SPEC_CASH],
  ['bitcoin-cash', 'mainnet', BCH_SPEC_CASH.toUpperCase(), BCH_SPEC_CASH],
  ['bitcoin-cash', 'mainnet', '1KXrWXciRDZUpQwQmuM1DbwsKDLYAYsVLR', 'bitcoincash:qr95sy3j9xwd2ap32xkykttr4cvcu7as4y0qverfuy'],
  ['bitcoin-cash', 'mainnet', '16w1D5WRVKJuZUsSRzdLp9w3YGcgoxDXb', 'bitcoincash:qqq3728yw0y47sqn6l2na30mcw6zm78dzqre909m2r'],
  ['bitcoin-cash', 'mainnet', '3CWFddi6m4ndiGyKqzYvsFYagqDLPVMTzC', 'bitcoincash:ppm2qsznhks23z7629mms6s4cwef74vcwvn0h829pq'],
  ['bitcoin-cash', 'mainnet', '3LDsS579y7sruadqu11beEJoTjdFiFCdX4', 'bitcoincash:pr95sy3j9xwd2ap32xkykttr4cvcu7as4yc93ky28e'],
  ['bitcoin-cash', 'mainnet', '31nwvkZwyPdgzjBJZXfDmSWsC4ZLKpYyUw', 'bitcoincash:pqq3728yw0y47sqn6l2na30mcw6zm78dzq5ucqzc37'],
  ['bitcoin-cash', 'mainnet', 'bitcoincash:qr6m7j9njldwwzlg9v7v53unlr4jkmx6eylep8ekg2', 'bitcoincash:qr6m7j9njldwwzlg9v7v53unlr4jkmx6eylep8ekg2'],
  // Spec vector with a 192-bit hash.
  ['bitcoin-cash', 'mainnet', 'bitcoincash:q9adhakpwzztepkpwp5z0dq62m6u5v5xtyj7j3h2ws4mr9g0', 'bitcoincash:q9adhakpwzztepkpwp5z0dq62m6u5v5xtyj7j3h2ws4mr9g0'],
  ['bitcoin-cash', 'testnet', BCH_TEST_P2SH, BCH_TEST_P2SH],
  ['bitcoin-cash', 'testnet', BCH_TEST_P2SH.slice('bchtest:'.length), BCH_TEST_P2SH],
  ['bitcoin-cash', 'testnet', legacy([0xc4]), BCH_TEST_P2SH], // same hash as the spec vector
  // EIP-55 vectors, and single-case spellings (no checksum to check).
  ['ethereum', 'mainnet', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'],
  ['ethereum', 'goerli', '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359', '0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359'],
  ['ethereum-classic', 'mordor', '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB', '0xdbf03b407c01e7cd3cbea99509d93f8dddc8c6fb'],
  ['binance-smart-chain', 'mainnet', '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb', '0xd1220a0cf47c7b9be7a2e6ba89f429762e7b9adb'],
  ['binance-smart-chain', 'testnet', '0x52908400098527886E0F7030069857D2E4169EE7', '0x52908400098527886e0f7030069857d2e4169ee7'],
  ['ethereum-classic', 'mainnet', '0xde709f2102306220921060314715629080e2fb77', '0xde709f2102306220921060314715629080e2fb77'],
  ['tron', 'mainnet', USDT_TRON, USDT_TRON],
  ['tron', 'nile', USDT_TRON, USDT_TRON],
  ['tron', 'mainnet', USDT_TRON_HEX, USDT_TRON],
  ['tron', 'nile', `0x${USDT_TRON_HEX.toUpperCase()}`, USDT_TRON],
  ['xrp', 'mainnet', XRP_GENESIS, XRP_GENESIS],
  ['xrp', 'testnet', XRP_GENESIS, XRP_GENESIS],
  ['xrp', 'mainnet', 'rrrrrrrrrrrrrrrrrrrrrhoLvTp', 'rrrrrrrrrrrrrrrrrrrrrhoLvTp'], // ACCOUNT_ZERO
];

describe('validateAddress accepts real addresses and normalizes them', () => {
  it.each(VALID_ADDRESSES)('%s %s %s', (blockchain, network, address, normalized) => {
    expect(validateAddress(blockchain, network, address)).toEqual({ ok: true, normalized });
  });

  it('normalizes idempotently', () => {
    for (const [blockchain, network, address] of VALID_ADDRESSES) {
      const first = validateAddress(blockchain, network, address);
      if (!first.ok) throw new Error(first.message);
      expect(validateAddress(blockchain, network, first.normalized)).toEqual(first);
    }
  });

  it('normalizes testnet legacy bitcoin-cash P2PKH to bchtest: with the same data part as mainnet', () => {
    const result = validateAddress('bitcoin-cash', 'testnet', legacy([0x6f]));
    // Same payload as the spec's bitcoincash:qr6m7j9n...; only the 8-character checksum depends on the prefix.
    expect(result.ok && result.normalized.startsWith('bchtest:qr6m7j9njldwwzlg9v7v53unlr4jkmx6ey')).toBe(true);
  });
});

/** [blockchain, network, input, fragments the message must contain] */
const INVALID_ADDRESSES: [Blockchain, Network, string, string[]][] = [
  ['bitcoin', 'mainnet', '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb', ['checksum does not match']],
  ['bitcoin', 'mainnet', BIP173_TESTNET_P2WSH, ['is a bitcoin testnet address, but this request is for bitcoin mainnet.']],
  ['bitcoin', 'testnet', GENESIS, [`'${GENESIS}' is a bitcoin mainnet address, but this request is for bitcoin testnet.`]],
  ['bitcoin', 'mainnet', LTC_SEGWIT, ['is not a valid bitcoin mainnet address: expected a legacy address starting with 1 or 3']],
  ['bitcoin', 'mainnet', DOGE, ['is not a valid bitcoin mainnet address']],
  ['bitcoin', 'mainnet', BCH_SPEC_CASH, ['is not a valid bitcoin mainnet address']],
  ['bitcoin', 'mainnet', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', ['is not a valid bitcoin mainnet address']],
  ['bitcoin', 'mainnet', segwit('bc', 0, HASH, bech32m), ['witness version 0 must be encoded with bech32, not bech32m']],
  ['bitcoin', 'mainnet', segwit('bc', 1, HASH32, bech32), ['witness version 1 must be encoded with bech32m, not bech32']],
  // BIP-350 invalid vectors.
  ['bitcoin', 'mainnet', 'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd', ['must be encoded with bech32m']],
  ['bitcoin', 'testnet', 'tb1q0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq24jc47', ['must be encoded with bech32, not bech32m']],
  ['bitcoin', 'mainnet', 'BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P', ['must be 20 or 32 bytes long, not 16']],
  ['bitcoin', 'mainnet', 'bc1pw5dgrnzv', ['must be 2 to 40 bytes long, not 1']],
  ['bitcoin', 'mainnet', 'BC130XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ7ZWS8R', ['witness program']],
  ['bitcoin', 'mainnet', 'bc1p38j9r5y49hruaue7wxjce0updqjuyyx0kh56v8s25huc6995vvpql3jow4', ['typo']],
  ['bitcoin', 'mainnet', 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3t4', ['mixes upper- and lower-case']],
  ['litecoin', 'testnet', LTC_LEGACY, ['is a litecoin mainnet address, but this request is for litecoin testnet.']],
  ['litecoin', 'mainnet', GENESIS, ['expected a legacy address starting with L, M or 3, or a segwit address starting with ltc1']],
  ['dogecoin', 'mainnet', legacy([0x71]), ['is a dogecoin testnet address']],
  ['dogecoin', 'mainnet', BIP350_TAPROOT, ['starting with D, 9 or A']],
  ['dash', 'testnet', DASH, ['is a dash mainnet address, but this request is for dash testnet.']],
  ['dash', 'mainnet', DOGE, ['is not a valid dash mainnet address']],
  ['zcash', 'mainnet', ZCASH_BAD_CHECKSUM, ['checksum does not match']],
  ['zcash', 'mainnet', legacy([0x1d, 0x25]), ['is a zcash testnet address']],
  ['zcash', 'mainnet', GENESIS, ['starting with t1 or t3']],
  // Shielded and unified addresses are recognised by prefix alone, so these bodies are placeholders.
  ['zcash', 'mainnet', `zs1${'q'.repeat(75)}`, ['shielded', 'only transparent zcash mainnet addresses']],
  ['zcash', 'mainnet', `zc${'a'.repeat(93)}`, ['shielded']],
  ['zcash', 'mainnet', `u1${'q'.repeat(100)}`, ['shielded', 'starting with t1 or t3']],
  ['zcash', 'testnet', `ztestsapling1${'q'.repeat(75)}`, ['shielded', 'tm or t2']],
  ['zcash', 'testnet', `utest1${'q'.repeat(100)}`, ['shielded']],
  ['bitcoin-cash', 'mainnet', `${BCH_SPEC_CASH.slice(0, -1)}q`, ['checksum does not match']],
  ['bitcoin-cash', 'mainnet', BCH_TEST_P2SH, ['is a bitcoin-cash testnet address, but this request is for bitcoin-cash mainnet.']],
  ['bitcoin-cash', 'mainnet', BCH_TEST_P2SH.slice('bchtest:'.length), ['is a bitcoin-cash testnet address']],
  ['bitcoin-cash', 'mainnet', legacy([0x6f]), ['is a bitcoin-cash testnet address']],
  ['bitcoin-cash', 'testnet', BCH_SPEC_LEGACY, ['is a bitcoin-cash mainnet address']],
  ['bitcoin-cash', 'mainnet', `bitcoincash:${BCH_SPEC_CASH.slice(12).toUpperCase()}`, ['mixes upper- and lower-case']],
  ['bitcoin-cash', 'mainnet', 'bitcoincash:qpm2qsznhks', ['42 or more characters']],
  ['bitcoin-cash', 'mainnet', LTC_SEGWIT, ['is not a valid bitcoin-cash mainnet address', 'bitcoincash:q']],
  ['ethereum', 'mainnet', '0x12', ["'0x12' is not a valid ethereum mainnet address: expected 0x followed by 40 hexadecimal characters."]],
  ['ethereum', 'mainnet', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD', ['EIP-55 checksum does not match']],
  ['ethereum', 'goerli', '5aaeb6053f3e94c9b9a09f33669435e7ef1beaed', ['expected 0x followed by 40 hexadecimal characters']],
  ['ethereum-classic', 'mordor', `0x${'g'.repeat(40)}`, ['ethereum-classic mordor']],
  ['binance-smart-chain', 'testnet', USDT_TRON, ['is not a valid binance-smart-chain testnet address']],
  ['tron', 'mainnet', `${USDT_TRON.slice(0, -1)}u`, ['checksum does not match']],
  ['tron', 'nile', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', ['starting with T', '41 followed by 40 hexadecimal']],
  ['tron', 'mainnet', `42${USDT_TRON_HEX.slice(2)}`, ['is not a valid tron mainnet address']],
  ['xrp', 'mainnet', X_ADDRESS_MAIN, ['is an X-address', 'classic xrp mainnet address', 'starts with r']],
  ['xrp', 'testnet', X_ADDRESS_TEST, ['is an X-address']],
  ['xrp', 'mainnet', `${XRP_GENESIS.slice(0, -1)}i`, ['checksum does not match']],
  ['xrp', 'mainnet', GENESIS, ['is not a valid xrp mainnet address: expected a classic address']],
];

describe('validateAddress rejects with a message naming chain, network and the defect', () => {
  it.each(INVALID_ADDRESSES)('%s %s %s', (blockchain, network, address, fragments) => {
    const message = messageOf(validateAddress(blockchain, network, address));
    expect(message).toContain(`${blockchain} ${network}`);
    for (const fragment of fragments) expect(message).toContain(fragment);
    expect(message).toMatch(/^[\s\S]{10,400}[.]$/);
  });

  it('rejects every single-character substitution of checksummed addresses', () => {
    const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
    const XRP = 'rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz';
    const BECH32 = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
    // [blockchain, network, address, alphabet, index of the first character to mutate (after hrp/prefix)]
    const cases: [Blockchain, Network, string, string, number][] = [
      ['bitcoin', 'mainnet', GENESIS, BASE58, 0],
      ['dogecoin', 'mainnet', DOGE, BASE58, 0],
      ['tron', 'mainnet', USDT_TRON, BASE58, 0],
      ['xrp', 'mainnet', XRP_GENESIS, XRP, 0],
      ['bitcoin', 'mainnet', BIP350_TAPROOT, BECH32, 'bc1'.length],
      ['bitcoin-cash', 'mainnet', BCH_SPEC_CASH, BECH32, 'bitcoincash:'.length],
    ];
    for (const [blockchain, network, address, alphabet, start] of cases) {
      for (let i = start; i < address.length; i++) {
        const next = alphabet.charAt((alphabet.indexOf(address.charAt(i)) + 1) % alphabet.length);
        const mutated = address.slice(0, i) + next + address.slice(i + 1);
        expect(validateAddress(blockchain, network, mutated).ok, mutated).toBe(false);
      }
    }
  });

  it('rejects every single-letter case flip of an EIP-55 address', () => {
    const address = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359';
    for (let i = 2; i < address.length; i++) {
      const c = address.charAt(i);
      if (!/[a-f]/i.test(c)) continue;
      const flipped = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
      const mutated = address.slice(0, i) + flipped + address.slice(i + 1);
      expect(messageOf(validateAddress('ethereum', 'mainnet', mutated))).toContain('EIP-55');
    }
  });
});

describe('hostile input never throws and gets a clear message', () => {
  const huge = 'x'.repeat(10 * 1024);
  it.each([
    ['', 'Expected a bitcoin mainnet address, but got an empty string.'],
    [huge, '10240 characters long; no bitcoin mainnet address is longer than 128 characters.'],
    ['1'.repeat(129), 'is 129 characters long'],
    [` ${GENESIS}`, 'leading or trailing whitespace'],
    [`${GENESIS}\n`, 'leading or trailing whitespace'],
    ['\u0000\u0000', String.raw`'\u{0}\u{0}'`],
    [`₿${GENESIS.slice(1)}`, 'is not a valid bitcoin mainnet address'],
    ['\u202e1A1z😀', String.raw`\u{202e}`],
    ['1'.repeat(128), 'is not a valid bitcoin mainnet address'],
  ])('%#: %s', (input, fragment) => {
    const message = messageOf(validateAddress('bitcoin', 'mainnet', input));
    expect(message).toContain(fragment);
    expect(message.length).toBeLessThan(300);
    expect(message).not.toMatch(/[\p{Cc}\u202e]/u);
  });

  it('bounds the echoed value to about 60 characters', () => {
    expect(messageOf(validateAddress('ethereum', 'mainnet', huge))).toContain(`'${'x'.repeat(57)}...'`);
    expect(messageOf(validateAddress('ethereum', 'mainnet', huge))).not.toContain('x'.repeat(58));
  });

  it.each([null, undefined, 42, {}, [], Symbol('s')])('rejects the non-string %s', (input) => {
    expect(messageOf(validateAddress('ethereum', 'mainnet', input as unknown as string))).toMatch(
      /^Expected an ethereum mainnet address as a string, but got \w+\.$/,
    );
    expect(messageOf(validateTransactionId('xrp', 'testnet', input as unknown as string))).toContain('Expected an xrp testnet transaction id as a string');
  });

  it("checks ethereum's sepolia and hoodi addresses and transaction ids as its other networks'", () => {
    for (const network of ['sepolia', 'hoodi', 'goerli'] as const) {
      expect(validateAddress('ethereum', network, '0x5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED')).toEqual({
        ok: true,
        normalized: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed',
      });
      expect(validateTransactionId('ethereum', network, FIRST_ETH_TX)).toEqual({ ok: true, normalized: FIRST_ETH_TX });
      expect(messageOf(validateAddress('ethereum', network, '0x12'))).toContain(`ethereum ${network} address`);
    }
  });

  it('rejects unknown blockchains and networks the chain does not have', () => {
    expect(messageOf(validateAddress('bitcoin-gold' as Blockchain, 'mainnet', GENESIS))).toContain("Unknown blockchain 'bitcoin-gold'");
    expect(messageOf(validateAddress('bitcoin', 'goerli', GENESIS))).toBe("bitcoin has no network 'goerli': expected mainnet or testnet.");
    expect(messageOf(validateTransactionId('tron', 'testnet', 'a'.repeat(64)))).toBe("tron has no network 'testnet': expected mainnet or nile.");
    expect(messageOf(validateAddress('ethereum', 'testnet', FIRST_ETH_TX))).toBe(
      "ethereum has no network 'testnet': expected mainnet, sepolia, hoodi or goerli.",
    );
    expect(validateAddress(null as unknown as Blockchain, null as unknown as Network, GENESIS).ok).toBe(false);
  });

  it('survives random strings on every chain and network (seeded, deterministic)', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pool = ['0', 'x', '1', 'q', 'r', 'T', ':', 'bitcoincash:', 'bc1', '41', 'f', 'Z', ' ', '\u0000', 'é', '😀', '\ud800', 'ltc1', 'zs'];
    for (let n = 0; n < 3000; n++) {
      const length = Math.floor(random() * 140);
      let input = '';
      while (input.length < length) input += pool[Math.floor(random() * pool.length)] ?? '';
      for (const blockchain of BLOCKCHAINS) {
        for (const network of CHAINS[blockchain].networks) {
          for (const result of [validateAddress(blockchain, network, input), validateTransactionId(blockchain, network, input)]) {
            expect(result.ok ? result.normalized.length > 0 : result.message.length > 0).toBe(true);
          }
        }
      }
    }
  });
});

const GENESIS_TX = '4a5e1e4baab89f3a32518a88c31bc87f618f76673e0cc77ab2127b7afdeda33b';
const FIRST_ETH_TX = '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060';

describe('validateTransactionId', () => {
  it.each([
    ['bitcoin', 'mainnet', GENESIS_TX, GENESIS_TX],
    ['bitcoin', 'testnet', GENESIS_TX.toUpperCase(), GENESIS_TX],
    ['bitcoin-cash', 'mainnet', GENESIS_TX, GENESIS_TX],
    ['litecoin', 'testnet', GENESIS_TX, GENESIS_TX],
    ['dogecoin', 'mainnet', GENESIS_TX, GENESIS_TX],
    ['dash', 'testnet', GENESIS_TX, GENESIS_TX],
    ['zcash', 'mainnet', GENESIS_TX.toUpperCase(), GENESIS_TX],
    ['ethereum', 'mainnet', FIRST_ETH_TX, FIRST_ETH_TX],
    ['ethereum', 'goerli', `0x${FIRST_ETH_TX.slice(2).toUpperCase()}`, FIRST_ETH_TX],
    ['ethereum-classic', 'mordor', FIRST_ETH_TX, FIRST_ETH_TX],
    ['binance-smart-chain', 'testnet', FIRST_ETH_TX, FIRST_ETH_TX],
    ['tron', 'mainnet', GENESIS_TX, GENESIS_TX],
    ['tron', 'nile', `0x${GENESIS_TX.toUpperCase()}`, GENESIS_TX],
    ['xrp', 'mainnet', GENESIS_TX, GENESIS_TX.toUpperCase()], // rippled's canonical form
    ['xrp', 'testnet', GENESIS_TX.toUpperCase(), GENESIS_TX.toUpperCase()],
  ] as [Blockchain, Network, string, string][])('%s %s %s', (blockchain, network, txid, normalized) => {
    expect(validateTransactionId(blockchain, network, txid)).toEqual({ ok: true, normalized });
  });

  it.each([
    ['bitcoin', 'mainnet', 'g'.repeat(64), 'contains characters that are not hexadecimal; expected 64 hexadecimal characters.'],
    ['bitcoin', 'mainnet', GENESIS_TX.slice(1), 'it has 63 hexadecimal characters'],
    ['litecoin', 'mainnet', `${GENESIS_TX}0`, 'it has 65 hexadecimal characters'],
    ['bitcoin', 'testnet', `0x${GENESIS_TX}`, 'must not start with 0x'],
    ['xrp', 'mainnet', `0x${GENESIS_TX}`, 'must not start with 0x'],
    ['dash', 'mainnet', '', 'Expected a dash mainnet transaction id, but got an empty string.'],
    ['zcash', 'testnet', 'f'.repeat(10 * 1024), 'is 10240 characters long'],
    ['ethereum', 'mainnet', FIRST_ETH_TX.slice(2), 'the 0x prefix is missing; expected 0x followed by 64 hexadecimal characters.'],
    ['ethereum', 'mainnet', FIRST_ETH_TX.slice(0, -1), 'it has 63 hexadecimal characters'],
    ['binance-smart-chain', 'mainnet', `0x${'z'.repeat(64)}`, 'not hexadecimal'],
    ['tron', 'nile', `0x${GENESIS_TX.slice(1)}`, 'expected 64 (optionally prefixed with 0x) hexadecimal characters.'],
  ] as [Blockchain, Network, string, string][])('%s %s rejects %s', (blockchain, network, txid, fragment) => {
    const message = messageOf(validateTransactionId(blockchain, network, txid));
    expect(message).toContain(`${blockchain} ${network} transaction id`);
    expect(message).toContain(fragment);
    expect(message.length).toBeLessThan(300);
  });
});

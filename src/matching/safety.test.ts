import { describe, expect, it } from 'vitest';
import type { TokenTransfer } from '../chains/types.ts';
import { comparableText, safetyPolicy, safetyVerdict, utxoDustThreshold } from './safety.ts';

const ethereum = safetyPolicy({ blockchain: 'ethereum', network: 'mainnet' });
const USDT = '0xdac17f958d2ee523a2206206994597c13d831ec7';
const OTHER = '0x1111111111111111111111111111111111111111';
const transfer = (contract: string, amount: bigint | undefined = 5n): TokenTransfer => ({
  transactionId: '0xaa',
  logIndex: 0,
  tokenType: 'ERC-20',
  contract,
  from: OTHER,
  to: OTHER,
  amount,
});
const tether = { name: 'Tether USD', symbol: 'USDT', decimals: 6 };

describe('safetyVerdict', () => {
  it('ok with no flags when nothing is wrong; review with the flags in their listed order otherwise', () => {
    expect(safetyVerdict({}, ethereum)).toEqual({ verdict: 'ok', flags: [] });
    expect(safetyVerdict({ token: { transfer: transfer(USDT), metadata: tether } }, ethereum)).toEqual({ verdict: 'ok', flags: [] });
    expect(safetyVerdict({ failed: true, replaceable: true, partialPayment: true }, ethereum)).toEqual({
      verdict: 'review',
      flags: ['rbf', 'partial-payment', 'failed'],
    });
  });

  it('lookalike-token: a known symbol or name on another contract, whatever its case, spacing or Cyrillic letters; the listed contract itself never', () => {
    const of = (metadata: { name: string; symbol: string }, contract = OTHER) =>
      safetyVerdict({ token: { transfer: transfer(contract), metadata: { ...metadata, decimals: 6 } } }, ethereum).flags;
    expect(of({ name: 'Fake', symbol: 'USDT' })).toEqual(['lookalike-token']);
    expect(of({ name: 'tether usd', symbol: 'TUSDT' })).toEqual(['lookalike-token']);
    expect(of({ name: 'x', symbol: 'USDТ' })).toEqual(['lookalike-token']); // Cyrillic Т
    expect(of({ name: 'x', symbol: 'ＵＳＤＣ' })).toEqual(['lookalike-token']); // full-width
    expect(of({ name: 'x', symbol: 'U\u200bSDC' })).toEqual(['lookalike-token']); // zero-width space
    expect(of({ name: 'Some Token', symbol: 'SOME' })).toEqual([]);
    expect(of({ name: 'Renamed', symbol: 'USDT' }, USDT.toUpperCase().replace('0X', '0x'))).toEqual([]);
    // Only the mainnet list ships; a test network has only what the operator lists.
    const sepolia = safetyPolicy({ blockchain: 'ethereum', network: 'sepolia' }, { knownTokens: [{ contract: USDT, symbol: 'USDT' }] });
    expect(safetyVerdict({ token: { transfer: transfer(OTHER), metadata: tether } }, sepolia).flags).toEqual(['lookalike-token']);
    expect(safetyVerdict({ token: { transfer: transfer(OTHER), metadata: { name: 'USD Coin', symbol: 'USDC', decimals: 6 } } }, sepolia).flags).toEqual([]);
  });

  it('zero-value and unknown-token: a fungible transfer of 0; a contract that answers neither name nor symbol (or nothing at all)', () => {
    expect(safetyVerdict({ token: { transfer: transfer(OTHER, 0n), metadata: { name: 'A', symbol: 'A', decimals: 0 } } }, ethereum).flags).toEqual([
      'zero-value',
    ]);
    expect(safetyVerdict({ token: { transfer: transfer(OTHER), metadata: undefined } }, ethereum).flags).toEqual(['unknown-token']);
    expect(safetyVerdict({ token: { transfer: transfer(OTHER, 0n), metadata: { name: '', symbol: '', decimals: 0 } } }, ethereum).flags).toEqual([
      'zero-value',
      'unknown-token',
    ]);
    // An NFT has no amount: never zero-value.
    expect(safetyVerdict({ token: { transfer: transfer(OTHER, undefined), metadata: { name: 'N', symbol: 'N', decimals: 0 } } }, ethereum).flags).toEqual([]);
  });

  it('dust: off on account chains unless configured; Bitcoin family by the output script type read from the address', () => {
    const received = (address: string, amount: bigint) => ({ received: { address, amount } });
    expect(safetyVerdict(received(OTHER, 1n), ethereum).flags).toEqual([]);
    const configured = safetyPolicy({ blockchain: 'ethereum', network: 'mainnet' }, { dustThreshold: '1000' });
    expect(safetyVerdict(received(OTHER, 999n), configured).flags).toEqual(['dust']);
    expect(safetyVerdict(received(OTHER, 1000n), configured).flags).toEqual([]);

    const bitcoin = safetyPolicy({ blockchain: 'bitcoin', network: 'testnet' });
    expect(safetyVerdict(received('mgqyYb6STs2o9vY4PSN4yyhFNkm7HBsxVE', 545n), bitcoin).flags).toEqual(['dust']);
    expect(safetyVerdict(received('mgqyYb6STs2o9vY4PSN4yyhFNkm7HBsxVE', 546n), bitcoin).flags).toEqual([]);
    expect(safetyVerdict(received('tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', 294n), bitcoin).flags).toEqual([]);
    expect(safetyVerdict(received('tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', 293n), bitcoin).flags).toEqual(['dust']);
    // Litecoin Core's dust relay fee is ten times Bitcoin Core's (test/litecoin-coins.test.ts checks it on litecoind).
    const litecoin = safetyPolicy({ blockchain: 'litecoin', network: 'testnet' });
    expect(safetyVerdict(received('rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9', 2939n), litecoin).flags).toEqual(['dust']);
    expect(safetyVerdict(received('rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9', 2940n), litecoin).flags).toEqual([]);
    // "0" turns it off on a Bitcoin-family chain too.
    expect(
      safetyVerdict(received('mgqyYb6STs2o9vY4PSN4yyhFNkm7HBsxVE', 1n), safetyPolicy({ blockchain: 'litecoin', network: 'testnet' }, { dustThreshold: '0' }))
        .flags,
    ).toEqual([]);
    expect(safetyVerdict(received('DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L', 999_999n), safetyPolicy({ blockchain: 'dogecoin', network: 'mainnet' })).flags).toEqual(
      ['dust'],
    );
  });
});

describe('utxoDustThreshold', () => {
  it("is the node's threshold of the address's output type (BIP173/BIP350 test vectors): Bitcoin Core 546, 294, 330; Litecoin Core ten times", () => {
    const bitcoin = (address: string) => utxoDustThreshold('bitcoin', address);
    expect(bitcoin('1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2')).toBe(546n);
    expect(bitcoin('3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy')).toBe(546n);
    expect(bitcoin('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4')).toBe(294n);
    expect(bitcoin('BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4')).toBe(294n);
    expect(bitcoin('tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7')).toBe(330n);
    expect(bitcoin('bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0')).toBe(330n);
    expect(utxoDustThreshold('bitcoin-cash', 'bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a')).toBe(546n);
    expect(utxoDustThreshold('litecoin', 'ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9')).toBe(2940n);
    expect(utxoDustThreshold('litecoin', 'LVg2kJoFNg45Nbpy53h7Fe1wKyeXVRhMH9')).toBe(5460n);
    expect(utxoDustThreshold('dogecoin', 'DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L')).toBe(1_000_000n);
  });
});

describe('comparableText', () => {
  it('folds case, width, spacing, invisible characters and Cyrillic or Greek imitations of Latin letters', () => {
    expect(comparableText(' Tether  USD ')).toBe('TETHERUSD');
    expect(comparableText('ТЕТНЕR')).toBe('TETHER');
    expect(comparableText('ΑΒC')).toBe('ABC');
  });
});

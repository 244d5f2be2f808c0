/**
 * Token contracts' answers to name(), symbol(), decimals() and balanceOf() (eth_call results; Tron's TRC-20
 * calls answer the same ABI) as text and numbers. Pure, and never throws: a hostile or broken contract
 * answers garbage, which reads as '' or 0.
 */
import type { StoredTokenMetadata, TokenMetadataCache, TokenMetadataKey } from './types.ts';

/** A contract's name or symbol is shown in every callback: a hostile token must not make them huge. */
const MAX_TEXT_LENGTH = 256;

/** Bytes of a hex string, or undefined when it is not whole bytes of hex. */
function hexBytes(data: string | undefined): Buffer | undefined {
  if (data === undefined || !/^0x([0-9a-fA-F]{2})*$/.test(data)) return undefined;
  return Buffer.from(data.slice(2), 'hex');
}

/** The first 32-byte word as 0x-hex (a uint256 result such as balanceOf()), or undefined when there is none. */
export function firstWord(data: string | undefined): string | undefined {
  const bytes = hexBytes(data);
  return bytes !== undefined && bytes.length >= 32 ? `0x${bytes.subarray(0, 32).toString('hex')}` : undefined;
}

/**
 * name()/symbol() result as text: an ABI `string`, or a `bytes32` (MKR, SAI and other early tokens)
 * read up to its first NUL. Anything else gives ''. Control characters are dropped (PostgreSQL text
 * takes no NUL; callbacks should not carry them), the result trimmed and capped.
 */
export function decodeText(data: string | undefined): string {
  const bytes = hexBytes(data);
  if (bytes === undefined || bytes.length === 0) return '';
  let text: Buffer | undefined;
  if (bytes.length === 32) {
    text = bytes;
  } else if (bytes.length >= 64) {
    // Offset and length are 32-byte words; BigInt, so a garbage word cannot overflow the bounds checks.
    const word = (at: number) => BigInt(`0x${bytes.subarray(at, at + 32).toString('hex')}`);
    const offset = word(0);
    if (offset + 32n <= BigInt(bytes.length)) {
      const start = Number(offset) + 32;
      const length = word(start - 32);
      if (BigInt(start) + length <= BigInt(bytes.length)) text = bytes.subarray(start, start + Number(length));
    }
  }
  if (text === undefined) return '';
  const nul = text.indexOf(0);
  const decoded = new TextDecoder('utf-8').decode(nul === -1 ? text : text.subarray(0, nul));
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  const clean = decoded.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return Array.from(clean).slice(0, MAX_TEXT_LENGTH).join('');
}

/** decimals() result: a uint8 in the first word; missing or out of range gives 0. */
export function decodeDecimals(data: string | undefined): number {
  const word = firstWord(data);
  if (word === undefined) return 0;
  const value = BigInt(word);
  return value <= 255n ? Number(value) : 0;
}

/**
 * A token contract's name, symbol and decimals (EVM and TRC-20: the same ABI): from the cache when it
 * has them, else read from the contract at its latest state (the facts of a deployed token do not depend
 * on the height), decoded, and stored.
 */
export async function contractTokenMetadata(
  cache: TokenMetadataCache | undefined,
  key: TokenMetadataKey,
  tokenType: string,
  call: (method: 'name' | 'symbol' | 'decimals') => Promise<string | undefined>,
): Promise<StoredTokenMetadata> {
  const stored = await cache?.get(key);
  if (stored) return stored;
  const [name, symbol, decimals] = await Promise.all([call('name'), call('symbol'), call('decimals')]);
  const metadata = { name: decodeText(name), symbol: decodeText(symbol), decimals: decodeDecimals(decimals), tokenType };
  await cache?.put(key, metadata);
  return metadata;
}

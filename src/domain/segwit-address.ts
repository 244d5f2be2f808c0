/**
 * Segwit addresses (BIP173 bech32 for version 0, BIP350 bech32m for version 1) of a witness program, spelt
 * as @scure/base's bech32.encode(hrp, [version, ...toWords(program)]) spells them (lower case), without its
 * arrays of words: deriving a wallet key's window encodes an address per child, and this is a few times
 * faster (docs/concepts/wallet-keys.md#derivation-speed). Checked against @scure/base in segwit-address.test.ts.
 */
const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const CHARSET_CODES = Uint8Array.from(CHARSET, (c) => c.charCodeAt(0));
const BECH32_CONST = 1;
const BECH32M_CONST = 0x2bc830a3;

function polymodStep(pre: number): number {
  const b = pre >>> 25;
  return (
    (((pre & 0x1ffffff) << 5) ^
      (-(b & 1) & 0x3b6a57b2) ^
      (-((b >>> 1) & 1) & 0x26508e6d) ^
      (-((b >>> 2) & 1) & 0x1ea119fa) ^
      (-((b >>> 3) & 1) & 0x3d4233dd) ^
      (-((b >>> 4) & 1) & 0x2a1462b3)) >>>
    0
  );
}

/** The checksum state after the human-readable part, per hrp (a handful of them). */
const hrpStates = new Map<string, number>();
function hrpState(hrp: string): number {
  let state = hrpStates.get(hrp);
  if (state !== undefined) return state;
  if (!/^[a-z0-9]{1,83}$/.test(hrp)) throw new Error(`'${hrp}' is not a lower-case bech32 prefix`);
  state = 1;
  for (let i = 0; i < hrp.length; i++) state = polymodStep(state) ^ (hrp.charCodeAt(i) >>> 5);
  state = polymodStep(state);
  for (let i = 0; i < hrp.length; i++) state = polymodStep(state) ^ (hrp.charCodeAt(i) & 31);
  hrpStates.set(hrp, state);
  return state;
}

/** The address of witness `version` (0: bech32, 1..16: bech32m) and `program` (2 to 40 bytes) under `hrp`. */
export function segwitAddress(hrp: string, version: number, program: Uint8Array): string {
  if (!(Number.isInteger(version) && version >= 0 && version <= 16)) throw new RangeError(`witness version ${version}`);
  if (program.length < 2 || program.length > 40) throw new RangeError(`a witness program of ${program.length} bytes`);
  const codes: number[] = [];
  for (let i = 0; i < hrp.length; i++) codes.push(hrp.charCodeAt(i));
  codes.push(49); // '1'
  let state = polymodStep(hrpState(hrp)) ^ version;
  codes.push(CHARSET_CODES[version] as number);
  // The program's bytes as 5-bit words, the last one padded with zero bits.
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < program.length; i++) {
    acc = ((acc << 8) | (program[i] as number)) & 0xfff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      const word = (acc >>> bits) & 31;
      state = polymodStep(state) ^ word;
      codes.push(CHARSET_CODES[word] as number);
    }
  }
  if (bits > 0) {
    const word = (acc << (5 - bits)) & 31;
    state = polymodStep(state) ^ word;
    codes.push(CHARSET_CODES[word] as number);
  }
  for (let i = 0; i < 6; i++) state = polymodStep(state);
  state = (state ^ (version === 0 ? BECH32_CONST : BECH32M_CONST)) >>> 0;
  for (let i = 0; i < 6; i++) codes.push(CHARSET_CODES[(state >>> (5 * (5 - i))) & 31] as number);
  if (codes.length > 90) throw new RangeError(`a bech32 address of ${codes.length} characters`);
  return String.fromCharCode.apply(null, codes);
}

/**
 * JSON text as Bitcoin Core's UniValue writes it: compact, keys in insertion order, and coin amounts as
 * ValueFromAmount prints them — a JSON number with exactly eight decimals ("50.00000000", "0.00000546"),
 * written from the satoshi integer so no float ever rounds it. JSON.stringify cannot do that (it would
 * print 50 and 5.46e-6), hence this small writer.
 */

/** A coin amount in base units; written as Core's ValueFromAmount (a number with 8 decimals). */
export class Coins {
  constructor(readonly sats: bigint) {}
}

/** A JSON number written exactly as given (e.g. a double as the node prints it). */
export class RawNumber {
  constructor(readonly text: string) {}
}

export function coinText(sats: bigint): string {
  const negative = sats < 0n;
  const abs = negative ? -sats : sats;
  return `${negative ? '-' : ''}${abs / 100_000_000n}.${(abs % 100_000_000n).toString().padStart(8, '0')}`;
}

/** Omni Core's FormatDivisibleMP / FormatIndivisibleMP: a decimal string, 8 decimals when divisible. */
export function omniAmountText(units: bigint, divisible: boolean): string {
  return divisible ? coinText(units) : units.toString();
}

export function toJsonText(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (value instanceof Coins) return coinText(value.sats);
  if (value instanceof RawNumber) return value.text;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
      return JSON.stringify(value);
    case 'bigint':
      return value.toString();
    case 'object':
      if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
      return `{${Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`)
        .join(',')}}`;
    default:
      throw new Error(`cannot write ${typeof value} as JSON`);
  }
}

/**
 * The safety verdict of a callback (docs/concepts/deposit-safety.md): `data.item.safety` of every coin,
 * token and internal-transfer event, `{ verdict: 'ok' | 'review', flags }`, from what the chain adapter
 * told of the transaction and the chain's policy (dust thresholds, well-known tokens). Pure: the same
 * match, facts and policy give the same verdict, so a rebuilt callback has the same body.
 */
import type { TokenMetadata, TokenTransfer } from '../chains/types.ts';
import { type Blockchain, CHAINS, type ChainKey } from '../domain/chains.ts';
import { KNOWN_TOKENS, type KnownToken } from './known-tokens.ts';

/** In the order they are listed in a callback. */
export const SAFETY_FLAGS = ['dust', 'rbf', 'partial-payment', 'lookalike-token', 'zero-value', 'unknown-token', 'failed'] as const;
export type SafetyFlag = (typeof SAFETY_FLAGS)[number];

export interface Safety {
  verdict: 'ok' | 'review';
  flags: SafetyFlag[];
}

/** What is known of the event's transaction and amount. */
export interface SafetyFacts {
  /** Native coin received by the subscribed address (incoming coin and internal events), base units. */
  received?: { address: string; amount: bigint };
  /** Token events: the transfer and its contract's metadata (undefined: the contract answered nothing). */
  token?: { transfer: TokenTransfer; metadata: TokenMetadata | undefined };
  /** EVM receipt status 0, Tron contractRet not SUCCESS, XRP tec… result. */
  failed?: boolean;
  /** XRP Payment with tfPartialPayment. */
  partialPayment?: boolean;
  /** Unconfirmed and signalling BIP125 replaceability. */
  replaceable?: boolean;
}

/** A chain's thresholds and list (safetyPolicy builds it from the defaults and the chain's configuration). */
export interface SafetyPolicy {
  /** The dust threshold of an output paying `address`, base units; 0n: no dust flag. */
  dustThreshold(address: string): bigint;
  /** True when no address has a dust threshold (account chains by default): the verdict skips the lookup. */
  dustOff: boolean;
  /** The symbols and names of the known tokens, as comparableText spells them. */
  knownTexts: ReadonlySet<string>;
  /** Every known contract (normalised): none of them is a look-alike, whatever it calls itself. */
  knownContracts: ReadonlySet<string>;
  normaliseContract(contract: string): string;
  /** Whether a symbol or name, as the contract gives it, is one of knownTexts: memoised (a block repeats a few tokens). */
  isKnownText(text: string): boolean;
}

/** The chain's configuration of the verdict (docs/reference/configuration.md#chains). */
export interface SafetySettings {
  /** Base units, a decimal integer; '0' turns the flag off. Bitcoin family: replaces every script type's threshold. */
  dustThreshold?: string;
  knownTokens?: readonly KnownToken[];
}

const OK: Safety = Object.freeze({ verdict: 'ok', flags: Object.freeze([]) as unknown as SafetyFlag[] }) as Safety;

/** The verdict of one event. */
export function safetyVerdict(facts: SafetyFacts, policy: SafetyPolicy): Safety {
  const received = facts.received;
  return safetyVerdictOf(
    policy,
    received?.address,
    received?.amount ?? 0n,
    facts.replaceable === true,
    facts.partialPayment === true,
    facts.failed === true,
    facts.token?.transfer,
    facts.token?.metadata,
  );
}

/**
 * The verdict from its facts as arguments: what the block pipeline calls once per match (its cost is a
 * benchmark target, docs/benchmarks.md), with no object of its own unless a flag is set. `receivedBy`:
 * the subscribed address receiving `amount` of the native coin (undefined: no coin received); `transfer`:
 * a token event's transfer, `metadata` its contract's (undefined: the contract answered nothing).
 */
export function safetyVerdictOf(
  policy: SafetyPolicy,
  receivedBy: string | undefined,
  amount: bigint,
  replaceable: boolean,
  partialPayment: boolean,
  failed: boolean,
  transfer?: TokenTransfer,
  metadata?: TokenMetadata,
): Safety {
  // In SAFETY_FLAGS order.
  let flags: SafetyFlag[] | undefined;
  if (receivedBy !== undefined && !policy.dustOff && amount < policy.dustThreshold(receivedBy)) flags = ['dust'];
  if (replaceable) flags = withFlag(flags, 'rbf');
  if (partialPayment) flags = withFlag(flags, 'partial-payment');
  if (transfer !== undefined) {
    const unknown = metadata === undefined || (metadata.name === '' && metadata.symbol === '');
    if (!unknown && isLookalike(transfer.contract, metadata, policy)) flags = withFlag(flags, 'lookalike-token');
    if (transfer.amount === 0n) flags = withFlag(flags, 'zero-value');
    if (unknown) flags = withFlag(flags, 'unknown-token');
  }
  if (failed) flags = withFlag(flags, 'failed');
  return flags === undefined ? OK : { verdict: 'review', flags };
}

function withFlag(flags: SafetyFlag[] | undefined, flag: SafetyFlag): SafetyFlag[] {
  if (flags === undefined) return [flag];
  flags.push(flag);
  return flags;
}

/** A known token's symbol or name on another contract. The texts first: most tokens match none, and then no contract is normalised. */
function isLookalike(contract: string, metadata: TokenMetadata, policy: SafetyPolicy): boolean {
  if (policy.knownTexts.size === 0) return false;
  const { symbol, name } = metadata;
  if (!((symbol !== '' && policy.isKnownText(symbol)) || (name !== '' && policy.isKnownText(name)))) return false;
  return !policy.knownContracts.has(policy.normaliseContract(contract));
}

/**
 * Latin letters that Cyrillic and Greek capitals and small letters imitate: a look-alike "USDТ" (Cyrillic
 * Т) compares equal to USDT. Not the whole Unicode confusables table, the letters token names are faked with.
 */
const CONFUSABLES: Readonly<Record<string, string>> = {
  А: 'A',
  В: 'B',
  Е: 'E',
  К: 'K',
  М: 'M',
  Н: 'H',
  О: 'O',
  Р: 'P',
  С: 'C',
  Т: 'T',
  Х: 'X',
  У: 'Y',
  І: 'I',
  Ѕ: 'S',
  Ј: 'J',
  а: 'a',
  е: 'e',
  о: 'o',
  р: 'p',
  с: 'c',
  у: 'y',
  х: 'x',
  і: 'i',
  ѕ: 's',
  ј: 'j',
  Α: 'A',
  Β: 'B',
  Ε: 'E',
  Ζ: 'Z',
  Η: 'H',
  Ι: 'I',
  Κ: 'K',
  Μ: 'M',
  Ν: 'N',
  Ο: 'O',
  Ρ: 'P',
  Τ: 'T',
  Υ: 'Y',
  Χ: 'X',
  ο: 'o',
  ν: 'v',
};

const PLAIN_ASCII = /^[!-~]*$/;

/** A symbol or name as compared: NFKC (full-width letters), confusables mapped, no spaces nor invisible characters, upper case. */
export function comparableText(text: string): string {
  // Printable ASCII without spaces (nearly every token's symbol and many names): NFKC and the confusables leave it as it is.
  if (PLAIN_ASCII.test(text)) return text.toUpperCase();
  let out = '';
  for (const ch of text.normalize('NFKC')) {
    if (/[\s\u200b-\u200f\u2060\ufeff]/u.test(ch)) continue;
    out += CONFUSABLES[ch] ?? ch;
  }
  return out.toUpperCase();
}

/**
 * Bitcoin Core's dust rule (GetDustThreshold, docs/concepts/deposit-safety.md#dust): an output is dust when
 * it is worth less than the fee, at the dust relay fee, of itself plus the input that spends it. These are
 * those sizes in virtual bytes: legacy (P2PKH 34 + 148), segwit v0 key hash (31 + 67), segwit v0 script
 * hash and taproot (43 + 67). P2SH (32 + 148) is counted as legacy: its address does not say so on every chain.
 */
export const DUST_SIZES = { legacy: 182n, segwitV0KeyHash: 98n, segwitV0ScriptHash: 110n, taproot: 110n } as const;

/** Satoshi per 1000 virtual bytes: the nodes' default -dustrelayfee (Bitcoin Core 0.00003 BTC/kvB; Litecoin Core 0.0003 LTC/kvB, ten times it). */
const DUST_RELAY_FEE: Partial<Record<Blockchain, bigint>> = { litecoin: 30_000n };
const DEFAULT_DUST_RELAY_FEE = 3_000n;

/** Chains whose nodes use one fixed threshold for every output instead (base units). */
const FIXED_DUST: Partial<Record<Blockchain, bigint>> = {
  // Dogecoin Core 1.14: -dustlimit defaults to 0.01 DOGE.
  dogecoin: 1_000_000n,
};

const SEGWIT = /^(bc|tb|bcrt|ltc|tltc|rltc)1([qpzry9x8gf2tvdw0s3jn54khce6mua7l])/i;

/** The size (DUST_SIZES) of an output paying a Bitcoin-family `address`, its script type read from its spelling. */
export function dustSize(address: string): bigint {
  const segwit = SEGWIT.exec(address);
  if (segwit === null) return DUST_SIZES.legacy;
  if ((segwit[2] as string).toLowerCase() !== 'q') return DUST_SIZES.taproot;
  // Witness program length from the spelling: 5-bit groups after the version, less the 6 of the checksum.
  const groups = address.length - (segwit[1] as string).length - 1 - 1 - 6;
  return groups === 32 ? DUST_SIZES.segwitV0KeyHash : DUST_SIZES.segwitV0ScriptHash;
}

/** The dust threshold of an output paying `address` on a Bitcoin-family chain, base units. */
export function utxoDustThreshold(blockchain: Blockchain, address: string): bigint {
  const fixed = FIXED_DUST[blockchain];
  if (fixed !== undefined) return fixed;
  return (dustSize(address) * (DUST_RELAY_FEE[blockchain] ?? DEFAULT_DUST_RELAY_FEE)) / 1000n;
}

const policies = new Map<string, SafetyPolicy>();

/**
 * The policy of `chain` with its settings: memoised per chain and settings (the follower, the mempool
 * reader and the block jobs of a chain share one).
 */
export function safetyPolicy(chain: ChainKey, settings: SafetySettings = {}): SafetyPolicy {
  const memo = `${chain.blockchain}/${chain.network}/${settings.dustThreshold ?? ''}/${JSON.stringify(settings.knownTokens ?? [])}`;
  const cached = policies.get(memo);
  if (cached !== undefined) return cached;
  const family = CHAINS[chain.blockchain].family;
  const normaliseContract = family === 'evm' ? (c: string) => c.toLowerCase() : (c: string) => c;
  const configured = settings.dustThreshold === undefined ? undefined : BigInt(settings.dustThreshold);
  let dustThreshold: (address: string) => bigint;
  if (configured !== undefined) dustThreshold = () => configured;
  else if (family === 'utxo') dustThreshold = (address) => utxoDustThreshold(chain.blockchain, address);
  else dustThreshold = () => 0n;
  const knownTexts = new Set<string>();
  const knownContracts = new Set<string>();
  const shipped = chain.network === 'mainnet' ? (KNOWN_TOKENS[chain.blockchain] ?? []) : [];
  for (const token of [...shipped, ...(settings.knownTokens ?? [])]) {
    knownContracts.add(normaliseContract(token.contract));
    for (const text of [token.symbol, token.name]) {
      if (text !== undefined && text !== '') knownTexts.add(comparableText(text));
    }
  }
  const textsSeen = new Map<string, boolean>();
  const isKnownText = (text: string): boolean => {
    let known = textsSeen.get(text);
    if (known === undefined) {
      known = knownTexts.has(comparableText(text));
      if (textsSeen.size >= 10_000) textsSeen.clear();
      textsSeen.set(text, known);
    }
    return known;
  };
  const dustOff = configured === 0n || (configured === undefined && family !== 'utxo');
  const policy: SafetyPolicy = { dustThreshold, dustOff, knownTexts, knownContracts, normaliseContract, isKnownText };
  if (policies.size > 1000) policies.clear();
  policies.set(memo, policy);
  return policy;
}

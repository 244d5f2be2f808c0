/**
 * The matching benchmark. Targets (from the issue, verbatim): "1,000,000 active subscriptions (600k
 * address, 300k transaction id, 100k thresholds), synthetic blocks with 2,000 transactions, 3,000 token
 * transfers and 500 internal transfers: at least 2,000,000 items matched per second on one core; index
 * built in at most 3 s; at most 400 bytes of heap per subscription."
 *
 * Everything runs in one process with --expose-gc (a child, `node --expose-gc --import tsx
 * bench/matching.ts --child`, unless this one already has gc), on one thread, on ethereum mainnet data:
 *   - subscriptions: 600k ADDRESS_TOKENS_TRANSACTION_CONFIRMED on 600k distinct addresses, 300k
 *     TRANSACTION_MINED on 300k distinct transaction ids, 100k thresholds uniform over 1..1,000,000
 *     whole ETH; interleaved (6:3:1), 1,000 customers; generated in batches of 10,000 rows shaped like
 *     store rows (flat strings, as pg makes them), and only the index's add() calls are timed (buildMs),
 *     into an index presized to the row count as the ingest service makes it (src/ingest/service.ts);
 *   - heap per subscription: (heapUsed + arrayBuffers) after the build minus before, both after full
 *     GCs, over 1,000,000; typed arrays live outside the V8 heap, so arrayBuffers is counted too;
 *   - blocks: each with fresh strings (new string objects, hashes not yet computed, as when parsed from
 *     a node's answer; hits are fresh copies of subscribed targets), 5 % of items hitting a
 *     subscription: 100 subscribed transaction ids, 150 token transfers with one side on a subscribed
 *     address (1 in 10 of those to itself), 25 internal transfers of 1 to 100 ETH (over 5 thresholds
 *     each on average: 0.1 per ETH); the other internal transfers stay under 1 ETH, the lowest threshold;
 *   - items/s: the items of a block over its matchBlock time, median of the measured blocks after warm-up.
 *     The items of a block are everything matching looks at, each a lookup or a comparison: transactions +
 *     token transfers + internal transfers + coin movements (this run's blocks have no coin movements:
 *     2,000 + 3,000 + 500 = 5,500 items). The first measured block's match counts are checked by brute force.
 *     The time per block grows with the matches it makes (each builds a SubscriptionRecord), so the hit
 *     rate and the threshold distribution are part of the figure;
 *   - also reported, without a target: µs per match to build its callback (idempotency key, item, body).
 *   - the safety verdict's cost (issue 33: "Computing the verdict costs <= 5 % of the block pipeline's
 *     throughput, ratio with and without, same run"): the block pipeline (matchBlock, then each match's
 *     key, item and body, as src/matching/events.ts builds them) without the verdict (no `safety` field
 *     in any body: the code as it would be without the feature) and with it (matchSafety, as
 *     src/matching/events.ts calls it, on ethereum mainnet's policy, 1 % of the block's transactions
 *     failed), after the matching, in a phase of its own (measureSafety), in rounds: per round,
 *     SAFETY_BLOCKS fresh blocks, matched once untimed (both sides then find their strings hashed, as the
 *     pipeline after the matching phase does; the transaction ids also in a Set, as the EVM adapter's
 *     normalisation puts them: src/chains/evm/normalize.ts), a full GC (no side inherits the other's garbage from the
 *     round before), then per block matchBlock once and its callbacks (key, item, body of every match)
 *     four times, in the order with, without, without, with (the reverse on every other block:
 *     ABBA/BAAB, so a drift, a collection that one side's allocations start and the other finishes, and
 *     the position after matchBlock cancel out), each timed in CPU time of the process (process.cpuUsage,
 *     user + system: what a shared machine does not steal; it includes the collections each side's
 *     allocations cause) and in wall time. matchBlock is the same work on both sides: timed once per
 *     block, it counts in both pipelines, and its own variation (random reads over the index, the part a
 *     busy machine slows most) stays out of the difference. SAFETY_WARMUP_ROUNDS rounds first, untimed,
 *     compile both sides; the contract run and the mix alternate round by round. `safetyCostRatio` =
 *     (matchBlock + callbacks with) / (matchBlock + callbacks without) - 1, each a sum over the run
 *     (throughput: the same blocks in more time), target <= 0.05; `safetyCost` has its 95 % interval (mean
 *     of the rounds' ratios +- 1.96 standard errors), the rounds' median and range, the same ratio in wall
 *     time, ms per block of each part and body bytes per block. Without the verdict no body has a
 *     `safety` field (the target is the cost of computing and carrying it).
 *
 * A second run, `mix` (the issue's second target: "a mix with 1,000,000 subscriptions of all kinds (at
 * least 50 % address-coins): still >= 2,000,000 items/s on one core, index built in <= 3 s, <= 400 bytes
 * per subscription"; figures under `mix` in the JSON line, with its items/s over the first run's, measured
 * in the same process), indexes 1,000,000 subscriptions of every kind, per group of 20 (see
 * mixSubscription): 9 ADDRESS_COINS_TRANSACTION_CONFIRMED and 1 of its each-confirmation kind on the
 * group's 10 addresses (500,000 addresses, 50 % of the subscriptions), 1 coin amount threshold, 2
 * ADDRESS_TOKENS_TRANSACTION_CONFIRMED and 1 of its each-confirmation kind, 1 internal-transfer address
 * subscription (once or each confirmation), all on addresses that also have coin subscriptions (one address
 * table serves every address kind, and each kind skips the others' slots), 2 TRANSACTION_MINED, 1 internal
 * amount threshold, 1 CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER (2 per contract over 25,000
 * contracts) and 1 BLOCK_HEIGHT_REACHED (heights over 100,000 blocks; 100 BLOCK_MINED and 100
 * BLOCK_REVERTED instead among them). Its blocks have the first run's 5,500 items, with hits on the mix's
 * targets (5 %, plus 1 in 20 token transfers of a subscribed contract and 1 in 20 internal transfers to a
 * subscribed address), and the coin movements an EVM adapter books for them (see syntheticBlock: the
 * sender of every transaction, the recipient of the 40 % that carry value, both sides of every internal
 * transfer; one net per transaction and address): about 3,800 movements, 175 of them (4.6 %) on a coin
 * address of the mix, so about 9,300 items per block. Every event type's match count of the first measured
 * block is checked by brute force (BLOCK_REVERTED, which matchRevertedBlock gives, untimed).
 * BENCH_DURATION does not apply: the work is a fixed number of blocks.
 *
 * Runs: MATCHING_RUNS (default 5) fresh processes in turn, each building both indexes and matching
 * both runs' blocks; the JSON line has the medians of the figures that vary (items/s, items per CPU
 * second, build time, memory per subscription, load average), each run's under `runs`, and its pass
 * marks are the medians'. On a shared machine the items per CPU second are the fairer figure: time the
 * process spent waiting for a core is not in it.
 */

import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MovementBook } from '../src/chains/movements.ts';
import type { InternalTransfer, NormalizedBlock, TokenTransfer } from '../src/chains/types.ts';
import { callbackBody } from '../src/domain/callbacks.ts';
import type { EventType } from '../src/domain/chains.ts';
import type { IndexableSubscription } from '../src/domain/subscriptions.ts';
import { matchSafety } from '../src/matching/events.ts';
import { callbackItem, matchIdempotencyKey } from '../src/matching/identity.ts';
import { SubscriptionIndex } from '../src/matching/index.ts';
import { type Match, matchBlock, matchRevertedBlock } from '../src/matching/match.ts';
import { safetyPolicy } from '../src/matching/safety.ts';
import { envInt, log, median, mix, onCleanup, percentile, ROOT } from './lib.ts';

const THIS_FILE = fileURLToPath(import.meta.url);

const ADDRESS_SUBS = 600_000;
const TRANSACTION_SUBS = 300_000;
const THRESHOLD_SUBS = 100_000;
const TOTAL_SUBS = ADDRESS_SUBS + TRANSACTION_SUBS + THRESHOLD_SUBS;
const MAX_THRESHOLD_COINS = 1_000_000;
const CUSTOMERS = 1000;
const BATCH = 10_000;

const TRANSACTIONS = 2000;
const TOKEN_TRANSFERS = 3000;
const INTERNAL_TRANSFERS = 500;
const HIT_RATE = 0.05;
const WARMUP_BLOCKS = 20;
const MEASURED_BLOCKS = 51;

const WEI = 10n ** 18n;
const TARGETS = { itemsPerSecond: 2_000_000, buildMs: 3000, bytesPerSubscription: 400, safetyCostRatio: 0.05 };
const CHAIN = { blockchain: 'ethereum', network: 'mainnet' } as const;

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

// ---------------------------------------------------------------------------------------------------
// Deterministic synthetic data, as flat strings (Buffer.toString), the way pg and JSON parsing make them.

const HEX_CODES = Buffer.from('0123456789abcdef');
const scratch = Buffer.alloc(128);

/** '0x' + 8 * words hex digits derived from (i, salt). */
function hexId(salt: number, i: number, words: number): string {
  scratch[0] = 48; // 0
  scratch[1] = 120; // x
  let at = 2;
  for (let w = 0; w < words; w++) {
    const word = mix(i, salt * 16 + w);
    for (let shift = 28; shift >= 0; shift -= 4) scratch[at++] = HEX_CODES[(word >>> shift) & 15] as number;
  }
  return scratch.toString('latin1', 0, at);
}

const address = (salt: number, i: number) => hexId(salt, i, 5);
const transactionId = (salt: number, i: number) => hexId(salt, i, 8);

/** A v4-shaped UUID from i, as one flat string. */
function uuid(i: number): string {
  let at = 0;
  for (let w = 0; w < 4; w++) {
    const word = mix(i, 16 + w);
    for (let shift = 28; shift >= 0; shift -= 4) {
      if (at === 8 || at === 13 || at === 18 || at === 23) scratch[at++] = 45; // -
      scratch[at++] = HEX_CODES[(word >>> shift) & 15] as number;
    }
  }
  scratch[14] = 52; // version 4
  return scratch.toString('latin1', 0, 36);
}

const SALT_SUB_ADDRESS = 2;
const SALT_SUB_TX = 3;
const SALT_OTHER_ADDRESS = 4;
const SALT_OTHER_TX = 5;
const SALT_THRESHOLD = 6;
const SALT_CONTRACT = 9;
const SALT_TOKEN_AMOUNT = 10;
const SALT_HEIGHT = 11;

/** Threshold of the k-th threshold subscription, whole coins, uniform over 1..MAX_THRESHOLD_COINS. */
const thresholdCoins = (k: number) => 1 + (mix(k, SALT_THRESHOLD) % MAX_THRESHOLD_COINS);

/** Subscription i: kinds interleaved 6:3:1 (address, transaction, threshold); k counts within the kind. */
function contractSubscription(i: number): IndexableSubscription {
  const group = Math.floor(i / 10);
  const r = i % 10;
  const common = { id: uuid(i), customerId: String(1 + (i % CUSTOMERS)), blockchain: 'ethereum', network: 'mainnet', isActive: true } as const;
  if (r < 6)
    return {
      ...common,
      eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
      target: address(SALT_SUB_ADDRESS, group * 6 + r),
      receiveCallbackOn: r === 0 ? null : r,
      amountHigherThan: null,
    };
  if (r < 9)
    return {
      ...common,
      eventType: 'TRANSACTION_MINED',
      target: transactionId(SALT_SUB_TX, group * 3 + r - 6),
      receiveCallbackOn: null,
      amountHigherThan: null,
    };
  return {
    ...common,
    eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
    target: null,
    receiveCallbackOn: null,
    amountHigherThan: BigInt(thresholdCoins(group)),
  };
}

// --- the mix run: every kind the index has, half of the subscriptions on coin addresses ---

/** Groups of 20 subscriptions in the mix run. */
const MIX_GROUPS = TOTAL_SUBS / 20;
/** Coin addresses per group: 10 (9 ADDRESS_COINS, 1 each-confirmation); tokens and internal transfers watch some of them too. */
const MIX_ADDRESSES_PER_GROUP = 10;
const MIX_ADDRESSES = MIX_GROUPS * MIX_ADDRESSES_PER_GROUP;
const MIX_TRANSACTIONS = MIX_GROUPS * 2;
const MIX_CONTRACTS = 25_000;
const MIX_HEIGHTS = 100_000;
const FIRST_HEIGHT = 20_000_000;
const SALT_COIN_THRESHOLD = 12;
const SALT_FEE = 13;
const GWEI = 10n ** 9n;

/**
 * What watches the a-th address of a group (a = k % 10 of address k): coins on all 10 (once on 0..8, at
 * each confirmation on 9); tokens on 0, 1 (once) and 2 (each confirmation); internal transfers on 3
 * (once in even groups, at each confirmation in odd ones). An exchange's deposit address is watched for
 * coins and often for tokens too: the lookups of one kind meet the other kinds' slots.
 */
function mixAddressKinds(k: number): EventType[] {
  const a = k % MIX_ADDRESSES_PER_GROUP;
  const group = Math.floor(k / MIX_ADDRESSES_PER_GROUP);
  const coins: EventType = a === 9 ? 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION' : 'ADDRESS_COINS_TRANSACTION_CONFIRMED';
  if (a === 0 || a === 1) return [coins, 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED'];
  if (a === 2) return [coins, 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION'];
  if (a === 3) return [coins, group % 2 === 0 ? 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED' : 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION'];
  return [coins];
}

const mixContract = (k: number) => address(SALT_CONTRACT, k);
/**
 * The k-th token amount subscription: contract k % MIX_CONTRACTS, whole tokens 0..1,000. Every one of a
 * contract is a candidate of almost every transfer of it (base units are at least the whole tokens; only
 * the decimals, known after matching, tell), so a transfer of a subscribed contract is as many matches as
 * the contract has subscriptions: 2 here, about as many as a hot internal transfer has thresholds.
 */
const mixTokenAmount = (k: number) => ({ contract: k % MIX_CONTRACTS, whole: BigInt(mix(k, SALT_TOKEN_AMOUNT) % 1001) });
/** The k-th height subscription's height, or a block kind (every 500th group: BLOCK_MINED, the next one BLOCK_REVERTED). */
const mixHeight = (k: number) => FIRST_HEIGHT + (mix(k, SALT_HEIGHT) % MIX_HEIGHTS);
const mixBlockKind = (group: number) => (group % 500 === 0 ? 'BLOCK_MINED' : group % 500 === 1 ? 'BLOCK_REVERTED' : undefined);
/** Coin threshold of group k, whole coins, uniform over 1..MAX_THRESHOLD_COINS (like the internal ones). */
const coinThresholdCoins = (k: number) => 1 + (mix(k, SALT_COIN_THRESHOLD) % MAX_THRESHOLD_COINS);

/**
 * Subscription i of the mix, per group of 20: r 0..8 ADDRESS_COINS_TRANSACTION_CONFIRMED and r 9 its
 * each-confirmation kind (the group's 10 addresses), r 10 a coin amount threshold, r 11..12
 * ADDRESS_TOKENS_TRANSACTION_CONFIRMED and r 13 its each-confirmation kind (on addresses 0..2 of the
 * group), r 14 internal transfers of address 3 (once or each confirmation), r 15..16 TRANSACTION_MINED,
 * r 17 an internal amount threshold, r 18 a token amount, r 19 BLOCK_HEIGHT_REACHED (BLOCK_MINED or
 * BLOCK_REVERTED in 1 group of 500 each).
 */
export function mixSubscription(i: number): IndexableSubscription {
  const group = Math.floor(i / 20);
  const r = i % 20;
  const common = { id: uuid(i), customerId: String(1 + (i % CUSTOMERS)), blockchain: 'ethereum', network: 'mainnet', isActive: true } as const;
  const none = { target: null, receiveCallbackOn: null, amountHigherThan: null } as const;
  const onAddress = (a: number, eventType: EventType, receiveCallbackOn: number | null) => ({
    ...common,
    ...none,
    eventType,
    target: address(SALT_SUB_ADDRESS, group * MIX_ADDRESSES_PER_GROUP + a),
    receiveCallbackOn,
  });
  const kindsOf = (a: number) => mixAddressKinds(group * MIX_ADDRESSES_PER_GROUP + a);
  if (r < 10) return onAddress(r, kindsOf(r)[0] as EventType, r % 3 === 0 ? null : 3 + r);
  if (r === 10)
    return { ...common, ...none, eventType: 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', amountHigherThan: BigInt(coinThresholdCoins(group)) };
  if (r < 14) return onAddress(r - 11, kindsOf(r - 11)[1] as EventType, r === 11 ? null : 12);
  if (r === 14) return onAddress(3, kindsOf(3)[1] as EventType, group % 3 === 0 ? null : 6);
  if (r < 17) return { ...common, ...none, eventType: 'TRANSACTION_MINED', target: transactionId(SALT_SUB_TX, group * 2 + r - 15) };
  if (r === 17)
    return { ...common, ...none, eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', amountHigherThan: BigInt(thresholdCoins(group)) };
  if (r === 18) {
    const { contract, whole } = mixTokenAmount(group);
    return {
      ...common,
      ...none,
      eventType: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
      target: mixContract(contract),
      amountHigherThan: whole,
    };
  }
  const blockKind = mixBlockKind(group);
  if (blockKind) return { ...common, ...none, eventType: blockKind };
  return { ...common, ...none, eventType: 'BLOCK_HEIGHT_REACHED', blockHeight: mixHeight(group) };
}

/** The mix's subscriptions per event type (from the generator, for the report). */
function mixCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < 20; i++) {
    // Kinds that differ between groups (internal once/each, height/every-block) are counted over all groups below.
    if (i === 14 || i === 19) continue;
    const eventType = mixSubscription(i).eventType;
    counts[eventType] = (counts[eventType] ?? 0) + MIX_GROUPS;
  }
  for (let group = 0; group < MIX_GROUPS; group++) {
    for (const r of [14, 19]) {
      const eventType = mixSubscription(group * 20 + r).eventType;
      counts[eventType] = (counts[eventType] ?? 0) + 1;
    }
  }
  return counts;
}

/** xorshift32: the blocks' randomness, seeded per block. */
function random(seed: number): () => number {
  let s = seed | 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

export interface SyntheticBlock {
  block: NormalizedBlock;
  expected: { transactions: number; tokens: number };
  hotInternal: InternalTransfer[];
  /** Coin movements on a subscribed address (mix run). */
  subscribedMovements: number;
}

const CONTRACTS = Array.from({ length: 50 }, (_, i) => address(7, i));

/** The i-th address of a random group of the mix (a fresh string, as parsed from a node's answer). */
function mixAddress(pick: (n: number) => number, a: number): string {
  return Buffer.from(address(SALT_SUB_ADDRESS, pick(MIX_GROUPS) * MIX_ADDRESSES_PER_GROUP + a), 'latin1').toString('latin1');
}

export function syntheticBlock(height: number, mixed = false): SyntheticBlock {
  const rand = random(mix(height, 99));
  const pick = (n: number) => Math.floor(rand() * n);
  const fresh = (s: string) => Buffer.from(s, 'latin1').toString('latin1'); // a new string object: no cached hash

  let expectedTx = 0;
  const transactionIds: string[] = [];
  for (let i = 0; i < TRANSACTIONS; i++) {
    if (i % 20 === 0) {
      transactionIds.push(fresh(transactionId(SALT_SUB_TX, pick(mixed ? MIX_TRANSACTIONS : TRANSACTION_SUBS))));
      expectedTx++;
    } else {
      transactionIds.push(transactionId(SALT_OTHER_TX, height * TRANSACTIONS + i));
    }
  }

  let expectedTokens = 0;
  const tokenTransfers: TokenTransfer[] = [];
  for (let i = 0; i < TOKEN_TRANSFERS; i++) {
    let from = address(SALT_OTHER_ADDRESS, height * TOKEN_TRANSFERS * 2 + i * 2);
    let to = address(SALT_OTHER_ADDRESS, height * TOKEN_TRANSFERS * 2 + i * 2 + 1);
    if (i % 20 === 0) {
      // The mix: an address of a group with a token subscription (0..2).
      const subscribed = mixed ? mixAddress(pick, pick(3)) : fresh(address(SALT_SUB_ADDRESS, pick(ADDRESS_SUBS)));
      if (i % 200 === 0) from = to = subscribed;
      else if (rand() < 0.5) from = subscribed;
      else to = subscribed;
      expectedTokens++;
    }
    const nft = i % 10 === 3;
    tokenTransfers.push({
      transactionId: transactionIds[pick(TRANSACTIONS)] as string,
      logIndex: i,
      tokenType: nft ? 'ERC-721' : 'ERC-20',
      // The mix run: 1 in 20 transfers (not those on a subscribed address) of a subscribed contract.
      contract: mixed && i % 20 === 10 ? fresh(mixContract(pick(MIX_CONTRACTS))) : (CONTRACTS[pick(CONTRACTS.length)] as string),
      from,
      to,
      ...(nft ? { tokenId: String(pick(1_000_000)) } : { amount: BigInt(pick(1_000_000_000)) * 1_000_000n }),
    });
  }

  const internalTransfers: InternalTransfer[] = [];
  const hotInternal: InternalTransfer[] = [];
  for (let i = 0; i < INTERNAL_TRANSFERS; i++) {
    const hot = i % 20 === 0;
    const amount = hot ? BigInt(1 + pick(100)) * WEI + BigInt(pick(1_000_000)) : BigInt(1 + pick(999_999)) * 1_000_000_000_000n;
    const transfer = {
      parentTransactionId: transactionIds[pick(TRANSACTIONS)] as string,
      operationId: `call_0_${i}`,
      // A contract's frame: 1 in 50 from one of 10 busy contracts (a router paying out), the others from its own.
      from: address(SALT_OTHER_ADDRESS, i % 50 === 7 ? -1 - (i % 10) : -1 - i),
      // The mix run: 1 in 20 (not the hot ones) to an address with an internal-transfer subscription (3).
      to: mixed && i % 20 === 10 ? mixAddress(pick, 3) : address(SALT_OTHER_ADDRESS, -100_000 - height * INTERNAL_TRANSFERS - i),
      amount,
    };
    internalTransfers.push(transfer);
    if (hot) hotInternal.push(transfer);
  }

  // The mix run's coin movements, as the EVM adapter books them (MovementBook: one net per transaction
  // and address, in block order): every transaction's sender pays its fee (and the value it sends), 40 %
  // of the transactions carry value to a recipient, and each internal transfer moves its amount from its
  // frame to its recipient. 1 sender in 20 and 1 value recipient in 16 (1 transaction in 40) is a coin
  // address of the mix; 1 transaction in 20 carries 1..100 ETH (the coin thresholds start at 1 ETH), the
  // others less than 1 ETH.
  let subscribedMovements = 0;
  const book = new MovementBook();
  if (mixed) {
    const internalByParent = new Map<string, InternalTransfer[]>();
    for (const t of internalTransfers) internalByParent.set(t.parentTransactionId, [...(internalByParent.get(t.parentTransactionId) ?? []), t]);
    for (let i = 0; i < TRANSACTIONS; i++) {
      const txId = transactionIds[i] as string;
      book.startTransaction(txId);
      const sender = i % 20 === 5 ? mixAddress(pick, pick(MIX_ADDRESSES_PER_GROUP)) : address(SALT_OTHER_ADDRESS, -1_000_000 - height * TRANSACTIONS - i);
      book.add(sender, -(21_000n * (10n + BigInt(mix(i, SALT_FEE) % 40)) * GWEI));
      if (i % 5 < 2) {
        const value = i % 20 === 1 ? BigInt(1 + pick(100)) * WEI + BigInt(pick(1_000_000)) : BigInt(1 + pick(999_999)) * 1_000_000_000_000n;
        const recipient = i % 40 === 6 ? mixAddress(pick, pick(MIX_ADDRESSES_PER_GROUP)) : address(SALT_OTHER_ADDRESS, -2_000_000 - height * TRANSACTIONS - i);
        book.move(sender, recipient, value);
      }
      for (const t of internalByParent.get(txId) ?? []) book.move(t.from, t.to, t.amount);
    }
    book.flush();
    for (const m of book.movements) if (isMixAddress(m.address)) subscribedMovements++;
  }
  return {
    block: {
      height,
      hash: hexId(8, height, 8),
      parentHash: hexId(8, height - 1, 8),
      timestamp: 1_700_000_000 + height * 12,
      transactionIds,
      tokenTransfers,
      internalTransfers,
      coinMovements: book.movements,
    },
    expected: { transactions: expectedTx, tokens: expectedTokens },
    hotInternal,
    subscribedMovements,
  };
}

/** Brute force: how many threshold subscriptions an internal transfer of `amount` wei must match. */
function thresholdsAtMost(amount: bigint, subs = THRESHOLD_SUBS): number {
  let n = 0;
  for (let k = 0; k < subs; k++) if (BigInt(thresholdCoins(k)) * WEI <= amount) n++;
  return n;
}

/** Address -> k (address(SALT_SUB_ADDRESS, k)) of the mix's addresses, built on first use. */
let mixAddressIndex: Map<string, number> | undefined;
function mixAddressOf(text: string): number | undefined {
  if (!mixAddressIndex) {
    mixAddressIndex = new Map();
    for (let k = 0; k < MIX_ADDRESSES; k++) mixAddressIndex.set(address(SALT_SUB_ADDRESS, k), k);
  }
  return mixAddressIndex.get(text);
}
const isMixAddress = (text: string) => mixAddressOf(text) !== undefined;

/**
 * Brute force of the mix run's matches per event type, from the generators and the block (not from the
 * index): the address kinds per side of each transfer and per (transaction, address) coin net, the
 * thresholds by comparing every one, the token amount candidates per contract, heights and every-block.
 */
function expectedMixMatches(block: NormalizedBlock): Record<string, number> {
  const counts: Record<string, number> = {};
  const add = (eventType: string, n = 1) => {
    if (n > 0) counts[eventType] = (counts[eventType] ?? 0) + n;
  };
  const amountsByContract = new Map<string, bigint[]>();
  const coinThresholds: bigint[] = [];
  for (let group = 0; group < MIX_GROUPS; group++) {
    const { contract, whole } = mixTokenAmount(group);
    const key = mixContract(contract);
    amountsByContract.set(key, [...(amountsByContract.get(key) ?? []), whole]);
    const kind = mixBlockKind(group);
    if (kind === 'BLOCK_MINED') add('BLOCK_MINED');
    else if (kind === undefined && mixHeight(group) === block.height) add('BLOCK_HEIGHT_REACHED');
    coinThresholds.push(BigInt(coinThresholdCoins(group)) * WEI);
  }
  const transactions = new Set(Array.from({ length: MIX_TRANSACTIONS }, (_, k) => transactionId(SALT_SUB_TX, k)));
  for (const id of block.transactionIds) if (transactions.has(id)) add('TRANSACTION_MINED');
  const sides = (from: string, to: string) => (from === to ? [from] : [from, to]);
  const kindsAt = (text: string) => {
    const k = mixAddressOf(text);
    return k === undefined ? [] : mixAddressKinds(k);
  };
  for (const t of block.tokenTransfers) {
    for (const side of sides(t.from, t.to)) for (const kind of kindsAt(side)) if (kind.startsWith('ADDRESS_TOKENS')) add(kind);
    // Candidates: an NFT reaches 0 and 1 token; base units reach at most as many whole tokens (matching keeps
    // those; the decimals, known later, decide).
    for (const whole of amountsByContract.get(t.contract) ?? [])
      if (t.amount === undefined ? whole <= 1n : t.amount >= whole) add('CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER');
  }
  for (const t of block.internalTransfers) {
    for (const side of sides(t.from, t.to)) for (const kind of kindsAt(side)) if (kind.startsWith('ADDRESS_INTERNAL')) add(kind);
    add('CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', thresholdsAtMost(t.amount, MIX_GROUPS));
  }
  // Coins (account chain): the net of each (transaction, address); the amount of a transaction is what its recipients received.
  const nets = new Map<string, bigint>();
  const amounts = new Map<string, bigint>();
  for (const m of block.coinMovements) nets.set(`${m.transactionId}/${m.address}`, (nets.get(`${m.transactionId}/${m.address}`) ?? 0n) + m.delta);
  for (const [key, net] of nets) {
    const [transaction, side] = key.split('/') as [string, string];
    if (net !== 0n) for (const kind of kindsAt(side)) if (kind.startsWith('ADDRESS_COINS')) add(kind);
    if (net > 0n) amounts.set(transaction, (amounts.get(transaction) ?? 0n) + net);
  }
  // Every coin threshold is at least 1 ETH: smaller amounts are not compared (a shortcut of the brute force only).
  for (const amount of amounts.values())
    if (amount >= WEI) add('CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', coinThresholds.filter((threshold) => threshold <= amount).length);
  return counts;
}

// ---------------------------------------------------------------------------------------------------

function gcNow(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('gc is not exposed (run node with --expose-gc)');
  gc();
  gc();
}

export interface Built {
  mixed: boolean;
  index: SubscriptionIndex;
  buildMs: number;
  buildWallMs: number;
  heapBytes: number;
  bufferBytes: number;
  bytesPerSubscription: number;
}

/**
 * Builds one run's index (the other run's, if built, stays alive: the memory figure is this one's
 * growth). Exported, with syntheticBlock, to profile matchBlock alone.
 */
export function build(mixed: boolean): Built {
  const subscription = mixed ? mixSubscription : contractSubscription;
  gcNow();
  const before = process.memoryUsage();

  log(`building the index of ${TOTAL_SUBS.toLocaleString('en')} subscriptions${mixed ? ' of every kind (the mix run)' : ''}`);
  // Presized to the row count, as the ingest service builds it from the rows it loaded (src/ingest/service.ts).
  const index = new SubscriptionIndex('ethereum', 'mainnet', { expectedSize: TOTAL_SUBS });
  let buildMs = 0;
  const wallStarted = performance.now();
  for (let start = 0; start < TOTAL_SUBS; start += BATCH) {
    const batch: IndexableSubscription[] = [];
    for (let i = start; i < Math.min(TOTAL_SUBS, start + BATCH); i++) batch.push(subscription(i));
    const t0 = performance.now();
    for (const sub of batch) index.add(sub);
    buildMs += performance.now() - t0;
  }
  const t0 = performance.now();
  index.settle();
  buildMs += performance.now() - t0;
  const buildWallMs = performance.now() - wallStarted;
  if (index.size !== TOTAL_SUBS) throw new Error(`index holds ${index.size} subscriptions, not ${TOTAL_SUBS}`);
  log(`built in ${round(buildMs)} ms of add() (${round(buildWallMs)} ms with row generation)`);

  gcNow();
  const after = process.memoryUsage();
  const heapBytes = after.heapUsed - before.heapUsed;
  const bufferBytes = after.arrayBuffers - before.arrayBuffers;
  const bytesPerSubscription = (heapBytes + bufferBytes) / TOTAL_SUBS;
  log(
    `memory: ${round(bytesPerSubscription)} bytes per subscription (V8 heap ${round(heapBytes / TOTAL_SUBS)}, typed arrays ${round(bufferBytes / TOTAL_SUBS)}; index reports ${round(index.externalBytes / TOTAL_SUBS)} in typed arrays)`,
  );
  return { mixed, index, buildMs, buildWallMs, heapBytes, bufferBytes, bytesPerSubscription };
}

/** One run's figures per measured block. */
interface Samples {
  times: number[];
  rates: number[];
  /** Items per second of CPU time of the process (what a busy shared machine does not steal). */
  cpuRates: number[];
  itemCounts: number[];
  movementCounts: number[];
  subscribedMovementCounts: number[];
  matchCounts: number[];
  buildUs: number[];
}

const SAFETY_POLICY = safetyPolicy(CHAIN);
/** Measured rounds of the safety phase per run (MATCHING_SAFETY_ROUNDS), after SAFETY_WARMUP_ROUNDS untimed ones. */
const SAFETY_ROUNDS = envInt('MATCHING_SAFETY_ROUNDS', 60);
const SAFETY_WARMUP_ROUNDS = 3;
/** Fresh blocks per round, each matched once and its callbacks built 4 times (2 with, 2 without): about 75 ms (contract run) and 210 ms (mix) of timed work a round (load 4). */
const SAFETY_BLOCKS = 10;
/** Heights of the safety phase's blocks: apart from the matching phase's. */
const SAFETY_FIRST_HEIGHT = FIRST_HEIGHT + 10_000;
const BENCH_TOKEN = { name: 'Token', symbol: 'TKN', decimals: 6 };

/**
 * What the block pipeline does after matchBlock, as src/matching/events.ts runs it: each match's key, item
 * (with the safety verdict when asked) and body. Without the verdict, no body has a `safety` field.
 */
function callbacksOf(matches: Match[], block: NormalizedBlock, withSafety: boolean): number {
  const failed = new Set(withSafety ? block.failedTransactionIds : undefined);
  const partial = new Set(withSafety ? block.partialPaymentIds : undefined);
  let bytes = 0;
  for (const m of matches) {
    const key = matchIdempotencyKey(m, CHAIN, block);
    const item = callbackItem(m, block, CHAIN, BENCH_TOKEN);
    if (withSafety) {
      const safety = matchSafety(m, BENCH_TOKEN, failed, partial, SAFETY_POLICY);
      if (safety !== undefined) item.safety = safety;
    }
    bytes += callbackBody({ id: m.subscription.id, eventType: m.eventType, apiVersion: '2021-03-20' }, key, item).length;
  }
  return bytes;
}

/** Milliseconds of CPU time of the process (user + system) and of wall time. */
interface Spent {
  cpu: number;
  wall: number;
}
const spent = (): Spent => ({ cpu: 0, wall: 0 });

/** Runs `work`, adding its CPU and wall time to `to`. */
function timed<T>(to: Spent, work: () => T): T {
  const cpuStarted = process.cpuUsage();
  const started = performance.now();
  const result = work();
  const wall = performance.now() - started;
  const cpu = process.cpuUsage(cpuStarted);
  to.cpu += (cpu.user + cpu.system) / 1000;
  to.wall += wall;
  return result;
}

/** One run's safety phase: matchBlock's time, the callbacks' per side (two passes per block each), body bytes, and each measured round's ratio. */
interface SafetySamples {
  match: Spent;
  callbacks: { with: Spent; without: Spent };
  blocks: number;
  bodyBytes: { with: number; without: number };
  roundRatios: number[];
}

/** The pipeline's cost ratio with the verdict: (match + callbacks with) / (match + callbacks without) - 1, each side's two passes per block halved. */
const costRatio = (match: number, withSafety: number, withoutSafety: number) => (match + withSafety / 2) / (match + withoutSafety / 2) - 1;

/**
 * The safety verdict's cost, per run (see the header): rounds of fresh blocks; per block matchBlock once,
 * then its callbacks with, without, without, with (or the reverse); the runs alternating round by round.
 */
function measureSafety(runs: Built[]): SafetySamples[] {
  log(
    `the safety verdict's cost: ${SAFETY_WARMUP_ROUNDS} warm-up and ${SAFETY_ROUNDS} measured rounds of ${SAFETY_BLOCKS} blocks per run; per block matchBlock, then its callbacks with, without, without, with (or the reverse), in CPU time`,
  );
  const samples: SafetySamples[] = runs.map(() => ({
    match: spent(),
    callbacks: { with: spent(), without: spent() },
    blocks: 0,
    bodyBytes: { with: 0, without: 0 },
    roundRatios: [],
  }));
  const gc = (globalThis as { gc?: () => void }).gc as () => void;
  for (let q = -SAFETY_WARMUP_ROUNDS; q < SAFETY_ROUNDS; q++) {
    runs.forEach(({ index, mixed }, r) => {
      const sample = samples[r] as SafetySamples;
      const blocks: NormalizedBlock[] = [];
      for (let i = 0; i < SAFETY_BLOCKS; i++) {
        const height = SAFETY_FIRST_HEIGHT + (q + SAFETY_WARMUP_ROUNDS) * SAFETY_BLOCKS + i;
        const { block } = syntheticBlock(height, mixed);
        // 1 % of the transactions failed (the `failed` flag on their events).
        blocks.push({ ...block, failedTransactionIds: block.transactionIds.filter((_, k) => k % 100 === 0) });
      }
      // Untimed: the blocks' strings hashed by a first lookup (as the matching phase does before the pipeline), the transaction ids
      // in a Set as the EVM adapter's normalisation does (src/chains/evm/normalize.ts: every receipt by its transaction, so every id
      // has its hash when the verdict asks whether it failed), then a full collection.
      for (const block of blocks) {
        matchBlock(index, block, 'ethereum');
        new Set(block.transactionIds);
      }
      gc();
      const inRound = { match: spent(), with: spent(), without: spent() };
      blocks.forEach((block, i) => {
        const matches = timed(inRound.match, () => matchBlock(index, block, 'ethereum'));
        // The callbacks four times: with, without, without, with, or the reverse on every other block.
        for (const withSafety of (q + i) % 2 === 0 ? [true, false, false, true] : [false, true, true, false]) {
          const bytes = timed(withSafety ? inRound.with : inRound.without, () => callbacksOf(matches, block, withSafety));
          if (q >= 0) sample.bodyBytes[withSafety ? 'with' : 'without'] += bytes / 2;
        }
      });
      if (q < 0) return;
      sample.blocks += blocks.length;
      for (const [to, from] of [
        [sample.match, inRound.match],
        [sample.callbacks.with, inRound.with],
        [sample.callbacks.without, inRound.without],
      ] as const) {
        to.cpu += from.cpu;
        to.wall += from.wall;
      }
      sample.roundRatios.push(costRatio(inRound.match.cpu, inRound.with.cpu, inRound.without.cpu));
    });
  }
  return samples;
}

/** The figures of one run's safety phase. */
function safetyFigures(s: SafetySamples): { safetyCostRatio: number; safetyCost: Record<string, unknown> } {
  const ratios = s.roundRatios;
  const mean = ratios.reduce((a, b) => a + b, 0) / ratios.length;
  const sd = Math.sqrt(ratios.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, ratios.length - 1));
  const halfWidth = (1.96 * sd) / Math.sqrt(ratios.length);
  const sorted = [...ratios].sort((a, b) => a - b);
  const perBlock = (ms: number, passes = 1) => round(ms / passes / s.blocks, 3);
  const { match, callbacks } = s;
  return {
    safetyCostRatio: round(costRatio(match.cpu, callbacks.with.cpu, callbacks.without.cpu), 4),
    safetyCost: {
      method: 'CPU time of the process; per block matchBlock, then its callbacks with, without, without, with or the reverse; sums (see bench/matching.ts)',
      rounds: ratios.length,
      blocksPerRound: SAFETY_BLOCKS,
      interval95: [round(mean - halfWidth, 4), round(mean + halfWidth, 4)],
      roundRatios: { median: round(median(ratios), 4), min: round(sorted[0] ?? 0, 4), max: round(sorted.at(-1) ?? 0, 4) },
      wallRatio: round(costRatio(match.wall, callbacks.with.wall, callbacks.without.wall), 4),
      cpuMsPerBlock: {
        match: perBlock(match.cpu),
        callbacksWithoutSafety: perBlock(callbacks.without.cpu, 2),
        callbacksWithSafety: perBlock(callbacks.with.cpu, 2),
      },
      wallMsPerBlock: {
        match: perBlock(match.wall),
        callbacksWithoutSafety: perBlock(callbacks.without.wall, 2),
        callbacksWithSafety: perBlock(callbacks.with.wall, 2),
      },
      bodyBytesPerBlock: { withoutSafety: Math.round(s.bodyBytes.without / s.blocks), withSafety: Math.round(s.bodyBytes.with / s.blocks) },
    },
  };
}

/**
 * Matches the blocks of every run, block b of each run in turn (the runs alternate block by block, so a
 * busy moment of a shared machine slows them alike and their ratio holds).
 */
function matchAll(runs: Built[]): Samples[] {
  log(`matching ${WARMUP_BLOCKS} warm-up and ${MEASURED_BLOCKS} measured blocks per run, the runs alternating`);
  const samples = runs.map(
    () =>
      ({
        times: [],
        rates: [],
        cpuRates: [],
        itemCounts: [],
        movementCounts: [],
        subscribedMovementCounts: [],
        matchCounts: [],
        buildUs: [],
      }) as Samples,
  );
  for (let b = 0; b < WARMUP_BLOCKS + MEASURED_BLOCKS; b++) {
    runs.forEach(({ index, mixed }, r) => {
      const sample = samples[r] as Samples;
      const synthetic = syntheticBlock(FIRST_HEIGHT + b, mixed);
      const { block } = synthetic;
      // The items of a block: everything matching looks up (each is a lookup in a table, or a comparison with the thresholds).
      const items = block.transactionIds.length + block.tokenTransfers.length + block.internalTransfers.length + block.coinMovements.length;
      const cpuStarted = process.cpuUsage();
      const started = performance.now();
      const matches = matchBlock(index, block, 'ethereum');
      const ms = performance.now() - started;
      const cpu = process.cpuUsage(cpuStarted);
      if (b < WARMUP_BLOCKS) return;
      sample.times.push(ms);
      sample.rates.push(items / (ms / 1000));
      sample.cpuRates.push(items / ((cpu.user + cpu.system) / 1e6));
      sample.itemCounts.push(items);
      sample.movementCounts.push(block.coinMovements.length);
      sample.subscribedMovementCounts.push(synthetic.subscribedMovements);
      sample.matchCounts.push(matches.length);

      if (b === WARMUP_BLOCKS) {
        const got: Record<string, number> = {};
        for (const m of matches) got[m.eventType] = (got[m.eventType] ?? 0) + 1;
        const expected: Record<string, number> = mixed
          ? expectedMixMatches(block)
          : {
              TRANSACTION_MINED: synthetic.expected.transactions,
              ADDRESS_TOKENS_TRANSACTION_CONFIRMED: synthetic.expected.tokens,
              CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: synthetic.hotInternal.reduce((n, t) => n + thresholdsAtMost(t.amount), 0),
            };
        const sortedJson = (o: Record<string, number>) => JSON.stringify(Object.fromEntries(Object.entries(o).sort(([x], [y]) => x.localeCompare(y))));
        if (sortedJson(got) !== sortedJson(expected)) throw new Error(`wrong matches: got ${sortedJson(got)}, expected ${sortedJson(expected)}`);
        // Every event type but BLOCK_REVERTED, which matchRevertedBlock gives for a dropped block (checked here, not timed: reorganisations are rare).
        if (mixed && Object.keys(got).length < 12)
          throw new Error(`the mix's first measured block matches only ${Object.keys(got).length} event types: ${sortedJson(got)}`);
        if (mixed && matchRevertedBlock(index).length !== 100) throw new Error(`BLOCK_REVERTED: ${matchRevertedBlock(index).length} matches, not 100`);
        log(`checked the first measured block${mixed ? ' of the mix' : ''}: ${sortedJson(got)} matches, as brute force says`);
      }

      // What the caller does next, per match (no target; for scale): key, item, body.
      const s = performance.now();
      for (const m of matches) {
        const key = matchIdempotencyKey(m, CHAIN, block);
        const item = callbackItem(m, block, CHAIN, { name: 'Token', symbol: 'TKN', decimals: 6 });
        callbackBody({ id: m.subscription.id, eventType: m.eventType, apiVersion: '2021-03-20' }, key, item);
      }
      if (matches.length > 0) sample.buildUs.push(((performance.now() - s) * 1000) / matches.length);
    });
  }
  return samples;
}

function figures(built: Built, sample: Samples, safetySample: SafetySamples): Record<string, unknown> {
  const { mixed, buildMs, buildWallMs, heapBytes, bufferBytes, bytesPerSubscription } = built;
  const { times, rates, cpuRates, itemCounts, movementCounts, subscribedMovementCounts, matchCounts, buildUs } = sample;
  const { safetyCostRatio, safetyCost } = safetyFigures(safetySample);
  const sorted = [...times].sort((a, b) => a - b);
  const medianMs = median(times);
  const itemsPerSecond = Math.round(median(rates));
  const itemsPerCpuSecond = Math.round(median(cpuRates));
  log(
    `${mixed ? 'mix' : 'contract run'}: matchBlock median ${round(medianMs, 3)} ms per block of ${median(itemCounts)} items = ${itemsPerSecond.toLocaleString('en')} items/s (${itemsPerCpuSecond.toLocaleString('en')} per CPU second); ${median(matchCounts)} matches per block`,
  );

  const pass = {
    itemsPerSecond: itemsPerSecond >= TARGETS.itemsPerSecond,
    buildMs: buildMs <= TARGETS.buildMs,
    bytesPerSubscription: bytesPerSubscription <= TARGETS.bytesPerSubscription,
    safetyCostRatio: safetyCostRatio <= TARGETS.safetyCostRatio,
  };
  const interval = safetyCost.interval95 as number[];
  log(
    `${mixed ? 'mix' : 'contract run'}: the block pipeline with the safety verdict costs ${round(safetyCostRatio * 100, 2)} % more CPU time than without (95 % interval ${round((interval[0] as number) * 100, 2)} to ${round((interval[1] as number) * 100, 2)} %; wall time ${round((safetyCost.wallRatio as number) * 100, 2)} %)`,
  );
  return {
    bench: mixed ? 'matching-mix' : 'matching',
    node: process.version,
    subscriptions: mixed
      ? { total: TOTAL_SUBS, ...mixCounts(), addresses: MIX_ADDRESSES, tokenAmountContracts: MIX_CONTRACTS, customers: CUSTOMERS }
      : {
          total: TOTAL_SUBS,
          address: ADDRESS_SUBS,
          transactionId: TRANSACTION_SUBS,
          threshold: THRESHOLD_SUBS,
          thresholdCoins: `uniform 1..${MAX_THRESHOLD_COINS}`,
          customers: CUSTOMERS,
        },
    block: {
      transactions: TRANSACTIONS,
      tokenTransfers: TOKEN_TRANSFERS,
      internalTransfers: INTERNAL_TRANSFERS,
      coinMovements: median(movementCounts),
      coinMovementsOnSubscribedAddresses: median(subscribedMovementCounts),
      items: median(itemCounts),
      hitRate: HIT_RATE,
    },
    blocks: { warmup: WARMUP_BLOCKS, measured: MEASURED_BLOCKS },
    matchesPerBlock: median(matchCounts),
    matchMsPerBlock: {
      median: round(medianMs, 3),
      p90: round(percentile(sorted, 90) ?? 0, 3),
      min: round(sorted[0] ?? 0, 3),
      max: round(sorted.at(-1) ?? 0, 3),
    },
    itemsPerSecond,
    // Per second of the process's CPU time (user + system, all threads; matching allocates little, so GC threads add little).
    itemsPerCpuSecond,
    matchesPerSecond: Math.round(median(matchCounts) / (medianMs / 1000)),
    buildMs: round(buildMs),
    buildWallMs: round(buildWallMs),
    memory: {
      bytesPerSubscription: round(bytesPerSubscription),
      heapBytesPerSubscription: round(heapBytes / TOTAL_SUBS),
      typedArrayBytesPerSubscription: round(bufferBytes / TOTAL_SUBS),
    },
    callbackBuildUsPerMatch: round(median(buildUs), 2),
    safetyCostRatio,
    safetyCost,
    loadavg1m: round(loadavg()[0] ?? 0, 2),
    targets: {
      itemsPerSecond: `>=${TARGETS.itemsPerSecond}`,
      buildMs: `<=${TARGETS.buildMs}`,
      bytesPerSubscription: `<=${TARGETS.bytesPerSubscription}`,
      safetyCostRatio: `<=${TARGETS.safetyCostRatio}`,
    },
    pass: { ...pass, all: Object.values(pass).every(Boolean) },
  };
}

/** Runs measure() in a child with --expose-gc; its progress goes straight to our stderr. */
async function inChild(): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', THIS_FILE, '--child'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const unregister = onCleanup(async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
  unregister();
  if (code !== 0) throw new Error(`the matching child exited with ${code}`);
  const line = out.trim().split('\n').at(-1) ?? '';
  return JSON.parse(line) as Record<string, unknown>;
}

/** Fresh processes measured in turn (MATCHING_RUNS): the figures are their medians; each run's are under `runs`. */
const RUNS = envInt('MATCHING_RUNS', 5);

export default async function matchingBenchmark(): Promise<Record<string, unknown>> {
  if (typeof (globalThis as { gc?: unknown }).gc === 'function') return measureBoth();
  const runs: Record<string, unknown>[] = [];
  for (let run = 1; run <= RUNS; run++) {
    log(`run ${run} of ${RUNS} (a fresh process each: its own build, JIT and heap)`);
    runs.push(await inChild());
  }
  return medianOfRuns(runs);
}

/** The figures that vary from run to run, per run (contract run, then mix). */
const VARYING = ['itemsPerSecond', 'itemsPerCpuSecond', 'buildMs', 'safetyCostRatio', 'loadavg1m'] as const;

/**
 * One result from several runs: the first run's (counts and shapes are the same in every run) with the
 * medians of the varying figures and of memory per subscription, each run's under `runs`, and the
 * pass marks of the medians.
 */
function medianOfRuns(runs: Record<string, unknown>[]): Record<string, unknown> {
  const side = (result: Record<string, unknown>, mixed: boolean) => (mixed ? (result.mix as Record<string, unknown>) : result);
  const summarise = (mixed: boolean): Record<string, unknown> => {
    const first = side(runs[0] as Record<string, unknown>, mixed);
    const of = (name: string) => runs.map((r) => side(r, mixed)[name] as number);
    const medians: Record<string, number> = {};
    for (const name of VARYING) medians[name] = median(of(name));
    const bytesPerSubscription = median(runs.map((r) => (side(r, mixed).memory as { bytesPerSubscription: number }).bytesPerSubscription));
    const pass = {
      itemsPerSecond: (medians.itemsPerSecond as number) >= TARGETS.itemsPerSecond,
      buildMs: (medians.buildMs as number) <= TARGETS.buildMs,
      bytesPerSubscription: bytesPerSubscription <= TARGETS.bytesPerSubscription,
      safetyCostRatio: (medians.safetyCostRatio as number) <= TARGETS.safetyCostRatio,
    };
    return {
      ...first,
      ...medians,
      memory: { ...(first.memory as Record<string, unknown>), bytesPerSubscription },
      runs: runs.map((r) => ({
        ...Object.fromEntries(VARYING.map((name) => [name, side(r, mixed)[name]])),
        safetyCostInterval95: (side(r, mixed).safetyCost as { interval95: number[] }).interval95,
      })),
      pass: { ...pass, all: Object.values(pass).every(Boolean) },
    };
  };
  const contract = summarise(false);
  const mixed = summarise(true);
  const ratios = (name: string) => median(runs.map((r) => side(r, true)[name] as number));
  const result = {
    ...contract,
    medianOf: runs.length,
    pass: { ...(contract.pass as Record<string, boolean>), all: Boolean((contract.pass as { all: boolean }).all && (mixed.pass as { all: boolean }).all) },
    mix: {
      ...mixed,
      itemsPerSecondRatioToContractRun: ratios('itemsPerSecondRatioToContractRun'),
      itemsPerCpuSecondRatioToContractRun: ratios('itemsPerCpuSecondRatioToContractRun'),
    },
  };
  const safetyList = (mixedSide: boolean) => runs.map((r) => side(r, mixedSide).safetyCostRatio).join(', ');
  log(
    `median of ${runs.length} runs: the safety verdict's cost ${contract.safetyCostRatio} (runs: ${safetyList(false)}), mix ${mixed.safetyCostRatio} (runs: ${safetyList(true)}), target <= ${TARGETS.safetyCostRatio}`,
  );
  const list = (mixedSide: boolean, name: string) => runs.map((r) => Math.round((side(r, mixedSide)[name] as number) / 1000) / 1000).join(', ');
  log(
    `median of ${runs.length} runs: contract run ${(contract.itemsPerSecond as number).toLocaleString('en')} items/s (${(contract.itemsPerCpuSecond as number).toLocaleString('en')} per CPU second), built in ${contract.buildMs} ms; ` +
      `mix ${(mixed.itemsPerSecond as number).toLocaleString('en')} items/s (${(mixed.itemsPerCpuSecond as number).toLocaleString('en')} per CPU second; runs, M/s: ${list(true, 'itemsPerSecond')}; per CPU second: ${list(true, 'itemsPerCpuSecond')}), built in ${mixed.buildMs} ms, ${(mixed.memory as { bytesPerSubscription: number }).bytesPerSubscription} bytes per subscription`,
  );
  return result;
}

/** The contract's run and the mix run (its figures under `mix`), their blocks alternating; `pass.all` covers both. */
function measureBoth(): Record<string, unknown> {
  const runs = [build(false), build(true)];
  const [contractSamples, mixSamples] = matchAll(runs);
  const [contractSafety, mixSafety] = measureSafety(runs);
  const contract = figures(runs[0] as Built, contractSamples as Samples, contractSafety as SafetySamples);
  const mixed = figures(runs[1] as Built, mixSamples as Samples, mixSafety as SafetySamples);
  const pass = contract.pass as Record<string, boolean>;
  const mixPass = mixed.pass as Record<string, boolean>;
  // The machine may be shared: the mix's rate over the contract run's, measured block by block alternately, says more than either alone.
  const ratio = round((mixed.itemsPerSecond as number) / (contract.itemsPerSecond as number), 3);
  const cpuRatio = round((mixed.itemsPerCpuSecond as number) / (contract.itemsPerCpuSecond as number), 3);
  log(`mix / contract run: ${ratio} of the items per second (${cpuRatio} per CPU second)`);
  return {
    ...contract,
    pass: { ...pass, all: Boolean(pass.all && mixPass.all) },
    mix: { ...mixed, itemsPerSecondRatioToContractRun: ratio, itemsPerCpuSecondRatioToContractRun: cpuRatio },
  };
}

if (process.argv[2] === '--child' && resolve(process.argv[1] ?? '') === THIS_FILE) {
  process.stdout.write(`${JSON.stringify(measureBoth())}\n`);
}

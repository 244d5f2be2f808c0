/**
 * XRP Ledger normalisation benchmark. Target (from the issue): a ledger of 1,000 transactions, in rippled's
 * `ledger` answer (`transactions: true, expand: true`), normalised by normalizeXrpLedger in at most 10 ms
 * (median).
 *
 * The ledger is synthetic, shaped like the recorded ones (test/fixtures/xrp: ledgerFull7501326.json
 * for the ledger and API v1 transaction layout, transactionEntry.json for an XRP payment's metadata):
 * 1,000 XRP Payments, each with its fields, signature and `metaData` holding two AccountRoot ModifiedNodes
 * (the sender's balance down by amount + fee with its Sequence, the recipient's up by the amount),
 * `TransactionIndex`, `TransactionResult` and `delivered_amount`. Senders come from 700 accounts and
 * recipients from 1,000 others: 1,700 distinct addresses, 300 senders sending twice.
 *
 * Also reported, for the breakdown: validateAddress per distinct address (every address the normaliser
 * meets is validated once per ledger; that is most of its time).
 *
 * Also measured, as a second figure: the recorded ledger 7501326 (17 transactions, mostly offers).
 *
 * Measured: normalizeXrpLedger only, on freshly parsed objects each run (JSON.parse not timed, reported
 * for scale). 20 warm-up runs, then 50 measured. BENCH_DURATION does not apply.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { sha256 } from '@noble/hashes/sha256';
import { base58xrp } from '@scure/base';
import { normalizeXrpLedger } from '../src/chains/xrp/normalize.ts';
import type { RpcLedger, RpcLedgerTransaction } from '../src/chains/xrp/rpc-types.ts';
import { validateAddress } from '../src/domain/addresses.ts';
import { log, median, percentile, ROOT } from './lib.ts';

const TRANSACTIONS = 1000;
const SENDERS = 700;
const RECIPIENTS = 1000;
const LEDGER_INDEX = 90_000_000;
const CLOSE_TIME = 800_000_000;
const WARMUP = 20;
const MEASURED = 50;
const TARGET_MEDIAN_MS = 10;
const RECORDED = join(ROOT, 'test', 'fixtures', 'xrp', 'xrpl.js', 'ledgerFull7501326.json');

const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

/** `bytes` bytes of deterministic upper-case hex from (salt, i), as rippled prints hashes. */
function hexOf(salt: string, i: number, bytes: number): string {
  let out = '';
  for (let k = 0; out.length < bytes * 2; k++) out += createHash('sha256').update(`${salt}:${i}:${k}`).digest('hex');
  return out.slice(0, bytes * 2).toUpperCase();
}

/** A classic address: base58 (XRP alphabet) of 0x00 + 20-byte account id + 4-byte double-SHA-256 checksum. */
function classicAddress(salt: string, i: number): string {
  const payload = Uint8Array.from(Buffer.from(`00${hexOf(salt, i, 20)}`, 'hex'));
  const checksum = sha256(sha256(payload)).subarray(0, 4);
  return base58xrp.encode(Uint8Array.from([...payload, ...checksum]));
}

function accountRoot(account: string, index: string, balance: bigint, previous: bigint, sequence: number, previousSequence?: number) {
  return {
    ModifiedNode: {
      FinalFields: { Account: account, Balance: balance.toString(), Flags: 0, OwnerCount: 0, Sequence: sequence },
      LedgerEntryType: 'AccountRoot',
      LedgerIndex: index,
      PreviousFields: previousSequence === undefined ? { Balance: previous.toString() } : { Balance: previous.toString(), Sequence: previousSequence },
      PreviousTxnID: hexOf('prevtx', sequence, 32),
      PreviousTxnLgrSeq: LEDGER_INDEX - 1,
    },
  };
}

/** The `ledger` object of the answer (the part normalizeXrpLedger reads), as JSON text. */
export function syntheticXrpLedger(transactions = TRANSACTIONS): string {
  const senders = Array.from({ length: SENDERS }, (_, i) => classicAddress('sender', i));
  const recipients = Array.from({ length: RECIPIENTS }, (_, i) => classicAddress('recipient', i));
  const balances = new Map<string, bigint>();
  const sequences = new Map<string, number>();
  const txs: unknown[] = [];
  for (let i = 0; i < transactions; i++) {
    const from = senders[i % SENDERS] as string;
    const to = recipients[i % RECIPIENTS] as string;
    const amount = BigInt(1_000_000 + i * 1_234);
    const fee = 12n;
    const fromBefore = balances.get(from) ?? 50_000_000_000n;
    const toBefore = balances.get(to) ?? 20_000_000n;
    const sequence = sequences.get(from) ?? 80_000_000 + i;
    balances.set(from, fromBefore - amount - fee);
    balances.set(to, toBefore + amount);
    sequences.set(from, sequence + 1);
    txs.push({
      Account: from,
      Amount: amount.toString(),
      Destination: to,
      ...(i % 3 === 0 && { DestinationTag: 100_000 + i }),
      Fee: fee.toString(),
      Flags: 2147483648,
      LastLedgerSequence: LEDGER_INDEX + 4,
      Sequence: sequence,
      SigningPubKey: hexOf('pubkey', i, 33),
      TransactionType: 'Payment',
      TxnSignature: hexOf('signature', i, 71),
      hash: hexOf('tx', i, 32),
      metaData: {
        AffectedNodes: [
          accountRoot(from, hexOf('root', i % SENDERS, 32), fromBefore - amount - fee, fromBefore, sequence + 1, sequence),
          accountRoot(to, hexOf('root', 10_000 + (i % RECIPIENTS), 32), toBefore + amount, toBefore, 1),
        ],
        TransactionIndex: i,
        TransactionResult: 'tesSUCCESS',
        delivered_amount: amount.toString(),
      },
    });
  }
  const ledger = {
    account_hash: hexOf('account', LEDGER_INDEX, 32),
    close_flags: 0,
    close_time: CLOSE_TIME,
    close_time_human: new Date((CLOSE_TIME + 946_684_800) * 1000).toISOString(),
    close_time_resolution: 10,
    closed: true,
    hash: hexOf('ledger', LEDGER_INDEX, 32),
    ledger_hash: hexOf('ledger', LEDGER_INDEX, 32),
    ledger_index: String(LEDGER_INDEX),
    parent_close_time: CLOSE_TIME - 4,
    parent_hash: hexOf('ledger', LEDGER_INDEX - 1, 32),
    total_coins: '99986000000000000',
    transaction_hash: hexOf('txtree', LEDGER_INDEX, 32),
    transactions: txs,
  };
  return JSON.stringify(ledger);
}

interface Timing {
  median: number;
  p90: number;
  min: number;
  max: number;
  jsonParseMsMedian: number;
}

/** Warm-up and measured runs of normalizeXrpLedger on fresh parses of `text`. */
function measure(text: string): Timing {
  const times: number[] = [];
  const parseTimes: number[] = [];
  for (let run = 0; run < WARMUP + MEASURED; run++) {
    const p0 = performance.now();
    const ledger = JSON.parse(text) as RpcLedger;
    const t0 = performance.now();
    normalizeXrpLedger(ledger, { network: 'mainnet' });
    const t1 = performance.now();
    if (run < WARMUP) continue;
    times.push(t1 - t0);
    parseTimes.push(t0 - p0);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return {
    median: round(median(times)),
    p90: round(percentile(sorted, 90) ?? 0),
    min: round(sorted[0] ?? 0),
    max: round(sorted.at(-1) ?? 0),
    jsonParseMsMedian: round(median(parseTimes)),
  };
}

export default async function xrpLedgerBenchmark(): Promise<Record<string, unknown>> {
  const text = syntheticXrpLedger();
  const check = normalizeXrpLedger(JSON.parse(text) as RpcLedger, { network: 'mainnet' });
  if (check.transactionIds.length !== TRANSACTIONS || check.coinMovements.length !== 2 * TRANSACTIONS || check.height !== LEDGER_INDEX) {
    throw new Error(`the synthetic ledger normalised to ${check.transactionIds.length} transactions and ${check.coinMovements.length} movements`);
  }
  const total = check.coinMovements.reduce((s, m) => s + m.delta, 0n);
  if (total !== -12n * BigInt(TRANSACTIONS)) throw new Error(`the synthetic ledger's movements sum to ${total}, not minus the fees`);
  log(`synthetic ledger: ${TRANSACTIONS} XRP payments, ${round(text.length / 1024, 1)} KiB of JSON`);
  const synthetic = measure(text);
  log(`normalizeXrpLedger, ${TRANSACTIONS} payments: median ${synthetic.median} ms, p90 ${synthetic.p90} ms (target <= ${TARGET_MEDIAN_MS} ms)`);

  // Breakdown: what validating each distinct address once costs (median of 20 passes over fresh copies).
  const addresses = [
    ...new Set(
      (JSON.parse(text) as RpcLedger).transactions?.flatMap((t) => [(t as RpcLedgerTransaction).Account, (t as RpcLedgerTransaction).Destination]) ?? [],
    ),
  ] as string[];
  const validateUs: number[] = [];
  for (let pass = 0; pass < 25; pass++) {
    const fresh = addresses.map((a) => Buffer.from(a, 'latin1').toString('latin1'));
    const t0 = performance.now();
    for (const a of fresh) if (!validateAddress('xrp', 'mainnet', a).ok) throw new Error(`synthetic address ${a} does not validate`);
    if (pass >= 5) validateUs.push(((performance.now() - t0) * 1000) / fresh.length);
  }
  log(`validateAddress: ${round(median(validateUs), 2)} µs per address, ${addresses.length} distinct addresses in the ledger`);

  const recordedText = readFileSync(RECORDED, 'utf8');
  const recordedCheck = normalizeXrpLedger(JSON.parse(recordedText) as RpcLedger, { network: 'mainnet' });
  const recorded = measure(recordedText);
  log(
    `normalizeXrpLedger, recorded ledger 7501326 (${recordedCheck.transactionIds.length} transactions): median ${recorded.median} ms, p90 ${recorded.p90} ms`,
  );

  const pass = { medianMs: synthetic.median <= TARGET_MEDIAN_MS };
  return {
    bench: 'xrp-ledger',
    node: process.version,
    ledger: { transactions: TRANSACTIONS, payments: TRANSACTIONS, senders: SENDERS, recipients: RECIPIENTS, jsonBytes: text.length },
    runs: { warmup: WARMUP, measured: MEASURED },
    normalizeMs: synthetic,
    breakdown: { distinctAddresses: addresses.length, validateAddressUsEach: round(median(validateUs), 2) },
    recorded7501326: {
      transactions: recordedCheck.transactionIds.length,
      coinMovements: recordedCheck.coinMovements.length,
      jsonBytes: recordedText.length,
      normalizeMs: recorded,
    },
    loadavg1m: round(loadavg()[0] ?? 0, 2),
    targets: { normalizeMsMedian: `<=${TARGET_MEDIAN_MS}` },
    pass: { ...pass, all: Object.values(pass).every(Boolean) },
  };
}

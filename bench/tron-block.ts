/**
 * Tron normalisation benchmark. Target (from the issue): a block of 300 transactions carrying 300 TRC-20
 * transfers, in java-tron's JSON (`getblockbynum` + `gettransactioninfobyblocknum`), normalised by
 * normalizeTronBlock in at most 10 ms (median).
 *
 * The block is synthetic but shaped like the recorded responses (test/fixtures/tron: the Nile
 * getblockbynum header, the gettransactionbyid body and the mainnet USDT gettransactioninfobyid): every
 * transaction a TriggerSmartContract calling transfer(address,uint256) on one of 5 TRC-20 contracts,
 * hex addresses with the 41 prefix (the default, not `visible: true`), every info with its receipt, fee
 * and one Transfer log. Senders and recipients are 600 distinct addresses, so the normaliser's per-block
 * base58 cache helps as little as on a real block.
 *
 * Measured: normalizeTronBlock only. Each run gets freshly parsed objects (JSON.parse of the two texts,
 * not timed, also reported for scale), as the adapter gets them from the node, so no string keeps a hash
 * V8 cached in an earlier run. 20 warm-up runs, then 50 measured. BENCH_DURATION does not apply.
 */
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { normalizeTronBlock } from '../src/chains/tron/normalize.ts';
import type { TronBlock, TronTransactionInfo } from '../src/chains/tron/rpc-types.ts';
import { log, median, percentile } from './lib.ts';

const TRANSACTIONS = 300;
const HEIGHT = 66_987_565;
const BLOCK_MS = 1_777_445_121_000;
const WARMUP = 20;
const MEASURED = 50;
const TARGET_MEDIAN_MS = 10;
const TRANSFER_TOPIC = 'ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

/** `bytes` bytes of deterministic hex from (salt, i). */
function hexOf(salt: string, i: number, bytes: number): string {
  let out = '';
  for (let k = 0; out.length < bytes * 2; k++) out += createHash('sha256').update(`${salt}:${i}:${k}`).digest('hex');
  return out.slice(0, bytes * 2);
}

const address20 = (salt: string, i: number) => hexOf(salt, i, 20);
const word = (hex20: string) => hex20.padStart(64, '0');
const CONTRACTS = Array.from({ length: 5 }, (_, i) => address20('contract', i));

/** The two node answers as JSON text, as they come over HTTP. */
export function syntheticTronBlock(transactions = TRANSACTIONS): { blockText: string; infosText: string } {
  const txs: unknown[] = [];
  const infos: unknown[] = [];
  for (let i = 0; i < transactions; i++) {
    const txID = hexOf('tx', i, 32);
    const from = address20('from', i);
    const to = address20('to', i);
    const contract = CONTRACTS[i % CONTRACTS.length] as string;
    const amount = BigInt(1 + i) * 1_000_000n;
    const data = `a9059cbb${word(to)}${amount.toString(16).padStart(64, '0')}`;
    txs.push({
      ret: [{ contractRet: 'SUCCESS' }],
      signature: [hexOf('sig', i, 65)],
      txID,
      raw_data: {
        contract: [
          {
            parameter: {
              value: { data, owner_address: `41${from}`, contract_address: `41${contract}` },
              type_url: 'type.googleapis.com/protocol.TriggerSmartContract',
            },
            type: 'TriggerSmartContract',
          },
        ],
        ref_block_bytes: hexOf('ref', HEIGHT, 2),
        ref_block_hash: hexOf('refhash', HEIGHT, 8),
        expiration: BLOCK_MS + 60_000,
        fee_limit: 100_000_000,
        timestamp: BLOCK_MS - 3_000 + i,
      },
      // A transfer call's protobuf is about 200 bytes.
      raw_data_hex: hexOf('raw', i, 200),
    });
    infos.push({
      id: txID,
      fee: 13_844_850,
      blockNumber: HEIGHT,
      blockTimeStamp: BLOCK_MS,
      contractResult: ['0000000000000000000000000000000000000000000000000000000000000001'],
      contract_address: `41${contract}`,
      receipt: { energy_fee: 13_499_850, energy_usage_total: 64_285, net_fee: 345_000, result: 'SUCCESS' },
      log: [{ address: contract, topics: [TRANSFER_TOPIC, word(from), word(to)], data: amount.toString(16).padStart(64, '0') }],
    });
  }
  const block = {
    blockID: `${HEIGHT.toString(16).padStart(16, '0')}${hexOf('block', HEIGHT, 24)}`,
    block_header: {
      raw_data: {
        number: HEIGHT,
        txTrieRoot: hexOf('trie', HEIGHT, 32),
        witness_address: `41${address20('witness', 0)}`,
        parentHash: `${(HEIGHT - 1).toString(16).padStart(16, '0')}${hexOf('block', HEIGHT - 1, 24)}`,
        version: 34,
        timestamp: BLOCK_MS,
      },
      witness_signature: hexOf('witness-sig', HEIGHT, 65),
    },
    transactions: txs,
  };
  return { blockText: JSON.stringify(block), infosText: JSON.stringify(infos) };
}

export default async function tronBlockBenchmark(): Promise<Record<string, unknown>> {
  const { blockText, infosText } = syntheticTronBlock();
  const parse = () => ({ block: JSON.parse(blockText) as TronBlock, infos: JSON.parse(infosText) as TronTransactionInfo[] });

  const check = normalizeTronBlock(parse(), { network: 'mainnet' });
  if (check.transactionIds.length !== TRANSACTIONS || check.tokenTransfers.length !== TRANSACTIONS || check.height !== HEIGHT) {
    throw new Error(`the synthetic block normalised to ${check.transactionIds.length} transactions and ${check.tokenTransfers.length} token transfers`);
  }
  // Per transaction: the owner pays the fee (the TRC-20 transfer moves no TRX).
  if (check.coinMovements.length !== TRANSACTIONS || check.tokenTransfers.some((t) => t.tokenType !== 'TRC-20' || !t.from.startsWith('T'))) {
    throw new Error('the synthetic block did not normalise to one fee movement and one base58 TRC-20 transfer per transaction');
  }
  log(
    `block of ${TRANSACTIONS} TriggerSmartContract transactions, ${TRANSACTIONS} TRC-20 transfers: ` +
      `${round(blockText.length / 1024, 1)} KiB block + ${round(infosText.length / 1024, 1)} KiB infos of JSON`,
  );

  const times: number[] = [];
  const parseTimes: number[] = [];
  for (let run = 0; run < WARMUP + MEASURED; run++) {
    const p0 = performance.now();
    const input = parse();
    const t0 = performance.now();
    normalizeTronBlock(input, { network: 'mainnet' });
    const t1 = performance.now();
    if (run < WARMUP) continue;
    times.push(t1 - t0);
    parseTimes.push(t0 - p0);
  }
  const sorted = [...times].sort((a, b) => a - b);
  const medianMs = median(times);
  log(`normalizeTronBlock: median ${round(medianMs)} ms, p90 ${round(percentile(sorted, 90) ?? 0)} ms (target <= ${TARGET_MEDIAN_MS} ms)`);
  const pass = { medianMs: medianMs <= TARGET_MEDIAN_MS };
  return {
    bench: 'tron-block',
    node: process.version,
    block: { transactions: TRANSACTIONS, trc20Transfers: TRANSACTIONS, blockJsonBytes: blockText.length, infosJsonBytes: infosText.length },
    runs: { warmup: WARMUP, measured: MEASURED },
    normalizeMs: {
      median: round(medianMs),
      p90: round(percentile(sorted, 90) ?? 0),
      min: round(sorted[0] ?? 0),
      max: round(sorted.at(-1) ?? 0),
    },
    jsonParseMsMedian: round(median(parseTimes)),
    loadavg1m: round(loadavg()[0] ?? 0, 2),
    targets: { normalizeMsMedian: `<=${TARGET_MEDIAN_MS}` },
    pass: { ...pass, all: Object.values(pass).every(Boolean) },
  };
}

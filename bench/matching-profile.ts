/**
 * matchBlock alone on the matching benchmark's mix, for a profiler: builds the mix's index once,
 * generates the blocks beforehand, then matches them round after round; the build and the block
 * generation happen before `--cpu-prof` has anything interesting to say, and the loop dominates it.
 * Not a benchmark (no target, not in run.ts): a tool to see where matchBlock's time goes.
 *
 *   node --expose-gc --import tsx --cpu-prof --cpu-prof-interval 50 --cpu-prof-dir /tmp/prof bench/matching-profile.ts [rounds]
 *
 * Prints the median time per block and items per second (wall and CPU) of the rounds after the first.
 */
import { loadavg } from 'node:os';
import { matchBlock } from '../src/matching/match.ts';
import { median } from './lib.ts';
import { build, syntheticBlock } from './matching.ts';

const BLOCKS = 40;
const FIRST_HEIGHT = 20_000_000;
const rounds = Number(process.argv[2] ?? 20);

const { index } = build(true);
const blocks = Array.from({ length: BLOCKS }, (_, b) => syntheticBlock(FIRST_HEIGHT + b, true).block);
const items = blocks.map((block) => block.transactionIds.length + block.tokenTransfers.length + block.internalTransfers.length + block.coinMovements.length);
const totalItems = items.reduce((a, b) => a + b, 0);

const wallRates: number[] = [];
const cpuRates: number[] = [];
let matches = 0;
for (let round = 0; round < rounds; round++) {
  const cpuStarted = process.cpuUsage();
  const started = performance.now();
  for (const block of blocks) matches += matchBlock(index, block, 'ethereum').length;
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuStarted);
  if (round === 0) continue; // warm-up
  wallRates.push(totalItems / (ms / 1000));
  cpuRates.push(totalItems / ((cpu.user + cpu.system) / 1e6));
}
process.stdout.write(
  `${JSON.stringify({
    blocks: BLOCKS,
    rounds,
    itemsPerBlock: median(items),
    matchesPerBlock: Math.round(matches / rounds / BLOCKS),
    itemsPerSecond: Math.round(median(wallRates)),
    itemsPerCpuSecond: Math.round(median(cpuRates)),
    msPerBlock: Math.round((median(items) / median(wallRates)) * 1e6) / 1000,
    loadavg1m: loadavg()[0],
  })}\n`,
);

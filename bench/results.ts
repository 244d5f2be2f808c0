/**
 * The record of benchmark runs: each run's figures appended as one JSON line to
 * bench/results/<benchmark>.jsonl, with what makes figures comparable or not: when, which commit (and
 * whether the tree had uncommitted changes), and the machine (cores, CPU model, memory, Node) with its
 * load average before and after the run. The figures are the benchmark's own line, baselines included
 * (each target is a ratio against a baseline measured in the same run: docs/benchmarks.md).
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './lib.ts';

export const RESULTS_DIR = join(ROOT, 'bench', 'results');

export interface RunContext {
  commit: string | null;
  /** Uncommitted changes to tracked files when the run started: the figures are not the commit's alone. */
  dirty: boolean | null;
  machine: { cores: number; cpuModel: string; memoryGiB: number; node: string };
  loadAverage: { before: number[] };
}

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null; // not a git checkout (an installed package): the line says so with null
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** Taken when a benchmark starts. */
export function runContext(): RunContext {
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  return {
    commit: git(['rev-parse', 'HEAD']),
    dirty: status === null ? null : status !== '',
    machine: { cores: cpus().length, cpuModel: cpus()[0]?.model.trim() ?? 'unknown', memoryGiB: round2(totalmem() / 2 ** 30), node: process.version },
    loadAverage: { before: loadavg().map(round2) },
  };
}

/** One line of bench/results/<name>.jsonl: the run's context, the load average after it, then its figures. */
export function resultLine(name: string, context: RunContext, figures: Record<string, unknown>, at: Date, loadAfter: number[]): string {
  const { commit, dirty, machine, loadAverage } = context;
  return JSON.stringify({
    at: at.toISOString(),
    bench: name,
    commit,
    dirty,
    machine,
    loadAverage: { ...loadAverage, after: loadAfter.map(round2) },
    ...figures,
  });
}

export function appendResult(name: string, context: RunContext, figures: Record<string, unknown>): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  appendFileSync(join(RESULTS_DIR, `${name}.jsonl`), `${resultLine(name, context, figures, new Date(), loadavg())}\n`);
}

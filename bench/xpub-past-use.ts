/**
 * What past use at subscribe costs (docs/concepts/wallet-keys.md#past-use-at-subscribe): the node scans that a
 * wallet-key create waits for, on a REAL litecoind 0.21 in regtest (test/support/litecoin-node.ts).
 *
 * findPastUse (src/services/xpub-past-use.ts) is timed as the create runs it, with the chain adapter the API role
 * builds (createChainAdapter): derivation of the grown window, then the node's `scantxoutset` rounds (200
 * addresses per scan). Two wallets of the BIP84 test seed with gapLimit GAP on both chains:
 *   (a) fresh: no history, the first window only (2 x GAP addresses, one round);
 *   (b) used: payments before the subscription to receive indexes GAP - 10, 2 GAP - 20, 3 GAP - 30, which
 *       grow the receive window round by round (4 rounds; 4 GAP - 30 + GAP addresses in all).
 * Baseline, same run: deriveWindow of the addresses (b) derives beyond the first window (findPastUse derives them
 * as the window grows; the first window is derived by the create before it), nothing asked of the node; the
 * scans' share is (b) minus it. Medians of RUNS.
 * The regtest UTXO set is tiny: on a mainnet node each scan reads the whole UTXO set (minutes on bitcoin), and
 * a create waits for (addresses / 200) x rounds of them.
 *
 * Environment: BENCH_XPUB_GAP (100), BENCH_XPUB_RUNS (9). BENCH_DURATION does not apply.
 */
import pino from 'pino';
import { createChainAdapter } from '../src/chains/registry.ts';
import type { ChainConfig } from '../src/config/config.ts';
import type { ChainKey } from '../src/domain/chains.ts';
import type { SubscribedWalletKey } from '../src/domain/subscriptions.ts';
import { deriveAddress, parseExtendedKey } from '../src/domain/wallet-keys.ts';
import { deriveWindow, windowEnd } from '../src/domain/wallet-windows.ts';
import { findPastUse } from '../src/services/xpub-past-use.ts';
import { testPublicKey } from '../test/support/hd-keys.ts';
import { startLitecoinDriver } from '../test/support/litecoin-node.ts';
import { log, onCleanup } from './lib.ts';
import type { Benchmark } from './run.ts';

const GAP = Number(process.env.BENCH_XPUB_GAP ?? 100);
const RUNS = Number(process.env.BENCH_XPUB_RUNS ?? 9);

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
const round = (n: number) => Math.round(n * 10) / 10;

const run: Benchmark = async () => {
  const node = await startLitecoinDriver({ addressType: 'bech32', fundingCoins: 5 });
  onCleanup(() => node.close());
  const chain: ChainKey = { blockchain: 'litecoin', network: 'testnet' };
  const adapter = createChainAdapter({ ...chain, rpcUrl: node.rpcUrl, ...node.chainConfig } as unknown as ChainConfig & ChainKey, {
    logger: pino({ level: 'silent' }),
    // No tokens on litecoin: nothing is ever looked up.
    tokenMetadataCache: { get: async () => undefined, put: async () => undefined },
  });
  if (!adapter) throw new Error('no adapter for litecoind');
  onCleanup(async () => adapter.close?.());
  const logger = pino({ level: 'warn' });
  const common = { chainReader: () => adapter, logger };

  const wallet = (account: number) => {
    const text = testPublicKey(`m/84'/1'/${account}'`, 0x043587cf);
    const parsed = parseExtendedKey('litecoin', 'testnet', text, 'segwit');
    if (!parsed.ok) throw new Error(parsed.message);
    const subscribed: SubscribedWalletKey = { field: 'extendedPublicKey', text, derivation: 'segwit', gapLimit: GAP, regtest: true };
    return { key: parsed.key, subscribed };
  };
  const fresh = wallet(10);
  const used = wallet(11);
  const paid = [GAP - 10, 2 * GAP - 20, 3 * GAP - 30];
  for (const index of paid)
    await node.send(deriveAddress(used.key, used.key.branches[0] as (typeof used.key.branches)[number], index, { regtest: true }).address, 1_000_000n);
  await node.mine(1);
  log(`paid receive indexes ${paid.join(', ')} of the used wallet; gapLimit ${GAP}`);

  const firstWindow = (w: typeof fresh) => [
    ...deriveWindow(w.key, false, 0, windowEnd(-1, GAP), true),
    ...deriveWindow(w.key, true, 0, windowEnd(-1, GAP), true),
  ];
  const measure = async (w: typeof fresh) => {
    const times: number[] = [];
    let last: Awaited<ReturnType<typeof findPastUse>> | undefined;
    for (let i = 0; i < RUNS; i++) {
      const window = firstWindow(w);
      const started = performance.now();
      last = await findPastUse(common, chain, w.key, w.subscribed, window);
      times.push(performance.now() - started);
    }
    if (last?.state !== 'read') throw new Error('the node did not answer scantxoutset');
    return { ms: round(median(times)), addresses: last.rows.length, rounds: last.rounds, used: last.used.length };
  };
  const a = await measure(fresh);
  // (b) and its baseline in alternation, run by run (a loaded machine moves both alike): the scans' share is
  // the median of the runs' differences.
  const grown = windowEnd(3 * GAP - 30, GAP) - windowEnd(-1, GAP);
  const usedTimes: number[] = [];
  const derivation: number[] = [];
  const differences: number[] = [];
  let last: Awaited<ReturnType<typeof findPastUse>> | undefined;
  for (let i = 0; i < RUNS; i++) {
    let started = performance.now();
    deriveWindow(used.key, false, GAP, GAP + grown - 1, true);
    const derived = performance.now() - started;
    const window = firstWindow(used);
    started = performance.now();
    last = await findPastUse(common, chain, used.key, used.subscribed, window);
    const took = performance.now() - started;
    usedTimes.push(took);
    derivation.push(derived);
    differences.push(took - derived);
  }
  if (last?.state !== 'read' || last.used.length !== paid.length) throw new Error(`found ${last?.used.length} used addresses, expected ${paid.length}`);
  const b = { ms: round(median(usedTimes)), addresses: last.rows.length, rounds: last.rounds, used: last.used.length };
  const deriveMs = round(median(derivation));
  const scanMs = round(median(differences));
  log(
    `fresh: ${a.ms} ms for ${a.addresses} addresses (${a.rounds} round); used: ${b.ms} ms for ${b.addresses} addresses (${b.rounds} rounds); derivation alone of the ${grown} grown: ${deriveMs} ms; scans ${scanMs} ms`,
  );
  return {
    node: 'litecoind 0.21 regtest',
    gapLimit: GAP,
    runs: RUNS,
    fresh: { medianMs: a.ms, addresses: a.addresses, rounds: a.rounds },
    used: { medianMs: b.ms, addresses: b.addresses, rounds: b.rounds, usedFound: b.used },
    derivationOfGrowthMs: { addresses: grown, medianMs: deriveMs },
    scansMs: scanMs,
    scanMsPerRound: round(scanMs / b.rounds),
  };
};

export default run;

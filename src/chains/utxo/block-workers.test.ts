/**
 * The block worker pool against a stub node over real HTTP: blocks normalised in a worker equal the
 * in-process normalisation, node failures and garbage come back as the same error classes, a worker that
 * dies fails its block with a retryable error and is replaced, and the compact form carries every amount.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { withoutAddresses } from '../../../test/support/utxo-blocks.ts';
import { type StubReply, startUtxoRpcStub, type UtxoRpcStub } from '../../../test/support/utxo-rpc-stub.ts';
import type { NormalizedBlock } from '../types.ts';
import { type BlockWorkerPool, createBlockWorkerPool } from './block-workers.ts';
import { type CompactUtxoBlock, decodeCompactBlock, encodeCompactBlock } from './compact-block.ts';
import { UtxoAdapterError } from './errors.ts';
import { normalizeUtxoBlock, UtxoNormalizeError } from './normalize.ts';
import { UtxoRpcError } from './rpc.ts';
import type { RpcBlock } from './rpc-types.ts';

const FIXTURES = path.resolve(process.cwd(), 'test/fixtures/bitcoin/mainnet/bitcoin-etl');
/** A recorded getblock answer, with or without its JSON-RPC envelope. */
function block(height: number, hash: string): RpcBlock {
  const json = JSON.parse(readFileSync(path.join(FIXTURES, `getblock_2_height${height}_${hash}.json`), 'utf8')) as RpcBlock | { result: RpcBlock };
  return 'result' in json ? (json.result as RpcBlock) : json;
}
const B50001 = block(50001, '000000001c920d49');
const B50002 = block(50002, '000000002066d7f9');
const BTC = { blockchain: 'bitcoin', network: 'mainnet' } as const;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A node with blocks 50001 and 50002 (verbosity 2); `override` answers a method first. */
async function start(override = new Map<string, (params: unknown[]) => StubReply>(), nice?: number): Promise<{ stub: UtxoRpcStub; pool: BlockWorkerPool }> {
  const blocks = [B50001, B50002];
  const stub = await startUtxoRpcStub((method, params) => {
    const o = override.get(method);
    if (o) return o(params);
    if (method === 'getblockhash') {
      const b = blocks.find((x) => x.height === params[0]);
      return b ? { result: b.hash } : { error: { code: -8, message: 'Block height out of range' } };
    }
    if (method === 'getblock') {
      if (params[1] === 3) return { error: { code: -8, message: 'Verbosity value out of range' } };
      const b = blocks.find((x) => x.hash === params[0]);
      return b ? { result: b } : { error: { code: -5, message: 'Block not found' } };
    }
    return { error: { code: -32601, message: 'Method not found' } };
  });
  // timeoutMs: the stub answers from this thread, which is busy while two workers load the TypeScript
  // sources through tsx; on Node 22 under load that took more than 400 ms (CI runs these tests on Node 22 too).
  const pool = createBlockWorkerPool(
    2,
    { ...BTC, rpcUrl: stub.url, timeoutMs: 1500, exactAmounts: true, concurrency: 4, nice, log: {} },
    { info: () => undefined, warn: () => undefined },
  );
  cleanups.push(
    () => stub.close(),
    () => pool.close(),
  );
  return { stub, pool };
}

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );

describe('block workers', () => {
  it('two workers read blocks at once; each equals the in-process normalisation', async () => {
    const { pool } = await start();
    const [a, b] = await Promise.all([pool.getBlock(50001), pool.getBlock(50002)]);
    expect(withoutAddresses(a)).toEqual(normalizeUtxoBlock({ block: B50001 }, BTC));
    expect(withoutAddresses(b)).toEqual(normalizeUtxoBlock({ block: B50002 }, BTC));
    expect(pool.threads()).toHaveLength(2);
    expect(pool.dialect()?.verbosity).toBe(2);
  });

  it('node failures and garbage come back as the classes thrown in process', async () => {
    const override = new Map<string, (params: unknown[]) => StubReply>();
    const { pool } = await start(override);
    expect(await errorOf(pool.getBlock(50003))).toBeInstanceOf(UtxoAdapterError);
    override.set('getblock', () => ({ status: 503, body: 'Work queue depth exceeded' }));
    expect(await errorOf(pool.getBlock(50001))).toMatchObject({ name: 'UtxoRpcError', kind: 'http', status: 503 });
    expect(await errorOf(pool.getBlock(50001))).toBeInstanceOf(UtxoRpcError);
    override.set('getblock', () => ({ hang: true }));
    expect(await errorOf(pool.getBlock(50001))).toMatchObject({ kind: 'timeout' });
    override.set('getblock', () => ({ result: { ...B50001, tx: [{ txid: 'not a txid' }] } }));
    expect(await errorOf(pool.getBlock(50001))).toBeInstanceOf(UtxoNormalizeError);
    override.delete('getblock');
    expect((await pool.getBlock(50001)).height).toBe(50001);
  });

  it('a worker that dies fails its block with a retryable error and is replaced at the next block', async () => {
    const override = new Map<string, (params: unknown[]) => StubReply>();
    const { pool } = await start(override);
    await pool.getBlock(50001); // both places started
    override.set('getblock', () => ({ hang: true }));
    const pending = errorOf(pool.getBlock(50001));
    await new Promise((r) => setTimeout(r, 100));
    const before = pool.threads();
    await Promise.all(before.map((w) => w.terminate()));
    const error = await pending;
    expect(error).toBeInstanceOf(UtxoAdapterError);
    expect(error?.message).toMatch(/block worker reading block 50001 stopped/);
    override.delete('getblock');
    expect(withoutAddresses(await pool.getBlock(50002))).toEqual(normalizeUtxoBlock({ block: B50002 }, BTC));
    const after = pool.threads().map((w) => w.threadId);
    expect(after.some((id) => before.some((w) => w.threadId === id))).toBe(false);
  });

  it.runIf(process.platform === 'linux')('a background pool runs its worker threads at the nice level asked, the rest of the process at its own', async () => {
    /** Each thread of this process: its nice level (field 19 of its stat, counted after the name's closing parenthesis). */
    const niceLevels = () =>
      readdirSync('/proc/self/task').map((tid) => Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(')').at(-1)?.trim().split(' ')[16]));
    const main = Number(readFileSync('/proc/self/stat', 'utf8').split(')').at(-1)?.trim().split(' ')[16]);
    const target = Math.min(19, main + 7);
    const before = niceLevels().filter((n) => n === target).length;
    const { pool } = await start(undefined, target);
    await Promise.all([pool.getBlock(50001), pool.getBlock(50002)]);
    expect(niceLevels().filter((n) => n === target).length).toBe(before + 2);
    expect(Number(readFileSync('/proc/self/stat', 'utf8').split(')').at(-1)?.trim().split(' ')[16])).toBe(main);
  });
});

const decoded = (compact: CompactUtxoBlock) => withoutAddresses(decodeCompactBlock(compact));

describe('compact block', () => {
  it('round-trips a block; amounts beyond 64 bits (dogecoin) travel as bigints', () => {
    const normal = normalizeUtxoBlock({ block: B50001 }, BTC);
    expect(decoded(encodeCompactBlock(normal).compact)).toEqual(normal);
    const huge: NormalizedBlock = {
      ...normal,
      coinMovements: normal.coinMovements.map((m, i) => (i === 0 ? { ...m, delta: 2n ** 64n } : m)),
      utxo: {
        spends: normal.utxo?.spends ?? [],
        resolvedSpends: normal.utxo?.resolvedSpends ?? [],
        outputs: (normal.utxo?.outputs ?? []).map((o, i) => (i === 0 ? { ...o, value: 2n ** 70n } : o)),
      },
    };
    const { compact } = encodeCompactBlock(huge);
    expect(Array.isArray(compact.movementDelta)).toBe(true);
    expect(decoded(structuredClone(compact))).toEqual(huge);
  });
});

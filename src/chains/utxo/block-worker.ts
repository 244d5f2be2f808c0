/**
 * A block worker thread (started by block-workers.ts): reads blocks from its Bitcoin-family node, parses
 * and normalises them, and posts them to the main thread in the compact form (compact-block.ts). The node's
 * JSON is read and parsed here only, so a block's megabytes never cross to, nor are parsed on, the main
 * thread. Each worker has its own node client and learns the node's dialect (getblock verbosity) on its own.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { BlockAnswer, BlockRequest, BlockWorkerSetup, NodeDialect } from './block-worker-protocol.ts';
import { serializeError } from './block-worker-protocol.ts';
import { createBlockFetcher } from './blocks.ts';
import { normalizeUtxoBlockCompact } from './normalize-compact.ts';
import { createBlockReader } from './read-block.ts';
import { createUtxoRpcClient } from './rpc.ts';

const port = parentPort;
if (port === null) throw new Error('block-worker.ts runs as a worker thread (block-workers.ts starts it)');
const setup = workerData as BlockWorkerSetup;
const chain = { blockchain: setup.blockchain, network: setup.network };
const post = (answer: BlockAnswer, transfer: ArrayBuffer[] = []) => port.postMessage(answer, transfer);
/** The fetcher's log lines (a verbosity given up), written by the main thread's logger. */
const logger = {
  info: (fields: object, message: string) => post({ kind: 'log', level: 'info', fields: { ...fields }, message }),
  warn: (fields: object, message: string) => post({ kind: 'log', level: 'warn', fields: { ...fields }, message }),
} as unknown as Pick<Logger, 'info' | 'warn'>;
if (setup.nice) lowerThreadPriority(setup.nice);
const rpc = createUtxoRpcClient({ url: setup.rpcUrl, auth: setup.auth, timeoutMs: setup.timeoutMs, exactAmounts: setup.exactAmounts });
const blocks = createBlockFetcher({ rpc, concurrency: setup.concurrency, logger, log: setup.log });
const reader = createBlockReader(rpc, blocks);
const dialect = (): NodeDialect => ({ verbosity: blocks.verbosity(), rawTransactionBlockHash: blocks.rawTransactionBlockHash() });

port.on('message', (request: BlockRequest) => {
  reader.readBlock(request.height).then(
    ({ fetched }) => {
      let answer: { compact: BlockAnswer & { kind: 'block' }; transfer: ArrayBuffer[] };
      try {
        const { compact, transfer } = normalizeUtxoBlockCompact({ block: fetched.block, transactions: fetched.transactions }, chain);
        answer = { compact: { kind: 'block', id: request.id, block: compact, ...dialect() }, transfer };
      } catch (error) {
        post({ kind: 'error', id: request.id, error: serializeError(error), ...dialect() });
        return;
      }
      post(answer.compact, answer.transfer);
    },
    (error: unknown) => post({ kind: 'error', id: request.id, error: serializeError(error), ...dialect() }),
  );
});

/**
 * This thread's nice level: Linux schedules threads on their own, and setpriority with a thread's id (from
 * /proc/thread-self) sets that thread's alone, not the process's. Raising one's own nice level needs no
 * privilege. Elsewhere (no /proc) the worker keeps the process's priority.
 */
function lowerThreadPriority(nice: number): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, nice);
  } catch (error) {
    logger.info({ ...setup.log, err: error }, `block worker kept its priority (nice ${nice} not set: ${(error as Error).message})`);
  }
}

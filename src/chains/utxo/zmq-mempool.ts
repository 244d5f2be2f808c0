/**
 * The Bitcoin-family mempool reader fed by the node's ZMQ `rawtx` publisher (`-zmqpubrawtx`), with
 * getrawmempool polling kept as the safety net (mempool.ts), at a slower interval.
 *
 * Each `rawtx` message is [topic, raw transaction, 4-byte little-endian sequence]. The transaction's id is
 * computed from the bytes (raw-tx.ts; `decoderawtransaction` for the formats not read there) and queued;
 * the loop is woken at once (watch). The transactions are then read like polled ones (getrawtransaction,
 * the same normalisation, inputs resolved by the ledger), which also answers what `rawtx` does not tell:
 * the node publishes every transaction of a block when it connects, and one already mined is left out
 * there (blockhash or -5), exactly as for polling. Coinbases are dropped here at once.
 *
 * ZMQ drops messages without telling (high-water mark, a reconnection, a node restart): a sequence that
 * does not follow the last one, a disconnection or a full queue asks for a getrawmempool poll at once;
 * otherwise it runs every `pollIntervalMs`. The socket opens at the first read (the loop reads only while
 * the chain has unconfirmed subscriptions) and closes with the adapter.
 */
import type { Logger } from 'pino';
import type { Subscriber } from 'zeromq';
import { createPushQueue } from '../push-queue.ts';
import type { MempoolReader } from '../types.ts';
import { rawTransactionId } from './raw-tx.ts';
import type { UtxoRpcClient } from './rpc.ts';

const HASH = /^[0-9a-fA-F]{64}$/;

export interface ZmqMempoolOptions {
  /** tcp://host:port of the node's -zmqpubrawtx. */
  zmqUrl: string;
  rpc: UtxoRpcClient;
  /** The getrawmempool reader, also used to read the transactions. */
  polling: MempoolReader;
  /** getrawmempool at least this often (the safety net); default 30 s. */
  pollIntervalMs?: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
  log?: Record<string, unknown>;
  now?: () => number;
}

export function createZmqMempoolReader(options: ZmqMempoolOptions): MempoolReader & { close(): Promise<void> } {
  const { rpc, polling, logger, log } = options;
  const pollIntervalMs = options.pollIntervalMs ?? 30_000;
  const now = options.now ?? Date.now;
  const queue = createPushQueue();
  /** A poll at the next read: the first one, and after any sign that messages were lost. */
  let pollNow = true;
  let lastPollAt = 0;
  let lastSequence: number | undefined;
  let socket: Subscriber | undefined;
  let closed = false;

  function gap(reason: string): void {
    if (!pollNow) logger?.warn({ ...log, reason }, `ZMQ rawtx gap (${reason}): polling getrawmempool now`);
    pollNow = true;
    lastSequence = undefined;
    queue.wake();
  }

  function enqueue(txid: string): void {
    if (!queue.push(txid)) gap('queue full');
  }

  async function onMessage(topic: Buffer, raw: Buffer | undefined, sequence: Buffer | undefined): Promise<void> {
    if (topic.toString() !== 'rawtx' || raw === undefined) return;
    if (sequence?.length === 4) {
      const seq = sequence.readUInt32LE(0);
      if (lastSequence !== undefined && seq !== (lastSequence + 1) >>> 0) gap(`sequence ${seq} after ${lastSequence}`);
      lastSequence = seq;
    }
    const id = rawTransactionId(raw);
    if (id?.coinbase) return;
    if (id) return enqueue(id.txid);
    // A format read only by the node (Zcash v5, MWEB).
    try {
      const decoded = await rpc.request<{ txid?: unknown; vin?: { coinbase?: unknown }[] }>('decoderawtransaction', [raw.toString('hex')]);
      if (typeof decoded.txid !== 'string' || !HASH.test(decoded.txid) || decoded.vin?.[0]?.coinbase !== undefined) return;
      enqueue(decoded.txid.toLowerCase());
    } catch (error) {
      gap(`decoderawtransaction failed: ${(error as Error).message}`);
    }
  }

  async function start(): Promise<void> {
    // Loaded only where a chain has zmqUrl: a native addon the other deployments never need.
    const { Subscriber } = await import('zeromq');
    if (closed) return;
    const sock = new Subscriber({ reconnectInterval: 1000, reconnectMaxInterval: 30_000 });
    socket = sock;
    let connected = false;
    sock.events.on('connect', () => {
      if (connected) return;
      connected = true;
      logger?.info({ ...log }, 'ZMQ rawtx connected');
    });
    sock.events.on('disconnect', () => {
      connected = false;
      gap('disconnected');
    });
    sock.connect(options.zmqUrl);
    sock.subscribe('rawtx');
    void (async () => {
      try {
        for await (const [topic, raw, sequence] of sock) await onMessage(topic as Buffer, raw, sequence);
      } catch (error) {
        if (!closed) {
          logger?.warn({ ...log, err: error }, 'ZMQ rawtx socket failed; polling getrawmempool until it is opened again at the next read');
          sock.close();
          socket = undefined;
          gap('socket failed');
        }
      }
    })();
  }

  return {
    method: 'zmq rawtx + getrawmempool polling',
    async newTransactionIds() {
      if (!socket && !closed) await start();
      let ids: string[] = [];
      if (pollNow || now() - lastPollAt >= pollIntervalMs) {
        pollNow = false;
        try {
          ids = await polling.newTransactionIds(); // a whole mempool at the first poll: no spread of 300,000 arguments
        } catch (error) {
          pollNow = true; // the queue stays for the next round
          throw error;
        }
        lastPollAt = now();
      }
      const pushed = queue.drain();
      return pushed.length === 0 ? ids : ids.length === 0 ? pushed : pushed.concat(ids);
    },
    readPending: (ids) => polling.readPending(ids),
    ...(polling.missing && { missing: polling.missing }),
    ...(polling.provenUnmined && { provenUnmined: polling.provenUnmined }),
    watch: (onNews) => queue.watch(onNews),
    async close() {
      closed = true;
      queue.clear();
      socket?.close();
      socket = undefined;
    },
  };
}

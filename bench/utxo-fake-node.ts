/**
 * A fake Bitcoin Core node for the utxo-block benchmark (bench only): a synthetic chain whose blocks are
 * rendered to JSON text ONCE, at start, so that serving a block is writing a buffer and the benchmark
 * measures the client, not this server.
 *
 * The chain (bitcoin testnet address forms): a genesis block 0, then blocks 1..N of `txPerBlock`
 * transactions each: a coinbase (reward + fees to a miner address, and the OP_RETURN witness commitment),
 * then transactions that spend the change output of the transaction at the same position in the previous
 * block (every 4th also its payment output) and pay a payment and a change output. Block 1 spends outputs
 * of a fictional history before it (prevout height 0). Addresses come from a pool of 300,000: 60 % P2WPKH,
 * 20 % P2PKH, 15 % P2SH, 5 % P2TR, all valid (real checksums), picked pseudo-randomly, so a block's
 * addresses are mostly distinct, as on a real chain.
 *
 * Wire format: Bitcoin Core 25's JSON-RPC 1.0 over HTTP with Basic authentication (401 without a JSON body
 * when refused); a JSON array is a batch (HTTP 200, one entry per call); an RPC error alone is HTTP 500,
 * "Method not found" (-32601) HTTP 404. getblock verbosity 3 is what Core 25 prints: transaction objects
 * with `fee`, `hex`, and `vin[].prevout` {generated, height, value, scriptPubKey}; amounts as JSON numbers
 * with 8 decimals; `scriptPubKey` with asm, desc, hex, address, type. Verbosity 2 is the same without
 * `prevout`; 1 (or `true`) lists txids.
 *
 * Simplifications (nothing herald reads): hashes and txids are pseudo-random (not the double SHA-256 of a
 * serialisation), so are merkle roots, the descriptor checksums after `#` and the transactions' `hex` (filler
 * of the real length). Served methods: getblockcount, getbestblockhash, getblockhash, getblock (1-3),
 * getblockheader, getblockchaininfo, getnetworkinfo, getrawtransaction (with the blockhash argument, as a
 * node without -txindex, or of a mempool transaction: -5 otherwise), getrawmempool (ids). Everything else, scantxoutset and the omni_* methods included, is
 * -32601 "Method not found" (a plain bitcoind without Omni; no opening balances are asked in the benchmark).
 *
 * The mempool burst (bench/mempool-burst.ts): `<mempool>` pending transactions made as the next blocks' would be,
 * served by getrawmempool (ids only) and getrawtransaction <txid> true (no block hash: the mempool) once the
 * bench calls `benchreleasemempool <count>` (the first <count> are listed from then on; [] before). The served tip starts at `<servedTip>`
 * and `benchsettip <height>` moves it (the blocks above it answer as unknown), so one run can time the
 * follower over a stretch of blocks with and without the burst. `benchmempoolstats` tells when the burst
 * was first listed and last read. These three methods are the bench's controls, not Core's.
 *
 * Run as a child: `node --import tsx bench/utxo-fake-node.ts --child <blocks> <txPerBlock> [<mempool> <servedTip>]` prints one line
 * of FakeUtxoNodeInfo when it serves, then serves until SIGTERM (or until its parent is gone).
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { base58, bech32, bech32m } from '@scure/base';
import { mix } from './lib.ts';

const THIS_FILE = fileURLToPath(import.meta.url);

export const RPC_USER = 'bench';
export const RPC_PASSWORD = 'bench-password';

const ADDRESS_POOL = 300_000;
const GENESIS_TIME = 1_700_000_000;
const BLOCK_SECONDS = 600;
const SUBSIDY = 625_000_000;
const PRE_HISTORY_VALUE = 5_000_000_000;

export interface FakeUtxoNodeInfo {
  url: string;
  user: string;
  password: string;
  /** Blocks 1..last carry `txPerBlock` transactions; block 0 is a genesis of one. */
  first: number;
  last: number;
  txPerBlock: number;
  transactions: number;
  /** Bytes of the verbosity-3 JSON of blocks first..last. */
  bytes: number;
  generateMs: number;
  /** One non-coinbase txid per block (position 1 + height % (txPerBlock - 1)), for TRANSACTION_MINED subscriptions that match. */
  minedSample: string[];
  /** 400 payment addresses paid in the chain (each paid again, on average, about 7 times over 500 blocks). */
  paidAddresses: string[];
  /** The pending transactions served once benchreleasemempool is called (0 without a burst). */
  mempoolTransactions: number;
  /** The payment address of one pending transaction in MEMPOOL_PAID_EVERY. */
  mempoolPaidAddresses: string[];
  /** The tip served at start (benchsettip moves it up to `last`). */
  servedTip: number;
}

// ---------------------------------------------------------------------------------------------------------
// Deterministic pseudo-random data.

const HEX = Buffer.from('0123456789abcdef');
const scratch = Buffer.alloc(4096);

/** `bytes` pseudo-random bytes of (salt, i) as lower-case hex (bytes a multiple of 4). */
function hexOf(salt: number, i: number, bytes: number): string {
  let at = 0;
  for (let w = 0; w < bytes / 4; w++) {
    const word = mix(i, salt * 1024 + w);
    for (let shift = 28; shift >= 0; shift -= 4) scratch[at++] = HEX[(word >>> shift) & 15] as number;
  }
  return scratch.toString('latin1', 0, at);
}

const fillers = new Map<number, string[]>();

/** `length` hex characters of filler (a transaction's `hex`): one of 16 pseudo-random strings per length, made once. */
function filler(i: number, length: number): string {
  let variants = fillers.get(length);
  if (variants === undefined) {
    variants = Array.from({ length: 16 }, (_, k) =>
      hexOf(7, k, 32)
        .repeat(Math.ceil(length / 64))
        .slice(0, length),
    );
    fillers.set(length, variants);
  }
  return variants[i & 15] as string;
}

/** A DER signature's hex (the first witness item), one of 256 made once. */
const SIGNATURES = Array.from({ length: 256 }, (_, k) => `3044022${hexOf(25, k, 68).slice(0, 135)}01`);

const b58check = (payload: Uint8Array): string => {
  const sum = createHash('sha256').update(createHash('sha256').update(payload).digest()).digest().subarray(0, 4);
  return base58.encode(Buffer.concat([payload, sum]));
};

// ---------------------------------------------------------------------------------------------------------
// Addresses (bitcoin testnet forms) and their scriptPubKey JSON.

interface PoolAddress {
  address: string;
  /** The scriptPubKey object as Core prints it, as JSON text. */
  spk: string;
  /** The public key its spending witness shows. */
  pubkey: string;
}

function poolAddress(i: number): PoolAddress {
  const kind = mix(i, 11) % 20;
  const h20 = Buffer.from(hexOf(12, i, 20), 'hex');
  const hex20 = h20.toString('hex');
  const checksum = hexOf(13, i, 4).slice(0, 8);
  let address: string;
  let asm: string;
  let hex: string;
  let type: string;
  if (kind < 12) {
    address = bech32.encode('tb', [0, ...bech32.toWords(h20)]);
    asm = `0 ${hex20}`;
    hex = `0014${hex20}`;
    type = 'witness_v0_keyhash';
  } else if (kind < 16) {
    address = b58check(Buffer.concat([Buffer.from([0x6f]), h20]));
    asm = `OP_DUP OP_HASH160 ${hex20} OP_EQUALVERIFY OP_CHECKSIG`;
    hex = `76a914${hex20}88ac`;
    type = 'pubkeyhash';
  } else if (kind < 19) {
    address = b58check(Buffer.concat([Buffer.from([0xc4]), h20]));
    asm = `OP_HASH160 ${hex20} OP_EQUAL`;
    hex = `a914${hex20}87`;
    type = 'scripthash';
  } else {
    const h32 = Buffer.from(hexOf(14, i, 32), 'hex');
    address = bech32m.encode('tb', [1, ...bech32m.toWords(h32)]);
    asm = `1 ${h32.toString('hex')}`;
    hex = `5120${h32.toString('hex')}`;
    type = 'witness_v1_taproot';
  }
  return {
    address,
    spk: `{"asm":"${asm}","desc":"addr(${address})#${checksum}","hex":"${hex}","address":"${address}","type":"${type}"}`,
    pubkey: `02${hexOf(26, i, 32)}`,
  };
}

/** Satoshis (a safe integer: values here stay far below 2^53) as Core prints an amount: a JSON number with 8 decimals. */
function amount(sats: number): string {
  const whole = Math.floor(sats / 100_000_000);
  return `${whole}.${String(sats - whole * 100_000_000).padStart(8, '0')}`;
}

// ---------------------------------------------------------------------------------------------------------
// The chain.

interface Output {
  /** Satoshis. */
  value: number;
  address: number;
  height: number;
}

interface BlockText {
  hash: string;
  height: number;
  /** Verbosity 3, the `result` value. */
  v3: Buffer;
  /** getblockheader's `result`. */
  header: string;
  txids: string[];
}

export interface FakeChain {
  blocks: BlockText[];
  minedSample: string[];
  paidAddresses: string[];
  bytes: number;
  /** Pending transactions (the mempool burst): getrawtransaction's verbose `result` for a mempool transaction, by txid, in listing order. */
  mempool: Map<string, string>;
  /** The payment address of every MEMPOOL_PAID_EVERY-th pending transaction (for subscriptions that match). */
  mempoolPaidAddresses: string[];
}

/** One pending transaction in this many has its payment address in `mempoolPaidAddresses`. */
export const MEMPOOL_PAID_EVERY = 10;

const blockHash = (height: number) => `00000000${hexOf(21, height, 28)}`;
const txidOf = (height: number, index: number) => hexOf(23, height * 100_003 + index, 32);
const preHistoryTxid = (index: number) => hexOf(24, index, 32);

/**
 * Blocks 0..`blocks`, then `mempoolTransactions` pending transactions: the non-coinbase transactions of the
 * blocks that would come next, made the same way (so they spend the chain's outputs and each other's, as a
 * real mempool's chains of unconfirmed transactions do), printed as getrawtransaction prints a mempool
 * transaction (no `prevout`, no `fee`, no block fields).
 */
export function generateChain(blocks: number, txPerBlock: number, mempoolTransactions = 0): FakeChain {
  const pool: (PoolAddress | undefined)[] = new Array(ADDRESS_POOL);
  const address = (i: number): PoolAddress => {
    let a = pool[i];
    if (a === undefined) {
      a = poolAddress(i);
      pool[i] = a;
    }
    return a;
  };
  const pick = (height: number, index: number, salt: number) => mix(height * 100_003 + index, salt) % ADDRESS_POOL;

  /** The outputs (payment, change) of the previous block's transaction at each position. */
  let previous: { txid: string; outputs: [Output, Output] }[] = [];
  for (let i = 1; i < txPerBlock; i++) {
    previous.push({
      txid: preHistoryTxid(i),
      outputs: [
        { value: 100_000, address: pick(0, i, 1), height: 0 },
        { value: PRE_HISTORY_VALUE, address: pick(0, i, 2), height: 0 },
      ],
    });
  }

  const out: BlockText[] = [];
  const minedSample: string[] = [];
  const paid = new Set<string>();
  let bytes = 0;
  const tip = blocks;
  const mempool = new Map<string, string>();
  const mempoolPaid: string[] = [];
  const last = tip + Math.ceil(mempoolTransactions / Math.max(1, txPerBlock - 1));
  for (let height = 0; height <= last; height++) {
    const count = height === 0 ? 1 : txPerBlock;
    const time = GENESIS_TIME + height * BLOCK_SECONDS;
    const hash = blockHash(height);
    const parts: string[] = [];
    const txids: string[] = [];
    const next: { txid: string; outputs: [Output, Output] }[] = [];
    let fees = 0;
    let size = 80 + 3;
    let weight = 4 * size;
    for (let i = 1; i < count; i++) {
      const txid = txidOf(height, i);
      const prev = previous[i - 1] as { txid: string; outputs: [Output, Output] };
      const both = i % 4 === 0;
      const r = mix(height * 100_003 + i, 3);
      const spent: [number, Output][] = both
        ? [
            [1, prev.outputs[1]],
            [0, prev.outputs[0]],
          ]
        : [[1, prev.outputs[1]]];
      const inputValue = spent.reduce((s, [, o]) => s + o.value, 0);
      const fee = 1410 + (r % 5000);
      // Small payments once the input is below 5 coins: a chain of more than about 4,000 blocks (bench/backfill.ts)
      // does not run dry (shorter chains are unchanged).
      const payment = inputValue > 500_000_000 ? 100_000 + (r % 2_000_000) : 1_000 + (r % 20_000);
      const change = inputValue - payment - fee;
      if (change <= 0) throw new Error(`block ${height} transaction ${i} would pay a non-positive change`);
      const payTo = pick(height, i, 4);
      const changeTo = pick(height, i, 5);
      const txSize = both ? 370 : 222;
      const txWeight = both ? 832 : 561;
      const vin = spent
        .map(
          ([n, o]) =>
            `{"txid":"${prev.txid}","vout":${n},"scriptSig":{"asm":"","hex":""},"txinwitness":["${SIGNATURES[(r + n) & 255]}","${address(o.address).pubkey}"],` +
            `"prevout":{"generated":false,"height":${o.height},"value":${amount(o.value)},"scriptPubKey":${address(o.address).spk}},"sequence":4294967293}`,
        )
        .join(',');
      const vout =
        `{"value":${amount(payment)},"n":0,"scriptPubKey":${address(payTo).spk}},` +
        `{"value":${amount(change)},"n":1,"scriptPubKey":${address(changeTo).spk}}`;
      parts.push(
        `{"txid":"${txid}","hash":"${hexOf(27, height * 100_003 + i, 32)}","version":2,"size":${txSize},"vsize":${Math.ceil(txWeight / 4)},"weight":${txWeight},"locktime":${height - 1},` +
          `"vin":[${vin}],"vout":[${vout}],"fee":${amount(fee)},"hex":"${filler(i, txSize * 2)}"}`,
      );
      txids.push(txid);
      fees += fee;
      size += txSize;
      weight += txWeight;
      next.push({
        txid,
        outputs: [
          { value: payment, address: payTo, height },
          { value: change, address: changeTo, height },
        ],
      });
      if (height > tip) {
        if (mempool.size < mempoolTransactions) {
          mempool.set(txid, (parts.at(-1) as string).replace(PREVOUT, '').replace(FEE, ''));
          if (mempool.size % MEMPOOL_PAID_EVERY === 1) mempoolPaid.push(address(payTo).address);
        }
      } else if (paid.size < 400 && i % 53 === 0) paid.add(address(payTo).address);
    }
    if (height > tip) {
      previous = next;
      continue;
    }
    // The coinbase first: the subsidy and the block's fees to a miner, and the witness commitment.
    const coinbaseId = txidOf(height, 0);
    const miner = address(pick(height, 0, 6));
    const coinbase =
      `{"txid":"${coinbaseId}","hash":"${hexOf(27, height * 100_003, 32)}","version":2,"size":180,"vsize":153,"weight":612,"locktime":0,` +
      `"vin":[{"coinbase":"03${hexOf(28, height, 16)}","txinwitness":["${'0'.repeat(64)}"],"sequence":4294967295}],` +
      `"vout":[{"value":${amount(SUBSIDY + fees)},"n":0,"scriptPubKey":${miner.spk}},` +
      `{"value":0.00000000,"n":1,"scriptPubKey":{"asm":"OP_RETURN aa21a9ed${hexOf(29, height, 32)}","desc":"raw(6a24aa21a9ed${hexOf(29, height, 32)})#${hexOf(30, height, 4)}","hex":"6a24aa21a9ed${hexOf(29, height, 32)}","type":"nulldata"}}],` +
      `"hex":"${filler(height, 360)}"}`;
    txids.unshift(coinbaseId);
    if (height > 0) minedSample.push(txids[1 + (height % (count - 1))] as string);

    const headerFields =
      `"hash":"${hash}","confirmations":${tip - height + 1},"height":${height},"version":536870912,"versionHex":"20000000",` +
      `"merkleroot":"${hexOf(31, height, 32)}","time":${time},"mediantime":${time - 3000},"nonce":${mix(height, 32)},"bits":"1d00ffff","difficulty":1,` +
      `"chainwork":"${(height + 1).toString(16).padStart(64, '0')}","nTx":${count}` +
      (height > 0 ? `,"previousblockhash":"${blockHash(height - 1)}"` : '') +
      (height < tip ? `,"nextblockhash":"${blockHash(height + 1)}"` : '');
    const text = `{${headerFields},"strippedsize":${size - 100 * count},"size":${size},"weight":${weight},"tx":[${[coinbase, ...parts].join(',')}]}`;
    const v3 = Buffer.from(text, 'latin1');
    if (height > 0) bytes += v3.length;
    out.push({ hash, height, v3, header: `{${headerFields}}`, txids });
    if (height > 0) previous = next;
  }
  return { blocks: out, minedSample, paidAddresses: [...paid], bytes, mempool, mempoolPaidAddresses: mempoolPaid };
}

// ---------------------------------------------------------------------------------------------------------
// The server.

class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

type Answer = string | Buffer;

/** Verbosity 2 from verbosity 3: the generated `prevout` objects removed (their layout is ours, no nested object but scriptPubKey). */
const PREVOUT = /"prevout":\{"generated":(?:true|false),"height":\d+,"value":[\d.]+,"scriptPubKey":\{[^{}]*\}\},/g;
/** A transaction's `fee` (verbosity 2 and 3 of getblock only). */
const FEE = /,"fee":[\d.]+/;

/** What the mempool burst's bench controls see (Date.now() times, this host's clock). */
export interface FakeMempoolStats {
  /** Pending transactions listed (the first `released` of the mempool, in order). */
  released: number;
  /** When getrawmempool first answered with the burst. */
  firstListedAt: number | null;
  /** getrawtransaction calls answered from the mempool, and when the last one was. */
  reads: number;
  lastReadAt: number | null;
}

export function createFakeUtxoNode(
  chain: FakeChain,
  options: { initialTip?: number } = {},
): { server: Server; listen(): Promise<string>; close(): Promise<void> } {
  const byHash = new Map(chain.blocks.map((b) => [b.hash, b]));
  // The served tip: blocks above it do not exist yet (benchsettip moves it; headers keep the full chain's confirmations).
  let tip = Math.min(options.initialTip ?? chain.blocks.length - 1, chain.blocks.length - 1);
  const allPending = [...chain.mempool.keys()];
  let listed = new Set<string>();
  let listing = '[]';
  const stats: FakeMempoolStats = { released: 0, firstListedAt: null, reads: 0, lastReadAt: null };
  const expectedAuth = `Basic ${Buffer.from(`${RPC_USER}:${RPC_PASSWORD}`).toString('base64')}`;
  let lastParsed: { hash: string; block: { tx: Record<string, unknown>[]; time: number } } | undefined;

  function blockOf(hash: unknown): BlockText {
    const b = typeof hash === 'string' ? byHash.get(hash.toLowerCase()) : undefined;
    if (b === undefined || b.height > tip) throw new RpcFailure(-5, 'Block not found');
    return b;
  }

  function call(method: string, params: unknown[]): Answer {
    switch (method) {
      case 'getblockcount':
        return String(tip);
      case 'getbestblockhash':
        return JSON.stringify(chain.blocks[tip]?.hash);
      case 'getblockhash': {
        const h = params[0];
        if (typeof h !== 'number' || !Number.isInteger(h) || h < 0 || h > tip) throw new RpcFailure(-8, 'Block height out of range');
        return JSON.stringify(chain.blocks[h]?.hash);
      }
      case 'getblock': {
        const b = blockOf(params[0]);
        const v = params[1] ?? 1;
        const verbosity = v === true ? 1 : v === false ? 0 : v;
        if (verbosity === 3) return b.v3;
        if (verbosity === 2) return b.v3.toString('latin1').replace(PREVOUT, '');
        if (verbosity === 1) return `${b.header.slice(0, -1)},"tx":${JSON.stringify(b.txids)}}`;
        if (verbosity === 0) throw new RpcFailure(-8, 'Verbosity 0 (raw block hex) is not served by this fake node');
        throw new RpcFailure(-8, 'Verbosity value out of range');
      }
      case 'getblockheader':
        return params[1] === false ? JSON.stringify('00'.repeat(80)) : blockOf(params[0]).header;
      case 'getrawmempool':
        if (params[0] === true) throw new RpcFailure(-8, 'Verbose getrawmempool is not served by this fake node');
        if (stats.released > 0) stats.firstListedAt ??= Date.now();
        return listing;
      case 'getrawtransaction': {
        const pending = params[2] === undefined && listed.has(String(params[0])) ? chain.mempool.get(String(params[0])) : undefined;
        if (pending !== undefined) {
          stats.reads++;
          stats.lastReadAt = Date.now();
          return params[1] === true || params[1] === 1 ? pending : JSON.stringify((JSON.parse(pending) as { hex: string }).hex);
        }
        if (params[2] === undefined)
          throw new RpcFailure(
            -5,
            'No such mempool transaction. Use -txindex or provide a block hash to enable blockchain transaction queries. Use gettransaction for wallet transactions.',
          );
        const b = blockOf(params[2]);
        if (lastParsed?.hash !== b.hash)
          lastParsed = { hash: b.hash, block: JSON.parse(b.v3.toString('latin1')) as { tx: Record<string, unknown>[]; time: number } };
        const tx = lastParsed.block.tx.find((t) => t.txid === params[0]);
        if (tx === undefined) throw new RpcFailure(-5, 'No such transaction found in the provided block. Use gettransaction for wallet transactions.');
        if (params[1] !== true && params[1] !== 1) return JSON.stringify(tx.hex);
        const vin = (tx.vin as Record<string, unknown>[]).map(({ prevout: _prevout, ...rest }) => rest);
        return JSON.stringify({
          ...tx,
          vin,
          blockhash: b.hash,
          confirmations: tip - b.height + 1,
          time: lastParsed.block.time,
          blocktime: lastParsed.block.time,
          in_active_chain: true,
        });
      }
      case 'getblockchaininfo': {
        const best = chain.blocks[tip] as BlockText;
        return JSON.stringify({
          chain: 'test',
          blocks: tip,
          headers: tip,
          bestblockhash: best.hash,
          difficulty: 1,
          time: GENESIS_TIME + tip * BLOCK_SECONDS,
          mediantime: GENESIS_TIME + tip * BLOCK_SECONDS - 3000,
          verificationprogress: 1,
          initialblockdownload: false,
          chainwork: (tip + 1).toString(16).padStart(64, '0'),
          size_on_disk: chain.bytes,
          pruned: false,
          warnings: '',
        });
      }
      // The bench's controls (no such methods on a real node).
      case 'benchsettip': {
        const h = params[0];
        if (typeof h !== 'number' || !Number.isInteger(h) || h < 0 || h >= chain.blocks.length) throw new RpcFailure(-8, 'Block height out of range');
        tip = h;
        return String(tip);
      }
      // The first <count> pending transactions are listed from now on (a burst: those beyond the previous count); the stats restart.
      case 'benchreleasemempool': {
        const count = params[0];
        if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > allPending.length) throw new RpcFailure(-8, 'count out of range');
        listed = new Set(allPending.slice(0, count));
        listing = JSON.stringify(allPending.slice(0, count));
        Object.assign(stats, { released: count, firstListedAt: null, reads: 0, lastReadAt: null });
        return String(count);
      }
      case 'benchmempoolstats':
        return JSON.stringify(stats);
      case 'getnetworkinfo':
        return JSON.stringify({ version: 250000, subversion: '/Satoshi:25.0.0/', protocolversion: 70016, connections: 8, networkactive: true, warnings: '' });
      default:
        throw new RpcFailure(-32601, 'Method not found');
    }
  }

  /** One request object → its answer parts (`{"result":...,"error":...,"id":...}`) and whether it failed. */
  function answer(request: unknown): { parts: Answer[]; failure?: RpcFailure } {
    const r = request as { method?: unknown; params?: unknown; id?: unknown };
    const id = JSON.stringify(r?.id ?? null);
    try {
      if (typeof r?.method !== 'string') throw new RpcFailure(-32600, 'Method must be a string');
      const result = call(r.method, Array.isArray(r.params) ? r.params : []);
      return { parts: ['{"result":', result, `,"error":null,"id":${id}}`] };
    } catch (error) {
      const failure = error instanceof RpcFailure ? error : new RpcFailure(-1, (error as Error).message);
      return { parts: [`{"result":null,"error":${JSON.stringify({ code: failure.code, message: failure.message })},"id":${id}}`], failure };
    }
  }

  function send(res: ServerResponse, status: number, parts: Answer[]): void {
    const buffers = parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : p));
    buffers.push(Buffer.from('\n'));
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': buffers.reduce((n, b) => n + b.length, 0) });
    for (const b of buffers) res.write(b);
    res.end();
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.headers.authorization !== expectedAuth) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="jsonrpc"', 'content-length': 0 });
        res.end();
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        send(res, 500, ['{"result":null,"error":{"code":-32700,"message":"Parse error"},"id":null}']);
        return;
      }
      if (Array.isArray(body)) {
        const parts: Answer[] = ['['];
        body.forEach((request, i) => {
          if (i > 0) parts.push(',');
          parts.push(...answer(request).parts);
        });
        parts.push(']');
        send(res, 200, parts);
        return;
      }
      const { parts, failure } = answer(body);
      send(res, failure === undefined ? 200 : failure.code === -32601 ? 404 : 500, parts);
    });
  });
  server.keepAliveTimeout = 60_000;

  return {
    server,
    listen: () =>
      new Promise((done) => {
        server.listen(0, '127.0.0.1', () => done(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`));
      }),
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

async function child(blocks: number, txPerBlock: number, mempoolTransactions: number, initialTip: number): Promise<void> {
  const started = performance.now();
  const chain = generateChain(blocks, txPerBlock, mempoolTransactions);
  const node = createFakeUtxoNode(chain, { initialTip });
  const url = await node.listen();
  const info: FakeUtxoNodeInfo = {
    url,
    user: RPC_USER,
    password: RPC_PASSWORD,
    first: 1,
    last: blocks,
    txPerBlock,
    transactions: blocks * txPerBlock,
    bytes: chain.bytes,
    generateMs: Math.round(performance.now() - started),
    minedSample: chain.minedSample,
    paidAddresses: chain.paidAddresses,
    mempoolTransactions: chain.mempool.size,
    mempoolPaidAddresses: chain.mempoolPaidAddresses,
    servedTip: initialTip,
  };
  process.stdout.write(`${JSON.stringify(info)}\n`);
  const parent = process.ppid;
  const stop = () => {
    clearInterval(orphanCheck);
    void node.close().then(() => process.exit(0));
  };
  const orphanCheck = setInterval(() => process.ppid !== parent && stop(), 1000);
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[2] === '--child' && resolve(process.argv[1] ?? '') === THIS_FILE) {
  const blocks = Number(process.argv[3] ?? 500);
  await child(blocks, Number(process.argv[4] ?? 2000), Number(process.argv[5] ?? 0), Number(process.argv[6] ?? blocks));
}

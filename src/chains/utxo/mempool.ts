/**
 * The Bitcoin-family mempool reader (MempoolReader): `getrawmempool` polled, each poll's new ids against
 * the last poll's list, and the new transactions read with `getrawtransaction <txid> true` in batches,
 * then normalised by the block normaliser (a batch stands in for a block: the same coin movements, outputs
 * and unresolved spends). Every Core fork serves both methods (no -txindex needed for a mempool
 * transaction). A transaction that the node answers with a `blockhash` (mined since it was listed) or no
 * longer knows (-5: mined without -txindex, replaced, evicted) is left out.
 *
 * On bitcoin the Omni reader adds the Omni token transfers of the batch's transactions still pending
 * (omni.ts pendingTransfers: `omni_listpendingtransactions`, nothing on a node that is not Omni Core).
 */
import { mapLimit } from '../../lib/concurrency.ts';
import type { MempoolReader, PendingTransactions } from '../types.ts';
import { UtxoAdapterError } from './errors.ts';
import { normalizeUtxoBlock, prevoutKey, type UtxoChainRef, ZERO_HASH } from './normalize.ts';
import type { OmniReader } from './omni.ts';
import { type UtxoRpcClient, UtxoRpcError } from './rpc.ts';
import type { RpcBlock, RpcTransaction } from './rpc-types.ts';

const HASH = /^[0-9a-fA-F]{64}$/;
/** getrawtransaction calls per batch request (one HTTP request, one timeout). */
const BATCH = 100;
/** -5: "No such mempool or blockchain transaction". */
const NOT_FOUND = -5;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** BIP125: an input whose nSequence is below 0xfffffffe makes the transaction replaceable (explicit signalling; inherited signalling is not read). */
const FINAL_SEQUENCE_MINUS_ONE = 0xfffffffe;

function signalsReplaceability(tx: RpcTransaction): boolean {
  return Array.isArray(tx.vin) && tx.vin.some((vin) => typeof vin.sequence === 'number' && vin.sequence < FINAL_SEQUENCE_MINUS_ONE);
}

export function createUtxoMempoolReader(rpc: UtxoRpcClient, chain: UtxoChainRef, concurrency = 4, omni?: Pick<OmniReader, 'pendingTransfers'>): MempoolReader {
  /** The ids of the last poll; a 300,000-transaction mempool is about 30 MB of strings, kept once. */
  let previous = new Set<string>();

  async function newTransactionIds(): Promise<string[]> {
    const ids = await rpc.request<unknown>('getrawmempool', [false]);
    if (!Array.isArray(ids)) throw new UtxoAdapterError(`getrawmempool at ${rpc.url} answered no list`);
    const now = new Set<string>();
    const fresh: string[] = [];
    for (const id of ids) {
      // Listed at the last poll, so checked then: a big mempool's ids repeat poll after poll (300,000 regex tests a second otherwise).
      if (typeof id === 'string' && previous.has(id)) {
        now.add(id);
        continue;
      }
      if (typeof id !== 'string' || !HASH.test(id)) throw new UtxoAdapterError(`getrawmempool at ${rpc.url} listed ${String(id)}, not a txid`);
      const txid = id.toLowerCase();
      now.add(txid);
      if (!previous.has(txid)) fresh.push(txid);
    }
    previous = now;
    return fresh;
  }

  async function readPending(ids: string[]): Promise<PendingTransactions> {
    const batches: string[][] = [];
    for (let i = 0; i < ids.length; i += BATCH) batches.push(ids.slice(i, i + BATCH));
    const answers = await mapLimit(batches, concurrency, async (batch) => {
      const results = await rpc.batch<unknown>(batch.map((id) => ({ method: 'getrawtransaction', params: [id, true] })));
      return results.map((answer, i) => {
        if (!answer.ok) {
          if (answer.error instanceof UtxoRpcError && answer.error.kind === 'rpc' && answer.error.code === NOT_FOUND) return undefined;
          throw answer.error;
        }
        const tx = answer.result;
        if (!isObject(tx) || typeof tx.txid !== 'string' || tx.txid.toLowerCase() !== batch[i])
          throw new UtxoAdapterError(`getrawtransaction ${batch[i]} at ${rpc.url} answered another transaction`);
        // Mined between getrawmempool and now: a confirmed event's business, not this one's.
        if (typeof tx.blockhash === 'string' && tx.blockhash !== '') return undefined;
        return tx as unknown as RpcTransaction;
      });
    });
    const transactions = answers.flat().filter((tx): tx is RpcTransaction => tx !== undefined);
    // A block of the pending transactions (header values never read by matching).
    const block = { height: 0, hash: ZERO_HASH, time: 0, tx: transactions } as unknown as RpcBlock;
    const normalized = normalizeUtxoBlock({ block }, chain);
    const conflicts = transactions.flatMap((tx) =>
      (Array.isArray(tx.vin) ? tx.vin : []).flatMap((vin) =>
        typeof vin.txid === 'string' && typeof vin.vout === 'number'
          ? [{ transactionId: String(tx.txid).toLowerCase(), key: prevoutKey(vin.txid.toLowerCase(), vin.vout) }]
          : [],
      ),
    );
    // Asked after getrawtransaction: what Omni Core lists of these is still pending (mined ones it leaves out).
    const tokenTransfers = omni ? await omni.pendingTransfers(new Set(normalized.transactionIds)) : [];
    const replaceable = transactions.filter(signalsReplaceability).map((tx) => String(tx.txid).toLowerCase());
    return {
      transactionIds: normalized.transactionIds,
      coinMovements: normalized.coinMovements,
      tokenTransfers,
      utxo: normalized.utxo,
      conflicts,
      ...(replaceable.length > 0 && { replaceableTransactionIds: replaceable }),
    };
  }

  /**
   * getmempoolentry for each of `ids`, in batches: those the node answers -5 ("Transaction not in mempool").
   * A node still loading its saved mempool after a restart (`getmempoolinfo` `loaded` false) is not asked:
   * what it has not reloaded yet would look gone.
   */
  async function missing(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const info = await rpc.request<unknown>('getmempoolinfo', []);
    if (isObject(info) && info.loaded === false) throw new UtxoAdapterError(`the mempool of ${rpc.url} is still loading`);
    const batches: string[][] = [];
    for (let i = 0; i < ids.length; i += BATCH) batches.push(ids.slice(i, i + BATCH));
    const answers = await mapLimit(batches, concurrency, async (batch) => {
      const results = await rpc.batch<unknown>(batch.map((id) => ({ method: 'getmempoolentry', params: [id] })));
      return results.flatMap((answer, i) => {
        if (answer.ok) {
          if (!isObject(answer.result)) throw new UtxoAdapterError(`getmempoolentry ${batch[i]} at ${rpc.url} answered no entry`);
          return [];
        }
        if (answer.error instanceof UtxoRpcError && answer.error.kind === 'rpc' && answer.error.code === NOT_FOUND) return [batch[i] as string];
        throw answer.error;
      });
    });
    return answers.flat();
  }

  /**
   * docs/concepts/deposit-safety.md#evicted: between two equal `getbestblockhash`, the candidates still
   * missing, then `gettxout <txid> <n> false` for each outpoint they spend: an unspent one proves that no
   * block up to that tip holds the transaction or a conflict of it. A transaction spending only unconfirmed
   * outputs (gettxout null: not in the confirmed set) is never proven.
   */
  async function provenUnmined(candidates: { transactionId: string; claims: string[] }[]): Promise<{ tip: string; unmined: string[] } | undefined> {
    const tipBefore = await bestBlockHash();
    const gone = new Set(await missing(candidates.map((c) => c.transactionId)));
    const outpoints: { transactionId: string; txid: string; vout: number }[] = [];
    for (const c of candidates) {
      if (!gone.has(c.transactionId)) continue;
      for (const claim of c.claims) {
        const [txid, vout] = claim.split(':');
        if (txid !== undefined && HASH.test(txid) && vout !== undefined && /^[0-9]+$/.test(vout))
          outpoints.push({ transactionId: c.transactionId, txid, vout: Number(vout) });
      }
    }
    const unspent = new Set<string>();
    for (let i = 0; i < outpoints.length; i += BATCH) {
      const batch = outpoints.slice(i, i + BATCH);
      const results = await rpc.batch<unknown>(batch.map((o) => ({ method: 'gettxout', params: [o.txid, o.vout, false] })));
      for (const [j, answer] of results.entries()) {
        if (!answer.ok) throw answer.error;
        if (answer.result === null) continue;
        if (!isObject(answer.result)) throw new UtxoAdapterError(`gettxout at ${rpc.url} answered neither an output nor null`);
        // The output is in the UTXO set of the tip gettxout names: the tip read around these calls.
        if (typeof answer.result.bestblock === 'string' && answer.result.bestblock.toLowerCase() !== tipBefore) return undefined;
        unspent.add((batch[j] as (typeof batch)[number]).transactionId);
      }
    }
    const tipAfter = await bestBlockHash();
    if (tipAfter !== tipBefore) return undefined;
    return { tip: tipBefore, unmined: candidates.map((c) => c.transactionId).filter((id) => unspent.has(id)) };
  }

  async function bestBlockHash(): Promise<string> {
    const hash = await rpc.request<unknown>('getbestblockhash', []);
    if (typeof hash !== 'string' || !HASH.test(hash)) throw new UtxoAdapterError(`getbestblockhash at ${rpc.url} answered ${String(hash)}`);
    return hash.toLowerCase();
  }

  return { method: 'getrawmempool polling', newTransactionIds, readPending, missing, provenUnmined };
}

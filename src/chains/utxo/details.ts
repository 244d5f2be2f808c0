/**
 * The Callback Data reads on the Bitcoin-family chains (docs/reference/api.md#block-by-hash, #block-by-height, #transaction-details and #callback-data-reads), from the RPC
 * methods every Bitcoin Core fork serves: getblockhash, getblock <hash> true (verbosity 1, as the
 * boolean-only nodes take it), getrawtransaction <txid> true, gettxout.
 *
 * - Blocks: only the main chain's (a block asked by hash with confirmations -1 is not answered). A pruned
 *   node that no longer has the block says so (NodeReadError 'not-served').
 * - Transactions: mined ones only. A node without -txindex finds no mined transaction by id: it says so
 *   (NodeReadError 'not-served', with what to change). Senders are the spent outputs, looked up with
 *   getrawtransaction too; `isSpent` of each output is gettxout's answer at the node's tip (mempool
 *   included).
 */

import { formatUnits } from '../../domain/amounts.ts';
import { CHAINS } from '../../domain/chains.ts';
import { type AddressAmount, type BlockDetails, type BlockSelector, NodeReadError, type TransactionDetails } from '../details.ts';
import { NodeRpcError } from '../rpc-error.ts';
import { parseCoinAmount, type UtxoBlockchain } from './normalize.ts';
import { type UtxoRpcClient, UtxoRpcError } from './rpc.ts';

const HASH = /^[0-9a-fA-F]{64}$/;
const ZERO_HASH = '0'.repeat(64);
/** Calls per batch request (one HTTP request and one timeout). */
const BATCH = 100;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const int = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? Math.trunc(value) : 0);
const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

export interface UtxoDetailsReader {
  getBlockDetails(block: BlockSelector): Promise<BlockDetails | undefined>;
  getTransactionDetails(transactionId: string): Promise<TransactionDetails | undefined>;
}

export function createUtxoDetailsReader(rpc: UtxoRpcClient, blockchain: UtxoBlockchain): UtxoDetailsReader {
  const { unit, decimals } = CHAINS[blockchain];
  const coins = (units: bigint) => formatUnits(units, decimals);

  function unavailable(method: string, error: unknown): NodeReadError {
    const what = error instanceof NodeRpcError && error.unanswered ? 'did not answer' : 'answered with an error';
    return new NodeReadError('unavailable', `The ${blockchain} node ${what} (${method}); retry in a moment.`, { cause: error });
  }

  /** A node call; `onRpcError` may turn the node's error answer into a result (undefined: not found). */
  async function call<T>(method: string, params: readonly unknown[], onRpcError?: (error: UtxoRpcError) => T | undefined): Promise<T | undefined> {
    try {
      return await rpc.request<T>(method, params);
    } catch (error) {
      if (onRpcError && error instanceof UtxoRpcError && error.kind === 'rpc') return onRpcError(error);
      throw unavailable(method, error);
    }
  }

  const notFound = (codes: number[]) => (error: UtxoRpcError) => {
    if (error.code !== undefined && codes.includes(error.code)) return undefined;
    throw unavailable(error.method, error);
  };

  /** getblock <hash> true: the block with its txids, or undefined when it is not on the node's main chain. */
  async function blockByHash(hash: string, height?: number): Promise<Json | undefined> {
    const block = await call<unknown>('getblock', [hash, true], (error) => {
      if (/prune|not available|not found on disk/i.test(error.nodeMessage)) {
        throw new NodeReadError(
          'not-served',
          `The ${blockchain} node herald reads is pruned and no longer keeps block ${height ?? hash}; it can be read from an unpruned node.`,
          { cause: error },
        );
      }
      if (error.code === -5) return undefined;
      throw unavailable('getblock', error);
    });
    if (block === undefined) return undefined;
    if (!isObject(block) || typeof block.height !== 'number' || !Array.isArray(block.tx))
      throw new NodeReadError('unavailable', `The ${blockchain} node answered getblock with something that is not a block; retry in a moment.`);
    if (typeof block.confirmations === 'number' && block.confirmations < 1) return undefined;
    return block;
  }

  async function getBlockDetails(selector: BlockSelector): Promise<BlockDetails | undefined> {
    let hash: string | undefined;
    if ('height' in selector) {
      const answer = await call<unknown>('getblockhash', [selector.height], notFound([-8]));
      if (answer === undefined) return undefined;
      if (typeof answer !== 'string' || !HASH.test(answer))
        throw new NodeReadError('unavailable', `The ${blockchain} node answered getblockhash with something that is not a hash; retry in a moment.`);
      hash = answer;
    } else {
      hash = selector.hash;
    }
    const block = await blockByHash(hash, 'height' in selector ? selector.height : undefined);
    if (!block) return undefined;
    return {
      hash: str(block.hash).toLowerCase(),
      height: block.height as number,
      previousBlockHash: str(block.previousblockhash).toLowerCase() || ZERO_HASH,
      timestamp: int(block.time),
      transactionsCount: typeof block.nTx === 'number' ? block.nTx : (block.tx as unknown[]).length,
      blockchainSpecific: blockSpecific(blockchain, block),
    };
  }

  /** The outputs that `inputs` spend, by `txid:vout` (getrawtransaction of each spent transaction, batched). */
  async function spentOutputs(inputs: Json[]): Promise<Map<string, Json>> {
    const txids = [...new Set(inputs.map((vin) => str(vin.txid)).filter((id) => HASH.test(id)))];
    const found = new Map<string, Json>();
    for (let i = 0; i < txids.length; i += BATCH) {
      const chunk = txids.slice(i, i + BATCH);
      let answers: Awaited<ReturnType<UtxoRpcClient['batch']>>;
      try {
        answers = await rpc.batch<unknown>(chunk.map((id) => ({ method: 'getrawtransaction', params: [id, true] })));
      } catch (error) {
        throw unavailable('getrawtransaction', error);
      }
      answers.forEach((answer, k) => {
        if (!answer.ok || !isObject(answer.result)) return;
        for (const out of Array.isArray(answer.result.vout) ? answer.result.vout : []) {
          if (isObject(out)) found.set(`${chunk[k]}:${int(out.n)}`, out);
        }
      });
    }
    return found;
  }

  /** Whether each output of `txid` is spent (gettxout at the tip, mempool included). */
  async function spentFlags(txid: string, outputs: Json[]): Promise<boolean[]> {
    const flags: boolean[] = [];
    for (let i = 0; i < outputs.length; i += BATCH) {
      const chunk = outputs.slice(i, i + BATCH);
      let answers: Awaited<ReturnType<UtxoRpcClient['batch']>>;
      try {
        answers = await rpc.batch<unknown>(chunk.map((out) => ({ method: 'gettxout', params: [txid, int(out.n), true] })));
      } catch (error) {
        throw unavailable('gettxout', error);
      }
      answers.forEach((answer, k) => {
        const script = isObject(chunk[k]?.scriptPubKey) ? (chunk[k]?.scriptPubKey as Json) : {};
        // An unspendable output (OP_RETURN) is in no UTXO set and never spent.
        flags.push(answer.ok && answer.result === null && script.type !== 'nulldata');
      });
    }
    return flags;
  }

  async function getTransactionDetails(transactionId: string): Promise<TransactionDetails | undefined> {
    const tx = await call<unknown>('getrawtransaction', [transactionId, true], (error) => {
      if (error.code === -5 && /txindex/i.test(error.nodeMessage)) {
        throw new NodeReadError(
          'not-served',
          `The ${blockchain} node herald reads keeps no transaction index, so it cannot find mined transactions by id; the operator can start it with -txindex=1.`,
          { cause: error },
        );
      }
      if (error.code === -5 || error.code === -8) return undefined;
      throw unavailable('getrawtransaction', error);
    });
    // Unknown, or in the mempool (no block to describe it in yet).
    if (!isObject(tx) || typeof tx.blockhash !== 'string' || !HASH.test(tx.blockhash)) return undefined;
    if (typeof tx.confirmations === 'number' && tx.confirmations < 1) return undefined;
    const block = await blockByHash(tx.blockhash.toLowerCase());
    if (!block) return undefined;
    const txid = str(tx.txid).toLowerCase();
    const index = (block.tx as unknown[]).findIndex((id) => typeof id === 'string' && id.toLowerCase() === txid);
    if (index < 0) return undefined;
    const vinRaw = (Array.isArray(tx.vin) ? tx.vin : []).filter(isObject);
    const voutRaw = (Array.isArray(tx.vout) ? tx.vout : []).filter(isObject);
    const [spent, spentNow] = await Promise.all([spentOutputs(vinRaw), spentFlags(txid, voutRaw)]);

    const senders = new Map<string, bigint>();
    let totalIn = 0n;
    const vin = vinRaw.map((input) => {
      const prev = spent.get(`${str(input.txid).toLowerCase()}:${int(input.vout)}`);
      const prevScript = isObject(prev?.scriptPubKey) ? (prev.scriptPubKey as Json) : {};
      const addresses = addressesOf(prevScript);
      const value = prev ? amountOf(prev) : undefined;
      if (value !== undefined) {
        totalIn += value;
        const address = addresses.length === 1 ? (addresses[0] as string) : '';
        if (address) senders.set(address, (senders.get(address) ?? 0n) + value);
      }
      const scriptSig = isObject(input.scriptSig) ? input.scriptSig : {};
      const item: Json = {
        addresses,
        scriptSig: { asm: str(scriptSig.asm), hex: str(scriptSig.hex), type: str(prevScript.type) },
        sequence: int(input.sequence),
        txinwitness: strings(input.txinwitness),
      };
      if (typeof input.coinbase === 'string') item.coinbase = input.coinbase;
      if (typeof input.txid === 'string') {
        item.txid = input.txid.toLowerCase();
        item.vout = int(input.vout);
      }
      if (value !== undefined) item.value = coins(value);
      return item;
    });

    const recipients: AddressAmount[] = [];
    let totalOut = 0n;
    const vout = voutRaw.map((out, k) => {
      const script = isObject(out.scriptPubKey) ? out.scriptPubKey : {};
      const addresses = addressesOf(script);
      const value = amountOf(out) ?? 0n;
      totalOut += value;
      if (addresses.length === 1) recipients.push({ address: addresses[0] as string, amount: coins(value) });
      return {
        isSpent: spentNow[k] ?? false,
        scriptPubKey: {
          addresses,
          asm: str(script.asm),
          hex: str(script.hex),
          reqSigs: typeof script.reqSigs === 'number' ? script.reqSigs : addresses.length > 0 ? 1 : 0,
          type: str(script.type),
        },
        value: coins(value),
      };
    });

    const coinbase = vinRaw.some((input) => typeof input.coinbase === 'string');
    // Zcash: value leaving the shielded pools counts as an input.
    const shielded = blockchain === 'zcash' ? shieldedNet(tx) : 0n;
    const fee = coinbase ? 0n : totalIn + shielded - totalOut;
    // A sender pays its inputs; the fee is in them (docs/reference/api.md#callback-data-reads).
    const senderList = [...senders].map(([address, amount]) => ({ address, amount: coins(amount) }));
    return {
      index,
      isConfirmed: true,
      minedInBlockHash: str(block.hash).toLowerCase(),
      minedInBlockHeight: block.height as number,
      recipients,
      senders: senderList,
      timestamp: int(block.time),
      transactionHash: (str(tx.hash) || txid).toLowerCase(),
      fee: { amount: coins(fee > 0n ? fee : 0n), unit },
      blockchainSpecific: transactionSpecific(blockchain, tx, vin, vout, coins),
    };
  }

  return { getBlockDetails, getTransactionDetails };
}

function addressesOf(script: Json): string[] {
  if (typeof script.address === 'string') return [script.address];
  return strings(script.addresses);
}

/** An output's value in base units: Zcash's valueZat and Dash's valueSat when given, else `value` (coins). */
function amountOf(out: Json): bigint | undefined {
  for (const exact of [out.valueZat, out.valueSat]) {
    if (typeof exact === 'number' && Number.isSafeInteger(exact)) return BigInt(exact);
    if (typeof exact === 'string' && /^\d+$/.test(exact)) return BigInt(exact);
  }
  try {
    return out.value === undefined || out.value === null ? undefined : parseCoinAmount(out.value);
  } catch {
    return undefined;
  }
}

/** Zcash: what leaves the shielded pools into the transparent one (Sapling valueBalance, Sprout vpub_new - vpub_old). */
function shieldedNet(tx: Json): bigint {
  const coin = (v: unknown) => {
    try {
      return v === undefined || v === null ? 0n : parseCoinAmount(v);
    } catch {
      return 0n;
    }
  };
  let net = coin(tx.valueBalance);
  for (const js of Array.isArray(tx.vjoinsplit) ? tx.vjoinsplit : []) {
    if (isObject(js)) net += coin(js.vpub_new) - coin(js.vpub_old);
  }
  return net;
}

/** docs/reference/api.md#callback-data-reads: the block fields of each chain, in its spelling. */
function blockSpecific(blockchain: UtxoBlockchain, b: Json): Json {
  const common = { bits: str(b.bits), chainwork: str(b.chainwork), merkleRoot: str(b.merkleroot) };
  const difficulty = b.difficulty === undefined || b.difficulty === null ? '' : String(b.difficulty);
  const size = int(b.size);
  const version = int(b.version);
  switch (blockchain) {
    case 'bitcoin':
      return {
        ...common,
        difficulty,
        nonce: int(b.nonce),
        size,
        strippedSize: int(b.strippedsize),
        version,
        versionHex: str(b.versionHex),
        weight: int(b.weight),
      };
    case 'litecoin':
      return {
        ...common,
        difficulty,
        nonce: int(b.nonce),
        size,
        strippedsize: int(b.strippedsize),
        version,
        versionHex: str(b.versionHex),
        weight: int(b.weight),
      };
    case 'bitcoin-cash':
    case 'dash':
      return { ...common, difficulty, nonce: int(b.nonce), size, version, versionHex: str(b.versionHex) };
    case 'dogecoin':
      return { ...common, difficulty, nonce: int(b.nonce), size, strippedSize: int(b.strippedsize), version, weight: int(b.weight) };
    case 'zcash':
      // zcashd's nonce is 32 bytes of hex.
      return { ...common, nonce: typeof b.nonce === 'string' ? b.nonce : String(b.nonce ?? ''), size, version };
  }
}

/** docs/reference/api.md#callback-data-reads: the transaction fields of each chain. */
function transactionSpecific(blockchain: UtxoBlockchain, tx: Json, vin: Json[], vout: Json[], coins: (units: bigint) => string): Json {
  const size = typeof tx.size === 'number' ? tx.size : str(tx.hex).length / 2;
  const base = { locktime: int(tx.locktime), size, version: int(tx.version), vin, vout };
  switch (blockchain) {
    case 'bitcoin':
    case 'litecoin':
      return { ...base, vSize: typeof tx.vsize === 'number' ? tx.vsize : size };
    case 'bitcoin-cash':
    case 'dash':
    case 'dogecoin':
      return base;
    case 'zcash': {
      const list = (v: unknown) => (Array.isArray(v) ? v.filter(isObject) : []);
      let valueBalance = 0n;
      try {
        valueBalance = tx.valueBalance === undefined || tx.valueBalance === null ? 0n : parseCoinAmount(tx.valueBalance);
      } catch {
        valueBalance = 0n;
      }
      return {
        ...base,
        bindingSig: str(tx.bindingSig),
        expiryHeight: int(tx.expiryheight),
        joinSplitPubKey: str(tx.joinSplitPubKey),
        joinSplitSig: str(tx.joinSplitSig),
        overwintered: tx.overwintered === true,
        vJoinSplit: list(tx.vjoinsplit).map((js) => ({
          anchor: str(js.anchor),
          cipherTexts: strings(js.ciphertexts),
          commitments: strings(js.commitments),
          macs: strings(js.macs),
          nullifiers: strings(js.nullifiers),
          oneTimePubKey: str(js.onetimePubKey),
          proof: str(js.proof),
          randomSeed: str(js.randomSeed),
          vPubNew: js.vpub_new === undefined ? '0' : String(js.vpub_new),
          vPubOld: js.vpub_old === undefined ? '0' : String(js.vpub_old),
        })),
        vShieldedOutput: list(tx.vShieldedOutput).map((o) => ({
          cmu: str(o.cmu),
          cv: str(o.cv),
          encCipherText: str(o.encCiphertext),
          ephemeralKey: str(o.ephemeralKey),
          outCipherText: str(o.outCiphertext),
          proof: str(o.proof),
        })),
        vShieldedSpend: list(tx.vShieldedSpend).map((s) => ({
          anchor: str(s.anchor),
          cv: str(s.cv),
          nullifier: str(s.nullifier),
          proof: str(s.proof),
          rk: str(s.rk),
          spendAuthSig: str(s.spendAuthSig),
        })),
        valueBalance: coins(valueBalance),
        versionGroupId: str(tx.versiongroupid),
      };
    }
  }
}

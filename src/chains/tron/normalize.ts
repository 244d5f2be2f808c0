/**
 * Pure Tron block normaliser: turns the java-tron HTTP results of one block (`getblockbynum`, or
 * `getnowblock`, and `gettransactioninfobyblocknum` of the same height) into the chain-independent
 * NormalizedBlock. No I/O. Addresses come out in base58 (`T...`), transaction ids and hashes as 64
 * lower-case hex without 0x (the normal forms of src/domain/addresses.ts).
 *
 * Rules (field names: fixtures README section 4):
 * - Header: height `block_header.raw_data.number`, hash `blockID`, parent `block_header.raw_data.parentHash`,
 *   timestamp `block_header.raw_data.timestamp` in ms → seconds (rounded down); absent number/timestamp mean 0 (protobuf
 *   JSON omits zeros), which only the genesis block may have for its timestamp. A block id whose first 8 bytes
 *   are not the height, a parent hash whose first 8 bytes are not height − 1 (checked from height 1 on: the
 *   genesis parent is arbitrary), a non-hex id, `{}` (not found), a malformed transaction list or a duplicate
 *   txID throws TronNormalizeError: the caller should refetch.
 * - Transaction infos: every transaction of the block needs exactly one info (matched by `id`, any order) and
 *   every info must belong to a transaction of the block (and to this height when it names `blockNumber`);
 *   otherwise TronNormalizeError (a node without `storage.transHistory.switch = on` answers none). `{}` is
 *   accepted as an empty list (java-tron's answer for "nothing").
 * - Success: a transaction failed when its info says `result: "FAILED"`, or `receipt.result` is present and
 *   neither SUCCESS nor DEFAULT, or the block's `ret[0].contractRet` is present and neither SUCCESS nor
 *   DEFAULT. Non-contract transactions (TransferContract, TRC-10, stake, votes...) have no `receipt.result`
 *   (protobuf JSON omits the enum default, see the Nile gettransactioninfobyblocknum fixture): they count as
 *   successful unless `ret`/`result` say otherwise.
 * - Token transfers: info `log[]` entries with topics[0] = keccak256("Transfer(address,address,uint256)") (hex,
 *   no 0x). 3 topics and 32 bytes of data = TRC-20 (amount = data); 4 topics and no data = TRC-721 (token id =
 *   topics[3], decimal). Contract = 41 + log.address, from/to = 41 + last 20 bytes of topics[1]/[2], all in
 *   base58. Only of successful transactions; malformed logs (wrong length, non-hex, address topics with non-zero
 *   upper 12 bytes) are skipped, never thrown. TRC-10 (TransferAssetContract) is not a token transfer here.
 * - logIndex: Tron logs have no block-wide index, so it is the position of the log in the block counting every
 *   `log[]` entry (Transfer or not, of every transaction) in block transaction order: the EVM logIndex rule.
 * - Internal transfers: info `internal_transactions[]` (only present when the node runs with
 *   `vm.saveInternalTx = true`). An entry counts when it is not `rejected`, its note (hex ASCII) is "call",
 *   "create" or "suicide" (or absent), its TRX amount (sum of `callValueInfo[].callValue` without `tokenId`;
 *   entries with `tokenId` are TRC-10 and ignored) is > 0 and its caller/transferTo addresses are valid.
 *   TVM stake operations ("freezeBalanceV2ForEnergy", "unfreezeBalanceV2ForBandwidth", "delegateResourceOf...",
 *   "withdrawExpireUnfreeze", "voteWitness", ...) carry amounts in callValue but move no TRX between accounts,
 *   so they are excluded; malformed entries are skipped. Nothing of a failed transaction.
 * - operationId scheme: `internal_<i>`, i = the entry's index in the info's `internal_transactions` array
 *   counting every entry (also zero-value, rejected and stake ones), so the id does not change with the filter.
 *   java-tron lists internal transactions flat, in execution order, without their call depth.
 * - Coin movements (TRX, sun), per transaction, one net entry per address (zero nets omitted), in block order
 *   then first appearance: the owner (`raw_data.contract[0].parameter.value.owner_address`) pays the info's
 *   `fee` (total TRX burnt: bandwidth, energy, account creation, multi-sign...) whether the transaction
 *   succeeded or not; on success TransferContract moves `amount` from owner to `to_address`,
 *   TriggerSmartContract moves `call_value` from owner to `contract_address`, CreateSmartContract moves
 *   `new_contract.call_value` to the info's `contract_address`, and every internal transfer moves its amount.
 *   Other contract types (TRC-10, freeze/unfreeze, votes, rewards, exchanges...) only pay their fee here: like
 *   EVM block rewards, stake and reward balance changes are not transfers between accounts. Each fee (> 0)
 *   and its payer are also in `fees` (the wallet-key callbacks' `fee`).
 * - Unknown contract types never throw; a known type whose value fields are malformed (TransferContract without
 *   `to_address`, a negative amount, ...) or a fee without an owner throws TronNormalizeError.
 * - int64 fields arrive as JSON numbers; a number beyond Number.MAX_SAFE_INTEGER has lost precision in
 *   JSON.parse and is refused: the RPC client must then pass it as a decimal string or bigint.
 */

import { keccak_256 } from '@noble/hashes/sha3';
import { hex } from '@scure/base';
import { validateAddress, validateTransactionId } from '../../domain/addresses.ts';
import { MovementBook } from '../movements.ts';
import type { InternalTransfer, NormalizedBlock, TokenTransfer, TransactionFee } from '../types.ts';
import type { TronBlock, TronContractValue, TronInternalTransaction, TronLog, TronTransaction, TronTransactionInfo } from './rpc-types.ts';

/** keccak256("Transfer(address,address,uint256)") as java-tron prints topics: hex without 0x. */
export const TRANSFER_TOPIC = hex.encode(keccak_256('Transfer(address,address,uint256)'));

export type TronNetwork = 'mainnet' | 'nile';

export interface TronBlockInput {
  /** `POST /wallet/getblockbynum {"num": n}` (or `getnowblock`) result. */
  block: TronBlock;
  /** `POST /wallet/gettransactioninfobyblocknum {"num": n}` result (any order); `{}` counts as empty. */
  infos: TronTransactionInfo[] | Record<string, never>;
}

export class TronNormalizeError extends Error {
  override name = 'TronNormalizeError';
}

const WORD = /^[0-9a-fA-F]{64}$/;
const ADDRESS_WORD = /^0{24}([0-9a-fA-F]{40})$/;
const LOG_ADDRESS = /^[0-9a-fA-F]{40}$/;
const HEX_BYTES = /^(?:[0-9a-fA-F]{2})*$/;
/** Notes of internal transactions that move TRX from caller to transferTo. */
const VALUE_NOTES = new Set(['call', 'create', 'suicide']);
const SUCCESS_RESULTS = new Set(['SUCCESS', 'DEFAULT']);

/** An int64 field (number, decimal string or bigint) → bigint; undefined when absent or not an exact integer. */
export function parseTronInt(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : undefined;
  if (typeof value === 'string' && /^-?\d{1,20}$/.test(value)) return BigInt(value);
  return undefined;
}

function requireInt(value: unknown, what: string, absentMeans?: bigint): bigint {
  if ((value === undefined || value === null) && absentMeans !== undefined) return absentMeans;
  const n = parseTronInt(value);
  if (n !== undefined) return n;
  if (typeof value === 'number' && Number.isInteger(value)) {
    throw new TronNormalizeError(`${what} ${value} is beyond Number.MAX_SAFE_INTEGER and lost precision in JSON.parse; pass it as a string or bigint`);
  }
  throw new TronNormalizeError(`${what} is not an integer: ${String(value)}`);
}

function requireAmount(value: unknown, what: string): bigint {
  const n = requireInt(value, what, 0n);
  if (n < 0n) throw new TronNormalizeError(`${what} is negative: ${n}`);
  return n;
}

/** A transaction id or block hash in normal form (64 lower-case hex, no 0x), or undefined. */
function normalizeId(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const v = validateTransactionId('tron', 'mainnet', value);
  return v.ok ? v.normalized : undefined;
}

function requireId(value: unknown, what: string): string {
  const id = normalizeId(value);
  if (id === undefined) throw new TronNormalizeError(`${what} is not a 32-byte hex hash: ${String(value)}`);
  return id;
}

/** The first 8 bytes of a Tron block id: the height, big-endian. */
function heightOfBlockId(id: string): bigint {
  return BigInt(`0x${id.slice(0, 16)}`);
}

/** Converts Tron addresses (hex 41..., or base58 with `visible: true`) to base58, with a per-block cache. */
class Addresses {
  private readonly cache = new Map<string, string | undefined>();
  private readonly network: TronNetwork;

  constructor(network: TronNetwork) {
    this.network = network;
  }

  /** Base58 of a 21-byte hex (41...) or base58 address; undefined when it is neither. */
  of(value: unknown): string | undefined {
    if (typeof value !== 'string' || value === '') return undefined;
    if (this.cache.has(value)) return this.cache.get(value);
    const v = validateAddress('tron', this.network, value);
    const result = v.ok ? v.normalized : undefined;
    this.cache.set(value, result);
    return result;
  }

  /** A log's address: 20-byte hex without the 41 prefix (or a full address with `visible: true`). */
  ofLog(value: unknown): string | undefined {
    return typeof value === 'string' && LOG_ADDRESS.test(value) ? this.of(`41${value}`) : this.of(value);
  }

  /** An ABI address word (hex, no 0x): the last 20 bytes with the 41 prefix; undefined if the upper 12 bytes are not zero. */
  ofTopic(topic: unknown): string | undefined {
    if (typeof topic !== 'string') return undefined;
    const m = ADDRESS_WORD.exec(topic);
    return m?.[1] === undefined ? undefined : this.of(`41${m[1]}`);
  }
}

export interface TronBlockHeader {
  height: number;
  hash: string;
  parentHash: string;
  timestamp: number;
  transactionIds: string[];
}

/** Header part of a `getblockbynum` / `getnowblock` result (no transaction infos needed). */
export function normalizeTronBlockHeader(block: TronBlock): TronBlockHeader {
  if (block === null || typeof block !== 'object' || Array.isArray(block)) throw new TronNormalizeError('block is not an object');
  if (block.blockID === undefined && block.block_header === undefined) throw new TronNormalizeError('block not found (the node answered {})');
  const raw = block.block_header?.raw_data;
  if (raw === null || raw === undefined || typeof raw !== 'object') throw new TronNormalizeError('block has no block_header.raw_data');
  const heightBig = requireInt(raw.number, 'block number', 0n);
  if (heightBig < 0n || heightBig > BigInt(Number.MAX_SAFE_INTEGER)) throw new TronNormalizeError(`block number out of range: ${heightBig}`);
  const hash = requireId(block.blockID, 'blockID');
  if (heightOfBlockId(hash) !== heightBig) throw new TronNormalizeError(`blockID ${hash} does not start with the block number ${heightBig}`);
  const parentHash = requireId(raw.parentHash, 'block parentHash');
  if (heightBig > 0n && heightOfBlockId(parentHash) !== heightBig - 1n) {
    throw new TronNormalizeError(`parentHash ${parentHash} of block ${heightBig} does not start with the block number ${heightBig - 1n}`);
  }
  // protobuf JSON omits zero values: the genesis block (number 0, timestamp 0) prints neither; any other block must have a time.
  const ms = requireInt(raw.timestamp, 'block timestamp', heightBig === 0n ? 0n : undefined);
  if (ms < 0n) throw new TronNormalizeError(`block timestamp is negative: ${ms}`);

  const txs = block.transactions ?? [];
  if (!Array.isArray(txs)) throw new TronNormalizeError('block transactions is not an array');
  const transactionIds = txs.map((tx, i) => requireId(tx?.txID, `transaction ${i} txID`));
  const seen = new Set<string>();
  for (const id of transactionIds) {
    if (seen.has(id)) throw new TronNormalizeError(`transaction ${id} appears twice in block ${heightBig}`);
    seen.add(id);
  }
  return { height: Number(heightBig), hash, parentHash, timestamp: Number(ms / 1000n), transactionIds };
}

/** A Transfer log as a TokenTransfer, or undefined when it is not one or is malformed. Never throws. */
export function decodeTronTransferLog(log: TronLog, transactionId: string, logIndex: number, network: TronNetwork): TokenTransfer | undefined {
  return decodeTransferLog(log, transactionId, logIndex, new Addresses(network));
}

function decodeTransferLog(log: TronLog, transactionId: string, logIndex: number, addresses: Addresses): TokenTransfer | undefined {
  if (log === null || typeof log !== 'object') return undefined;
  const topics = log.topics;
  if (!Array.isArray(topics) || typeof topics[0] !== 'string' || topics[0].replace(/^0x/, '').toLowerCase() !== TRANSFER_TOPIC) return undefined;
  const contract = addresses.ofLog(log.address);
  const from = addresses.ofTopic(strip0x(topics[1]));
  const to = addresses.ofTopic(strip0x(topics[2]));
  if (contract === undefined || from === undefined || to === undefined) return undefined;
  const data = log.data === undefined || log.data === null ? '' : strip0x(log.data);
  if (typeof data !== 'string') return undefined;
  if (topics.length === 3) {
    if (!WORD.test(data)) return undefined;
    return { transactionId, logIndex, tokenType: 'TRC-20', contract, from, to, amount: BigInt(`0x${data}`) };
  }
  if (topics.length === 4) {
    const tokenTopic = strip0x(topics[3]);
    if (typeof tokenTopic !== 'string' || !WORD.test(tokenTopic) || data !== '') return undefined;
    return { transactionId, logIndex, tokenType: 'TRC-721', contract, from, to, tokenId: BigInt(`0x${tokenTopic}`).toString(10) };
  }
  return undefined;
}

function strip0x<T>(value: T): T | string {
  return typeof value === 'string' && value.startsWith('0x') ? value.slice(2) : value;
}

/** The ASCII note of an internal transaction (java-tron prints it as hex); plain text is accepted as is. */
function decodeNote(note: unknown): string | undefined {
  if (typeof note !== 'string' || note === '') return undefined;
  if (!HEX_BYTES.test(note)) return note;
  return Buffer.from(note, 'hex').toString('latin1');
}

/** Internal TRX transfers of one transaction info (see the module rules). Never throws on entry content. */
export function internalTransfersOfInfo(info: TronTransactionInfo, parentTransactionId: string, network: TronNetwork): InternalTransfer[] {
  return internalTransfers(info, parentTransactionId, new Addresses(network));
}

function internalTransfers(info: TronTransactionInfo, parentTransactionId: string, addresses: Addresses): InternalTransfer[] {
  const entries = info?.internal_transactions;
  if (!Array.isArray(entries)) return [];
  const out: InternalTransfer[] = [];
  entries.forEach((entry: TronInternalTransaction, i) => {
    if (entry === null || typeof entry !== 'object' || entry.rejected === true) return;
    const note = decodeNote(entry.note);
    if (note !== undefined && !VALUE_NOTES.has(note)) return;
    const amount = trxCallValue(entry);
    if (amount === undefined || amount <= 0n) return;
    const from = addresses.of(entry.caller_address);
    const to = addresses.of(entry.transferTo_address);
    if (from === undefined || to === undefined) return;
    out.push({ parentTransactionId, operationId: `internal_${i}`, from, to, amount });
  });
  return out;
}

/** Sum of the TRX call values of an internal transaction; undefined when one is malformed. */
function trxCallValue(entry: TronInternalTransaction): bigint | undefined {
  if (!Array.isArray(entry.callValueInfo)) return 0n;
  let sum = 0n;
  for (const cv of entry.callValueInfo) {
    if (cv === null || typeof cv !== 'object') return undefined;
    if (cv.tokenId !== undefined && cv.tokenId !== null && cv.tokenId !== '') continue; // TRC-10
    const value = cv.callValue === undefined || cv.callValue === null ? 0n : parseTronInt(cv.callValue);
    if (value === undefined || value < 0n) return undefined;
    sum += value;
  }
  return sum;
}

/** Whether a transaction succeeded, from its block entry and its info (see the module rules). */
export function tronTransactionSucceeded(tx: TronTransaction, info: TronTransactionInfo): boolean {
  if (info.result === 'FAILED') return false;
  const receiptResult = info.receipt?.result;
  if (receiptResult !== undefined && receiptResult !== null && !SUCCESS_RESULTS.has(receiptResult)) return false;
  const ret = Array.isArray(tx.ret) ? tx.ret[0]?.contractRet : undefined;
  return ret === undefined || ret === null || SUCCESS_RESULTS.has(ret);
}

function indexInfos(infos: unknown, header: TronBlockHeader): Map<string, TronTransactionInfo> {
  let list: unknown[];
  if (Array.isArray(infos)) list = infos;
  else if (infos !== null && typeof infos === 'object' && Object.keys(infos).length === 0) list = [];
  else throw new TronNormalizeError('transaction infos is not an array');

  const known = new Set(header.transactionIds);
  const byId = new Map<string, TronTransactionInfo>();
  list.forEach((raw, i) => {
    if (raw === null || typeof raw !== 'object') throw new TronNormalizeError(`transaction info ${i} is not an object`);
    const info = raw as TronTransactionInfo;
    const id = requireId(info.id, `transaction info ${i} id`);
    if (info.blockNumber !== undefined && info.blockNumber !== null && requireInt(info.blockNumber, `blockNumber of info ${id}`) !== BigInt(header.height)) {
      throw new TronNormalizeError(`transaction info ${id} is from block ${String(info.blockNumber)}, not ${header.height}`);
    }
    if (!known.has(id)) throw new TronNormalizeError(`transaction info ${id} belongs to no transaction of block ${header.height}`);
    if (byId.has(id)) throw new TronNormalizeError(`two transaction infos for ${id}`);
    byId.set(id, info);
  });
  const missing = header.transactionIds.filter((id) => !byId.has(id));
  if (missing.length > 0) {
    throw new TronNormalizeError(
      `no transaction info for ${missing.length} of ${header.transactionIds.length} transactions of block ${header.height} (first: ${missing[0]}); ` +
        'the node must keep transaction history (storage.transHistory.switch = on)',
    );
  }
  return byId;
}

function contractValue(tx: TronTransaction, txId: string): { type: string | undefined; value: TronContractValue } {
  const contracts = tx.raw_data?.contract;
  if (!Array.isArray(contracts) || contracts.length === 0) throw new TronNormalizeError(`transaction ${txId} has no raw_data.contract`);
  const contract = contracts[0];
  if (contract === null || typeof contract !== 'object') throw new TronNormalizeError(`transaction ${txId} has a malformed raw_data.contract[0]`);
  const value = contract.parameter?.value;
  return {
    type: typeof contract.type === 'string' ? contract.type : undefined,
    value: value !== null && typeof value === 'object' ? value : {},
  };
}

export function normalizeTronBlock(input: TronBlockInput, chain: { network: TronNetwork }): NormalizedBlock {
  if (input === null || typeof input !== 'object') throw new TronNormalizeError('input is not an object');
  const header = normalizeTronBlockHeader(input.block);
  const infos = indexInfos(input.infos, header);
  const addresses = new Addresses(chain.network);
  const txs = input.block.transactions ?? [];

  const tokenTransfers: TokenTransfer[] = [];
  const internal: InternalTransfer[] = [];
  const book = new MovementBook();
  let logIndex = 0;
  const failed: string[] = [];
  const fees: TransactionFee[] = [];

  txs.forEach((tx, i) => {
    const txId = header.transactionIds[i] as string;
    const info = infos.get(txId) as TronTransactionInfo;
    const { type, value } = contractValue(tx, txId);
    const requireAddress = (v: unknown, what: string): string => {
      const a = addresses.of(v);
      if (a === undefined) throw new TronNormalizeError(`${type} ${txId} has no valid ${what}: ${String(v)}`);
      return a;
    };

    book.startTransaction(txId);
    const fee = requireAmount(info.fee, `fee of ${txId}`);
    if (fee > 0n) {
      const payer = requireAddress(value.owner_address, 'owner_address (fee payer)');
      book.add(payer, -fee);
      fees.push({ transactionId: txId, payer, amount: fee });
    }

    const logs = Array.isArray(info.log) ? info.log : [];
    const firstLogIndex = logIndex;
    logIndex += logs.length;
    if (!tronTransactionSucceeded(tx, info)) {
      failed.push(txId);
      return;
    }

    switch (type) {
      case 'TransferContract': {
        const amount = requireAmount(value.amount, `amount of ${txId}`);
        if (amount > 0n) book.move(requireAddress(value.owner_address, 'owner_address'), requireAddress(value.to_address, 'to_address'), amount);
        break;
      }
      case 'TriggerSmartContract': {
        const amount = requireAmount(value.call_value, `call_value of ${txId}`);
        if (amount > 0n) book.move(requireAddress(value.owner_address, 'owner_address'), requireAddress(value.contract_address, 'contract_address'), amount);
        break;
      }
      case 'CreateSmartContract': {
        const amount = requireAmount(value.new_contract?.call_value, `new_contract.call_value of ${txId}`);
        if (amount > 0n)
          book.move(requireAddress(value.owner_address, 'owner_address'), requireAddress(info.contract_address, 'contract_address (info)'), amount);
        break;
      }
      default:
        break; // TRC-10, stake, votes, rewards...: only the fee (see the module rules)
    }

    logs.forEach((log, j) => {
      const transfer = decodeTransferLog(log, txId, firstLogIndex + j, addresses);
      if (transfer !== undefined) tokenTransfers.push(transfer);
    });

    for (const t of internalTransfers(info, txId, addresses)) {
      internal.push(t);
      book.move(t.from, t.to, t.amount);
    }
  });
  book.flush();

  const block: NormalizedBlock = { ...header, tokenTransfers, internalTransfers: internal, coinMovements: book.movements };
  if (failed.length > 0) block.failedTransactionIds = failed;
  if (fees.length > 0) block.fees = fees;
  return block;
}

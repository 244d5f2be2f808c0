/**
 * A fake java-tron full node for tests: a real node:http server on 127.0.0.1 answering the HTTP API paths
 * herald's Tron adapter uses, in java-tron's own JSON (no envelope, protobuf JSON that omits default
 * values, addresses as hex 41..., log addresses without the 41, `{}` for "not found", `{"Error": ...}`
 * with HTTP 200 for a failure inside a servlet, Jetty's 404 for a path it does not serve). Checked against
 * test/fixtures/tron in test/tron-follow.test.ts: field names, the block id (8-byte height + the
 * tail of sha256 of the protobuf header) and the transaction id (sha256 of the protobuf raw_data).
 *
 * The chain is real enough to follow: blocks are mined on demand from pending transactions signed with
 * secp256k1 keys (addresses are 0x41 + the last 20 bytes of keccak256 of the public key, base58check),
 * and the state moves with them: TRX balances, a TRC-20 token (TriggerSmartContract + Transfer log), a
 * TRC-721 token (TriggerSmartContract calling transferFrom or safeTransferFrom; an Approval log clearing the
 * token's approval, then a Transfer log with 4 topics and no data, as OpenZeppelin 4.0 to 4.7 emit), a
 * forwarding contract (an internal TRX transfer in `internal_transactions`) and one that swallows the
 * value (its inner transfer `rejected`). Fees are charged as java-tron reports them (`fee`, `receipt`).
 * It can reorganise (the last blocks replaced, their transactions mined again unless dropped), go down and
 * up, keeps historical balances (`getaccountbalance`, `getblockbalance`) as a node with
 * `storage.balance.history.lookup` does, and answers `triggerconstantcontract` for both tokens (name,
 * symbol, decimals, totalSupply and balanceOf for the TRC-20; name, symbol, balanceOf, ownerOf and
 * supportsInterface for the TRC-721, which reverts on decimals() as a contract without it does).
 *
 * Served: wallet/getnowblock, getblockbynum, gettransactioninfobyblocknum, gettransactioninfobyid,
 * gettransactionbyid, getaccount, getaccountbalance, getblockbalance, triggerconstantcontract; and
 * walletsolidity/getnowblock, the solidified block (the solidity API, same block format), `solidifiedLag`
 * blocks below the tip (a block is solidified once 2/3 of the 27 super representatives built on it: 19
 * on mainnet, the default).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { keccak_256 } from '@noble/hashes/sha3';
import { sha256 } from '@noble/hashes/sha256';
import { createBase58check, hex } from '@scure/base';
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts';
import type { ChainDriver, InternalDriver, TokenDriver } from './chain-driver.ts';

const b58check = createBase58check(sha256);

// ---------------------------------------------------------------------------------------------------------------
// Protobuf (the few messages whose bytes give ids): varints and length-delimited fields, proto3 defaults omitted
// ---------------------------------------------------------------------------------------------------------------

class Proto {
  private readonly parts: Uint8Array[] = [];

  private static varint(value: bigint): Uint8Array {
    const out: number[] = [];
    let v = BigInt.asUintN(64, value);
    do {
      const byte = Number(v & 0x7fn);
      v >>= 7n;
      out.push(v > 0n ? byte | 0x80 : byte);
    } while (v > 0n);
    return Uint8Array.from(out);
  }

  int(field: number, value: unknown): this {
    const n = value === undefined || value === null ? 0n : BigInt(value as bigint | number | string);
    if (n !== 0n) this.parts.push(Proto.varint(BigInt(field << 3)), Proto.varint(n));
    return this;
  }

  bytes(field: number, value: Uint8Array | undefined): this {
    if (value !== undefined && value.length > 0) this.parts.push(Proto.varint(BigInt((field << 3) | 2)), Proto.varint(BigInt(value.length)), value);
    return this;
  }

  hex(field: number, value: unknown): this {
    return this.bytes(field, typeof value === 'string' && value !== '' ? hex.decode(value.toLowerCase()) : undefined);
  }

  text(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  done(): Uint8Array {
    const out = new Uint8Array(this.parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

/** Transaction.Contract.ContractType values of the contracts this node makes. */
const CONTRACT_TYPES: Record<string, number> = { TransferContract: 1, TriggerSmartContract: 31 };

type Json = Record<string, unknown>;

function encodeContractValue(type: string, v: Json): Uint8Array {
  if (type === 'TransferContract') return new Proto().hex(1, v.owner_address).hex(2, v.to_address).int(3, v.amount).done();
  if (type === 'TriggerSmartContract') {
    return new Proto()
      .hex(1, v.owner_address)
      .hex(2, v.contract_address)
      .int(3, v.call_value)
      .hex(4, v.data)
      .int(5, v.call_token_value)
      .int(6, v.token_id)
      .done();
  }
  throw new Error(`fake java-tron: cannot encode ${type}`);
}

/** protocol.Transaction.raw of a transaction's `raw_data` JSON (hex addresses); its sha256 is the txID. */
export function encodeRawData(raw: Json): Uint8Array {
  const p = new Proto().hex(1, raw.ref_block_bytes).int(3, raw.ref_block_num).hex(4, raw.ref_block_hash).int(8, raw.expiration).hex(10, raw.data);
  for (const c of (raw.contract as Json[] | undefined) ?? []) {
    const type = c.type as string;
    const parameter = c.parameter as Json;
    const any = new Proto().text(1, parameter.type_url as string).bytes(2, encodeContractValue(type, parameter.value as Json));
    p.bytes(11, new Proto().int(1, CONTRACT_TYPES[type]).bytes(2, any.done()).int(5, c.Permission_id).done());
  }
  return p.int(14, raw.timestamp).int(18, raw.fee_limit).done();
}

/** protocol.BlockHeader.raw of a block's `block_header.raw_data` JSON. */
export function encodeHeaderRaw(raw: Json): Uint8Array {
  return new Proto()
    .int(1, raw.timestamp)
    .hex(2, raw.txTrieRoot)
    .hex(3, raw.parentHash)
    .int(7, raw.number)
    .int(8, raw.witness_id)
    .hex(9, raw.witness_address)
    .int(10, raw.version)
    .done();
}

/** java-tron's block id: the height as 8 bytes big-endian, then the last 24 bytes of sha256(header raw). */
export function blockIdOf(raw: Json): string {
  const number = BigInt((raw.number as number | undefined) ?? 0);
  return number.toString(16).padStart(16, '0') + hex.encode(sha256(encodeHeaderRaw(raw))).slice(16);
}

/** Transaction ret codes (Transaction.Result.contractResult) this node prints. */
const CONTRACT_RESULT: Record<string, number> = { DEFAULT: 0, SUCCESS: 1, REVERT: 2 };

/** txTrieRoot: a merkle tree of sha256(Transaction bytes), pairs hashed together, an odd one carried up. */
function txTrieRoot(txs: Json[]): string {
  if (txs.length === 0) return '00'.repeat(32);
  let level = txs.map((tx) => {
    const p = new Proto().bytes(1, encodeRawData(tx.raw_data as Json));
    for (const s of tx.signature as string[]) p.hex(2, s);
    const ret = (tx.ret as Json[])[0]?.contractRet as string;
    p.bytes(5, new Proto().int(3, CONTRACT_RESULT[ret]).done());
    return sha256(p.done());
  });
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const [a, b] = [level[i] as Uint8Array, level[i + 1]];
      next.push(b === undefined ? a : sha256(Uint8Array.from([...a, ...b])));
    }
    level = next;
  }
  return hex.encode(level[0] as Uint8Array);
}

// ---------------------------------------------------------------------------------------------------------------
// Keys, addresses, ABI words
// ---------------------------------------------------------------------------------------------------------------

export interface TronAccount {
  /** base58 T... */
  address: string;
  /** 41 + 20 bytes */
  hex: string;
  privateKey: `0x${string}`;
}

export function newTronAccount(): TronAccount {
  const privateKey = generatePrivateKey();
  const hexAddress = `41${privateKeyToAccount(privateKey).address.slice(2).toLowerCase()}`;
  return { address: toBase58(hexAddress), hex: hexAddress, privateKey };
}

export const toBase58 = (hexAddress: string): string => b58check.encode(hex.decode(hexAddress));
export const toHex = (address: string): string => (/^41[0-9a-fA-F]{40}$/.test(address) ? address.toLowerCase() : hex.encode(b58check.decode(address)));
/** A contract address of the fake (no key behind it), from a label. */
const contractAddress = (label: string): string => `41${hex.encode(keccak_256(`fake-tron:${label}`)).slice(0, 40)}`;

const word = (n: bigint | number): string => BigInt(n).toString(16).padStart(64, '0');
const addressWord = (hexAddress: string): string => hexAddress.slice(2).padStart(64, '0');
const selectorOf = (signature: string): string => hex.encode(keccak_256(signature)).slice(0, 8);
const textHex = (text: string): string => Buffer.from(text, 'utf8').toString('hex');
/** An ABI-encoded `string` return value (hex, no 0x). */
export function abiString(text: string): string {
  const h = textHex(text);
  return word(32) + word(h.length / 2) + h.padEnd(Math.ceil(h.length / 64) * 64, '0');
}
const TRANSFER_TOPIC = hex.encode(keccak_256('Transfer(address,address,uint256)'));
const APPROVAL_TOPIC = hex.encode(keccak_256('Approval(address,address,uint256)'));
/** Solidity's revert data for `require(cond, message)`: Error(string). */
const errorData = (message: string): string => `${selectorOf('Error(string)')}${abiString(message)}`;

async function signHash(hash: string, privateKey: `0x${string}`): Promise<string> {
  return (await sign({ hash: `0x${hash}`, privateKey, to: 'hex' })).slice(2);
}

/** Prints like java-tron (fastjson): bigints as plain JSON numbers, whatever their size. */
function javaJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `\u0000big:${v}` : v)).replace(/"\\u0000big:(-?\d+)"/g, '$1');
}

// ---------------------------------------------------------------------------------------------------------------
// Chain state and transactions
// ---------------------------------------------------------------------------------------------------------------

interface State {
  trx: Map<string, bigint>;
  /** token contract hex → holder hex → balance */
  tokens: Map<string, Map<string, bigint>>;
  /** TRC-721 token id (decimal) → owner hex */
  nfts: Map<string, string>;
}

const cloneState = (s: State): State => ({
  trx: new Map(s.trx),
  tokens: new Map([...s.tokens].map(([c, m]) => [c, new Map(m)])),
  nfts: new Map(s.nfts),
});

type IntentKind = 'transfer' | 'trc20' | 'trc721' | 'forward' | 'swallow';

/** A signed transaction waiting to be mined (and mined again after a reorganisation). */
interface Intent {
  kind: IntentKind;
  txID: string;
  owner: string;
  to: string;
  amount: bigint;
  contract?: string;
  /** trc721: the token moved (`amount` is 0: no TRX goes with the call). */
  tokenId?: bigint;
  /** TRX burnt from the owner, fixed when it was sent. */
  fee: bigint;
  /** The transaction as printed in a block, without `ret`. */
  tx: Json;
}

/** Fees as java-tron reports them: bandwidth burnt (net_fee) and energy burnt (energy_fee). */
export const FEES = {
  /** A TRX transfer to an existing account: 267 bandwidth points at 1000 sun. */
  transfer: 267_000n,
  /** A TRX transfer that creates the recipient's account: 1 TRX creation fee + 0.1 TRX bandwidth. */
  transferNewAccount: 1_100_000n,
  /** A TRC-20 transfer: 14631 energy at 420 sun + 345 bandwidth points. */
  contractEnergy: 14_631n,
  contractEnergyFee: 14_631n * 420n,
  contractNetFee: 345_000n,
} as const;
const CONTRACT_FEE = FEES.contractEnergyFee + FEES.contractNetFee;

interface Outcome {
  contractRet: 'SUCCESS' | 'REVERT';
  /** The info without id/blockNumber/blockTimeStamp. */
  info: Json;
  /** Balance changes for getblockbalance's trace: [address hex, amount]. */
  operations: [string, bigint][];
}

export interface StoredBlock {
  height: number;
  id: string;
  json: Json;
  infos: Json[];
  intents: Intent[];
  /** State after the block. */
  state: State;
  traces: Json[];
}

/** What a test may script for one request: an HTTP status and body, a JSON answer, or no answer at all. */
export type FakeReply = { status: number; body: string; contentType?: string } | { json: unknown } | 'hang' | 'drop';

/** A contract's answer to a constant call (hex without 0x); `runtime`: a TVM error such as out of time. */
export type ConstantAnswer = { return: string } | { revert: string } | { runtime: string } | { other: string };
export type ConstantHandler = (signature: string, parameter: string, state: State) => ConstantAnswer;

export interface FakeTronNodeOptions {
  /** Balance history (storage.balance.history.lookup): on from this height (default 0), or off. */
  balanceHistory?: { fromHeight: number } | 'off';
  /** vm.saveInternalTx; default true. */
  saveInternalTx?: boolean;
  /** Blocks mined at start after genesis; default 3. */
  premine?: number;
  /**
   * Time of the genesis block (Unix ms; default now). Blocks follow it 3 s apart, so a genesis long ago makes
   * a node whose head is old, as a java-tron node still syncing (or cut off from its peers) has.
   */
  genesisMs?: number;
  /** TRX of the funded wallet, sun; default 50 billion TRX (above Number.MAX_SAFE_INTEGER sun). */
  walletBalance?: bigint;
  token?: { name: string; symbol: string; decimals: number; supply: bigint };
  /** The TRC-721 and the ids the funded wallet holds at genesis; default 'Herald Tron Punks' (HTP), ids 1..40 and 2^128 + 1. */
  nft?: { name: string; symbol: string; ids: bigint[] };
}

export interface FakeTronNode {
  url: string;
  /** The funded account: holds the TRX and the token supply. */
  wallet: TronAccount;
  token: { address: string; hex: string; name: string; symbol: string; decimals: number };
  /** The TRC-721 (the funded wallet holds `ids` at genesis). */
  nft: { address: string; hex: string; name: string; symbol: string; ids: bigint[] };
  /** A contract that forwards the TRX sent with a call to the address in its argument. */
  forwarder: string;
  /** A contract whose inner transfer always fails (rejected) while the call succeeds: it keeps the TRX. */
  swallower: string;
  blocks: StoredBlock[];
  /** Every request: path (e.g. wallet/getblockbynum) and body. */
  requests: { path: string; body: Json }[];
  count(path: string): number;
  /** Answers a request instead of the node when it returns a reply (failure injection). */
  intercept?: (path: string, body: Json) => FakeReply | undefined;
  /** How far below the tip walletsolidity/getnowblock's solidified block is (default 19); settable. */
  solidifiedLag: number;
  height(): number;
  blockHash(height: number): string;
  newAccount(): TronAccount;
  account(address: string): TronAccount;
  /** TRX of `address` at the tip (or after block `height`). */
  balance(address: string, height?: number): bigint;
  tokenBalance(address: string, height?: number): bigint;
  /** The owner (base58) of TRC-721 `tokenId` at the tip (or after block `height`). */
  nftOwner(tokenId: bigint, height?: number): string | undefined;
  /** The fee a TRX transfer to `to` pays if sent now (a new account costs more). */
  transferFee(to: string): bigint;
  /** The balance `address` will have once everything pending is mined. */
  projectedBalance(address: string): bigint;
  sendTrx(from: TronAccount, to: string, amount: bigint): Promise<string>;
  transferToken(from: TronAccount, to: string, amount: bigint): Promise<string>;
  /** `from` calls the TRC-721's transferFrom(from, to, tokenId) (safeTransferFrom with `safe`); reverts unless `from` owns it. */
  transferNft(from: TronAccount, to: string, tokenId: bigint, options?: { safe?: boolean }): Promise<string>;
  /** Calls the forwarder with `amount` sun for `to` (an internal transfer); swallow: the swallower instead. */
  callForwarder(from: TronAccount, to: string, amount: bigint, options?: { swallow?: boolean }): Promise<string>;
  /** Registers a contract answering constant calls as `handler` says; returns its base58 address. */
  addContract(label: string, handler: ConstantHandler): string;
  /** Mines `count` blocks (the first with everything pending); the new height. */
  mine(count?: number): Promise<number>;
  /** Drops the last `depth` blocks and mines `depth + 1` on another branch; their transactions go back to pending (except `drop`). */
  reorg(depth: number, options?: { drop?: string[] }): Promise<number>;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

const BLOCK_INTERVAL_MS = 3_000;

export async function startFakeTronNode(options: FakeTronNodeOptions = {}): Promise<FakeTronNode> {
  const history = options.balanceHistory ?? { fromHeight: 0 };
  const saveInternalTx = options.saveInternalTx ?? true;
  const keys = new Map<string, TronAccount>();
  const remember = (a: TronAccount) => {
    keys.set(a.hex, a);
    return a;
  };
  const wallet = remember(newTronAccount());
  const witnesses = [remember(newTronAccount()), remember(newTronAccount())];
  const tokenSpec = options.token ?? { name: 'Herald Tether', symbol: 'HUSDT', decimals: 6, supply: 1_000_000_000_000_000n };
  const tokenHex = contractAddress('trc20');
  const forwarderHex = contractAddress('forwarder');
  const swallowerHex = contractAddress('swallower');
  const contracts = new Map<string, ConstantHandler>();
  contracts.set(tokenHex, (signature, parameter, state) => {
    switch (signature) {
      case 'name()':
        return { return: abiString(tokenSpec.name) };
      case 'symbol()':
        return { return: abiString(tokenSpec.symbol) };
      case 'decimals()':
        return { return: word(tokenSpec.decimals) };
      case 'totalSupply()':
        return { return: word(tokenSpec.supply) };
      case 'balanceOf(address)':
        return { return: word(state.tokens.get(tokenHex)?.get(`41${parameter.slice(24, 64)}`) ?? 0n) };
      default:
        return { revert: '' };
    }
  });
  const nftSpec = options.nft ?? {
    name: 'Herald Tron Punks',
    symbol: 'HTP',
    ids: [...Array.from({ length: 40 }, (_, i) => BigInt(i + 1)), 2n ** 128n + 1n],
  };
  const nftHex = contractAddress('trc721');
  // OpenZeppelin ERC721 (4.x): its view functions, the revert reasons of ownerOf for an unknown token, and no
  // decimals()/totalSupply() (not Enumerable): a call to a function it lacks reverts without data.
  contracts.set(nftHex, (signature, parameter, state) => {
    switch (signature) {
      case 'name()':
        return { return: abiString(nftSpec.name) };
      case 'symbol()':
        return { return: abiString(nftSpec.symbol) };
      case 'balanceOf(address)': {
        const holder = `41${parameter.slice(24, 64)}`;
        if (/^0{64}$/.test(parameter.slice(0, 64))) return { revert: errorData('ERC721: address zero is not a valid owner') };
        return { return: word([...state.nfts.values()].filter((o) => o === holder).length) };
      }
      case 'ownerOf(uint256)': {
        const owner = state.nfts.get(BigInt(`0x${parameter.slice(0, 64) || '0'}`).toString());
        return owner === undefined ? { revert: errorData('ERC721: owner query for nonexistent token') } : { return: addressWord(owner) };
      }
      case 'supportsInterface(bytes4)':
        // ERC165, ERC721, ERC721Metadata
        return { return: word(['01ffc9a7', '80ac58cd', '5b5e139f'].includes(parameter.slice(0, 8)) ? 1 : 0) };
      default:
        return { revert: '' };
    }
  });
  contracts.set(forwarderHex, () => ({ revert: '' }));
  contracts.set(swallowerHex, () => ({ revert: '' }));

  const blocks: StoredBlock[] = [];
  let pending: Intent[] = [];
  let seq = 0;
  let branch = 0;
  const requests: { path: string; body: Json }[] = [];
  const tip = () => blocks.at(-1) as StoredBlock;

  // --- execution ---------------------------------------------------------------------------------------------

  const trxOf = (state: State, a: string) => state.trx.get(a) ?? 0n;
  const addTrx = (state: State, a: string, delta: bigint) => state.trx.set(a, trxOf(state, a) + delta);
  const tokensOf = (state: State) => {
    const m = state.tokens.get(tokenHex) ?? new Map<string, bigint>();
    state.tokens.set(tokenHex, m);
    return m;
  };

  /** Applies a transaction to `state`; undefined when it is invalid there (java-tron would refuse it). */
  function execute(intent: Intent, state: State): Outcome | undefined {
    const { owner, to, amount, fee } = intent;
    // TRX the call needs: the fee, plus the amount where TRX is what moves (not for token transfers).
    if (trxOf(state, owner) < fee + (intent.kind === 'trc20' || intent.kind === 'trc721' ? 0n : amount)) return undefined;
    addTrx(state, owner, -fee);
    const ops: [string, bigint][] = [[owner, -fee]];
    const contractReceipt = (result: string) => ({
      energy_fee: FEES.contractEnergyFee,
      energy_usage_total: FEES.contractEnergy,
      net_fee: FEES.contractNetFee,
      result,
    });
    switch (intent.kind) {
      case 'transfer': {
        const created = !state.trx.has(to);
        addTrx(state, owner, -amount);
        addTrx(state, to, amount);
        ops.push([owner, -amount], [to, amount]);
        return {
          contractRet: 'SUCCESS',
          info: { fee, contractResult: [''], receipt: { net_fee: created ? 100_000n : fee } },
          operations: ops,
        };
      }
      case 'trc20': {
        const holders = tokensOf(state);
        const contract = intent.contract as string;
        if ((holders.get(owner) ?? 0n) < amount) {
          return {
            contractRet: 'REVERT',
            info: {
              fee,
              contractResult: [''],
              contract_address: contract,
              receipt: contractReceipt('REVERT'),
              result: 'FAILED',
              resMessage: textHex('REVERT opcode executed'),
            },
            operations: ops,
          };
        }
        holders.set(owner, (holders.get(owner) ?? 0n) - amount);
        holders.set(to, (holders.get(to) ?? 0n) + amount);
        return {
          contractRet: 'SUCCESS',
          info: {
            fee,
            contractResult: [word(1)],
            contract_address: contract,
            receipt: contractReceipt('SUCCESS'),
            log: [{ address: contract.slice(2), topics: [TRANSFER_TOPIC, addressWord(owner), addressWord(to)], data: word(amount) }],
          },
          operations: ops,
        };
      }
      case 'trc721': {
        const contract = intent.contract as string;
        const tokenId = intent.tokenId as bigint;
        const key = tokenId.toString();
        const current = state.nfts.get(key);
        // transferFrom(from = the caller): only its owner may move it here (no approvals in this fake).
        if (current !== owner) {
          return {
            contractRet: 'REVERT',
            info: {
              fee,
              contractResult: [errorData(current === undefined ? 'ERC721: invalid token ID' : 'ERC721: caller is not token owner or approved')],
              contract_address: contract,
              receipt: contractReceipt('REVERT'),
              result: 'FAILED',
              resMessage: textHex('REVERT opcode executed'),
            },
            operations: ops,
          };
        }
        state.nfts.set(key, to);
        // Approval(owner, 0, tokenId) clearing the token's approval, then Transfer(from, to, tokenId): all
        // indexed, so 4 topics and no data (java-tron omits the empty `data`).
        const logAddress = contract.slice(2);
        return {
          contractRet: 'SUCCESS',
          info: {
            fee,
            contractResult: [''],
            contract_address: contract,
            receipt: contractReceipt('SUCCESS'),
            log: [
              { address: logAddress, topics: [APPROVAL_TOPIC, addressWord(owner), word(0), word(tokenId)] },
              { address: logAddress, topics: [TRANSFER_TOPIC, addressWord(owner), addressWord(to), word(tokenId)] },
            ],
          },
          operations: ops,
        };
      }
      case 'forward':
      case 'swallow': {
        const contract = intent.contract as string;
        const rejected = intent.kind === 'swallow';
        addTrx(state, owner, -amount);
        addTrx(state, rejected ? contract : to, amount);
        ops.push([owner, -amount], [rejected ? contract : to, amount]);
        const internal = {
          hash: hex.encode(sha256(`${intent.txID}:0`)),
          caller_address: contract,
          transferTo_address: to,
          callValueInfo: [{ callValue: amount }],
          note: textHex('call'),
          ...(rejected ? { rejected: true } : {}),
        };
        return {
          contractRet: 'SUCCESS',
          info: {
            fee,
            contractResult: [''],
            contract_address: contract,
            receipt: contractReceipt('SUCCESS'),
            ...(saveInternalTx ? { internal_transactions: [internal] } : {}),
          },
          operations: ops,
        };
      }
    }
  }

  /** The state once every pending transaction is mined. */
  function projected(): State {
    const state = cloneState(tip().state);
    for (const intent of pending) execute(intent, state);
    return state;
  }

  async function makeIntent(
    kind: IntentKind,
    from: TronAccount,
    to: string,
    amount: bigint,
    fee: bigint,
    contract?: string,
    nft?: { tokenId: bigint; safe?: boolean },
  ): Promise<string> {
    if (amount < 0n) throw new Error('fake java-tron: negative amount');
    const head = tip();
    const headMs = BigInt(((head.json.block_header as Json & { raw_data: Json }).raw_data.timestamp as bigint | number | undefined) ?? 0);
    const toHexAddress = toHex(to);
    let value: Json;
    let type: string;
    if (kind === 'transfer') {
      type = 'TransferContract';
      value = { amount, owner_address: from.hex, to_address: toHexAddress };
    } else {
      type = 'TriggerSmartContract';
      let data: string;
      if (kind === 'trc20') data = `${selectorOf('transfer(address,uint256)')}${addressWord(toHexAddress)}${word(amount)}`;
      else if (kind === 'trc721') {
        const method = nft?.safe ? 'safeTransferFrom(address,address,uint256)' : 'transferFrom(address,address,uint256)';
        data = `${selectorOf(method)}${addressWord(from.hex)}${addressWord(toHexAddress)}${word(nft?.tokenId ?? 0n)}`;
      } else data = `${selectorOf('forward(address)')}${addressWord(toHexAddress)}`;
      value = { data, owner_address: from.hex, contract_address: contract, ...(kind === 'forward' || kind === 'swallow' ? { call_value: amount } : {}) };
    }
    const raw: Json = {
      contract: [{ parameter: { value, type_url: `type.googleapis.com/protocol.${type}` }, type }],
      ref_block_bytes: head.id.slice(12, 16),
      ref_block_hash: head.id.slice(16, 32),
      expiration: headMs + 60_000n,
      ...(type === 'TriggerSmartContract' ? { fee_limit: 150_000_000n } : {}),
      timestamp: headMs + BigInt(++seq),
    };
    const rawBytes = encodeRawData(raw);
    const txID = hex.encode(sha256(rawBytes));
    const signature = await signHash(txID, from.privateKey);
    const intent: Intent = {
      kind,
      txID,
      owner: from.hex,
      to: toHexAddress,
      amount,
      contract,
      ...(nft ? { tokenId: nft.tokenId } : {}),
      fee,
      tx: { signature: [signature], txID, raw_data: raw, raw_data_hex: hex.encode(rawBytes) },
    };
    if (!execute(intent, projected())) throw new Error(`fake java-tron: ${from.address} cannot afford ${kind} of ${amount} (+ fee ${fee})`);
    pending.push(intent);
    return txID;
  }

  // --- blocks ------------------------------------------------------------------------------------------------

  async function makeBlock(height: number, parent: StoredBlock | undefined, intents: Intent[], timestampMs: bigint): Promise<StoredBlock> {
    const state = parent
      ? cloneState(parent.state)
      : {
          trx: new Map([[wallet.hex, options.walletBalance ?? 50_000_000_000_000_000n]]),
          tokens: new Map([[tokenHex, new Map([[wallet.hex, tokenSpec.supply]])]]),
          nfts: new Map(nftSpec.ids.map((id) => [id.toString(), wallet.hex])),
        };
    const txs: Json[] = [];
    const infos: Json[] = [];
    const traces: Json[] = [];
    const included: Intent[] = [];
    for (const intent of intents) {
      const outcome = execute(intent, state);
      if (!outcome) continue; // no longer valid on this branch: dropped, as java-tron drops it from its pending pool
      included.push(intent);
      txs.push({ ret: [{ contractRet: outcome.contractRet }], ...intent.tx });
      infos.push({ id: intent.txID, ...outcome.info, blockNumber: BigInt(height), blockTimeStamp: timestampMs });
      traces.push({
        transaction_identifier: intent.txID,
        operation: outcome.operations.map(([address, amount], i) => ({ ...(i === 0 ? {} : { operation_identifier: i }), address, amount })),
        type: (intent.tx.raw_data as { contract: Json[] }).contract[0]?.type,
        status: outcome.contractRet,
      });
    }
    const witness = witnesses[branch % witnesses.length] as TronAccount;
    const raw: Json =
      height === 0
        ? { txTrieRoot: '00'.repeat(32), witness_address: witness.hex, parentHash: hex.encode(sha256(`fake-tron genesis parent ${branch}`)) }
        : {
            number: BigInt(height),
            txTrieRoot: txTrieRoot(txs),
            witness_address: witness.hex,
            parentHash: (parent as StoredBlock).id,
            version: 30n,
            timestamp: timestampMs,
          };
    const id = blockIdOf(raw);
    const json: Json = {
      blockID: id,
      block_header: { raw_data: raw, witness_signature: await signHash(hex.encode(sha256(encodeHeaderRaw(raw))), witness.privateKey) },
      ...(txs.length > 0 ? { transactions: txs } : {}),
    };
    // Infos print the block's time in their own field order: id, fee, blockNumber, blockTimeStamp, ...
    const ordered = infos.map(({ id: txId, fee, blockNumber, blockTimeStamp, ...rest }) => ({
      id: txId,
      ...(fee === 0n ? {} : { fee }),
      blockNumber,
      blockTimeStamp,
      ...rest,
    }));
    return { height, id, json, infos: ordered, intents: included, state, traces };
  }

  let nextGap = 1;
  async function mineOne(): Promise<void> {
    const parent = tip();
    const parentMs = BigInt(((parent.json.block_header as { raw_data: Json }).raw_data.timestamp as bigint | undefined) ?? genesisMs);
    // Taken at once: a transaction sent while the block is made waits for the next one.
    const batch = pending;
    pending = [];
    const block = await makeBlock(parent.height + 1, parent, batch, parentMs + BigInt(BLOCK_INTERVAL_MS * nextGap));
    nextGap = 1;
    blocks.push(block);
  }

  let lock: Promise<unknown> = Promise.resolve();
  /** Mining and reorganising one after the other, whoever calls. */
  function exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = lock.then(work, work);
    lock = run.catch(() => undefined);
    return run;
  }

  // The genesis block prints no number and no time (protobuf omits zeros); the chain's clock starts at genesisMs.
  const genesisMs = BigInt(Math.floor((options.genesisMs ?? Date.now()) / BLOCK_INTERVAL_MS) * BLOCK_INTERVAL_MS);
  blocks.push(await makeBlock(0, undefined, [], 0n));
  for (let i = 0; i < (options.premine ?? 3); i++) await mineOne();

  // --- HTTP --------------------------------------------------------------------------------------------------

  const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
  const javaError = (cls: string, message: string) => ({ Error: `class ${cls} : ${message}` });
  const illegal = (message: string) => javaError('java.lang.IllegalArgumentException', message);
  const addressParam = (v: unknown, visible: boolean): string | undefined => {
    if (typeof v !== 'string') return undefined;
    try {
      return visible ? toHex(v) : /^41[0-9a-fA-F]{40}$/.test(v) ? v.toLowerCase() : undefined;
    } catch {
      return undefined;
    }
  };
  const blockAt = (n: unknown): StoredBlock | undefined => (typeof n === 'number' && Number.isInteger(n) && n >= 0 ? blocks[n] : undefined);

  /** The last block ≤ `height` in which `account`'s TRX changed, among those with a balance trace. */
  function lastChange(account: string, height: number): StoredBlock | undefined {
    if (history === 'off') return undefined;
    // Balances set before the first traced block (genesis allocations included) have no trace, as in java-tron.
    const first = Math.max(1, history.fromHeight);
    for (let h = height; h >= first; h--) {
      const before = (blocks[h - 1] as StoredBlock).state.trx.get(account);
      const after = (blocks[h] as StoredBlock).state.trx.get(account);
      if (before !== after) return blocks[h];
    }
    return undefined;
  }

  function constantCall(body: Json): Json {
    const visible = body.visible === true;
    const contract = addressParam(body.contract_address, visible);
    const owner = addressParam(body.owner_address, visible);
    const handler = contract === undefined ? undefined : contracts.get(contract);
    if (owner === undefined || handler === undefined) {
      const message = owner === undefined ? 'Invalid ownerAddress' : 'Smart contract is not exist.';
      return { result: { code: 'CONTRACT_VALIDATE_ERROR', message: visible ? message : textHex(message) } };
    }
    const data = typeof body.data === 'string' ? body.data : undefined;
    const signature = typeof body.function_selector === 'string' ? body.function_selector : undefined;
    const parameter = data !== undefined ? data.slice(8) : typeof body.parameter === 'string' ? body.parameter : '';
    const known = ['name()', 'symbol()', 'decimals()', 'totalSupply()', 'balanceOf(address)', 'ownerOf(uint256)', 'supportsInterface(bytes4)'];
    const called = signature ?? known.find((s) => selectorOf(s) === data?.slice(0, 8)) ?? `0x${data?.slice(0, 8) ?? ''}`;
    const answer = handler(called, parameter, tip().state);
    const raw: Json = {
      contract: [
        {
          parameter: {
            value: { data: data ?? `${selectorOf(called)}${parameter}`, owner_address: owner, contract_address: contract },
            type_url: 'type.googleapis.com/protocol.TriggerSmartContract',
          },
          type: 'TriggerSmartContract',
        },
      ],
      ref_block_bytes: tip().id.slice(12, 16),
      ref_block_hash: tip().id.slice(16, 32),
      expiration: genesisMs + 60_000n,
      timestamp: genesisMs + BigInt(++seq),
    };
    const rawBytes = encodeRawData(raw);
    const transaction = (failed: boolean) => ({
      ret: [failed ? { ret: 'FAILED' } : {}],
      visible,
      txID: hex.encode(sha256(rawBytes)),
      raw_data: raw,
      raw_data_hex: hex.encode(rawBytes),
    });
    const message = (text: string) => (visible ? text : textHex(text));
    if ('return' in answer) return { result: { result: true }, energy_used: 935, constant_result: [answer.return], transaction: transaction(false) };
    if ('revert' in answer) {
      return {
        result: { result: true, message: message('REVERT opcode executed') },
        energy_used: 400,
        constant_result: [answer.revert],
        transaction: transaction(true),
      };
    }
    if ('runtime' in answer)
      return { result: { result: true, message: message(answer.runtime) }, energy_used: 400, constant_result: [''], transaction: transaction(true) };
    return { result: { code: 'OTHER_ERROR', message: message(answer.other) } };
  }

  function answer(path: string, body: Json): unknown {
    switch (path) {
      case 'wallet/getnowblock':
        return tip().json;
      case 'walletsolidity/getnowblock':
        return (blocks[Math.max(0, tip().height - node.solidifiedLag)] as StoredBlock).json;
      case 'wallet/getblockbynum':
        return blockAt(body.num)?.json ?? {};
      case 'wallet/gettransactioninfobyblocknum': {
        if (typeof body.num !== 'number' || body.num <= 0) return {};
        return blockAt(body.num)?.infos ?? [];
      }
      case 'wallet/gettransactioninfobyid':
      case 'wallet/gettransactionbyid': {
        const id = typeof body.value === 'string' ? body.value.toLowerCase() : '';
        for (const b of blocks) {
          const i = b.intents.findIndex((x) => x.txID === id);
          if (i >= 0) return path === 'wallet/gettransactionbyid' ? (b.json.transactions as Json[])[i] : b.infos[i];
        }
        const p = pending.find((x) => x.txID === id);
        return path === 'wallet/gettransactionbyid' && p ? p.tx : {};
      }
      case 'wallet/getaccount': {
        const account = addressParam(body.address, body.visible === true);
        if (account === undefined) return illegal('Invalid address');
        const balance = tip().state.trx.get(account);
        if (balance === undefined) return {};
        return { address: account, ...(balance === 0n ? {} : { balance }), create_time: genesisMs };
      }
      case 'wallet/getaccountbalance':
      case 'wallet/getblockbalance': {
        const identifier = path === 'wallet/getblockbalance' ? body : body.block_identifier;
        if (!isObject(identifier)) return illegal('block_identifier null');
        const { hash, number } = identifier;
        if (typeof number !== 'number' || number < 0) return illegal('block_identifier number less than 0');
        if (typeof hash !== 'string' || !/^[0-9a-fA-F]{64}$/.test(hash)) return illegal('block_identifier hash length not equals 32');
        const block = blockAt(number);
        if (!block) return javaError('org.tron.core.exception.ItemNotFoundException', `number: ${number} is not found!`);
        if (block.id !== hash.toLowerCase()) return illegal('number and hash do not match');
        if (path === 'wallet/getblockbalance') {
          if (history === 'off' || number < Math.max(1, history.fromHeight))
            return javaError('org.tron.core.exception.ItemNotFoundException', 'This block does not exist');
          const ms = (block.json.block_header as { raw_data: Json }).raw_data.timestamp;
          return { block_identifier: { hash: block.id, number }, ...(ms === undefined ? {} : { timestamp: ms }), transaction_balance_trace: block.traces };
        }
        if (!isObject(body.account_identifier)) return illegal('account_identifier is null');
        const account = addressParam(body.account_identifier.address, body.visible === true);
        if (account === undefined) return illegal('account_identifier address is null');
        // A node without the lookup (or an account without a trace) echoes the block and prints no balance: 0.
        const changed = lastChange(account, number);
        if (!changed) return { block_identifier: { hash: block.id, number } };
        const balance = changed.state.trx.get(account) ?? 0n;
        return { ...(balance === 0n ? {} : { balance }), block_identifier: { hash: changed.id, number: changed.height } };
      }
      case 'wallet/triggerconstantcontract':
        return constantCall(body);
      default:
        return undefined;
    }
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const path = url.pathname.replace(/^\/+/, '');
      let body: Json;
      try {
        body = text.trim() === '' ? Object.fromEntries(url.searchParams) : (JSON.parse(text) as Json);
        if (!isObject(body)) throw new Error('not an object');
      } catch (error) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(`${javaJson(javaError('org.tron.json.JSONException', (error as Error).message))}\n`);
        return;
      }
      if (typeof body.num === 'string' && /^\d+$/.test(body.num)) body.num = Number(body.num);
      requests.push({ path, body });
      const scripted = node.intercept?.(path, body);
      if (scripted === 'hang') return;
      if (scripted === 'drop') return void req.socket.destroy();
      if (scripted && 'status' in scripted) {
        res.writeHead(scripted.status, { 'content-type': scripted.contentType ?? 'text/plain' }).end(scripted.body);
        return;
      }
      const result = scripted ? scripted.json : answer(path, body);
      if (result === undefined) {
        res
          .writeHead(404, { 'content-type': 'text/html;charset=iso-8859-1' })
          .end(`<html><body><h2>HTTP ERROR 404 Not Found</h2><p>URI: /${path}</p></body></html>`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(`${javaJson(result)}\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let listening = true;

  const node: FakeTronNode = {
    url: `http://127.0.0.1:${port}`,
    wallet,
    token: { address: toBase58(tokenHex), hex: tokenHex, name: tokenSpec.name, symbol: tokenSpec.symbol, decimals: tokenSpec.decimals },
    nft: { address: toBase58(nftHex), hex: nftHex, name: nftSpec.name, symbol: nftSpec.symbol, ids: [...nftSpec.ids] },
    forwarder: toBase58(forwarderHex),
    swallower: toBase58(swallowerHex),
    blocks,
    requests,
    count: (path) => requests.filter((r) => r.path === path).length,
    solidifiedLag: 19,
    height: () => tip().height,
    blockHash(height) {
      const b = blocks[height];
      if (!b) throw new Error(`fake java-tron: no block ${height}`);
      return b.id;
    },
    newAccount: () => remember(newTronAccount()),
    account(address) {
      const a = keys.get(toHex(address));
      if (!a) throw new Error(`fake java-tron: no key for ${address}`);
      return a;
    },
    balance: (address, height) => (height === undefined ? tip() : (blocks[height] as StoredBlock)).state.trx.get(toHex(address)) ?? 0n,
    tokenBalance: (address, height) => (height === undefined ? tip() : (blocks[height] as StoredBlock)).state.tokens.get(tokenHex)?.get(toHex(address)) ?? 0n,
    transferFee: (to) => (projected().trx.has(toHex(to)) ? FEES.transfer : FEES.transferNewAccount),
    projectedBalance: (address) => projected().trx.get(toHex(address)) ?? 0n,
    sendTrx: (from, to, amount) => makeIntent('transfer', from, to, amount, node.transferFee(to)),
    nftOwner(tokenId, height) {
      const owner = (height === undefined ? tip() : (blocks[height] as StoredBlock)).state.nfts.get(tokenId.toString());
      return owner === undefined ? undefined : toBase58(owner);
    },
    transferToken: (from, to, amount) => makeIntent('trc20', from, to, amount, CONTRACT_FEE, tokenHex),
    transferNft: (from, to, tokenId, o = {}) => makeIntent('trc721', from, to, 0n, CONTRACT_FEE, nftHex, { tokenId, safe: o.safe }),
    callForwarder: (from, to, amount, o = {}) =>
      makeIntent(o.swallow ? 'swallow' : 'forward', from, to, amount, CONTRACT_FEE, o.swallow ? swallowerHex : forwarderHex),
    addContract(label, handler) {
      const h = contractAddress(label);
      contracts.set(h, handler);
      return toBase58(h);
    },
    mine: (count = 1) =>
      exclusive(async () => {
        for (let i = 0; i < count; i++) await mineOne();
        return tip().height;
      }),
    reorg: (depth, o = {}) =>
      exclusive(async () => {
        if (depth < 1 || depth >= blocks.length) throw new Error(`fake java-tron: cannot reorganise ${depth} blocks of ${blocks.length}`);
        const removed = blocks.splice(blocks.length - depth, depth);
        const drop = new Set((o.drop ?? []).map((id) => id.toLowerCase()));
        pending = [...removed.flatMap((b) => b.intents).filter((i) => !drop.has(i.txID)), ...pending];
        // Another producer's branch: it starts in a later slot, so its blocks differ in time and producer.
        branch++;
        nextGap = 2;
        for (let i = 0; i <= depth; i++) await mineOne();
        return tip().height;
      }),
    async down() {
      if (!listening) return;
      listening = false;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async up() {
      if (listening) return;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      listening = true;
    },
    async close() {
      await node.down();
    },
  };
  return node;
}

// ---------------------------------------------------------------------------------------------------------------
// ChainDriver
// ---------------------------------------------------------------------------------------------------------------

export interface TronDriver extends ChainDriver {
  node: FakeTronNode;
  /** The fake TRC-20 token (base58). */
  token: FakeTronNode['token'];
  /** Sends `amount` token units from `from` (the node's wallet when absent) to `to`; pending. */
  transferToken(to: string, amount: bigint, from?: string): Promise<string>;
  /** The fake TRC-721 (base58). */
  nft: FakeTronNode['nft'];
  /** Transfers TRC-721 `tokenId` from `from` (the node's wallet when absent) to `to` (transferFrom, or safeTransferFrom with `safe`); pending. */
  transferNft(to: string, tokenId: bigint, options?: { from?: string; safe?: boolean }): Promise<string>;
  tokens: TokenDriver;
  internal: InternalDriver;
  /** Sends `amount` sun through the forwarder to `to` (an internal transfer); swallow: the inner transfer is rejected. */
  forward(to: string, amount: bigint, options?: { from?: string; swallow?: boolean }): Promise<string>;
}

/**
 * A ChainDriver over a fake java-tron node (tron/nile unless told). Addresses are base58 T...; send pays
 * from the node's funded wallet; spend pays `amount` to `to` and sweeps the rest of `from` (less the two
 * fees) back to the wallet, so `from` ends at 0 as the shared scenarios expect of every driver.
 */
export async function startFakeTronDriver(options: FakeTronNodeOptions & { network?: 'nile' | 'mainnet' } = {}): Promise<TronDriver> {
  const node = await startFakeTronNode(options);
  const from = (address?: string) => (address === undefined ? node.wallet : node.account(address));
  // Largest first: the first NFT a test takes has an id beyond 64 bits (2^128 + 1 by default).
  const unusedNftIds = [...node.nft.ids].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  const transferNft = (to: string, tokenId: bigint, o: { from?: string; safe?: boolean } = {}) => node.transferNft(from(o.from), to, tokenId, { safe: o.safe });
  return {
    blockchain: 'tron',
    network: options.network ?? 'nile',
    rpcUrl: node.url,
    // The fake's genesis block is its own, not Nile's: declared, as a test node is.
    chainConfig: { chainId: node.blockHash(0) },
    node,
    token: node.token,
    height: async () => node.height(),
    blockHash: async (height) => node.blockHash(height),
    mine: (count) => node.mine(count),
    newAddress: async () => node.newAccount().address,
    send: (to, amount) => node.sendTrx(node.wallet, to, amount),
    async spend(fromAddress, to, amount) {
      const account = node.account(fromAddress);
      const fee = node.transferFee(to);
      const transactionId = await node.sendTrx(account, to, amount);
      const rest = node.projectedBalance(fromAddress) - FEES.transfer;
      if (rest < 0n) throw new Error(`fake java-tron: ${fromAddress} cannot pay the fee of sweeping its rest`);
      await node.sendTrx(account, node.wallet.address, rest);
      return { transactionId, fee: fee + FEES.transfer };
    },
    reorg: (depth, o) => node.reorg(depth, o),
    balance: async (address) => node.balance(address),
    down: () => node.down(),
    up: () => node.up(),
    close: () => node.close(),
    transferToken: (to, amount, sender) => node.transferToken(from(sender), to, amount),
    forward: (to, amount, o = {}) => node.callForwarder(from(o.from), to, amount, { swallow: o.swallow }),
    nft: node.nft,
    transferNft,
    internal: { operationId: 'internal_0', forward: (to, amount) => node.callForwarder(node.wallet, to, amount) },
    tokens: {
      fungible: { contract: node.token.address, name: node.token.name, symbol: node.token.symbol, decimals: node.token.decimals, type: 'TRC-20' },
      nft: { contract: node.nft.address, name: node.nft.name, symbol: node.nft.symbol, type: 'TRC-721' },
      // Each contract call burns about 6.5 TRX of energy and bandwidth here.
      feeBudget: 30_000_000n,
      transferToken: (to, amount, sender) => node.transferToken(from(sender), to, amount),
      async freshNftId() {
        const id = unusedNftIds.shift();
        if (id === undefined) throw new Error('fake java-tron: no NFT id left');
        return id;
      },
      // safeTransferFrom for the wallet's (an EOA receiver behaves the same), transferFrom for the others.
      transferNft: (to, tokenId, sender) => transferNft(to, tokenId, { from: sender, safe: sender === undefined }),
    },
  };
}

/**
 * A fake rippled for tests: a node:http server on loopback speaking rippled's JSON-RPC in the formats of
 * the recorded answers in test/fixtures/xrp (no rippled can be installed here). It keeps a real
 * ledger chain with XRP balances, so what it answers is consistent from call to call:
 *
 * - Ledgers close on request (closeLedgers) with the pending transactions; each has an index, a hash, its
 *   parent's hash and a close time in the Ripple epoch, and keeps the account state after it, so
 *   account_info answers at any ledger still in history.
 * - Validation lags on request: closed ledgers above the validated index are answered with
 *   `validated: false` and can be replaced (replaceUnvalidated: an XRP "fork"); validated ones never change.
 * - Transactions: XRP Payments (to an existing account, or creating one), partial payments that cross the
 *   sender's own offer (tfPartialPayment, SendMax in an issued currency, delivered_amount < Amount, the
 *   shape of the recorded streams_partialPaymentTransaction.json), the OfferCreate that makes that offer,
 *   AccountDelete (the rest of the balance to a destination, the AccountRoot deleted), and failures that
 *   burn the fee (tecUNFUNDED_PAYMENT, tecNO_DST_INSUF_XRP, tecPATH_PARTIAL, tecNO_DST). Metadata has the
 *   AccountRoot/Offer nodes rippled writes (sorted by LedgerIndex, the real keylet hashes), TransactionIndex,
 *   TransactionResult, and delivered_amount on successful payments and deletions only.
 * - Commands: ledger (validated / closed / current / index / hash; transactions, expand), tx, account_info,
 *   server_info, ledger_closed, ledger_current; others answer unknownCmd. API v1 by default, v2 when the
 *   request (or the server option) asks for it: ledger_index a number in ledger objects, tx_json + meta.
 * - History can be deleted (deleteHistoryBefore, like online_delete), the server taken down and up, and
 *   faults injected (HTTP 500/503, garbage, hanging or dropped requests).
 *
 * Simplifications (none of which herald reads): no signatures (SigningPubKey/TxnSignature are
 * placeholders derived from the account and hash), hashes are SHA-512Half of a JSON rendering rather than
 * of the binary format, DirectoryNode entries are left out of the metadata, issued-currency balances are
 * not tracked (the offer's TakerPays is), sequence gaps and AccountDelete's 256-ledger wait are not enforced.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { sha256 } from '@noble/hashes/sha256';
import { base58xrp } from '@scure/base';
import type { ChainDriver } from './chain-driver.ts';

/** The genesis account of every XRP Ledger; here the node's funded wallet. */
export const GENESIS_ADDRESS = 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh';
export const RIPPLE_EPOCH_OFFSET = 946_684_800;
export const TOTAL_DROPS = 100_000_000_000n * 1_000_000n;
/** What a client typically pays (the reference fee is 10 drops). */
export const FEE_DROPS = 12n;
/** Current mainnet/testnet reserves: 1 XRP per account, 0.2 XRP per owned object. */
export const BASE_RESERVE = 1_000_000n;
export const OWNER_RESERVE = 200_000n;
export const TF_PARTIAL_PAYMENT = 0x0002_0000;
const CURRENCY = 'USD';

const sha512Half = (data: string | Uint8Array): string => createHash('sha512').update(data).digest().subarray(0, 32).toString('hex').toUpperCase();

/** A classic address from a 20-byte account id: base58 (XRP alphabet) of 0x00 + id + 4-byte double-SHA-256 checksum. */
export function encodeClassicAddress(accountId: Uint8Array): string {
  const payload = new Uint8Array(21);
  payload.set(accountId, 1);
  const checksum = sha256(sha256(payload)).subarray(0, 4);
  const raw = new Uint8Array(25);
  raw.set(payload);
  raw.set(checksum, 21);
  return base58xrp.encode(raw);
}

export function accountIdOf(address: string): Uint8Array {
  const raw = base58xrp.decode(address);
  if (raw.length !== 25 || raw[0] !== 0) throw new Error(`not a classic address: ${address}`);
  return raw.subarray(1, 21);
}

/** The real keylets: SHA-512Half of the 16-bit space ('a' account, 'o' offer) and the key material. */
const accountRootIndex = (address: string) => sha512Half(Buffer.concat([Buffer.from([0, 0x61]), accountIdOf(address)]));
const offerIndex = (address: string, sequence: number) => {
  const seq = Buffer.alloc(4);
  seq.writeUInt32BE(sequence);
  return sha512Half(Buffer.concat([Buffer.from([0, 0x6f]), accountIdOf(address), seq]));
};

const ISSUER = encodeClassicAddress(createHash('sha256').update('fake-rippled issuer').digest().subarray(0, 20));
const BOOK_DIRECTORY = `${sha512Half('fake-rippled XRP/USD book').slice(0, 48)}4F038D7EA4C68000`;

/** Drops as an issued-currency value at 1 USD per XRP ("1.5" for 1500000). */
function iouValue(drops: bigint): string {
  const whole = drops / 1_000_000n;
  const fraction = (drops % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Ledger state
// ---------------------------------------------------------------------------------------------------------------

interface AccountRoot {
  balance: bigint;
  sequence: number;
  ownerCount: number;
  previousTxnId: string;
  previousTxnLgrSeq: number;
}

interface Offer {
  sequence: number;
  /** XRP the offer sells, drops. */
  takerGets: bigint;
  /** USD it asks, in millionths (1:1 with drops). */
  takerPays: bigint;
  previousTxnId: string;
  previousTxnLgrSeq: number;
}

/** Account state after a ledger (copied at each close: test chains are small). */
class LedgerState {
  constructor(
    readonly accounts = new Map<string, AccountRoot>(),
    readonly offers = new Map<string, Offer>(),
  ) {}

  clone(): LedgerState {
    return new LedgerState(new Map([...this.accounts].map(([k, v]) => [k, { ...v }])), new Map([...this.offers].map(([k, v]) => [k, { ...v }])));
  }
}

type Json = Record<string, unknown>;

type PendingKind = { type: 'payment'; to: string; amount: bigint; deliver?: bigint } | { type: 'offer'; takerGets: bigint } | { type: 'delete'; to: string };

interface PendingTx {
  hash: string;
  account: string;
  sequence: number;
  fee: bigint;
  lastLedgerSequence: number;
  kind: PendingKind;
  /** The transaction's own fields, API v1 (Amount and DeliverMax both present, as rippled 2.x prints them). */
  fields: Json;
}

interface AppliedTx extends PendingTx {
  result: string;
  meta: Json;
}

export interface FakeLedger {
  index: number;
  hash: string;
  parentHash: string;
  /** Ripple epoch seconds. */
  closeTime: number;
  parentCloseTime: number;
  /** In application order (TransactionIndex). */
  txs: AppliedTx[];
  state: LedgerState;
  totalCoins: bigint;
}

function describeFields(tx: Omit<PendingTx, 'fields' | 'hash'>): Json {
  const common = {
    Account: tx.account,
    Fee: tx.fee.toString(),
    Flags: tx.kind.type === 'payment' && tx.kind.deliver !== undefined ? TF_PARTIAL_PAYMENT : 0,
    LastLedgerSequence: tx.lastLedgerSequence,
    Sequence: tx.sequence,
    SigningPubKey: `ED${createHash('sha256').update(tx.account).digest('hex').toUpperCase()}`,
  };
  if (tx.kind.type === 'delete') return { ...common, Destination: tx.kind.to, TransactionType: 'AccountDelete' };
  if (tx.kind.type === 'offer') {
    return {
      ...common,
      TakerGets: tx.kind.takerGets.toString(),
      TakerPays: { currency: CURRENCY, issuer: ISSUER, value: iouValue(tx.kind.takerGets) },
      TransactionType: 'OfferCreate',
    };
  }
  const amount = tx.kind.amount.toString();
  const sendMax = tx.kind.deliver === undefined ? {} : { SendMax: { currency: CURRENCY, issuer: ISSUER, value: iouValue(tx.kind.deliver) } };
  return { ...common, Amount: amount, DeliverMax: amount, Destination: tx.kind.to, ...sendMax, TransactionType: 'Payment' };
}

const sortKeys = (o: Json): Json => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** Applies `tx` to `state` (mutated) in ledger `index`; undefined when it cannot be applied now (stays pending). */
function applyTransaction(state: LedgerState, tx: PendingTx, index: number, position: number): AppliedTx | undefined {
  const sender = state.accounts.get(tx.account);
  if (!sender || sender.balance < tx.fee) return undefined; // terNO_ACCOUNT / terINSUF_FEE_B: retried later
  const nodes: Json[] = [];
  const touched = new Map<string, { before: AccountRoot | undefined }>();
  const touch = (address: string) => {
    if (!touched.has(address)) {
      const current = state.accounts.get(address);
      touched.set(address, { before: current ? { ...current } : undefined });
    }
  };
  touch(tx.account);
  const priorBalance = sender.balance;
  sender.balance -= tx.fee;
  sender.sequence = tx.sequence + 1;
  const reserve = BASE_RESERVE + OWNER_RESERVE * BigInt(sender.ownerCount);
  let result = 'tesSUCCESS';
  let delivered: bigint | undefined;

  const credit = (to: string, drops: bigint) => {
    touch(to);
    const dst = state.accounts.get(to);
    if (dst) dst.balance += drops;
    else state.accounts.set(to, { balance: drops, sequence: index, ownerCount: 0, previousTxnId: '', previousTxnLgrSeq: 0 });
  };

  if (tx.kind.type === 'delete') {
    // AccountDelete: the balance left after the fee goes to Destination and the AccountRoot is deleted.
    if (sender.ownerCount > 0) result = 'tecHAS_OBLIGATIONS';
    else if (!state.accounts.has(tx.kind.to)) result = 'tecNO_DST';
    else {
      delivered = sender.balance;
      credit(tx.kind.to, sender.balance);
      state.accounts.delete(tx.account);
    }
  } else if (tx.kind.type === 'offer') {
    sender.ownerCount += 1;
    const offer: Offer = {
      sequence: tx.sequence,
      takerGets: tx.kind.takerGets,
      takerPays: tx.kind.takerGets,
      previousTxnId: tx.hash,
      previousTxnLgrSeq: index,
    };
    state.offers.set(tx.account, offer);
    nodes.push({
      CreatedNode: {
        LedgerEntryType: 'Offer',
        LedgerIndex: offerIndex(tx.account, tx.sequence),
        NewFields: offerFields(tx.account, offer),
      },
    });
  } else {
    const { to, amount, deliver } = tx.kind;
    const dstExists = state.accounts.has(to);
    const offer = state.offers.get(tx.account);
    if (deliver !== undefined) {
      // Crosses the sender's own offer (XRP for USD), as in the recorded partial payment.
      let drops = deliver;
      if (drops > amount) drops = amount; // (bigint: no Math.min)
      if (!offer || offer.takerGets < drops || sender.balance - reserve < drops) result = 'tecPATH_PARTIAL';
      else if (!dstExists && drops < BASE_RESERVE) result = 'tecNO_DST_INSUF_XRP';
      else {
        const before = { ...offer };
        offer.takerGets -= drops;
        offer.takerPays -= drops;
        offer.previousTxnId = tx.hash;
        offer.previousTxnLgrSeq = index;
        sender.balance -= drops;
        credit(to, drops);
        delivered = drops;
        nodes.push({
          ModifiedNode: {
            FinalFields: offerFields(tx.account, offer),
            LedgerEntryType: 'Offer',
            LedgerIndex: offerIndex(tx.account, offer.sequence),
            PreviousFields: { TakerGets: before.takerGets.toString(), TakerPays: { currency: CURRENCY, issuer: ISSUER, value: iouValue(before.takerPays) } },
            PreviousTxnID: before.previousTxnId,
            PreviousTxnLgrSeq: before.previousTxnLgrSeq,
          },
        });
      }
    } else if (!dstExists && amount < BASE_RESERVE) {
      result = 'tecNO_DST_INSUF_XRP';
    } else if (priorBalance < amount + (reserve > tx.fee ? reserve : tx.fee)) {
      result = 'tecUNFUNDED_PAYMENT'; // rippled's check for a direct XRP payment
    } else {
      sender.balance -= amount;
      credit(to, amount);
      delivered = amount;
    }
  }

  for (const [address, { before }] of touched) {
    const after = state.accounts.get(address);
    if (!after) {
      nodes.push(deletedAccountRootNode(address, before as AccountRoot, tx.sequence + 1));
      continue;
    }
    nodes.push(accountRootNode(address, before, after, index));
    after.previousTxnId = tx.hash;
    after.previousTxnLgrSeq = index;
  }
  // rippled writes AffectedNodes sorted by LedgerIndex.
  const key = (n: Json) => String((Object.values(n)[0] as Json).LedgerIndex);
  nodes.sort((a, b) => (key(a) < key(b) ? -1 : 1));
  const meta: Json = { AffectedNodes: nodes };
  // Stored in the metadata where Amount does not say what arrived: partial payments, AccountDelete.
  const storesDelivered = tx.kind.type === 'delete' || (tx.kind.type === 'payment' && tx.kind.deliver !== undefined);
  if (storesDelivered && delivered !== undefined) meta.DeliveredAmount = delivered.toString();
  meta.TransactionIndex = position;
  meta.TransactionResult = result;
  // rippled adds delivered_amount to successful payments and account deletions only ("if the transaction failed nothing could have been delivered").
  if (tx.kind.type !== 'offer' && result === 'tesSUCCESS') meta.delivered_amount = (delivered as bigint).toString();
  return { ...tx, result, meta };
}

function offerFields(account: string, offer: Offer): Json {
  return {
    Account: account,
    BookDirectory: BOOK_DIRECTORY,
    BookNode: '0',
    Flags: 0,
    OwnerNode: '0',
    Sequence: offer.sequence,
    TakerGets: offer.takerGets.toString(),
    TakerPays: { currency: CURRENCY, issuer: ISSUER, value: iouValue(offer.takerPays) },
  };
}

function deletedAccountRootNode(address: string, before: AccountRoot, sequence: number): Json {
  return {
    DeletedNode: {
      FinalFields: {
        Account: address,
        Balance: '0',
        Flags: 0,
        OwnerCount: 0,
        PreviousTxnID: before.previousTxnId,
        PreviousTxnLgrSeq: before.previousTxnLgrSeq,
        Sequence: sequence,
      },
      LedgerEntryType: 'AccountRoot',
      LedgerIndex: accountRootIndex(address),
      PreviousFields: { Balance: before.balance.toString(), Sequence: before.sequence },
    },
  };
}

function accountRootNode(address: string, before: AccountRoot | undefined, after: AccountRoot, index: number): Json {
  const LedgerIndex = accountRootIndex(address);
  if (!before) {
    return {
      CreatedNode: { LedgerEntryType: 'AccountRoot', LedgerIndex, NewFields: { Account: address, Balance: after.balance.toString(), Sequence: index } },
    };
  }
  const previous: Json = {};
  if (before.balance !== after.balance) previous.Balance = before.balance.toString();
  if (before.ownerCount !== after.ownerCount) previous.OwnerCount = before.ownerCount;
  if (before.sequence !== after.sequence) previous.Sequence = before.sequence;
  return {
    ModifiedNode: {
      FinalFields: { Account: address, Balance: after.balance.toString(), Flags: 0, OwnerCount: after.ownerCount, Sequence: after.sequence },
      LedgerEntryType: 'AccountRoot',
      LedgerIndex,
      PreviousFields: previous,
      PreviousTxnID: before.previousTxnId,
      PreviousTxnLgrSeq: before.previousTxnLgrSeq,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// JSON renderings (API v1 and v2)
// ---------------------------------------------------------------------------------------------------------------

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function closeTimes(rippleSeconds: number): { human: string; iso: string } {
  const d = new Date((rippleSeconds + RIPPLE_EPOCH_OFFSET) * 1000);
  const p = (n: number) => String(n).padStart(2, '0');
  const time = `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
  return {
    human: `${d.getUTCFullYear()}-${MONTHS[d.getUTCMonth()]}-${p(d.getUTCDate())} ${time}.000000000 UTC`,
    iso: `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())}T${time}Z`,
  };
}

/** The transaction's fields as the API version prints them: v2 drops Amount (DeliverMax only) and the hash (outside). */
function txFields(tx: PendingTx, apiVersion: number): Json {
  if (apiVersion === 1) return { ...tx.fields, hash: tx.hash };
  const { Amount: _amount, ...rest } = tx.fields;
  return rest;
}

// ---------------------------------------------------------------------------------------------------------------
// The node
// ---------------------------------------------------------------------------------------------------------------

export type Fault = 'http500' | 'http503' | 'garbage' | 'hang' | 'drop' | 'not-rippled';

export interface FakeRippledOptions {
  /** Index of the first ledger (the history before it is not available). Default 1000. */
  firstIndex?: number;
  /** Validated index after each close: closed tip − lag. Default 0 (validated at once); closeLedgers({ validate: false }) skips it. */
  validationLag?: number;
  /** API version of answers whose request does not say. Default 1 (rippled's default). */
  apiVersion?: 1 | 2;
  /** network_id in server_info (1 = testnet). */
  networkId?: number;
}

export interface FakeRippled {
  /** http://127.0.0.1:PORT/ */
  url: string;
  readonly closedIndex: number;
  readonly validatedIndex: number;
  /** The open ledger's index (closed + 1). */
  readonly currentIndex: number;
  /** Oldest ledger still in history. */
  readonly firstAvailable: number;
  /** Every command received, in order. */
  readonly requests: { method: string; params: Json }[];
  /** A fresh classic address (it exists on the ledger once a payment of at least the reserve reaches it). */
  newAccount(): string;
  /** Queues an XRP Payment; with `deliver`, a partial payment crossing the sender's offer (made first if needed). Returns the hash. */
  pay(from: string, to: string, drops: bigint, options?: { deliver?: bigint }): string;
  /**
   * Queues an AccountDelete: what is left after its fee (the owner reserve, 0.2 XRP) goes to `to`. rippled
   * also requires the account's Sequence + 256 to be below the ledger index; not enforced here.
   */
  deleteAccount(account: string, to: string): string;
  /** Closes `count` ledgers with the pending transactions; validates per validationLag unless validate is false. Returns the closed index. */
  closeLedgers(count?: number, options?: { validate?: boolean }): number;
  /** Validates closed ledgers up to `index` (default: all). Returns the validated index. */
  validate(index?: number): number;
  /**
   * Replaces every closed, unvalidated ledger (an XRP "fork": the network validated other ledgers than the
   * ones this server closed). Their transactions go back to pending, except `drop`; `count` new ledgers
   * (default: as many as were replaced) are closed, unvalidated. Returns the closed index.
   */
  replaceUnvalidated(options?: { drop?: string[]; count?: number }): number;
  /** Forgets the ledgers below `index` (like online_delete). */
  deleteHistoryBefore(index: number): void;
  ledger(index: number): FakeLedger | undefined;
  /** Balance in drops after ledger `index` (default: the validated one); undefined when the account does not exist there. */
  balance(address: string, index?: number): bigint | undefined;
  /** Where a transaction was applied on the current chain, and its result. */
  transaction(hash: string): { ledgerIndex: number; result: string; meta: Json } | undefined;
  /** The next `count` requests (of `method` when given) fail this way. */
  injectFault(fault: Fault, options?: { method?: string; count?: number }): void;
  /**
   * server_info's server_state (default 'full'): 'syncing', 'tracking', 'connected' or 'disconnected' is a
   * server not in step with the network (the ledgers it has are still served).
   */
  setServerState(state: string): void;
  /** Connections refused until up(). */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeRippled(options: FakeRippledOptions = {}): Promise<FakeRippled> {
  const firstIndex = options.firstIndex ?? 1000;
  const lag = options.validationLag ?? 0;
  const defaultApiVersion = options.apiVersion ?? 1;
  const startTime = Math.floor(Date.now() / 1000) - RIPPLE_EPOCH_OFFSET;

  const genesisState = new LedgerState();
  genesisState.accounts.set(GENESIS_ADDRESS, { balance: TOTAL_DROPS, sequence: 1, ownerCount: 0, previousTxnId: sha512Half('genesis'), previousTxnLgrSeq: 1 });
  const first: FakeLedger = {
    index: firstIndex,
    hash: '',
    parentHash: sha512Half(`fake-rippled parent of ${firstIndex}`),
    closeTime: startTime - (startTime % 10),
    parentCloseTime: startTime - (startTime % 10) - 10,
    txs: [],
    state: genesisState,
    totalCoins: TOTAL_DROPS,
  };
  first.hash = ledgerHash(first);
  /** The chain, by index; entries below firstAvailable are deleted. */
  const ledgers = new Map<number, FakeLedger>([[firstIndex, first]]);
  let closedIndex = firstIndex;
  let validatedIndex = firstIndex;
  let serverState = 'full';
  let firstAvailable = firstIndex;
  let pending: PendingTx[] = [];
  const requests: { method: string; params: Json }[] = [];
  const faults: { fault: Fault; method?: string; count: number }[] = [];

  function ledgerHash(l: FakeLedger): string {
    const accountHash = sha512Half(JSON.stringify([...l.state.accounts].map(([a, r]) => [a, r.balance.toString(), r.sequence, r.ownerCount])));
    return sha512Half(JSON.stringify({ index: l.index, parent: l.parentHash, closeTime: l.closeTime, txs: l.txs.map((t) => t.hash), accountHash }));
  }

  const tip = () => ledgers.get(closedIndex) as FakeLedger;

  function nextSequence(account: string): number {
    const fromPending = pending.filter((t) => t.account === account).map((t) => t.sequence + 1);
    const applied = tip().state.accounts.get(account)?.sequence ?? closedIndex + 1;
    return Math.max(applied, ...fromPending);
  }

  function submit(account: string, kind: PendingKind): string {
    // AccountDelete's transaction cost is the owner reserve increment.
    const fee = kind.type === 'delete' ? OWNER_RESERVE : FEE_DROPS;
    const base = { account, sequence: nextSequence(account), fee, lastLedgerSequence: closedIndex + 1 + 20, kind };
    const fields = describeFields(base);
    const hash = sha512Half(`TXN\0${JSON.stringify(fields)}`);
    pending.push({ ...base, hash, fields: sortKeys({ ...fields, TxnSignature: sha512Half(hash) + sha512Half(`sig${hash}`) }) });
    return hash;
  }

  function closeOne(minCloseTime = 0): FakeLedger {
    const parent = tip();
    const index = parent.index + 1;
    const state = parent.state.clone();
    const txs: AppliedTx[] = [];
    const stillPending: PendingTx[] = [];
    for (const tx of pending) {
      if (tx.lastLedgerSequence < index) continue; // expired: never included (tefMAX_LEDGER)
      const applied = applyTransaction(state, tx, index, txs.length);
      if (applied) txs.push(applied);
      else stillPending.push(tx);
    }
    pending = stillPending;
    const now = Math.floor(Date.now() / 1000) - RIPPLE_EPOCH_OFFSET;
    const ledger: FakeLedger = {
      index,
      hash: '',
      parentHash: parent.hash,
      closeTime: Math.max(now - (now % 10), parent.closeTime + 1, minCloseTime),
      parentCloseTime: parent.closeTime,
      txs,
      state,
      totalCoins: parent.totalCoins - txs.reduce((sum, t) => sum + t.fee, 0n),
    };
    ledger.hash = ledgerHash(ledger);
    ledgers.set(index, ledger);
    closedIndex = index;
    return ledger;
  }

  function findTx(hash: string): { tx: AppliedTx; ledger: FakeLedger } | undefined {
    for (let i = closedIndex; i >= firstAvailable; i--) {
      const ledger = ledgers.get(i) as FakeLedger;
      const tx = ledger.txs.find((t) => t.hash === hash);
      if (tx) return { tx, ledger };
    }
    return undefined;
  }

  // --- commands ------------------------------------------------------------------------------------------------

  class CommandError extends Error {
    constructor(
      readonly token: string,
      readonly code: number,
      message: string,
      readonly extra: Json = {},
    ) {
      super(message);
    }
  }
  const lgrNotFound = () => new CommandError('lgrNotFound', 21, 'ledgerNotFound');

  /** rippled's ledger lookup: a closed ledger of the chain, the open one ('current'), or lgrNotFound. */
  function lookup(params: Json): { ledger: FakeLedger | undefined; open: boolean } {
    if (params.ledger_hash !== undefined) {
      if (typeof params.ledger_hash !== 'string' || !/^[0-9A-Fa-f]{64}$/.test(params.ledger_hash)) {
        throw new CommandError('invalidParams', 31, "Invalid field 'ledger_hash', not hex string.");
      }
      const hash = params.ledger_hash.toUpperCase();
      for (let i = closedIndex; i >= firstAvailable; i--) if (ledgers.get(i)?.hash === hash) return { ledger: ledgers.get(i), open: false };
      throw lgrNotFound();
    }
    const raw = params.ledger_index ?? 'current';
    if (raw === 'current' || raw === '') return { ledger: undefined, open: true };
    if (raw === 'validated') return { ledger: ledgers.get(validatedIndex), open: false };
    if (raw === 'closed') return { ledger: tip(), open: false };
    const index = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(index) || index < 0) throw new CommandError('invalidParams', 31, "Invalid field 'ledger_index', not string or number.");
    if (index === closedIndex + 1) return { ledger: undefined, open: true };
    if (index < firstAvailable || index > closedIndex) throw lgrNotFound();
    return { ledger: ledgers.get(index), open: false };
  }

  function lookupFields(found: { ledger: FakeLedger | undefined; open: boolean }): Json {
    if (found.open || !found.ledger) return { ledger_current_index: closedIndex + 1, validated: false };
    return { ledger_hash: found.ledger.hash, ledger_index: found.ledger.index, validated: found.ledger.index <= validatedIndex };
  }

  function ledgerTxJson(tx: AppliedTx, ledger: FakeLedger, apiVersion: number): Json {
    if (apiVersion === 1) return { ...txFields(tx, 1), metaData: tx.meta };
    const validated = ledger.index <= validatedIndex;
    return {
      hash: tx.hash,
      ledger_hash: ledger.hash,
      ...(validated ? { ledger_index: ledger.index, close_time_iso: closeTimes(ledger.closeTime).iso } : {}),
      meta: tx.meta,
      tx_json: txFields(tx, 2),
      validated,
    };
  }

  function ledgerCommand(params: Json, apiVersion: number): Json {
    const found = lookup(params);
    const index = (n: number) => (apiVersion === 1 ? String(n) : n);
    if (found.open || !found.ledger) {
      const open: Json = { closed: false, ledger_index: index(closedIndex + 1), parent_close_time: tip().closeTime, parent_hash: tip().hash };
      if (params.transactions === true) open.transactions = pending.map((t) => (params.expand === true ? txFields(t, apiVersion) : t.hash));
      return { ledger: open, ...lookupFields(found) };
    }
    const l = found.ledger;
    const times = closeTimes(l.closeTime);
    const ledger: Json = {
      account_hash: sha512Half(`accounts ${l.hash}`),
      close_flags: 0,
      close_time: l.closeTime,
      close_time_human: times.human,
      close_time_iso: times.iso,
      close_time_resolution: 10,
      closed: true,
      ledger_hash: l.hash,
      ledger_index: index(l.index),
      parent_close_time: l.parentCloseTime,
      parent_hash: l.parentHash,
      total_coins: l.totalCoins.toString(),
      transaction_hash: sha512Half(`txs ${l.hash}`),
    };
    if (params.transactions === true) {
      // The transaction tree's order: by hash, not by TransactionIndex.
      const byHash = [...l.txs].sort((a, b) => (a.hash < b.hash ? -1 : 1));
      ledger.transactions = byHash.map((t) => (params.expand === true ? ledgerTxJson(t, l, apiVersion) : t.hash));
    }
    return { ledger, ...lookupFields(found) };
  }

  function txCommand(params: Json, apiVersion: number): Json {
    const id = params.transaction;
    if (typeof id !== 'string' || !/^[0-9A-Fa-f]{64}$/.test(id)) throw new CommandError('notImpl', 74, 'Not implemented.');
    const hash = id.toUpperCase();
    const found = findTx(hash);
    if (!found) {
      const queued = pending.find((t) => t.hash === hash);
      if (queued) return apiVersion === 1 ? { ...txFields(queued, 1), validated: false } : { hash, tx_json: txFields(queued, 2), validated: false };
      throw new CommandError('txnNotFound', 29, 'Transaction not found.');
    }
    const { tx, ledger } = found;
    const validated = ledger.index <= validatedIndex;
    if (apiVersion === 1) {
      return { ...txFields(tx, 1), date: ledger.closeTime, inLedger: ledger.index, ledger_index: ledger.index, meta: tx.meta, validated };
    }
    return {
      ...(validated ? { close_time_iso: closeTimes(ledger.closeTime).iso } : {}),
      hash,
      ledger_hash: ledger.hash,
      ledger_index: ledger.index,
      meta: tx.meta,
      tx_json: txFields(tx, 2),
      validated,
    };
  }

  function accountInfoCommand(params: Json): Json {
    const account = params.account;
    let valid = false;
    try {
      valid = typeof account === 'string' && accountIdOf(account).length === 20 && encodeClassicAddress(accountIdOf(account)) === account;
    } catch {
      valid = false;
    }
    if (!valid) throw new CommandError('actMalformed', 35, 'Account malformed.');
    const found = lookup(params);
    const ledger = found.ledger ?? tip();
    const root = ledger.state.accounts.get(account as string);
    if (!root) throw new CommandError('actNotFound', 19, 'Account not found.', { account, ...lookupFields(found) });
    return {
      account_data: {
        Account: account,
        Balance: root.balance.toString(),
        Flags: 0,
        LedgerEntryType: 'AccountRoot',
        OwnerCount: root.ownerCount,
        PreviousTxnID: root.previousTxnId,
        PreviousTxnLgrSeq: root.previousTxnLgrSeq,
        Sequence: root.sequence,
        index: accountRootIndex(account as string),
      },
      ...lookupFields(found),
    };
  }

  function serverInfoCommand(): Json {
    const validated = ledgers.get(validatedIndex) as FakeLedger;
    const now = Math.floor(Date.now() / 1000) - RIPPLE_EPOCH_OFFSET;
    return {
      info: {
        build_version: '2.3.0',
        complete_ledgers: `${firstAvailable}-${validatedIndex}`,
        hostid: 'FAKE',
        io_latency_ms: 1,
        last_close: { converge_time_s: 2, proposers: 6 },
        load_factor: 1,
        network_id: options.networkId ?? 1,
        peers: 21,
        pubkey_node: 'n9KAa2zVWjPHgfzsE3iZ8HAbzJtPrnoh4H2M2HgE7dfqtvyEb1KJ',
        server_state: serverState,
        time: `${closeTimes(now).human.replace('.000000000', '.000000')}`,
        uptime: Math.max(0, now - startTime),
        validated_ledger: {
          age: Math.max(0, now - validated.closeTime),
          base_fee_xrp: 0.00001,
          hash: validated.hash,
          reserve_base_xrp: Number(BASE_RESERVE) / 1e6,
          reserve_inc_xrp: Number(OWNER_RESERVE) / 1e6,
          seq: validatedIndex,
        },
        validation_quorum: 28,
      },
    };
  }

  function command(method: string, params: Json, apiVersion: number): Json {
    switch (method) {
      case 'ledger':
        return ledgerCommand(params, apiVersion);
      case 'tx':
        return txCommand(params, apiVersion);
      case 'account_info':
        return accountInfoCommand(params);
      case 'server_info':
        return serverInfoCommand();
      case 'ledger_closed':
        return { ledger_hash: tip().hash, ledger_index: closedIndex };
      case 'ledger_current':
        return { ledger_current_index: closedIndex + 1 };
      default:
        throw new CommandError('unknownCmd', 32, 'Unknown method.');
    }
  }

  // --- HTTP ----------------------------------------------------------------------------------------------------

  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();

  function takeFault(method: string): Fault | undefined {
    const i = faults.findIndex((f) => f.method === undefined || f.method === method);
    if (i === -1) return undefined;
    const f = faults[i] as (typeof faults)[number];
    if (--f.count <= 0) faults.splice(i, 1);
    return f.fault;
  }

  function handle(req: IncomingMessage, res: ServerResponse, body: string) {
    const text = (status: number, message: string): void => {
      res.writeHead(status, { 'content-type': 'text/plain' }).end(message);
    };
    let request: Json;
    try {
      request = JSON.parse(body) as Json;
      if (request === null || typeof request !== 'object' || Array.isArray(request)) throw new Error('not an object');
    } catch (error) {
      return text(400, `Unable to parse request: ${(error as Error).message}`);
    }
    const method = request.method;
    if (typeof method !== 'string' || method === '') return text(400, 'Null method');
    const list = request.params ?? [{}];
    if (!Array.isArray(list) || list.length !== 1 || list[0] === null || typeof list[0] !== 'object') return text(400, 'params unparsable');
    const params = list[0] as Json;
    requests.push({ method, params });
    const apiVersion = params.api_version ?? defaultApiVersion;
    if (apiVersion !== 1 && apiVersion !== 2) return text(400, 'invalid_API_version');

    const fault = takeFault(method);
    if (fault === 'hang') return void hanging.add(res);
    if (fault === 'drop') return void req.socket.destroy();
    if (fault === 'http500') return text(500, 'Internal Server Error');
    if (fault === 'http503') return text(503, 'Server is overloaded');
    if (fault === 'garbage') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"result": {"ledger": [tru');
    if (fault === 'not-rippled') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"hello": "world"}');

    let result: Json;
    try {
      result = { ...command(method, params, apiVersion), status: 'success' };
    } catch (error) {
      // Anything else is a bug of the fake; rippled's answer to its own exceptions is rpcINTERNAL.
      const e = error instanceof CommandError ? error : new CommandError('internal', 73, `Internal error: ${(error as Error).message}`);
      result = { ...e.extra, error: e.token, error_code: e.code, error_message: e.message, request: { ...params, command: method }, status: 'error' };
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify({ result })}\n`);
  }

  const server: Server = createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let listening = true;

  async function stopListening(): Promise<void> {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const res of hanging) res.destroy();
    hanging.clear();
    for (const socket of sockets) socket.destroy();
    await closed;
  }

  return {
    url: `http://127.0.0.1:${port}/`,
    setServerState(state) {
      serverState = state;
    },
    get closedIndex() {
      return closedIndex;
    },
    get validatedIndex() {
      return validatedIndex;
    },
    get currentIndex() {
      return closedIndex + 1;
    },
    get firstAvailable() {
      return firstAvailable;
    },
    requests,
    newAccount: () => encodeClassicAddress(randomBytes(20)),
    pay(from, to, drops, payOptions = {}) {
      accountIdOf(to);
      if (drops <= 0n) throw new Error('a payment moves a positive amount');
      if (payOptions.deliver !== undefined) {
        const hasOffer = tip().state.offers.has(from) || pending.some((t) => t.account === from && t.kind.type === 'offer');
        if (!hasOffer) submit(from, { type: 'offer', takerGets: 1_000_000n * 1_000_000n });
        return submit(from, { type: 'payment', to, amount: drops, deliver: payOptions.deliver });
      }
      return submit(from, { type: 'payment', to, amount: drops });
    },
    deleteAccount: (account, to) => submit(account, { type: 'delete', to }),
    closeLedgers(count = 1, closeOptions = {}) {
      for (let i = 0; i < count; i++) closeOne();
      if (closeOptions.validate !== false) validatedIndex = Math.max(validatedIndex, closedIndex - lag);
      return closedIndex;
    },
    validate(index = closedIndex) {
      if (index > closedIndex) throw new Error(`ledger ${index} is not closed yet (closed: ${closedIndex})`);
      validatedIndex = Math.max(validatedIndex, index);
      return validatedIndex;
    },
    replaceUnvalidated(replaceOptions = {}) {
      const drop = new Set((replaceOptions.drop ?? []).map((h) => h.toUpperCase()));
      const replaced: FakeLedger[] = [];
      for (let i = validatedIndex + 1; i <= closedIndex; i++) replaced.push(ledgers.get(i) as FakeLedger);
      for (const l of replaced) ledgers.delete(l.index);
      closedIndex = validatedIndex;
      const back: PendingTx[] = replaced.flatMap((l) => l.txs.map(({ result: _r, meta: _m, ...tx }) => tx)).filter((t) => !drop.has(t.hash));
      pending = [...back, ...pending.filter((t) => !drop.has(t.hash))];
      const count = replaceOptions.count ?? replaced.length;
      for (let i = 0; i < count; i++) {
        // Another close time than the ledger it replaces, so even the same contents give another ledger.
        const old = replaced[i];
        closeOne(old ? old.closeTime + 1 : 0);
      }
      return closedIndex;
    },
    deleteHistoryBefore(index) {
      if (index > validatedIndex) throw new Error('only validated history can be deleted');
      for (let i = firstAvailable; i < index; i++) ledgers.delete(i);
      firstAvailable = Math.max(firstAvailable, index);
    },
    ledger: (index) => (index >= firstAvailable ? ledgers.get(index) : undefined),
    balance(address, index = validatedIndex) {
      return ledgers.get(index)?.state.accounts.get(address)?.balance;
    },
    transaction(hash) {
      const found = findTx(hash.toUpperCase());
      return found && { ledgerIndex: found.ledger.index, result: found.tx.result, meta: found.tx.meta };
    },
    injectFault(fault, faultOptions = {}) {
      faults.push({ fault, method: faultOptions.method, count: faultOptions.count ?? 1 });
    },
    down: stopListening,
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
    close: stopListening,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// ChainDriver
// ---------------------------------------------------------------------------------------------------------------

export interface FakeXrpDriver extends ChainDriver {
  fake: FakeRippled;
  /** Closes `count` ledgers without validating them. Returns the closed index. */
  closeUnvalidated(count?: number): Promise<number>;
  /** Validates every closed ledger. Returns the validated index. */
  validate(): Promise<number>;
  /** See FakeRippled.replaceUnvalidated. */
  replaceUnvalidated(options?: { drop?: string[]; count?: number }): Promise<number>;
  /** A partial payment from the funded wallet: asks `amount`, delivers `deliver`. Returns the hash. */
  sendPartial(to: string, amount: bigint, deliver: bigint): Promise<string>;
}

/**
 * The ChainDriver of the fake rippled (xrp/testnet). Heights are validated ledger indexes (what herald
 * follows); mine() closes ledgers and validates them.
 *
 * reorg() throws: on the XRP Ledger a validated ledger is final, and herald follows validated ledgers
 * only, so there is no reorganisation of the chain herald sees. What can be replaced is a closed ledger
 * that is not validated yet: closeUnvalidated() + replaceUnvalidated() make that case (the follower must
 * never report from such a ledger).
 *
 * spend() pays `amount` from `from`, then deletes the account (AccountDelete) so that the rest, less the
 * deletion's fee, goes back to the funded wallet: an XRP account cannot go below its reserve otherwise.
 */
export async function startFakeXrpDriver(options: FakeRippledOptions = {}): Promise<FakeXrpDriver> {
  const fake = await startFakeRippled(options);
  const blockHash = async (height: number) => {
    const l = fake.ledger(height);
    if (!l || height > fake.validatedIndex) throw new Error(`no validated ledger ${height} (validated: ${fake.validatedIndex})`);
    return l.hash;
  };
  return {
    blockchain: 'xrp',
    network: 'testnet',
    rpcUrl: fake.url,
    chainConfig: { chainId: options.networkId ?? 1 },
    fake,
    height: async () => fake.validatedIndex,
    blockHash,
    async mine(count) {
      fake.closeLedgers(count, { validate: false });
      return fake.validate();
    },
    newAddress: async () => fake.newAccount(),
    send: async (to, amount) => fake.pay(GENESIS_ADDRESS, to, amount),
    async spend(from, to, amount) {
      // The rest goes back to the wallet the only way an XRP account can hand over everything: AccountDelete.
      const transactionId = fake.pay(from, to, amount);
      fake.deleteAccount(from, GENESIS_ADDRESS);
      return { transactionId, fee: FEE_DROPS + OWNER_RESERVE };
    },
    async reorg() {
      throw new Error(
        'xrp: validated ledgers are final and herald follows validated ledgers only, so the chain it sees cannot reorganise; use closeUnvalidated() and replaceUnvalidated() for the ledgers that can be replaced',
      );
    },
    balance: async (address) => fake.balance(address) ?? 0n,
    down: () => fake.down(),
    up: () => fake.up(),
    close: () => fake.close(),
    closeUnvalidated: async (count = 1) => fake.closeLedgers(count, { validate: false }),
    validate: async () => fake.validate(),
    replaceUnvalidated: async (replaceOptions) => fake.replaceUnvalidated(replaceOptions),
    sendPartial: async (to, amount, deliver) => fake.pay(GENESIS_ADDRESS, to, amount, { deliver }),
  };
}

/**
 * The in-memory index of the active subscriptions of ONE (blockchain, network), as matching needs
 * them: transaction id -> subscriptions (TRANSACTION_MINED), address -> subscriptions
 * (ADDRESS_TOKENS_TRANSACTION_CONFIRMED), thresholds sorted in base units
 * (CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER), height -> subscriptions
 * (BLOCK_HEIGHT_REACHED) and the subscriptions of every block (BLOCK_MINED; BLOCK_REVERTED, matched
 * against the blocks a reorganisation drops). One address table serves every address kind (token,
 * internal-transfer and coin subscriptions, once or at each confirmation; each slot says its kind, and
 * matching keeps the kinds it looks for); token contract -> subscriptions
 * (CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER, whose whole-token amount is compared after
 * the token's decimals are known, see match.ts); CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER
 * has its own sorted thresholds.
 *
 * Memory is the constraint (a million subscriptions in well under 400 bytes each), so a subscription
 * is a slot of 32 bytes in one typed array (slot-words.ts: 16-byte id, customer (a reference to its id's text), kind, receiveCallbackOn, next and previous slots of the
 * same target; everything matching reads of a slot in one cache line) plus its target: the transaction id or address string (the one key the target tables
 * compare with; see target-table.ts for why they are not Maps) or the threshold in base units.
 * Everything else (callbackUrl, secret, apiVersion...) stays in the database; whoever builds the
 * callbacks loads it for the subscriptions that matched.
 *
 * Slots are reused after removal: a slot names a subscription only until the index next changes. Match
 * results carry a SubscriptionRecord (the id and what matching used), never a bare slot.
 */
import { type Blockchain, CHAINS, type EventType, type Network, supportsNetwork } from '../domain/chains.ts';
import type { ConfirmationPolicy } from '../domain/confirmations.ts';
import type { DerivedAddressRow, IndexableSubscription, SubscribedWalletKey } from '../domain/subscriptions.ts';
import { DerivedAddressTable, type XpubAddressEntry } from './derived-addresses.ts';
import { IdSlots } from './id-slots.ts';
import { SlotChain } from './slot-chain.ts';
import { CUSTOMER, KIND, NEXT, SLOT_BYTES, SLOT_WORDS, type SlotLinks, UNLINKED } from './slot-words.ts';
import { TargetTable } from './target-table.ts';
import { SortedThresholds } from './thresholds.ts';

/** What the index knows of one subscription: enough to match and to name it; not enough to call back. */
export interface SubscriptionRecord {
  id: string;
  customerId: string;
  eventType: EventType;
  /** Normalised transaction id or address (for a token amount subscription the contract); null for threshold subscriptions. */
  target: string | null;
  /** Address events (tokens, internal): the confirmations asked, null for the chain default; null for other events. */
  receiveCallbackOn: number | null;
  /** Address events given confirmation tiers or finality instead of receiveCallbackOn (docs/concepts/confirmations-and-reorganisations.md); null otherwise. */
  confirmationPolicy: ConfirmationPolicy | null;
  /** Threshold events: whole coins of the native unit (whole tokens for the token amount event), as subscribed; null otherwise. */
  amountHigherThan: bigint | null;
  /**
   * Internal threshold events: amountHigherThan in base units (what amounts are compared with); null
   * otherwise (the token amount event's base units depend on the token's decimals, known after matching).
   */
  threshold: bigint | null;
  /** BLOCK_HEIGHT_REACHED: the height waited for; null otherwise. */
  blockHeight: number | null;
}

const FREE = 0;
const TRANSACTION = 1;
const ADDRESS = 2;
const THRESHOLD = 3;
/** Every block applied. */
const BLOCK = 4;
/** The block applied at one height (the target is the height's decimal text). */
const HEIGHT = 5;
/** Every block a reorganisation drops. */
const REVERTED = 6;
/** Internal transfers to or from an address (in the address table, beside ADDRESS). */
const INTERNAL_ADDRESS = 7;
/** Token transfers of a contract at or above a whole-token amount (the target is the contract). */
const TOKEN_AMOUNT = 8;
/** Token transfers of an address, one callback per confirmation (kept in the address table with ADDRESS). */
const TOKENS_EACH = 9;
/** Internal transfers of an address, one callback per confirmation (in the address table). */
const INTERNAL_EACH = 10;
/** Coins of an address (the target), in the same address table as the token subscriptions. */
const COIN_ADDRESS = 11;
/** Coin transactions at or above an amount (the threshold in base units). */
const COIN_THRESHOLD = 12;
/** Coins of an address, one callback per confirmation (in the address table). */
const COIN_EACH = 13;
/** Coins of an address seen unconfirmed in the mempool (in the address table; matched by matchPending only). */
const COIN_UNCONFIRMED = 14;
/** Token transfers of an address seen unconfirmed in the mempool (in the address table; matchPending only). */
const TOKENS_UNCONFIRMED = 15;
/**
 * The confirmations byte of a slot whose subscription has a confirmation policy (tiers or finality):
 * the policy is in `policies` (few next to the plain ones, so not a column of every slot). Above the
 * largest receiveCallbackOn the index takes (255 is refused for it).
 */
const POLICY_MARK = 255;
/**
 * A wallet key (XPUB_COINS_TRANSACTION_CONFIRMED, docs/concepts/wallet-keys.md): the slot names the subscription; its
 * derived addresses are in xpubAddresses (derived-addresses.ts), not in the address table (one subscription, many addresses).
 */
const XPUB = 16;
/** A wallet key watched unconfirmed (XPUB_COINS_TRANSACTION_UNCONFIRMED): as XPUB, matched by matchPending only. */
const XPUB_UNCONFIRMED = 17;
const isXpubKind = (kind: number) => kind === XPUB || kind === XPUB_UNCONFIRMED;
/** Whole-token amounts below this are kept in the slot (16 bits, the amount + 1; 0 = in tokenAmounts). */
const SMALL_TOKEN_AMOUNT = 0xffffn;
const EVENT_OF_KIND: readonly (EventType | undefined)[] = [
  undefined,
  'TRANSACTION_MINED',
  'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
  'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
  'BLOCK_MINED',
  'BLOCK_HEIGHT_REACHED',
  'BLOCK_REVERTED',
  'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
  'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
  'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED',
  'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
  'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED',
  'XPUB_COINS_TRANSACTION_CONFIRMED',
  'XPUB_COINS_TRANSACTION_UNCONFIRMED',
];
/** Kinds whose target is an address (one address table serves them all). */
const ADDRESS_KINDS: readonly number[] = [ADDRESS, INTERNAL_ADDRESS, TOKENS_EACH, INTERNAL_EACH, COIN_ADDRESS, COIN_EACH, COIN_UNCONFIRMED, TOKENS_UNCONFIRMED];
/** 1 for an address kind, by kind (record() asks per match: one load instead of six comparisons). */
const IS_ADDRESS_KIND = Uint8Array.from(EVENT_OF_KIND, (_, kind) => (ADDRESS_KINDS.includes(kind) ? 1 : 0));
const isAddressKind = (kind: number) => IS_ADDRESS_KIND[kind] === 1;

export type { XpubAddressEntry } from './derived-addresses.ts';

export class SubscriptionIndex {
  readonly blockchain: Blockchain;
  readonly network: Network;
  /** 10^decimals of the native unit: whole coins to base units. */
  readonly scale: bigint;

  private capacity: number;
  private used = 0;
  private count = 0;
  private readonly freeSlots: number[] = [];
  private readonly ids: IdSlots;
  /** Customer ids as text, each once (never dropped: there are as many as customers, not subscriptions). */
  private readonly customerTexts: string[] = [];
  private readonly customerRefOf = new Map<number, number>();
  /**
   * The transaction id or address (string), the threshold in base units (bigint) or the height (its
   * decimal text, the key of byHeight) of each slot; nothing for the every-block kinds.
   */
  private readonly targets: (string | bigint | undefined)[] = [];
  /**
   * The slots' words (slot-words.ts; `links.words`, over the ids' buffer): id, customer (its position
   * in customerTexts: a customer's text is kept once, not per subscription), the next and previous
   * slots with the same target (see TargetTable), kind and receiveCallbackOn (0 = the chain default).
   */
  private readonly links: SlotLinks;
  private readonly byTransaction: TargetTable;
  private readonly byAddress: TargetTable;
  private readonly thresholds = new SortedThresholds();
  private readonly byHeight: TargetTable;
  private readonly everyBlock: SlotChain;
  private readonly everyReverted: SlotChain;
  private readonly byContract: TargetTable;
  /**
   * Whole-token amounts of the TOKEN_AMOUNT slots from SMALL_TOKEN_AMOUNT up (few next to the address
   * kinds, so not a column of every slot); smaller ones are in the slot's KIND word (bits 16..31, the
   * amount + 1), read with the slot and compared as numbers.
   */
  private readonly tokenAmounts = new Map<number, bigint>();
  /** The confirmation policies of the slots whose confirmations byte is POLICY_MARK. */
  private readonly policies = new Map<number, ConfirmationPolicy>();
  /** Indexed subscriptions whose policy is finality: the follower reads the chain's finalized height only while there are some. */
  private finalityCount = 0;
  private readonly coinThresholds = new SortedThresholds();
  /** Indexed mempool (unconfirmed) subscriptions. */
  private unconfirmedCount = 0;
  /** Indexed XPUB_COINS_TRANSACTION_UNCONFIRMED subscriptions (their derived addresses share the wallet-key table). */
  private xpubUnconfirmedCount = 0;
  /**
   * Wallet-key subscriptions: their derived addresses (derived-addresses.ts: a Map to typed-array entries,
   * about 120 bytes per address) and each subscription's key.
   */
  private readonly xpubAddresses = new DerivedAddressTable();
  private readonly xpubs = new Map<string, SubscribedWalletKey>();
  /** The event type of each wallet-key subscription (confirmed or unconfirmed), read per derived address a block touches. */
  private readonly xpubEventTypes = new Map<string, EventType>();
  /** By the owner ordinal of the derived-address table (XpubAddressEntry.owner): the subscription's slot and key (matching reads them per touched transaction, no lookup by id). */
  private readonly xpubOwnerSlots: number[] = [];
  private readonly xpubOwnerKeys: (SubscribedWalletKey | undefined)[] = [];

  /** `expectedSize` presizes the arrays (they grow by doubling otherwise). */
  constructor(blockchain: Blockchain, network: Network, options: { expectedSize?: number } = {}) {
    if (!CHAINS[blockchain] || !supportsNetwork(blockchain, network)) throw new Error(`unknown blockchain and network: ${blockchain}/${network}`);
    this.blockchain = blockchain;
    this.network = network;
    this.scale = 10n ** BigInt(CHAINS[blockchain].decimals);
    this.capacity = Math.max(16, options.expectedSize ?? 0);
    this.ids = new IdSlots(this.capacity, SLOT_BYTES);
    this.links = { words: new Int32Array(this.ids.slotBuffer) };
    unlinkAll(this.links.words, 0, this.capacity);
    this.byTransaction = new TargetTable(this.links);
    this.byAddress = new TargetTable(this.links);
    this.byHeight = new TargetTable(this.links);
    this.everyBlock = new SlotChain(this.links);
    this.everyReverted = new SlotChain(this.links);
    this.byContract = new TargetTable(this.links);
  }

  /** Subscriptions indexed. */
  get size(): number {
    return this.count;
  }

  has(id: string): boolean {
    return this.ids.find(id) >= 0;
  }

  get(id: string): SubscriptionRecord | undefined {
    const slot = this.ids.find(id);
    return slot < 0 ? undefined : this.record(slot);
  }

  /**
   * Indexes `sub`, replacing what was indexed under its id. An inactive subscription is removed
   * instead (so a changed row can always be passed here); returns whether `sub` is now indexed.
   * Throws, changing nothing, on a row of another chain or a malformed row.
   */
  add(sub: IndexableSubscription): boolean {
    if (sub.blockchain !== this.blockchain || sub.network !== this.network)
      throw new Error(`subscription ${sub.id} is for ${sub.blockchain}/${sub.network}, not ${this.blockchain}/${this.network}`);
    const customer = parseCustomerId(sub.customerId);
    if (customer < 0) throw new Error(`subscription ${sub.id}: customer id '${sub.customerId}' is not a non-negative integer`);
    // Checked without allocating: loading a million rows is mostly this function.
    let kind: number;
    let confirmations = 0;
    let target: string | bigint | undefined;
    switch (sub.eventType) {
      case 'TRANSACTION_MINED':
      case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED':
      case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED':
      case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION':
      case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION':
      case 'ADDRESS_COINS_TRANSACTION_CONFIRMED':
      case 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION':
      case 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED':
      case 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED': {
        if (!sub.target) throw new Error(`subscription ${sub.id} (${sub.eventType}) has no target`);
        target = sub.target;
        kind =
          sub.eventType === 'TRANSACTION_MINED'
            ? TRANSACTION
            : sub.eventType === 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED'
              ? ADDRESS
              : sub.eventType === 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED'
                ? INTERNAL_ADDRESS
                : sub.eventType === 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION'
                  ? TOKENS_EACH
                  : sub.eventType === 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION'
                    ? INTERNAL_EACH
                    : sub.eventType === 'ADDRESS_COINS_TRANSACTION_CONFIRMED'
                      ? COIN_ADDRESS
                      : sub.eventType === 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION'
                        ? COIN_EACH
                        : sub.eventType === 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED'
                          ? COIN_UNCONFIRMED
                          : TOKENS_UNCONFIRMED;
        // receiveCallbackOn; for the each-confirmation kind, the last confirmation to report (confirmationsCount).
        const on = sub.receiveCallbackOn;
        if (isAddressKind(kind) && on !== null) {
          if (!(Number.isInteger(on) && on >= 1 && on < POLICY_MARK))
            throw new Error(`subscription ${sub.id}: receiveCallbackOn ${on} is not an integer from 1 to ${POLICY_MARK - 1}`);
          confirmations = on;
        }
        if (isAddressKind(kind) && sub.confirmationPolicy) confirmations = POLICY_MARK;
        break;
      }
      case 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER':
      case 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER': {
        const whole = sub.amountHigherThan;
        if (whole === null || whole < 0n) throw new Error(`subscription ${sub.id}: amountHigherThan ${whole} is not an integer >= 0`);
        target = whole * this.scale;
        kind = sub.eventType === 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER' ? COIN_THRESHOLD : THRESHOLD;
        break;
      }
      case 'BLOCK_HEIGHT_REACHED': {
        const height = sub.blockHeight;
        if (!(typeof height === 'number' && Number.isSafeInteger(height) && height >= 0))
          throw new Error(`subscription ${sub.id}: blockHeight ${height} is not an integer >= 0`);
        target = String(height);
        kind = HEIGHT;
        break;
      }
      case 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER': {
        if (!sub.target) throw new Error(`subscription ${sub.id} (${sub.eventType}) has no contract`);
        const whole = sub.amountHigherThan;
        if (whole === null || whole < 0n) throw new Error(`subscription ${sub.id}: amountHigherThan ${whole} is not an integer >= 0`);
        target = sub.target;
        kind = TOKEN_AMOUNT;
        break;
      }
      case 'XPUB_COINS_TRANSACTION_CONFIRMED': {
        if (!sub.walletKey) throw new Error(`subscription ${sub.id} (${sub.eventType}) has no wallet key`);
        const on = sub.receiveCallbackOn;
        if (on !== null) {
          if (!(Number.isInteger(on) && on >= 1 && on < POLICY_MARK))
            throw new Error(`subscription ${sub.id}: receiveCallbackOn ${on} is not an integer from 1 to ${POLICY_MARK - 1}`);
          confirmations = on;
        }
        if (sub.confirmationPolicy) confirmations = POLICY_MARK;
        target = undefined;
        kind = XPUB;
        break;
      }
      case 'XPUB_COINS_TRANSACTION_UNCONFIRMED':
        if (!sub.walletKey) throw new Error(`subscription ${sub.id} (${sub.eventType}) has no wallet key`);
        target = undefined;
        kind = XPUB_UNCONFIRMED;
        break;
      case 'BLOCK_MINED':
        target = undefined;
        kind = BLOCK;
        break;
      case 'BLOCK_REVERTED':
        target = undefined;
        kind = REVERTED;
        break;
      default:
        throw new Error(`subscription ${sub.id}: unknown event type ${String(sub.eventType)}`);
    }
    // Parsed once: the id is looked up, and then stored, from the parsed bytes.
    if (!this.ids.parse(sub.id)) throw new Error(`subscription id '${sub.id}' is not a UUID`);

    const existing = this.ids.findParsed();
    if (existing >= 0) this.release(existing);
    if (!sub.isActive) return false;
    const slot = this.allocate();
    this.ids.insertParsed(slot);
    const { words } = this.links;
    words[slot * SLOT_WORDS + CUSTOMER] = this.customerRef(customer);
    let small = 0;
    if (kind === TOKEN_AMOUNT) {
      const whole = sub.amountHigherThan as bigint;
      if (whole < SMALL_TOKEN_AMOUNT) small = Number(whole) + 1;
      else this.tokenAmounts.set(slot, whole);
    }
    words[slot * SLOT_WORDS + KIND] = kind | (confirmations << 8) | (small << 16);
    if (confirmations === POLICY_MARK) {
      const policy = sub.confirmationPolicy as ConfirmationPolicy;
      this.policies.set(slot, policy);
      if ('finality' in policy) this.finalityCount++;
    }
    this.targets[slot] = target;
    this.link(kind, target, slot);
    if (isXpubKind(kind)) {
      this.xpubs.set(sub.id, sub.walletKey as SubscribedWalletKey);
      this.xpubEventTypes.set(sub.id, sub.eventType);
      const owner = this.xpubAddresses.addOwner(sub.id);
      this.xpubOwnerSlots[owner] = slot;
      this.xpubOwnerKeys[owner] = sub.walletKey as SubscribedWalletKey;
      this.addDerived(sub.id, sub.derived ?? []);
    }
    this.count++;
    return true;
  }

  /** Whether any XPUB_COINS_TRANSACTION_UNCONFIRMED subscription is indexed. */
  get hasXpubUnconfirmed(): boolean {
    return this.xpubUnconfirmedCount > 0;
  }

  /** Whether any wallet-key subscription (confirmed or unconfirmed) is indexed. */
  get hasXpub(): boolean {
    return this.xpubs.size > 0;
  }

  /** The wallet-key subscriptions deriving `address` (normalised), or undefined. */
  xpubEntriesOf(address: string): readonly XpubAddressEntry[] | undefined {
    return this.xpubAddresses.entriesOf(address);
  }

  /** The wallet-key subscriptions deriving an address, from the entry findXpubAddresses gave for it (>= 0; valid until the index next changes). */
  xpubEntriesAt(entry: number): readonly XpubAddressEntry[] {
    return this.xpubAddresses.entriesFrom(entry);
  }

  /**
   * Derived-address entry `at` (from findXpubAddresses, then xpubEntryNext) read field by field, without an
   * object per entry: the entry of the next subscription deriving the same address (-1 after the last), its
   * owner (xpubOwnerRecord...), chain, index and derivation path. Valid until the index next changes.
   */
  xpubEntryNext(at: number): number {
    return this.xpubAddresses.nextOf(at);
  }

  xpubEntryOwner(at: number): number {
    return this.xpubAddresses.ownerAt(at);
  }

  xpubEntryIsChange(at: number): boolean {
    return this.xpubAddresses.isChangeAt(at);
  }

  xpubEntryIndex(at: number): number {
    return this.xpubAddresses.indexAt(at);
  }

  xpubEntryPath(at: number): string {
    return this.xpubAddresses.pathAt(at);
  }

  /** Whether a wallet-key subscription derives `address` (normalised): the lookup of every address of a block. */
  isXpubAddress(address: string): boolean {
    return this.xpubAddresses.has(address);
  }

  /** isXpubAddress of each of addresses[0..count), into out[0..count): >= 0 where a wallet-key subscription derives it (lookups a step at a time over all, target-table.ts firstOfEach). */
  findXpubAddresses(addresses: readonly string[], count: number, out: Int32Array): void {
    this.xpubAddresses.findEach(addresses, count, out);
  }

  /** Derived addresses indexed (an address of two subscriptions counts twice). */
  get xpubAddressCount(): number {
    return this.xpubAddresses.size;
  }

  /** The event type of indexed wallet-key subscription `id` (a Map read: no record built). */
  xpubEventTypeOf(id: string): EventType | undefined {
    return this.xpubEventTypes.get(id);
  }

  /** The record of the wallet-key subscription of derived-address entries with `owner` (XpubAddressEntry.owner; valid until the index next changes). */
  xpubOwnerRecord(owner: number): SubscriptionRecord {
    return this.record(this.xpubOwnerSlots[owner] as number);
  }

  /** The key of the wallet-key subscription of entries with `owner`. */
  xpubOwnerKey(owner: number): SubscribedWalletKey {
    return this.xpubOwnerKeys[owner] as SubscribedWalletKey;
  }

  /** The event type of the wallet-key subscription of entries with `owner`. */
  xpubOwnerEventType(owner: number): 'XPUB_COINS_TRANSACTION_CONFIRMED' | 'XPUB_COINS_TRANSACTION_UNCONFIRMED' {
    return this.kindOf(this.xpubOwnerSlots[owner] as number) === XPUB_UNCONFIRMED ? 'XPUB_COINS_TRANSACTION_UNCONFIRMED' : 'XPUB_COINS_TRANSACTION_CONFIRMED';
  }

  /** The key of indexed wallet-key subscription `id`. */
  walletKeyOf(id: string): SubscribedWalletKey | undefined {
    return this.xpubs.get(id);
  }

  /**
   * Watches more derived addresses of indexed wallet-key subscription `id` (the follower extends the gap
   * window, ingest/xpub-gaps.ts); an address already watched is skipped. False when `id` is not indexed.
   */
  addDerived(id: string, rows: readonly Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>[]): boolean {
    if (!this.xpubs.has(id)) return false;
    return this.xpubAddresses.add(id, rows);
  }

  /** The record of indexed subscription `id` (any kind), or undefined. */
  recordOf(id: string): SubscriptionRecord | undefined {
    return this.get(id);
  }

  /** Forgets subscription `id`; false when it was not indexed. */
  remove(id: string): boolean {
    const slot = this.ids.find(id);
    if (slot < 0) return false;
    this.release(slot);
    return true;
  }

  /** Settles pending threshold additions now (matching would do it on its first internal transfer). */
  settle(): void {
    this.thresholds.settle();
    this.coinThresholds.settle();
  }

  // --- For matching (match.ts). Slots are valid until the index next changes. ---

  /** The first TRANSACTION_MINED subscription of `transactionId`, or -1; nextSlot() gives the others. */
  firstTransactionSlot(transactionId: string): number {
    return this.byTransaction.first(transactionId);
  }

  /**
   * The first subscription of `address` of any address kind (token, internal-transfer and coin
   * subscriptions: one table serves them all), or -1; nextSlot() gives the others; eventTypeOf() tells
   * their kinds apart.
   */
  firstAddressSlot(address: string): number {
    return this.byAddress.first(address);
  }

  /** firstTransactionSlot() of each of transactionIds[0..count), into out[0..count) (faster than one by one, see TargetTable.firstOfEach). */
  firstTransactionSlots(transactionIds: readonly string[], count: number, out: Int32Array): void {
    this.byTransaction.firstOfEach(transactionIds, count, out);
  }

  /** firstAddressSlot() of each of addresses[0..count), into out[0..count). */
  firstAddressSlots(addresses: readonly string[], count: number, out: Int32Array): void {
    this.byAddress.firstOfEach(addresses, count, out);
  }

  /** firstContractSlot() of each of contracts[0..count), into out[0..count). */
  firstContractSlots(contracts: readonly string[], count: number, out: Int32Array): void {
    this.byContract.firstOfEach(contracts, count, out);
  }

  /** The first CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER subscription of token `contract`, or -1; nextSlot() gives the others. */
  firstContractSlot(contract: string): number {
    return this.byContract.size === 0 ? -1 : this.byContract.first(contract);
  }

  /** The event type of the subscription in `slot` (a live slot). */
  eventTypeOf(slot: number): EventType {
    return EVENT_OF_KIND[this.kindOf(slot)] as EventType;
  }

  /** The whole-token amount of the TOKEN_AMOUNT subscription in `slot`. */
  tokenAmountOf(slot: number): bigint {
    const small = this.smallTokenAmountOf(slot);
    return small >= 0 ? BigInt(small) : (this.tokenAmounts.get(slot) as bigint);
  }

  /** The whole-token amount of the TOKEN_AMOUNT subscription in `slot` as a number when it is below SMALL_TOKEN_AMOUNT (read from the slot), else -1 (tokenAmountOf tells). */
  smallTokenAmountOf(slot: number): number {
    return ((this.links.words[slot * SLOT_WORDS + KIND] as number) >>> 16) - 1;
  }

  /** Whether an address-coins subscription (once or at each confirmation) watches `address`. */
  hasCoinAddress(address: string): boolean {
    if (this.firstCoinAddressSlot(address) >= 0) return true;
    // A wallet key's derived address: its outputs are recorded so that their spending (outgoing) is resolved.
    if (this.xpubAddresses.has(address)) return true;
    // The outputs of an address watched unconfirmed are recorded too: the mempool resolves their spending (outgoing) by them.
    for (let slot = this.byAddress.first(address); slot >= 0; slot = this.nextSlot(slot)) if (this.kindOf(slot) === COIN_UNCONFIRMED) return true;
    return false;
  }

  /** Whether any subscription of an address kind (token, internal-transfer or coin address events) is indexed. */
  get hasAddressSubscriptions(): boolean {
    return this.byAddress.size > 0;
  }

  /** Whether any subscription waiting for the chain's finality is indexed (docs/concepts/confirmations-and-reorganisations.md#finality). */
  get hasFinality(): boolean {
    return this.finalityCount > 0;
  }

  /** Whether any mempool (unconfirmed) subscription is indexed: the mempool loop reads nothing without one. */
  get hasUnconfirmed(): boolean {
    return this.unconfirmedCount > 0;
  }

  /**
   * The first address-coins subscription (once or at each confirmation) of `address`, or -1; nextSlot()
   * gives the following subscriptions of the address, of every address kind.
   */
  firstCoinAddressSlot(address: string): number {
    return this.coinSlotFrom(this.byAddress.first(address));
  }

  /** The first address-coins subscription among `slot` (an address's first slot, or -1) and the slots after it, or -1. */
  coinSlotFrom(slot: number): number {
    const { words } = this.links;
    for (; slot >= 0; slot = words[slot * SLOT_WORDS + NEXT] as number) {
      const kind = (words[slot * SLOT_WORDS + KIND] as number) & 255;
      if (kind === COIN_ADDRESS || kind === COIN_EACH) return slot;
    }
    return -1;
  }

  /** Whether any CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER subscription is indexed. */
  get hasCoinThresholds(): boolean {
    return this.coinThresholds.size > 0;
  }

  /** Coin threshold entries [0, n) have a threshold <= `amount` (base units); read them with coinThresholdSlotAt. */
  coinThresholdsAtMost(amount: bigint): number {
    return this.coinThresholds.countAtMost(amount);
  }

  /** The slot of coin threshold entry `i`, or -1 for a removed entry. */
  coinThresholdSlotAt(i: number): number {
    return this.coinThresholds.slotAt(i);
  }

  /** The first BLOCK_HEIGHT_REACHED subscription of `height`, or -1; nextSlot() gives the others. */
  firstHeightSlot(height: number): number {
    return this.byHeight.size === 0 ? -1 : this.byHeight.first(String(height));
  }

  /** The first BLOCK_MINED subscription, or -1; nextSlot() gives the others. */
  firstBlockSlot(): number {
    return this.everyBlock.first();
  }

  /** The first BLOCK_REVERTED subscription, or -1; nextSlot() gives the others. */
  firstRevertedSlot(): number {
    return this.everyReverted.first();
  }

  /** The next subscription with the same target as `slot` (or of the same every-block kind), in the order they were indexed, or -1. */
  nextSlot(slot: number): number {
    return this.links.words[slot * SLOT_WORDS + NEXT] as number;
  }

  /** Threshold entries [0, n) have a threshold <= `amount` (base units); read them with thresholdSlotAt. */
  thresholdsAtMost(amount: bigint): number {
    return this.thresholds.countAtMost(amount);
  }

  /** The slot of threshold entry `i`, or -1 for a removed entry. */
  thresholdSlotAt(i: number): number {
    return this.thresholds.slotAt(i);
  }

  /** The kind of the subscription in `slot` (FREE for none). */
  private kindOf(slot: number): number {
    return (this.links.words[slot * SLOT_WORDS + KIND] as number) & 255;
  }

  /**
   * What the index knows of the subscription in `slot`. `key`: the transaction id, address or contract
   * the caller looked the slot up by, when it did (equal to the slot's target, so the target is not
   * read: it lives outside the slot, a cache miss more per match).
   */
  record(slot: number, key?: string): SubscriptionRecord {
    const { words } = this.links;
    const kindWord = words[slot * SLOT_WORDS + KIND] as number;
    const kind = kindWord & 255;
    const eventType = EVENT_OF_KIND[kind];
    if (eventType === undefined) throw new Error(`slot ${slot} holds no subscription`);
    const keyed = kind === TRANSACTION || isAddressKind(kind) || kind === TOKEN_AMOUNT;
    // Told by the kind, not by the target's type: reading the target (a string or bigint elsewhere in the heap) is a cache miss per match.
    const target = keyed && key !== undefined ? key : this.targets[slot];
    const threshold = kind === THRESHOLD || kind === COIN_THRESHOLD ? (target as bigint) : null;
    const confirmations = isAddressKind(kind) || kind === XPUB ? (kindWord >>> 8) & 255 : 0;
    return {
      id: this.ids.idOf(slot),
      customerId: this.customerTexts[words[slot * SLOT_WORDS + CUSTOMER] as number] as string,
      eventType,
      target: keyed ? (target as string) : null,
      receiveCallbackOn: confirmations === 0 || confirmations === POLICY_MARK ? null : confirmations,
      confirmationPolicy: confirmations === POLICY_MARK ? (this.policies.get(slot) ?? null) : null,
      amountHigherThan: threshold === null ? (kind === TOKEN_AMOUNT ? this.tokenAmountOf(slot) : null) : threshold / this.scale,
      threshold,
      blockHeight: kind === HEIGHT ? Number(target) : null,
    };
  }

  /** Bytes held outside the JavaScript heap (typed arrays); the rest is heap (strings, bigints, arrays). */
  get externalBytes(): number {
    return (
      this.ids.byteLength +
      this.byTransaction.byteLength +
      this.byAddress.byteLength +
      this.byHeight.byteLength +
      this.byContract.byteLength +
      this.thresholds.byteLength +
      this.coinThresholds.byteLength +
      this.xpubAddresses.byteLength
    );
  }

  private release(slot: number): void {
    if (isXpubKind(this.kindOf(slot))) this.forgetXpub(this.ids.idOf(slot));
    this.unlink(this.kindOf(slot), this.targets[slot], slot);
    this.ids.delete(slot);
    this.links.words[slot * SLOT_WORDS + KIND] = FREE;
    this.targets[slot] = undefined;
    this.tokenAmounts.delete(slot);
    const policy = this.policies.get(slot);
    if (policy && 'finality' in policy) this.finalityCount--;
    this.policies.delete(slot);
    this.freeSlots.push(slot);
    this.count--;
  }

  /** Puts `slot` in the table of its kind: each kind is a row of this switch and of unlink's. */
  private link(kind: number, target: string | bigint | undefined, slot: number): void {
    switch (kind) {
      case TRANSACTION:
        this.byTransaction.add(target as string, slot);
        return;
      case ADDRESS:
      case TOKENS_EACH:
      case INTERNAL_ADDRESS:
      case INTERNAL_EACH:
        this.byAddress.add(target as string, slot);
        return;
      case TOKEN_AMOUNT:
        this.byContract.add(target as string, slot);
        return;
      case THRESHOLD:
        this.thresholds.add(target as bigint, slot);
        return;
      case HEIGHT:
        this.byHeight.add(target as string, slot);
        return;
      case BLOCK:
        this.everyBlock.add(slot);
        return;
      case REVERTED:
        this.everyReverted.add(slot);
        return;
      case COIN_UNCONFIRMED:
      case TOKENS_UNCONFIRMED:
        this.unconfirmedCount++;
        this.byAddress.add(target as string, slot);
        return;
      case XPUB_UNCONFIRMED:
        this.unconfirmedCount++;
        this.xpubUnconfirmedCount++;
        return;
      case COIN_ADDRESS:
      case COIN_EACH:
        this.byAddress.add(target as string, slot);
        return;
      case COIN_THRESHOLD:
        this.coinThresholds.add(target as bigint, slot);
        return;
    }
  }

  private unlink(kind: number, target: string | bigint | undefined, slot: number): void {
    switch (kind) {
      case TRANSACTION:
        this.byTransaction.remove(target as string, slot);
        return;
      case ADDRESS:
      case TOKENS_EACH:
      case INTERNAL_ADDRESS:
      case INTERNAL_EACH:
        this.byAddress.remove(target as string, slot);
        return;
      case TOKEN_AMOUNT:
        this.byContract.remove(target as string, slot);
        return;
      case THRESHOLD:
        this.thresholds.remove(slot);
        return;
      case HEIGHT:
        this.byHeight.remove(target as string, slot);
        return;
      case BLOCK:
        this.everyBlock.remove(slot);
        return;
      case REVERTED:
        this.everyReverted.remove(slot);
        return;
      case COIN_UNCONFIRMED:
      case TOKENS_UNCONFIRMED:
        this.unconfirmedCount--;
        this.byAddress.remove(target as string, slot);
        return;
      case XPUB_UNCONFIRMED:
        this.unconfirmedCount--;
        this.xpubUnconfirmedCount--;
        return;
      case COIN_ADDRESS:
      case COIN_EACH:
        this.byAddress.remove(target as string, slot);
        return;
      case COIN_THRESHOLD:
        this.coinThresholds.remove(slot);
        return;
    }
  }

  private forgetXpub(id: string): void {
    const owner = this.xpubAddresses.ownerOf(id);
    if (owner !== undefined) this.xpubOwnerKeys[owner] = undefined;
    this.xpubAddresses.remove(id);
    this.xpubs.delete(id);
    this.xpubEventTypes.delete(id);
  }

  /** The position of `customer` in customerTexts, added on first sight. */
  private customerRef(customer: number): number {
    let ref = this.customerRefOf.get(customer);
    if (ref === undefined) {
      ref = this.customerTexts.length;
      this.customerTexts.push(String(customer));
      this.customerRefOf.set(customer, ref);
    }
    return ref;
  }

  private allocate(): number {
    const reused = this.freeSlots.pop();
    if (reused !== undefined) return reused;
    if (this.used === this.capacity) this.grow(this.capacity * 2);
    return this.used++;
  }

  private grow(capacity: number): void {
    this.ids.growSlots(capacity);
    this.links.words = new Int32Array(this.ids.slotBuffer);
    unlinkAll(this.links.words, this.capacity, capacity);
    this.capacity = capacity;
  }
}

/** A decimal customer id (no sign, no leading zero) as a number; -1 when it is not one or not safe. */
function parseCustomerId(text: string): number {
  const length = text.length;
  if (length === 0 || length > 16 || (length > 1 && text.charCodeAt(0) === 48)) return -1;
  let n = 0;
  for (let i = 0; i < length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    n = n * 10 + digit;
  }
  return Number.isSafeInteger(n) ? n : -1;
}

/** Marks slots [from, to) as on no chain (NEXT = UNLINKED). */
function unlinkAll(words: Int32Array, from: number, to: number): void {
  for (let slot = from; slot < to; slot++) words[slot * SLOT_WORDS + NEXT] = UNLINKED;
}

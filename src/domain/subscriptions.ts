/**
 * A subscription as every layer names it: the customer's request to be called back on an event of one
 * chain. The store maps its rows to these types (src/store/subscriptions.ts); the API shows
 * ShownSubscription; matching indexes IndexableSubscription. No I/O.
 */
import type { BackfillProgress } from './block-jobs.ts';
import type { Blockchain, EventType, Network } from './chains.ts';
import type { ConfirmationPolicy } from './confirmations.ts';

export interface DeactivationReason {
  reason: string;
  timestamp: number;
}

/**
 * XPUB_COINS_TRANSACTION_CONFIRMED (docs/concepts/wallet-keys.md): the key or descriptor as subscribed, and how its
 * addresses are derived and watched. Public only: a private key is refused before anything is stored.
 */
export interface SubscribedWalletKey {
  /** Which request field gave it: the callbacks and answers echo the same field. */
  field: 'extendedPublicKey' | 'descriptor';
  /** As given (a descriptor with its checksum when it had one). */
  text: string;
  /** The request's derivation (plain xpub/tpub), or null. */
  derivation: 'legacy' | 'p2sh-segwit' | 'segwit' | 'taproot' | null;
  gapLimit: number;
  /** The chain's node is a regtest one (chainId "regtest"): segwit addresses take the regtest bech32 prefix. */
  regtest: boolean;
}

/** One derived address of a wallet-key subscription, as stored (table xpub_addresses). */
export interface DerivedAddressRow {
  address: string;
  derivationPath: string;
  change: boolean;
  index: number;
  used: boolean;
  firstSeenHeight: number | null;
}

export interface Subscription {
  id: string;
  customerId: string;
  eventType: EventType;
  blockchain: Blockchain;
  network: Network;
  transactionId: string | null;
  address: string | null;
  /** Normalised transaction id or address: what matching and the duplicate check compare. */
  target: string | null;
  receiveCallbackOn: number | null;
  /**
   * Address events that take receiveCallbackOn: confirmation tiers by amount or the chain's finality,
   * given instead of receiveCallbackOn (then null); null or absent otherwise (docs/concepts/confirmations-and-reorganisations.md).
   */
  confirmationPolicy?: ConfirmationPolicy | null;
  amountHigherThan: bigint | null;
  /** BLOCK_HEIGHT_REACHED: the height waited for (the request's blockHeightReached); null otherwise. */
  blockHeight: number | null;
  /** CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: the token contract as given (target holds it normalised); null otherwise. */
  contractAddress?: string | null;
  /**
   * null: a pull-only subscription (created with pullOnly: true): its events are in the event stream only,
   * no callback is sent (docs/concepts/event-stream.md#pull-only-subscriptions). callbackHost is null with it.
   */
  callbackUrl: string | null;
  callbackHost: string | null;
  callbackSecretKey: string | null;
  /** The secret the last rotation replaced: it signs beside the current one until previousSecretUntil. */
  previousCallbackSecretKey?: string | null;
  previousSecretUntil?: Date | null;
  allowDuplicates: boolean;
  duplicateKey: Buffer;
  isActive: boolean;
  deactivationReasons: DeactivationReason[];
  apiVersion: string;
  createdAt: Date;
  /** Its backfill (a create with fromBlockHeight) until done; read by the services that show it. */
  backfill?: BackfillProgress;
  /** XPUB_COINS_TRANSACTION_CONFIRMED only: the key or descriptor; absent or null otherwise. */
  walletKey?: SubscribedWalletKey | null;
}

export type NewSubscription = Omit<Subscription, 'customerId' | 'isActive' | 'deactivationReasons' | 'createdAt' | 'backfill'>;

/** What the API shows of a subscription (list, get, delete...): the columns a list page reads. */
export type ShownSubscription = Pick<
  Subscription,
  | 'id'
  | 'eventType'
  | 'blockchain'
  | 'network'
  | 'transactionId'
  | 'address'
  | 'receiveCallbackOn'
  | 'confirmationPolicy'
  | 'amountHigherThan'
  | 'blockHeight'
  | 'contractAddress'
  | 'callbackUrl'
  | 'callbackSecretKey'
  | 'isActive'
  | 'deactivationReasons'
  | 'createdAt'
  | 'backfill'
  | 'walletKey'
>;

/** Delivery health of a subscription: its callbacks by status, and when one was last delivered. */
export interface DeliveryHealth {
  delivered: number;
  failed: number;
  pending: number;
  /** Pending callbacks already tried at least once in their current series (waiting for a retry). */
  retrying: number;
  lastDeliveredAt: Date | null;
  /** When a callback last failed for good (its retries ran out, or its URL is gone). */
  lastFailedAt: Date | null;
}

/** The reason a customer's pause leaves in deactivationReasons (POST .../pause; docs/reference/api.md). */
export const PAUSED_REASON = 'paused';

/**
 * One word for how a subscription's deliveries are going, for lists (docs/getting-started/console.md):
 * paused (the customer paused it), failing (herald deactivated it, or its last finished callback failed),
 * retrying (callbacks waiting for a retry), delivering (callbacks queued, or one delivered in the last
 * 24 h), idle (nothing recent).
 */
export type DeliveryStatus = 'paused' | 'failing' | 'retrying' | 'delivering' | 'idle';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['delivering', 'retrying', 'failing', 'idle', 'paused'];

export function deliveryStatus(s: { isActive: boolean; deactivationReasons: readonly DeactivationReason[] }, h: DeliveryHealth, now: Date): DeliveryStatus {
  if (!s.isActive) return s.deactivationReasons.at(-1)?.reason === PAUSED_REASON ? 'paused' : 'failing';
  if (h.lastFailedAt && (!h.lastDeliveredAt || h.lastFailedAt > h.lastDeliveredAt)) return 'failing';
  if (h.retrying > 0) return 'retrying';
  if (h.pending > 0 || (h.lastDeliveredAt && now.getTime() - h.lastDeliveredAt.getTime() < 86_400_000)) return 'delivering';
  return 'idle';
}

/** The columns of a subscription row the matching index reads (loaded by src/store/chain-state.ts). */
export type IndexableSubscription = Pick<
  Subscription,
  'id' | 'customerId' | 'eventType' | 'blockchain' | 'network' | 'target' | 'receiveCallbackOn' | 'amountHigherThan' | 'isActive'
> &
  /** Address events that take receiveCallbackOn (may be left out: none). */
  Partial<Pick<Subscription, 'confirmationPolicy'>> &
  /** BLOCK_HEIGHT_REACHED only (may be left out for other events). */
  Partial<Pick<Subscription, 'blockHeight' | 'walletKey'>> & {
    /** XPUB_COINS_TRANSACTION_CONFIRMED: its derived addresses (the whole window); absent otherwise. */
    derived?: readonly Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>[];
  };

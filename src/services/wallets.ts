/**
 * Watch-only wallets (docs/reference/api.md#wallets) and the all-assets listing (endpoint 4). Balances come from
 * the ledger rows that chain following keeps; an address added now shows zero totals until then.
 */

import { randomUUID } from 'node:crypto';
import { validateAddress } from '../domain/addresses.ts';
import type { Blockchain, Network } from '../domain/chains.ts';
import { ApiError, invalidData, notFound, truncate } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import { parseSubscribedKey } from '../domain/wallet-windows.ts';
import { getCursor, lockChain } from '../store/chain-state.ts';
import {
  alreadyWatched,
  deleteWalletXpub,
  getWalletXpub,
  insertDerivedWalletAddresses,
  insertWalletXpub,
  type KeyAddress,
  listKeyAddresses,
  listWalletXpubs,
  markPastUse,
  type WalletXpub,
} from '../store/wallet-xpubs.ts';
import * as store from '../store/wallets.ts';
import type { Caller, Charged, Common } from './context.ts';
import { chargeInTransaction } from './credits.ts';
import { deriveFirstWindow } from './derive-workers.ts';
import { assertMainnetAllowed } from './subscriptions.ts';
import { findPastUse } from './xpub-past-use.ts';
import { walletKeyOf, type XpubItemInput } from './xpub-subscriptions.ts';

/**
 * A path segment where a wallet id belongs that cannot be one (not a UUID) is most likely a typo of a
 * fixed path (`/wallets/all-asset`): say that (400 uri_not_found), not "no wallet with id ...".
 */
function assertWalletIdShape(walletId: string): void {
  if (isUuid(walletId)) return;
  throw new ApiError(
    'uri_not_found',
    `There is no endpoint at this path: '${truncate(walletId)}' is not a wallet id (wallet ids are UUIDs). Check the path for a typo; ` +
      'the assets of all wallets are at /wallet-as-a-service/wallets/all-assets, and /openapi.json lists every endpoint.',
    [{ attribute: 'walletId', message: 'The walletId in the path must be a wallet id (a UUID).' }],
  );
}

async function ownWallet(common: Common, caller: Caller, walletId: string): Promise<store.Wallet> {
  assertWalletIdShape(walletId);
  const wallet = await store.getWallet(common.db, caller.owner.customerId, walletId);
  if (!wallet) throw notFound('wallet', walletId);
  return wallet;
}

/** Endpoint 4: a page of wallet asset records as JSON text, charged 500 per wallet returned (at least 500). */
export async function listAssets(
  common: Common,
  caller: Caller,
  page: { limit: number; offset: number },
): Promise<Charged<{ total: number; itemsJson: string }>> {
  const result = await store.walletAssetsJson(common.db, caller.owner.customerId, page);
  const cost = BigInt(common.config.costs.allAssetsPerItem) * BigInt(Math.max(1, result.returned));
  return { value: result, ...(await common.credits.charge(caller.owner.customerId, cost, caller.endpoint)) };
}

export async function createWallet(common: Common, caller: Caller, walletName: string): Promise<Charged<store.Wallet>> {
  if (walletName.trim() === '') throw invalidData([{ attribute: 'walletName', message: 'The walletName must not be blank.' }]);
  const customerId = caller.owner.customerId;
  return await common.db.transaction('wallets:create', async (tx) => {
    const wallet = await store.insertWallet(tx, customerId, randomUUID(), walletName);
    return { value: wallet, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint)) };
  });
}

export async function getWallet(common: Common, caller: Caller, walletId: string) {
  const wallet = await ownWallet(common, caller, walletId);
  const [assets, addresses, xpubs] = await Promise.all([
    store.walletAssetsRecord(common.db, caller.owner.customerId, walletId),
    store.listWalletAddresses(common.db, walletId),
    listWalletXpubs(common.db, walletId),
  ]);
  if (!assets) throw notFound('wallet', walletId); // deleted between the reads
  const record = JSON.parse(assets) as Record<string, unknown>;
  const charged = await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint);
  return { value: { record, createdAt: wallet.createdAt, addresses, xpubs }, ...charged };
}

function normalized(blockchain: Blockchain, network: Network, address: string): string {
  const v = validateAddress(blockchain, network, address);
  if (!v.ok) throw invalidData([{ attribute: 'address', message: v.message }]);
  return v.normalized;
}

export async function addAddress(common: Common, caller: Caller, walletId: string, blockchain: Blockchain, network: Network, address: string) {
  assertWalletIdShape(walletId); // a wrong path is reported before what the body holds
  const normalizedAddress = normalized(blockchain, network, address);
  assertMainnetAllowed(caller, network);
  await ownWallet(common, caller, walletId);
  const customerId = caller.owner.customerId;
  return await common.db.transaction('wallets:add-address', async (tx) => {
    // watchedFromBlock is the chain's last processed block, read under the chain's lock: the follower
    // applies the next block after this commits, so it sees the address (no block is missed, none is
    // counted twice). A chain not followed yet: empty until the follower applies its first block.
    const chain = { blockchain, network };
    await lockChain(tx, chain);
    const cursor = await getCursor(tx, chain);
    const watchedFromBlock = cursor ? BigInt(cursor.height) : null;
    const added = await store.insertWalletAddress(tx, walletId, { blockchain, network, address, normalizedAddress, watchedFromBlock });
    if (!added) throw new ApiError('already_exists', `The wallet already watches ${blockchain} ${network} address '${truncate(address)}'.`);
    return { value: added, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint)) };
  });
}

export async function removeAddress(common: Common, caller: Caller, walletId: string, blockchain: Blockchain, network: Network, address: string) {
  await ownWallet(common, caller, walletId);
  const v = validateAddress(blockchain, network, address);
  const customerId = caller.owner.customerId;
  return await common.db.transaction('wallets:remove-address', async (tx) => {
    const removed = v.ok ? await store.deleteWalletAddress(tx, walletId, blockchain, network, v.normalized) : undefined;
    if (!removed) throw notFound(`${blockchain} ${network} address of this wallet`, address);
    return { value: removed, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint)) };
  });
}

/** The key fields of a wallet's extended key (docs/concepts/wallets.md#extended-keys-in-a-wallet): as for the xpub subscriptions. */
export type WalletKeyInput = Pick<XpubItemInput, 'extendedPublicKey' | 'descriptor' | 'derivation' | 'gapLimit'>;

/**
 * Adds an extended public key or output descriptor to a wallet (docs/concepts/wallets.md#extended-keys-in-a-wallet):
 * checked as the xpub subscriptions check it (a private key refused, never stored nor repeated); its first window
 * (gapLimit addresses on each chain the key has) derived, grown past the addresses the node says already hold
 * coins (past use, as at an xpub subscription's create), and watched by the wallet from the chain's last processed
 * block, under the chain's lock as an address is. An address of the window the wallet already watches is refused
 * (already_exists, naming it): an address is counted once.
 */
export async function addXpub(
  common: Common,
  caller: Caller,
  walletId: string,
  blockchain: Blockchain,
  network: Network,
  item: WalletKeyInput,
): Promise<Charged<WalletXpub>> {
  assertWalletIdShape(walletId); // a wrong path is reported before what the body holds
  const key = walletKeyOf(common, blockchain, network, item);
  assertMainnetAllowed(caller, network);
  await ownWallet(common, caller, walletId);
  const parsed = parseSubscribedKey(blockchain, network, key);
  if (!parsed.ok) throw new Error(parsed.message); // checked by walletKeyOf
  const chain = { blockchain, network };
  // Derived and asked of the node before the transaction: no lock held meanwhile.
  const first = await deriveFirstWindow(blockchain, network, key);
  const past = await findPastUse(common, chain, parsed.key, key, first);
  const customerId = caller.owner.customerId;
  const id = randomUUID();
  return await common.db.transaction('wallets:add-xpub', async (tx) => {
    // watchedFromBlock as for an address (addAddress): the chain's last processed block, under its lock.
    await lockChain(tx, chain);
    const cursor = await getCursor(tx, chain);
    const [clash] = await alreadyWatched(
      tx,
      walletId,
      chain,
      past.rows.map((r) => r.address),
    );
    if (clash) {
      const path = past.rows.find((r) => r.address === clash.address)?.derivationPath;
      const by = clash.derivationPath === null ? 'as an address' : `from another key (${clash.derivationPath})`;
      throw new ApiError(
        'already_exists',
        `The wallet already watches ${blockchain} ${network} address '${clash.address}' ${by}, which this key derives at ${path}: remove it first, or keep it as it is.`,
      );
    }
    if (!(await insertWalletXpub(tx, { id, walletId, blockchain, network, key }))) {
      throw new ApiError(
        'already_exists',
        `The wallet already holds this ${key.field === 'descriptor' ? 'descriptor' : 'extended public key'} on ${blockchain} ${network}.`,
      );
    }
    await insertDerivedWalletAddresses(tx, { walletId, xpubId: id, blockchain, network, watchedFromBlock: cursor ? BigInt(cursor.height) : null }, past.rows);
    await markPastUse(tx, id, past.used);
    const added = (await getWalletXpub(tx, walletId, chain, id)) as WalletXpub;
    return { value: added, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint)) };
  });
}

/** Removes a key from a wallet, and with it every address derived from it (their balances leave the wallet's). */
export async function removeXpub(common: Common, caller: Caller, walletId: string, blockchain: Blockchain, network: Network, xpubId: string) {
  await ownWallet(common, caller, walletId);
  const chain = { blockchain, network };
  const customerId = caller.owner.customerId;
  return await common.db.transaction('wallets:remove-xpub', async (tx) => {
    const found = isUuid(xpubId) ? await getWalletXpub(tx, walletId, chain, xpubId) : undefined;
    if (!found || !(await deleteWalletXpub(tx, walletId, chain, xpubId))) throw notFound(`${blockchain} ${network} extended key of this wallet`, xpubId);
    return { value: found, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint)) };
  });
}

/** A page of the derived addresses of a wallet's key that the wallet watches (its window), with their balances. */
export async function listXpubAddresses(
  common: Common,
  caller: Caller,
  walletId: string,
  blockchain: Blockchain,
  network: Network,
  xpubId: string,
  filter: { change?: boolean; used?: boolean },
  page: { limit: number; offset: number },
): Promise<Charged<{ total: number; items: KeyAddress[] }>> {
  await ownWallet(common, caller, walletId);
  const found = isUuid(xpubId) ? await getWalletXpub(common.db, walletId, { blockchain, network }, xpubId) : undefined;
  if (!found) throw notFound(`${blockchain} ${network} extended key of this wallet`, xpubId);
  const result = await listKeyAddresses(common.db, xpubId, filter, page);
  return { value: result, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint)) };
}

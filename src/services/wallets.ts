/**
 * Watch-only wallets (docs/reference/api.md#wallets) and the all-assets listing (endpoint 4). Balances come from
 * the ledger rows that chain following keeps; an address added now shows zero totals until then.
 */

import { randomUUID } from 'node:crypto';
import { validateAddress } from '../domain/addresses.ts';
import type { Blockchain, Network } from '../domain/chains.ts';
import { ApiError, invalidData, notFound, truncate } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import { getCursor, lockChain } from '../store/chain-state.ts';
import * as store from '../store/wallets.ts';
import type { Caller, Charged, Common } from './context.ts';
import { chargeInTransaction } from './credits.ts';
import { assertMainnetAllowed } from './subscriptions.ts';

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
  const [assets, addresses] = await Promise.all([
    store.walletAssetsRecord(common.db, caller.owner.customerId, walletId),
    store.listWalletAddresses(common.db, walletId),
  ]);
  if (!assets) throw notFound('wallet', walletId); // deleted between the two reads
  const record = JSON.parse(assets) as Record<string, unknown>;
  const charged = await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.walletsAndDomains), caller.endpoint);
  return { value: { record, createdAt: wallet.createdAt, addresses }, ...charged };
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

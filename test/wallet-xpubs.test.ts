/**
 * Extended keys in wallets through the API (docs/concepts/wallets.md#extended-keys-in-a-wallet) on a real database,
 * no node: the add (its answer, its first window of derived addresses watched by the wallet on both chains, its
 * charge), the key listed with the wallet and apart from its addresses, the refusals as the xpub subscriptions
 * give them (a private key neither echoed nor stored, a key of the other network, a hardened step, a bad
 * checksum, both or neither field, xrp), an address counted once (a derived address is neither added again nor
 * removed alone), an account chain's key (receive chain only), and the delete.
 */
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { descriptorChecksum } from '../src/domain/wallet-keys.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { TEST_MASTER, testPublicKey } from './support/hd-keys.ts';

const TPUB = 0x043587cf;
const XPUB = 0x0488b21e;
const tpub = testPublicKey("m/84'/1'/0'", TPUB);

let t: TestApp;
let c: TestCustomer;
/** Everything herald logs, requests included (the private key must appear nowhere). */
const logged: string[] = [];

beforeAll(async () => {
  t = await startTestApp({ logRequests: true }, { logger: pino({ level: 'debug' }, { write: (line: string) => void logged.push(line) }) });
  c = await t.customer();
}, 60_000);

afterAll(async () => {
  await t?.close();
});

async function newWallet(name = 'keys'): Promise<string> {
  const res = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: name } } } });
  expect(res.status, res.text).toBe(201);
  return res.body.data.item.walletId;
}

const add = (wallet: string, item: Record<string, unknown>, chain = 'litecoin/testnet') =>
  t.request('POST', `/wallet-as-a-service/wallets/${wallet}/${chain}/xpubs`, { key: c.key, body: { data: { item } } });

const credits = async () =>
  BigInt((await t.app.database.db.query<{ credits: string }>('test:credits', 'SELECT credits::text FROM customers WHERE id = $1', [c.id]))[0]?.credits ?? -1);

const derivedOf = (wallet: string) =>
  t.app.database.db.query<{ address: string; derivation_path: string; xpub_change: boolean; xpub_index: number }>(
    'test:derived',
    'SELECT address, derivation_path, xpub_change, xpub_index FROM wallet_addresses WHERE wallet_id = $1 AND wallet_xpub_id IS NOT NULL ORDER BY xpub_change, xpub_index',
    [wallet],
  );

it('adds a tpub to a wallet: 201, the item echoes the key; 2 x gapLimit addresses watched by the wallet; listed with the wallet; charged; deleted', async () => {
  const wallet = await newWallet();
  const before = await credits();
  const res = await add(wallet, { extendedPublicKey: tpub, derivation: 'segwit', gapLimit: 5 });
  expect(res.status, res.text).toBe(201);
  const item = res.body.data.item;
  expect(item).toEqual({
    xpubId: expect.any(String),
    blockchain: 'litecoin',
    network: 'testnet',
    extendedPublicKey: tpub,
    derivation: 'segwit',
    gapLimit: 5,
    watchedAddresses: 10,
    usedAddresses: 0,
    watchedFromBlock: null,
    createdTimestamp: expect.any(Number),
  });
  expect(await credits()).toBe(before - 1n);
  const derived = await derivedOf(wallet);
  expect(derived.map((d) => d.derivation_path)).toEqual([...[0, 1, 2, 3, 4].map((i) => `m/0/${i}`), ...[0, 1, 2, 3, 4].map((i) => `m/1/${i}`)]);
  expect(derived[0]?.address).toMatch(/^tltc1/);

  const got = await t.request('GET', `/wallet-as-a-service/wallets/${wallet}`, { key: c.key });
  expect(got.status, got.text).toBe(200);
  expect(got.body.data.item.addresses).toEqual([]);
  expect(got.body.data.item.xpubs).toEqual([item]);
  // The wallet's coins on the chain: the derived addresses (nothing moved yet).
  expect(got.body.data.item.coins).toEqual([
    { blockchain: 'litecoin', network: 'testnet', unit: 'LTC', confirmedBalance: '0', totalReceived: '0', totalSpent: '0', openingBalance: 'pending' },
  ]);

  const listed = await t.request('GET', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs/${item.xpubId}/addresses?change=true&limit=2&offset=1`, {
    key: c.key,
  });
  expect(listed.status, listed.text).toBe(200);
  expect(listed.body.data).toMatchObject({ limit: 2, offset: 1, total: 5 });
  expect(listed.body.data.items[0]).toEqual({
    address: derived[6]?.address,
    derivationPath: 'm/1/1',
    index: 1,
    change: true,
    used: false,
    firstSeenHeight: null,
    confirmedBalance: '0',
    openingBalance: 'pending',
  });
  const unused = await t.request('GET', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs/${item.xpubId}/addresses?used=false&offset=20`, {
    key: c.key,
  });
  expect(unused.body.data).toMatchObject({ total: 10, items: [] });
  const otherChain = await t.request('GET', `/wallet-as-a-service/wallets/${wallet}/bitcoin/testnet/xpubs/${item.xpubId}/addresses`, { key: c.key });
  expect(otherChain.status).toBe(404);

  const twin = await add(wallet, { extendedPublicKey: tpub, derivation: 'segwit', gapLimit: 20 });
  expect(twin.status, twin.text).toBe(409);
  expect(twin.body.error.code).toBe('already_exists');
  // The same addresses again in another form: an address is counted once.
  const body = `wpkh([73c5da0a/84'/1'/0']${tpub}/<0;1>/*)`;
  const overlapping = await add(wallet, { descriptor: body });
  expect(overlapping.status, overlapping.text).toBe(409);
  expect(overlapping.body.error.code).toBe('already_exists');
  expect(overlapping.body.error.message).toContain(derived[0]?.address);
  // A derived address is neither added again as an address nor removed alone.
  const again = await t.request('POST', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/addresses`, {
    key: c.key,
    body: { data: { item: { address: derived[0]?.address } } },
  });
  expect(again.status, again.text).toBe(409);
  expect(again.body.error.code).toBe('already_exists');
  const alone = await t.request('DELETE', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/addresses/${derived[0]?.address}`, { key: c.key });
  expect(alone.status, alone.text).toBe(404);

  // Deleted by its id on its chain: the addresses go with it.
  const elsewhere = await t.request('DELETE', `/wallet-as-a-service/wallets/${wallet}/bitcoin/testnet/xpubs/${item.xpubId}`, { key: c.key });
  expect(elsewhere.status, elsewhere.text).toBe(404);
  const deleted = await t.request('DELETE', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs/${item.xpubId}`, { key: c.key });
  expect(deleted.status, deleted.text).toBe(200);
  expect(deleted.body.data.item).toMatchObject({ xpubId: item.xpubId, extendedPublicKey: tpub, watchedAddresses: 10 });
  expect(await derivedOf(wallet)).toEqual([]);
  const after = await t.request('GET', `/wallet-as-a-service/wallets/${wallet}`, { key: c.key });
  expect(after.body.data.item).toMatchObject({ xpubs: [], coins: [] });
  const twice = await t.request('DELETE', `/wallet-as-a-service/wallets/${wallet}/litecoin/testnet/xpubs/${item.xpubId}`, { key: c.key });
  expect(twice.status).toBe(404);
  expect(twice.body.error.code).toBe('resource_not_found');
});

it('a descriptor with its checksum: echoed as given, paths from its origin; a receive-only descriptor watches one chain', async () => {
  const wallet = await newWallet();
  const body = `wpkh([73c5da0a/84'/1'/0']${tpub}/<0;1>/*)`;
  const descriptor = `${body}#${descriptorChecksum(body)}`;
  const res = await add(wallet, { descriptor, gapLimit: 2 });
  expect(res.status, res.text).toBe(201);
  expect(res.body.data.item).toMatchObject({ descriptor, gapLimit: 2, watchedAddresses: 4 });
  expect(res.body.data.item.extendedPublicKey).toBeUndefined();
  expect((await derivedOf(wallet))[0]?.derivation_path).toBe("m/84'/1'/0'/0/0");
  const receiveOnly = await add(await newWallet(), { descriptor: `pkh(${testPublicKey("m/44'/1'/0'", TPUB)}/0/*)`, gapLimit: 3 });
  expect(receiveOnly.status, receiveOnly.text).toBe(201);
  expect(receiveOnly.body.data.item.watchedAddresses).toBe(3);
});

it('refusals as the xpub subscriptions give them, naming the field; a private key is neither echoed nor stored', async () => {
  const wallet = await newWallet();
  const tprv = TEST_MASTER.derive("m/84'/1'/0'").privateExtendedKey;
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{ extendedPublicKey: tprv }, 'extendedPublicKey', /private key/],
    [{ descriptor: `wpkh(${tprv}/0/*)` }, 'descriptor', /./],
    [{ extendedPublicKey: testPublicKey("m/84'/1'/0'", XPUB) }, 'extendedPublicKey', /mainnet/],
    [{ descriptor: `wpkh(${tpub}/0h/*)` }, 'descriptor', /harden/i],
    [{ descriptor: `wpkh(${tpub}/0/*)#aaaaaaaa` }, 'descriptor', /checksum/],
    [{}, 'extendedPublicKey', /exactly one/],
    [{ extendedPublicKey: tpub, descriptor: `wpkh(${tpub}/0/*)` }, 'descriptor', /not both/],
    [{ descriptor: `wpkh(${tpub}/0/*)`, derivation: 'segwit' }, 'derivation', /descriptor/],
    [{ extendedPublicKey: 'Zpub-not-a-key' }, 'extendedPublicKey', /not an extended public key/],
    [{ extendedPublicKey: tpub, gapLimit: 10_001 }, 'gapLimit', /./],
    [{ extendedPublicKey: tpub, callbackUrl: 'https://example.com/cb' }, 'callbackUrl', /./],
  ];
  for (const [item, attribute, message] of cases) {
    const res = await add(wallet, item);
    expect(res.status, JSON.stringify(item)).toBe(409);
    const detail = res.body.error.details.find((d: { attribute: string }) => d.attribute.endsWith(attribute));
    expect(detail?.message, res.text).toMatch(message);
    expect(res.text).not.toContain(tprv.slice(4, 40));
  }
  const [stored] = await t.app.database.db.query<{ n: number }>(
    'test:private',
    "SELECT count(*)::int AS n FROM wallet_xpubs WHERE wallet_id = $1 OR wallet_key->>'text' LIKE $2",
    [wallet, `%${tprv.slice(4, 30)}%`],
  );
  expect(stored?.n).toBe(0);
  expect(logged.length).toBeGreaterThan(0);
  expect(logged.filter((line) => line.includes(tprv.slice(4, 40)))).toEqual([]);

  // An account chain's key with a derivation: the one address form; xrp has no keys; a wallet that is not there.
  const derived = await add(wallet, { extendedPublicKey: testPublicKey("m/44'/60'/0'", XPUB), derivation: 'segwit' }, 'ethereum/sepolia');
  expect(derived.status).toBe(409);
  expect(derived.body.error.details.find((d: { attribute: string }) => d.attribute.endsWith('extendedPublicKey'))?.message).toMatch(/one address form/);
  const xrp = await add(wallet, { extendedPublicKey: tpub }, 'xrp/testnet');
  expect(xrp.status).toBe(400);
  expect(xrp.body.error.code).toBe('uri_not_found');
  expect(xrp.body.error.message).toMatch(/not supported here; use one of: bitcoin, bitcoin-cash, litecoin/);
  const missing = await add('8f9c2d4e-1b3a-4c5d-9e8f-7a6b5c4d3e2f', { extendedPublicKey: tpub });
  expect(missing.status).toBe(404);
  expect(missing.body.error.code).toBe('resource_not_found');
});

it('an account chain: a BIP44 account key watches gapLimit addresses on the receive chain only (m/0/i)', async () => {
  const wallet = await newWallet();
  const res = await add(wallet, { extendedPublicKey: testPublicKey("m/44'/60'/0'", XPUB), gapLimit: 3 }, 'binance-smart-chain/testnet');
  expect(res.status, res.text).toBe(201);
  expect(res.body.data.item).toMatchObject({ blockchain: 'binance-smart-chain', network: 'testnet', gapLimit: 3, watchedAddresses: 3 });
  const derived = await derivedOf(wallet);
  expect(derived.map((d) => [d.derivation_path, d.xpub_change])).toEqual([
    ['m/0/0', false],
    ['m/0/1', false],
    ['m/0/2', false],
  ]);
  // The BIP44 test mnemonic's first Ethereum address (m/44'/60'/0'/0/0).
  expect(derived[0]?.address).toBe('0x9858effd232b4033e47d90003d41ec34ecaeda94');
});

/**
 * Wallet-key subscriptions through the API (docs/concepts/wallet-keys.md) on a real database, no node: the create
 * of xpub-coins-transactions-confirmed (its answer, its first window of derived addresses on both chains,
 * its charge), the refusals naming the field (a private key, a key of the other network, a hardened step,
 * a bad checksum, both or neither field, a derivation on an account chain, xrp), an account chain's key (receive
 * chain only), list/get/delete/activate as every
 * subscription, and the addresses reads.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { descriptorChecksum } from '../src/domain/wallet-keys.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { TEST_MASTER, testPublicKey } from './support/hd-keys.ts';

const TPUB = 0x043587cf;
const XPUB = 0x0488b21e;
const tpub = testPublicKey("m/84'/1'/0'", TPUB);
const PATH = '/blockchain-events/litecoin/testnet/subscriptions/xpub-coins-transactions-confirmed';

let t: TestApp;
let c: TestCustomer;

beforeAll(async () => {
  t = await startTestApp({ subscriptions: { allowUnfollowedChains: true } as never });
  c = await t.customer({ domains: ['example.com'] });
}, 60_000);

afterAll(async () => {
  await t?.close();
});

const create = (item: Record<string, unknown>, path = PATH) => t.request('POST', path, { key: c.key, body: { data: { item } } });

it('creates a subscription of a tpub: 201, the item echoes the key, gapLimit and receiveCallbackOn; 2 x gapLimit addresses derived; list, get, delete', async () => {
  const res = await create({ extendedPublicKey: tpub, derivation: 'segwit', gapLimit: 5, callbackUrl: 'https://example.com/cb', callbackSecretKey: 's' });
  expect(res.status, res.text).toBe(201);
  const item = res.body.data.item;
  expect(item).toMatchObject({
    eventType: 'XPUB_COINS_TRANSACTION_CONFIRMED',
    extendedPublicKey: tpub,
    derivation: 'segwit',
    gapLimit: 5,
    receiveCallbackOn: 3,
    callbackUrl: 'https://example.com/cb',
    callbackSecretKey: 's',
    isActive: true,
  });
  expect(item.descriptor).toBeUndefined();
  const id = item.referenceId as string;

  const all = await t.request('GET', `/blockchain-events/subscriptions/${id}/addresses`, { key: c.key });
  expect(all.status, all.text).toBe(200);
  expect(all.body.data.total).toBe(10);
  expect(all.body.data.items[0]).toEqual({
    address: expect.stringMatching(/^tltc1/),
    derivationPath: 'm/0/0',
    index: 0,
    change: false,
    used: false,
    firstSeenHeight: null,
  });
  expect(all.body.data.items[5]).toMatchObject({ derivationPath: 'm/1/0', index: 0, change: true });
  const change = await t.request('GET', `/blockchain-events/subscriptions/${id}/addresses?change=true&limit=2&offset=1`, { key: c.key });
  expect(change.body.data).toMatchObject({ total: 5, limit: 2, offset: 1 });
  expect(change.body.data.items.map((a: { index: number }) => a.index)).toEqual([1, 2]);
  const next = await t.request('GET', `/blockchain-events/subscriptions/${id}/addresses/next`, { key: c.key });
  expect(next.status, next.text).toBe(200);
  expect(next.body.data.item).toMatchObject({ index: 0, change: false, used: false });

  const got = await t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: c.key });
  expect(got.body.data.item).toMatchObject({ extendedPublicKey: tpub, gapLimit: 5, blockchain: 'litecoin', network: 'testnet' });
  const twin = await create({ extendedPublicKey: tpub, derivation: 'segwit', gapLimit: 5, callbackUrl: 'https://example.com/cb' });
  expect(twin.status).toBe(409);
  expect(twin.body.error.code).toBe('already_exists');

  const deleted = await t.request('DELETE', `/blockchain-events/litecoin/testnet/subscriptions/${id}`, { key: c.key });
  expect(deleted.status, deleted.text).toBe(200);
  expect(deleted.body.data.item.extendedPublicKey).toBe(tpub);
  const gone = await t.request('GET', `/blockchain-events/subscriptions/${id}/addresses`, { key: c.key });
  expect(gone.status).toBe(404);
});

it('a descriptor with its checksum: echoed as given; paths from its origin', async () => {
  const body = `wpkh([73c5da0a/84'/1'/0']${tpub}/<0;1>/*)`;
  const descriptor = `${body}#${descriptorChecksum(body)}`;
  const res = await create({ descriptor, callbackUrl: 'https://example.com/cb', receiveCallbackOn: 1 });
  expect(res.status, res.text).toBe(201);
  expect(res.body.data.item).toMatchObject({ descriptor, gapLimit: 20, receiveCallbackOn: 1 });
  const id = res.body.data.item.referenceId;
  const next = await t.request('GET', `/blockchain-events/subscriptions/${id}/addresses/next`, { key: c.key });
  expect(next.body.data.item.derivationPath).toBe("m/84'/1'/0'/0/0");
});

it('refusals name the field; a private key is neither echoed nor stored', async () => {
  const cb = { callbackUrl: 'https://example.com/cb' };
  const tprv = TEST_MASTER.derive("m/84'/1'/0'").privateExtendedKey.replace(/^xprv/, 'xprv');
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{ extendedPublicKey: tprv }, 'extendedPublicKey', /private key/],
    [{ extendedPublicKey: testPublicKey("m/84'/1'/0'", XPUB) }, 'extendedPublicKey', /mainnet/],
    [{ descriptor: `wpkh(${tpub}/0h/*)` }, 'descriptor', /harden/i],
    [{ descriptor: `wpkh(${tpub}/0/*)#aaaaaaaa` }, 'descriptor', /checksum/],
    [{}, 'extendedPublicKey', /exactly one/],
    [{ extendedPublicKey: tpub, descriptor: `wpkh(${tpub}/0/*)` }, 'descriptor', /not both/],
    [{ descriptor: `wpkh(${tpub}/0/*)`, derivation: 'segwit' }, 'derivation', /descriptor/],
    [{ extendedPublicKey: tpub, gapLimit: 10_001 }, 'gapLimit', /./],
  ];
  for (const [item, attribute, message] of cases) {
    const res = await create({ ...item, ...cb });
    expect(res.status, JSON.stringify(item)).toBe(409);
    const detail = res.body.error.details.find((d: { attribute: string }) => d.attribute.endsWith(attribute));
    expect(detail?.message, res.text).toMatch(message);
    expect(res.text).not.toContain(tprv.slice(4, 40));
  }
  const [stored] = await t.app.database.db.query<{ n: number }>('test:private', 'SELECT count(*)::int AS n FROM subscriptions WHERE target LIKE $1', [
    `%${tprv.slice(4, 30)}%`,
  ]);
  expect(stored?.n).toBe(0);

  // A key of an account chain with a derivation: the one address form.
  const derived = await create(
    { extendedPublicKey: testPublicKey("m/44'/60'/0'", XPUB), derivation: 'segwit', ...cb },
    '/blockchain-events/ethereum/sepolia/subscriptions/xpub-coins-transactions-confirmed',
  );
  expect(derived.status).toBe(409);
  expect(derived.body.error.details.find((d: { attribute: string }) => d.attribute.endsWith('extendedPublicKey'))?.message).toMatch(/one address form/);
  const xrp = await create({ extendedPublicKey: tpub, ...cb }, '/blockchain-events/xrp/testnet/subscriptions/xpub-coins-transactions-confirmed');
  expect(xrp.status).toBe(400);
  expect(xrp.body.error.code).toBe('uri_not_found');
  expect(xrp.body.error.message).toMatch(
    /not supported here; use one of: bitcoin, bitcoin-cash, litecoin, dogecoin, dash, zcash, ethereum, ethereum-classic, binance-smart-chain, tron/,
  );
});

it('an account chain: a BIP44 account key gives gapLimit addresses on the receive chain only (EVM addresses, m/0/i)', async () => {
  const xpub = testPublicKey("m/44'/60'/0'", XPUB);
  const res = await create(
    { extendedPublicKey: xpub, gapLimit: 3, callbackUrl: 'https://example.com/cb' },
    '/blockchain-events/binance-smart-chain/testnet/subscriptions/xpub-coins-transactions-confirmed',
  );
  expect(res.status, res.text).toBe(201);
  expect(res.body.data.item).toMatchObject({ extendedPublicKey: xpub, gapLimit: 3 });
  const id = res.body.data.item.referenceId;
  const all = await t.request('GET', `/blockchain-events/subscriptions/${id}/addresses`, { key: c.key });
  expect(all.body.data.total).toBe(3);
  expect(all.body.data.items.map((a: { address: string; derivationPath: string; change: boolean }) => [a.derivationPath, a.change])).toEqual([
    ['m/0/0', false],
    ['m/0/1', false],
    ['m/0/2', false],
  ]);
  // The BIP44 test mnemonic's first Ethereum address (m/44'/60'/0'/0/0).
  expect(all.body.data.items[0].address).toBe('0x9858effd232b4033e47d90003d41ec34ecaeda94');
  const tron = await create(
    { extendedPublicKey: testPublicKey("m/44'/195'/0'", XPUB), gapLimit: 1, callbackUrl: 'https://example.com/cb' },
    '/blockchain-events/tron/nile/subscriptions/xpub-coins-transactions-confirmed',
  );
  expect(tron.status, tron.text).toBe(201);
  const next = await t.request('GET', `/blockchain-events/subscriptions/${tron.body.data.item.referenceId}/addresses/next`, { key: c.key });
  expect(next.body.data.item).toMatchObject({ address: 'TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH', derivationPath: 'm/0/0', change: false });
});

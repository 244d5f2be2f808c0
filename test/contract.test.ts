/**
 * The contract, table-driven: every endpoint is hit with every error row of docs/reference/errors.md it
 * can produce, and each answer is checked for status, error.code, details and the envelope
 * (apiVersion, requestId = x-request-id, context echoed on errors too).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer, type TestResponse } from './harness.ts';

let t: TestApp;
let alice: TestCustomer;
let subscriptionId: string;
let walletId = '(wallet)';
let recoveryId = '(recovery)';
const hourAgo = () => Math.floor(Date.now() / 1000) - 3600;
/** Subscriptions made for the DELETE rows to remove, one per successful call. */
const deletable: string[] = [];

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.customer({ name: 'alice' });
  const created = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
    key: alice.key,
    body: { data: { item: { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl } } },
  });
  subscriptionId = created.body.data.item.referenceId;
  for (let i = 0; i < 3; i++) {
    const r = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
      key: alice.key,
      body: { data: { item: { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true } } },
    });
    deletable.push(r.body.data.item.referenceId);
  }
  recoveryId = (
    await t.request('POST', `/blockchain-events/subscriptions/${subscriptionId}/recover`, { key: alice.key, body: { data: { item: { since: hourAgo() } } } })
  ).body.data.item.recoveryId;
  walletId = (await t.request('POST', '/wallet-as-a-service/wallets', { key: alice.key, body: { data: { item: { walletName: 'w' } } } })).body.data.item
    .walletId;
  await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/ethereum/goerli/addresses`, {
    key: alice.key,
    body: { data: { item: { address: SAMPLE.evmAddress } } },
  });
});
afterAll(() => t.close());

interface Endpoint {
  name: string;
  method: string;
  path: () => string;
  /** A body that would succeed, for POSTs that take one. */
  body?: () => unknown;
  /** Path with a bad blockchain/network, for the endpoints that take them. */
  badChainPaths?: string[];
  list?: boolean;
  /** The attributes the schema names when the item is empty, when not every key of body() but allowDuplicates. */
  schemaRequired?: string[];
  /** The path names one of alice's resources: to anybody else it does not exist (404). */
  ownedResource?: boolean;
  charged: boolean;
  /** allowDuplicates is required too (docs/reference/api.md#address-internal-transactions-confirmed). */
  requiresAllowDuplicates?: boolean;
}

const item = (fields: Record<string, unknown>) => ({ data: { item: fields } });
const txMinedPath = (chain = 'ethereum', network = 'goerli') => `/blockchain-events/${chain}/${network}/subscriptions/transaction-mined`;
const tokensPath = (chain = 'ethereum', network = 'goerli') => `/blockchain-events/${chain}/${network}/subscriptions/address-tokens-transactions-confirmed`;
const internalPath = (chain = 'ethereum', network = 'goerli') =>
  `/blockchain-events/${chain}/${network}/subscriptions/internal-transactions-for-specific-amount`;
const blockMinedPath = (chain = 'ethereum', network = 'goerli') => `/blockchain-events/${chain}/${network}/subscriptions/block-mined`;
const coinsPath = (chain = 'ethereum', network = 'goerli') => `/blockchain-events/${chain}/${network}/subscriptions/address-coins-transactions-confirmed`;
const coinsAmountPath = (chain = 'ethereum', network = 'goerli') =>
  `/blockchain-events/${chain}/${network}/subscriptions/coins-transactions-for-specific-amount`;
const heightPath = (chain = 'ethereum', network = 'goerli') => `/blockchain-events/${chain}/${network}/subscriptions/block-height-reached`;
const revertedPath = (chain = 'ethereum', network = 'goerli') => `/blockchain-events/${chain}/${network}/subscriptions/reverted-block`;
const tokensEachPath = (chain = 'ethereum', network = 'goerli') =>
  `/blockchain-events/${chain}/${network}/subscriptions/address-tokens-transactions-confirmed-each-confirmation`;
const internalAddressPath = (chain = 'ethereum', network = 'goerli') =>
  `/blockchain-events/${chain}/${network}/subscriptions/address-internal-transactions-confirmed`;
const internalEachPath = (chain = 'ethereum', network = 'goerli') =>
  `/blockchain-events/${chain}/${network}/subscriptions/address-internal-transactions-confirmed-each-confirmation`;
const coinsEachPath = (chain = 'ethereum', network = 'goerli') =>
  `/blockchain-events/${chain}/${network}/subscriptions/address-coins-transactions-confirmed-each-confirmation`;
const unconfirmedPath = (kind: 'coins' | 'tokens', chain = 'ethereum', network = 'goerli') =>
  `/blockchain-events/${chain}/${network}/subscriptions/address-${kind}-transactions-unconfirmed`;
const tokenAmountPath = (chain = 'ethereum', network = 'goerli') => `/blockchain-events/${chain}/${network}/subscriptions/tokens-transfers-for-specific-amount`;

const ENDPOINTS: Endpoint[] = [
  {
    name: 'transaction-mined',
    method: 'POST',
    path: () => txMinedPath(),
    body: () => item({ transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [txMinedPath('solana'), txMinedPath('ethereum', 'testnet'), txMinedPath('ethereum', 'holesky')],
    charged: true,
  },
  {
    name: 'address-tokens-transactions-confirmed',
    method: 'POST',
    path: () => tokensPath(),
    body: () => item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [tokensPath('xrp', 'testnet'), tokensPath('litecoin', 'testnet'), tokensPath('tron', 'goerli')],
    charged: true,
  },
  {
    name: 'internal-transactions-for-specific-amount',
    method: 'POST',
    path: () => internalPath(),
    body: () => item({ amountHigherThan: 5, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [internalPath('bitcoin', 'testnet'), internalPath('binance-smart-chain', 'goerli')],
    charged: true,
  },
  {
    name: 'block-mined',
    method: 'POST',
    path: () => blockMinedPath(),
    body: () => item({ callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [blockMinedPath('solana'), blockMinedPath('xrp', 'goerli'), blockMinedPath('tron', 'testnet')],
    charged: true,
  },
  {
    name: 'block-height-reached',
    method: 'POST',
    path: () => heightPath(),
    body: () => item({ blockHeightReached: 12_000_000, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [heightPath('polygon', 'mainnet'), heightPath('bitcoin', 'goerli')],
    charged: true,
  },
  {
    name: 'reverted-block',
    method: 'POST',
    path: () => revertedPath(),
    body: () => item({ callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 's3cret', allowDuplicates: true }),
    badChainPaths: [revertedPath('zilliqa', 'mainnet'), revertedPath('ethereum', 'nile')],
    charged: true,
  },
  {
    name: 'address-tokens-transactions-confirmed-each-confirmation',
    method: 'POST',
    path: () => tokensEachPath(),
    body: () => item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [tokensEachPath('litecoin', 'testnet'), tokensEachPath('xrp', 'testnet'), tokensEachPath('tron', 'goerli')],
    charged: true,
  },
  {
    name: 'address-internal-transactions-confirmed',
    method: 'POST',
    path: () => internalAddressPath(),
    body: () => item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 's3cret', allowDuplicates: true }),
    badChainPaths: [internalAddressPath('bitcoin', 'testnet'), internalAddressPath('xrp', 'testnet'), internalAddressPath('tron', 'goerli')],
    charged: true,
    requiresAllowDuplicates: true,
  },
  {
    name: 'tokens-transfers-for-specific-amount',
    method: 'POST',
    path: () => tokenAmountPath(),
    body: () => item({ amountHigherThan: 5, contractAddress: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [tokenAmountPath('bitcoin', 'mainnet'), tokenAmountPath('litecoin', 'testnet'), tokenAmountPath('ethereum', 'mordor')],
    charged: true,
  },
  {
    name: 'address-internal-transactions-confirmed-each-confirmation',
    method: 'POST',
    path: () => internalEachPath(),
    body: () => item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 's3cret', allowDuplicates: true }),
    badChainPaths: [internalEachPath('litecoin', 'testnet'), internalEachPath('xrp', 'testnet'), internalEachPath('tron', 'goerli')],
    charged: true,
    requiresAllowDuplicates: true,
  },
  {
    name: 'address-coins-transactions-confirmed',
    method: 'POST',
    path: () => coinsPath(),
    body: () => item({ address: SAMPLE.evmAddress, callbackURL: SAMPLE.callbackUrl, allowDuplicates: true }),
    // Either spelling of the URL does: the service asks for it once the address is there (see "callbackURL or callbackUrl").
    schemaRequired: ['address'],
    badChainPaths: [coinsPath('polygon', 'mainnet'), coinsPath('litecoin', 'goerli')],
    charged: true,
  },
  {
    name: 'coins-transactions-for-specific-amount',
    method: 'POST',
    path: () => coinsAmountPath(),
    body: () => item({ amountHigherThan: 2, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [coinsAmountPath('zilliqa', 'mainnet'), coinsAmountPath('tron', 'testnet')],
    charged: true,
  },
  {
    name: 'address-coins-transactions-confirmed-each-confirmation',
    method: 'POST',
    path: () => coinsEachPath(),
    body: () => item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [coinsEachPath('solana'), coinsEachPath('xrp', 'goerli'), coinsEachPath('tron', 'testnet')],
    charged: true,
  },
  {
    name: 'address-coins-transactions-unconfirmed',
    method: 'POST',
    path: () => unconfirmedPath('coins'),
    body: () => item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [unconfirmedPath('coins', 'solana'), unconfirmedPath('coins', 'xrp', 'testnet'), unconfirmedPath('coins', 'tron', 'nile')],
    charged: true,
  },
  {
    name: 'address-tokens-transactions-unconfirmed',
    method: 'POST',
    path: () => unconfirmedPath('tokens'),
    body: () => item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    badChainPaths: [
      unconfirmedPath('tokens', 'litecoin', 'testnet'),
      unconfirmedPath('tokens', 'binance-smart-chain', 'testnet'),
      unconfirmedPath('tokens', 'tron', 'nile'),
    ],
    charged: true,
  },
  { name: 'all-assets', method: 'GET', path: () => '/wallet-as-a-service/wallets/all-assets', list: true, charged: true },
  {
    name: 'list-subscriptions',
    method: 'GET',
    path: () => '/blockchain-events/ethereum/goerli/subscriptions',
    badChainPaths: ['/blockchain-events/nope/goerli/subscriptions', '/blockchain-events/tron/mainnet2/subscriptions'],
    list: true,
    charged: true,
  },
  { name: 'get-subscription', method: 'GET', path: () => `/blockchain-events/subscriptions/${subscriptionId}`, ownedResource: true, charged: true },
  {
    name: 'delete-subscription',
    method: 'DELETE',
    path: () => `/blockchain-events/ethereum/goerli/subscriptions/${deletable.pop() ?? randomUUID()}`,
    badChainPaths: [`/blockchain-events/ethereum/mordor/subscriptions/${randomUUID()}`],
    ownedResource: true,
    charged: true,
  },
  {
    name: 'activate-subscription',
    method: 'POST',
    path: () => `/blockchain-events/subscriptions/${subscriptionId}/activate`,
    ownedResource: true,
    charged: true,
  },
  { name: 'wallets', method: 'POST', path: () => '/wallet-as-a-service/wallets', body: () => item({ walletName: 'x' }), charged: true },
  {
    name: 'wallets',
    method: 'POST',
    path: () => `/wallet-as-a-service/wallets/${walletId}/bitcoin/testnet/addresses`,
    body: () => item({ address: SAMPLE.btcTestnetAddress }),
    badChainPaths: [`/wallet-as-a-service/wallets/${walletId}/bitcoin/goerli/addresses`],
    ownedResource: true,
    charged: true,
  },
  { name: 'wallets', method: 'GET', path: () => `/wallet-as-a-service/wallets/${walletId}`, ownedResource: true, charged: true },
  { name: 'callback-domains', method: 'GET', path: () => '/blockchain-events/callback-domains', list: true, charged: true },
  {
    name: 'callback-domains',
    method: 'POST',
    path: () => '/blockchain-events/callback-domains',
    body: () => item({ domain: 'new.example.com' }),
    charged: true,
  },
  {
    name: 'callbacks',
    method: 'GET',
    path: () => `/blockchain-events/subscriptions/${subscriptionId}/callbacks`,
    list: true,
    ownedResource: true,
    charged: true,
  },
  { name: 'status', method: 'GET', path: () => '/blockchain-events/status', charged: false },
  {
    name: 'rotate-secret',
    method: 'POST',
    path: () => `/blockchain-events/subscriptions/${subscriptionId}/rotate-secret`,
    body: () => item({ callbackSecretKey: 'rotated-secret' }),
    ownedResource: true,
    charged: true,
  },
  {
    name: 'recoveries',
    method: 'POST',
    path: () => `/blockchain-events/subscriptions/${subscriptionId}/recover`,
    body: () => item({ since: hourAgo() }),
    ownedResource: true,
    charged: true,
  },
  {
    name: 'recoveries',
    method: 'POST',
    path: () => '/blockchain-events/callbacks/recover',
    body: () => item({ callbackUrl: SAMPLE.callbackUrl, since: hourAgo() }),
    // The delivery log's filters are all optional (callbackUrl too): only the window's start is required.
    schemaRequired: ['since'],
    charged: true,
  },
  { name: 'recoveries', method: 'GET', path: () => `/blockchain-events/recoveries/${recoveryId}`, ownedResource: true, charged: true },
];

function expectEnvelope(r: TestResponse, context = 'ctx-1') {
  expect(r.body.apiVersion).toBe('2021-03-20');
  expect(r.body.requestId).toMatch(/^[0-9a-f]{24}$/);
  expect(r.headers.get('x-request-id')).toBe(r.body.requestId);
  expect(r.headers.get('x-api-version')).toBe('2021-03-20');
  expect(r.body.context).toBe(context);
}

function expectError(r: TestResponse, status: number, code: string, detailAttributes?: string[]) {
  expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status, code });
  expectEnvelope(r);
  expect(typeof r.body.error.message).toBe('string');
  expect(r.body.error.message.length).toBeGreaterThan(10);
  expect(r.body.data).toBeUndefined();
  if (detailAttributes) expect(r.body.error.details.map((d: { attribute: string }) => d.attribute).sort()).toEqual([...detailAttributes].sort());
}

const withContext = (path: string, extra = '') => `${path}${path.includes('?') ? '&' : '?'}context=ctx-1${extra}`;

describe.each(ENDPOINTS.map((e) => [`${e.method} ${e.path().replace(/[0-9a-f-]{36}/, '{id}')}`, e] as const))('%s', (_label, e) => {
  const send = (
    options: { key?: string; body?: unknown; rawBody?: string; noBody?: boolean; headers?: Record<string, string>; path?: string; query?: string } = {},
  ) =>
    t.request(e.method, withContext(options.path ?? e.path(), options.query), {
      key: 'key' in options ? options.key : alice.key,
      body: options.body ?? (options.rawBody === undefined && !options.noBody ? e.body?.() : undefined),
      rawBody: options.rawBody,
      headers: options.headers,
    });

  it('succeeds with the envelope and credit headers', async () => {
    const r = await send();
    expect(r.status, r.text).toBeLessThan(300);
    expectEnvelope(r);
    expect(r.body.data).toBeDefined();
    expect(Number(r.headers.get('x-credits-consumed'))).toBeGreaterThanOrEqual(0);
    expect(Number(r.headers.get('x-credits-available'))).toBeGreaterThan(0);
  });

  if (!e.body && e.method !== 'GET') {
    // Clients send the header on every request; an empty body is no body.
    it("succeeds with 'Content-Type: application/json' and an empty body", async () => {
      const r = await send({ rawBody: '', headers: { 'content-type': 'application/json' } });
      expect(r.status, r.text).toBeLessThan(300);
      expectEnvelope(r);
    });
  }

  it('401 missing_api_key', async () => expectError(await send({ key: undefined }), 401, 'missing_api_key'));
  it('401 invalid_api_key', async () => expectError(await send({ key: 'hk_not-a-key' }), 401, 'invalid_api_key'));
  it('400 invalid_api_version', async () => expectError(await send({ headers: { 'x-api-version': '2019-01-01' } }), 400, 'invalid_api_version'));
  it('409 extra_query_attributes', async () => expectError(await send({ query: '&color=blue' }), 409, 'extra_query_attributes', ['color']));

  it('403 endpoint_not_allowed_for_api_key', async () => {
    const other = e.name === 'all-assets' ? 'wallets' : 'all-assets';
    const restricted = await t.customer({ allowedEndpoints: [other] });
    expectError(await send({ key: restricted.key }), 403, 'endpoint_not_allowed_for_api_key');
  });

  it('402 insufficient_credits, and an error costs nothing', async () => {
    const poor = await t.customer({ credits: 0n });
    const r = await send({ key: poor.key });
    // A path naming another tenant's resource answers 404 before credits are looked at.
    if (e.ownedResource) expectError(r, 404, 'resource_not_found');
    else if (e.name === 'list-subscriptions') {
      // One credit per item listed: an empty page is free, so it succeeds even at zero credits.
      expect(r.status).toBe(200);
      expect(r.headers.get('x-credits-consumed')).toBe('0');
    } else if (!e.charged) {
      // Free endpoints (the chain status) answer at zero credits.
      expect(r.status).toBe(200);
      expect(r.headers.get('x-credits-consumed')).toBe('0');
    } else expectError(r, 402, 'insufficient_credits');
  });

  it('429 request_limit_reached with Retry-After', async () => {
    const slow = await t.customer({ plan: { requestsPerSecond: 1 } });
    await send({ key: slow.key });
    const r = await send({ key: slow.key });
    expectError(r, 429, 'request_limit_reached');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  if (e.badChainPaths) {
    it.each(e.badChainPaths)('400 uri_not_found for %s', async (path) => {
      const r = await send({ path });
      expectError(r, 400, 'uri_not_found');
      expect(r.body.error.details.length).toBeGreaterThan(0);
      for (const d of r.body.error.details) expect(['blockchain', 'network']).toContain(d.attribute);
    });
  }

  if (e.list) {
    it.each([
      ['limit=0', 'invalid_pagination', ['limit']],
      ['limit=abc', 'invalid_pagination', ['limit']],
      ['limit=2.5', 'invalid_pagination', ['limit']],
      ['offset=-1', 'invalid_pagination', ['offset']],
      ['limit=51', 'limit_greater_than_allowed', ['limit']],
    ])('400 for %s', async (query, code, attributes) => expectError(await send({ query: `&${query}` }), 400, code, attributes));
  }

  const makeBody = e.body;
  if (makeBody) {
    const validItem = () => (makeBody() as { data: { item: Record<string, unknown> } }).data.item;
    it("the body's context is echoed also on the errors raised before the body is read (401, 403, 429, 400, 415)", async () => {
      const restricted = await t.customer({ allowedEndpoints: [e.name === 'wallets' ? 'all-assets' : 'wallets'] });
      const slow = await t.customer({ plan: { requestsPerSecond: 1 } });
      const withBodyContext = (key: string | undefined, headers: Record<string, string> = {}) =>
        t.request(e.method, e.path(), {
          key,
          rawBody: JSON.stringify({ context: 'from-body', ...(makeBody() as object) }),
          headers: { 'content-type': 'application/json', ...headers },
        });
      const cases: [TestResponse, number, string][] = [
        [await withBodyContext(undefined), 401, 'missing_api_key'],
        [await withBodyContext('hk_not-a-key'), 401, 'invalid_api_key'],
        [await withBodyContext(alice.key, { 'x-api-version': '2019-01-01' }), 400, 'invalid_api_version'],
        [await withBodyContext(restricted.key), 403, 'endpoint_not_allowed_for_api_key'],
        [await withBodyContext(alice.key, { 'content-type': 'text/plain' }), 415, 'unsupported_media_type'],
      ];
      await withBodyContext(slow.key);
      cases.push([await withBodyContext(slow.key), 429, 'request_limit_reached']);
      for (const [r, status, code] of cases) {
        expect({ status: r.status, code: r.body?.error?.code, context: r.body?.context }).toEqual({ status, code, context: 'from-body' });
      }
      // A body that is not JSON has no context to echo, and the error is the same.
      const notJson = await t.request(e.method, e.path(), { rawBody: 'context=from-body', headers: { 'content-type': 'application/json' } });
      expect({ status: notJson.status, code: notJson.body.error.code, context: notJson.body.context }).toEqual({
        status: 401,
        code: 'missing_api_key',
        context: undefined,
      });
    });
    it('415 unsupported_media_type', async () =>
      expectError(await send({ rawBody: JSON.stringify(e.body?.()), headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type'));
    it('409 bad_json', async () => expectError(await send({ rawBody: '{"data": {', headers: { 'content-type': 'application/json' } }), 409, 'bad_json'));
    it('409 bad_json for a prototype-poisoning body', async () =>
      expectError(await send({ rawBody: '{"__proto__": {"x": 1}, "data": {"item": {}}}', headers: { 'content-type': 'application/json' } }), 409, 'bad_json'));
    it('409 missing_request_body (no body)', async () => expectError(await send({ noBody: true }), 409, 'missing_request_body'));
    it('409 missing_request_body (empty JSON body)', async () =>
      expectError(await send({ rawBody: '', headers: { 'content-type': 'application/json' } }), 409, 'missing_request_body'));
    it.each([['[]'], ['"text"'], ['{"item": {}}'], ['{"data": []}'], ['{"data": {"item": 5}}'], ['{"data": {"items": {}}}'], ['null']])(
      '422 invalid_request_body_structure for %s',
      async (raw) =>
        expectError(
          await send({ rawBody: raw, headers: { 'content-type': 'application/json' } }),
          raw === 'null' ? 409 : 422,
          raw === 'null' ? 'missing_request_body' : 'invalid_request_body_structure',
        ),
    );
    it('409 missing_required_attributes, every missing one in details', async () => {
      const r = await send({ body: item({}) });
      const required = e.schemaRequired ?? Object.keys(validItem()).filter((k) => k !== 'allowDuplicates' || e.requiresAllowDuplicates);
      expectError(r, 409, 'missing_required_attributes', required);
    });
    it('409 extra_body_attributes', async () => {
      expectError(await send({ body: item({ ...validItem(), surprise: 1 }) }), 409, 'extra_body_attributes', ['surprise']);
    });
    it('409 invalid_data for a wrongly typed attribute', async () => {
      const [first] = Object.keys(validItem());
      expectError(await send({ body: item({ ...validItem(), [first as string]: { nested: true } }) }), 409, 'invalid_data', [first as string]);
    });
    it('413 request_entity_too_large', async () => {
      const r = await send({
        rawBody: JSON.stringify({ data: { item: { walletName: 'x'.repeat(70_000) } } }),
        headers: { 'content-type': 'application/json' },
      });
      expectError(r, 413, 'request_entity_too_large');
    });
  }
});

describe('subscription creation rules', () => {
  it('404 resource_not_found for unknown and malformed ids on get, delete and activate', async () => {
    for (const id of [randomUUID(), 'not-a-uuid', "'; DROP TABLE subscriptions; --"]) {
      const encoded = encodeURIComponent(id);
      expectError(await t.request('GET', withContext(`/blockchain-events/subscriptions/${encoded}`), { key: alice.key }), 404, 'resource_not_found');
      expectError(
        await t.request('DELETE', withContext(`/blockchain-events/ethereum/goerli/subscriptions/${encoded}`), { key: alice.key }),
        404,
        'resource_not_found',
      );
      expectError(await t.request('POST', withContext(`/blockchain-events/subscriptions/${encoded}/activate`), { key: alice.key }), 404, 'resource_not_found');
    }
  });

  it('404 when deleting with the wrong blockchain/network of an existing subscription', async () => {
    const r = await t.request('DELETE', withContext(`/blockchain-events/bitcoin/testnet/subscriptions/${subscriptionId}`), { key: alice.key });
    expectError(r, 404, 'resource_not_found');
  });

  it('409 already_exists for an active twin, unless allowDuplicates', async () => {
    const body = item({ address: SAMPLE.tronAddress, callbackUrl: SAMPLE.callbackUrl });
    const first = await t.request('POST', withContext(tokensPath('tron', 'nile')), { key: alice.key, body });
    expect(first.status).toBe(201);
    expectError(await t.request('POST', withContext(tokensPath('tron', 'nile')), { key: alice.key, body }), 409, 'already_exists');
    // The same address in hex form is the same target.
    const hex = item({ address: '41a614f803b6fd780986a42c78ec9c7f77e6ded13c', callbackUrl: SAMPLE.callbackUrl });
    expectError(await t.request('POST', withContext(tokensPath('tron', 'nile')), { key: alice.key, body: hex }), 409, 'already_exists');
    const again = await t.request('POST', withContext(tokensPath('tron', 'nile')), {
      key: alice.key,
      body: item({ ...body.data.item, allowDuplicates: true }),
    });
    expect(again.status).toBe(201);
  });

  it('409 callback_url_not_verified for a host that is not a verified domain (exact host), its details naming callbackUrl', async () => {
    for (const callbackUrl of ['https://other.example.com/x', 'https://sub.hooks.example.com/x']) {
      const r = await t.request('POST', withContext(txMinedPath()), { key: alice.key, body: item({ transactionId: SAMPLE.evmTx, callbackUrl }) });
      expectError(r, 409, 'callback_url_not_verified', ['callbackUrl']);
      expect(r.body.error.details[0].message).toBe(r.body.error.message);
      expect(r.body.error.message).toContain(`'${new URL(callbackUrl).hostname}'`);
    }
    // So does the SDK's spelling of address-coins-transactions-confirmed: the attribute is the URL's, as in invalid_data.
    const coins = await t.request('POST', withContext(coinsPath()), {
      key: alice.key,
      body: item({ address: SAMPLE.evmAddress, callbackURL: 'https://other.example.com/x' }),
    });
    expectError(coins, 409, 'callback_url_not_verified', ['callbackUrl']);
    // And a bulk item's answer.
    const bulk = await t.request('POST', `${txMinedPath()}/bulk`, {
      key: alice.key,
      body: { data: { items: [{ transactionId: SAMPLE.evmTx, callbackUrl: 'https://other.example.com/x' }] } },
    });
    expect(bulk.body.data.items[0]).toMatchObject({
      status: 'failed',
      error: { code: 'callback_url_not_verified', details: [{ attribute: 'callbackUrl', message: expect.stringContaining("'other.example.com'") }] },
    });
  });

  it.each([
    [txMinedPath(), { transactionId: '0x1234', callbackUrl: SAMPLE.callbackUrl }, ['transactionId']],
    [txMinedPath('bitcoin', 'testnet'), { transactionId: SAMPLE.evmTx, callbackUrl: 'http://hooks.example.com/x' }, ['transactionId', 'callbackUrl']],
    [tokensPath(), { address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD', callbackUrl: SAMPLE.callbackUrl }, ['address']],
    [tokensPath('bitcoin', 'mainnet'), { address: SAMPLE.btcTestnetAddress, callbackUrl: SAMPLE.callbackUrl }, ['address']],
    [tokensPath(), { address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, receiveCallbackOn: 0 }, ['receiveCallbackOn']],
    [tokensPath(), { address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, receiveCallbackOn: 101 }, ['receiveCallbackOn']],
    [internalPath(), { amountHigherThan: -1, callbackUrl: SAMPLE.callbackUrl }, ['amountHigherThan']],
    [internalPath(), { amountHigherThan: 1.5, callbackUrl: SAMPLE.callbackUrl }, ['amountHigherThan']],
    [internalPath(), { amountHigherThan: '5', callbackUrl: 'ftp://x', allowDuplicates: 'yes' }, ['amountHigherThan', 'allowDuplicates']],
    [txMinedPath(), { transactionId: SAMPLE.evmTx, callbackUrl: 'https://user:pw@hooks.example.com/' }, ['callbackUrl']],
    [blockMinedPath(), { callbackUrl: 'http://hooks.example.com/x' }, ['callbackUrl']],
    [blockMinedPath(), { callbackUrl: SAMPLE.callbackUrl, allowDuplicates: 'true' }, ['allowDuplicates']],
    [heightPath(), { blockHeightReached: -1, callbackUrl: SAMPLE.callbackUrl }, ['blockHeightReached']],
    [heightPath(), { blockHeightReached: 1.5, callbackUrl: SAMPLE.callbackUrl }, ['blockHeightReached']],
    [heightPath(), { blockHeightReached: '100', callbackUrl: SAMPLE.callbackUrl }, ['blockHeightReached']],
    [revertedPath(), { callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: '', allowDuplicates: 'False' }, ['callbackSecretKey', 'allowDuplicates']],
    [revertedPath(), { callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: 1 }, ['allowDuplicates']],
    [coinsPath(), { address: SAMPLE.evmAddress, callbackURL: 'http://hooks.example.com/x' }, ['callbackUrl']],
    [coinsPath(), { address: 'not-an-address', callbackUrl: SAMPLE.callbackUrl, receiveCallbackOn: 3 }, ['address']],
    [coinsPath(), { address: SAMPLE.evmAddress, callbackURL: SAMPLE.callbackUrl, receiveCallbackOn: 101 }, ['receiveCallbackOn']],
    [coinsPath(), { address: SAMPLE.evmAddress, callbackURL: SAMPLE.callbackUrl, callbackUrl: SAMPLE.callbackUrl }, ['callbackURL', 'callbackUrl']],
    [coinsAmountPath(), { amountHigherThan: -1, callbackUrl: SAMPLE.callbackUrl }, ['amountHigherThan']],
    [coinsAmountPath(), { amountHigherThan: '2', callbackUrl: SAMPLE.callbackUrl }, ['amountHigherThan']],
    [internalAddressPath(), { address: '0x1234', callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: false }, ['address']],
    [
      internalAddressPath(),
      { address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: '', allowDuplicates: 'true', receiveCallbackOn: 101 },
      ['callbackSecretKey', 'allowDuplicates', 'receiveCallbackOn'],
    ],
    [
      internalAddressPath('tron', 'nile'),
      { address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: false },
      ['address'],
    ],
    [tokenAmountPath(), { amountHigherThan: -1, contractAddress: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl }, ['amountHigherThan']],
    [tokenAmountPath(), { amountHigherThan: 1.5, contractAddress: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl }, ['amountHigherThan']],
    [tokenAmountPath(), { amountHigherThan: 1, contractAddress: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', callbackUrl: SAMPLE.callbackUrl }, ['contractAddress']],
    [
      tokenAmountPath('tron', 'nile'),
      { amountHigherThan: 1, contractAddress: SAMPLE.evmAddress, callbackUrl: 'http://x.example.com' },
      ['contractAddress', 'callbackUrl'],
    ],
  ])('409 invalid_data naming each bad attribute (%s)', async (path, fields, attributes) => {
    expectError(await t.request('POST', withContext(path), { key: alice.key, body: item(fields) }), 409, 'invalid_data', attributes);
  });

  it('the string "False" for a boolean: 409 invalid_data whose message says which forms, and which strings, are accepted', async () => {
    const reverted = await t.request('POST', withContext(revertedPath()), {
      key: alice.key,
      body: item({ callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: 'False' }),
    });
    expectError(reverted, 409, 'invalid_data', ['allowDuplicates']);
    const accepted =
      'The attribute \'allowDuplicates\' must be a JSON boolean (true or false, without quotes), or one of the strings "true" or "false" (in lower case).';
    expect(reverted.body.error.message).toBe(accepted);
    expect(reverted.body.error.details).toEqual([{ attribute: 'allowDuplicates', message: accepted }]);
    // A bulk item gets the message its single create would.
    const bulk = await t.request('POST', `${revertedPath()}/bulk`, {
      key: alice.key,
      body: { data: { items: [{ callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: 'False' }] } },
    });
    expect(bulk.body.data.items[0].error).toMatchObject({ code: 'invalid_data', message: accepted });
    // Where no string is accepted, the message says the JSON literal is wanted.
    const mined = await t.request('POST', withContext(blockMinedPath()), {
      key: alice.key,
      body: item({ callbackUrl: SAMPLE.callbackUrl, allowDuplicates: 'False' }),
    });
    expectError(mined, 409, 'invalid_data', ['allowDuplicates']);
    expect(mined.body.error.message).toBe("The attribute 'allowDuplicates' must be a boolean: true or false, without quotes.");
  });

  it('403 feature_mainnets_not_allowed_for_plan on mainnet creates, wallet addresses and activation', async () => {
    const testOnly = await t.customer({ plan: { mainnetAllowed: false } });
    const r = await t.request('POST', withContext(txMinedPath('ethereum', 'mainnet')), {
      key: testOnly.key,
      body: item({ transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl }),
    });
    expectError(r, 403, 'feature_mainnets_not_allowed_for_plan');
    const w = await t.request('POST', '/wallet-as-a-service/wallets', { key: testOnly.key, body: item({ walletName: 'w' }) });
    const add = await t.request('POST', withContext(`/wallet-as-a-service/wallets/${w.body.data.item.walletId}/ethereum/mainnet/addresses`), {
      key: testOnly.key,
      body: item({ address: SAMPLE.evmAddress }),
    });
    expectError(add, 403, 'feature_mainnets_not_allowed_for_plan');
    const ok = await t.request('POST', withContext(txMinedPath('ethereum', 'goerli')), {
      key: testOnly.key,
      body: item({ transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl }),
    });
    expect(ok.status).toBe(200);
  });

  it('403 blockchain_events_callbacks_limit_reached at the cap, and again after deletion frees a place', async () => {
    const capped = await t.customer({ plan: { maxActiveSubscriptions: 2 } });
    const create = (n: number) =>
      t.request('POST', withContext(txMinedPath()), {
        key: capped.key,
        body: item({ transactionId: `0x${String(n).repeat(64).slice(0, 64)}`, callbackUrl: SAMPLE.callbackUrl }),
      });
    const first = await create(1);
    expect((await create(2)).status).toBe(200);
    expectError(await create(3), 403, 'blockchain_events_callbacks_limit_reached');
    const del = await t.request('DELETE', `/blockchain-events/ethereum/goerli/subscriptions/${first.body.data.item.referenceId}`, { key: capped.key });
    expect(del.status).toBe(200);
    expect((await create(3)).status).toBe(200);
  });

  it("bodyless POSTs and DELETEs ignore 'Content-Type: application/json' with an empty body", async () => {
    const empty = { key: alice.key, rawBody: '', headers: { 'content-type': 'application/json' } };
    for (const [method, path] of [
      ['POST', `/blockchain-events/callbacks/${randomUUID()}/resend`],
      ['POST', `/blockchain-events/subscriptions/${randomUUID()}/test-callback`],
      ['POST', '/blockchain-events/callback-domains/unknown.example.org/verify'],
      ['DELETE', '/blockchain-events/callback-domains/unknown.example.org'],
    ] as const) {
      expectError(await t.request(method, withContext(path), empty), 404, 'resource_not_found');
    }
  });

  it('400 uri_not_found for a wallet path whose id cannot be a wallet id (a typo of a fixed path); an unknown wallet id is a 404', async () => {
    for (const [method, path, body] of [
      ['GET', '/wallet-as-a-service/wallets/all-asset', undefined],
      ['POST', '/wallet-as-a-service/wallets/not-a-wallet/ethereum/goerli/addresses', item({ address: 'also wrong' })],
      ['DELETE', `/wallet-as-a-service/wallets/not-a-wallet/ethereum/goerli/addresses/${SAMPLE.evmAddress}`, undefined],
    ] as const) {
      const r = await t.request(method, withContext(path), { key: alice.key, body });
      expectError(r, 400, 'uri_not_found', ['walletId']);
      expect(r.body.error.message).toContain('all-assets');
    }
    expectError(await t.request('GET', withContext(`/wallet-as-a-service/wallets/${randomUUID()}`), { key: alice.key }), 404, 'resource_not_found');
  });

  it("ethereum's current test networks: sepolia and hoodi beside goerli, each its own list; another label is 400 naming the ones there are", async () => {
    const sepolia = await t.customer({ name: 'sepolia-hoodi' });
    const made: Record<string, string> = {};
    for (const network of ['sepolia', 'hoodi', 'goerli']) {
      const r = await t.request('POST', txMinedPath('ethereum', network), {
        key: sepolia.key,
        body: item({ transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl }),
      });
      expect(r.status, r.text).toBe(200);
      made[network] = r.body.data.item.referenceId;
      const wallet = (await t.request('POST', '/wallet-as-a-service/wallets', { key: sepolia.key, body: item({ walletName: network }) })).body.data.item;
      const added = await t.request('POST', `/wallet-as-a-service/wallets/${wallet.walletId}/ethereum/${network}/addresses`, {
        key: sepolia.key,
        body: item({ address: SAMPLE.evmAddress }),
      });
      expect(added.status, added.text).toBe(201);
    }
    for (const network of ['sepolia', 'hoodi', 'goerli']) {
      const list = await t.request('GET', `/blockchain-events/ethereum/${network}/subscriptions`, { key: sepolia.key });
      expect(list.body.data.items.map((s: { referenceId: string; network: string }) => [s.referenceId, s.network])).toEqual([[made[network], network]]);
    }
    const filtered = await t.request('GET', '/blockchain-events/subscriptions?network=hoodi', { key: sepolia.key });
    expect(filtered.status, filtered.text).toBe(200);
    expect(filtered.body.data.items.map((s: { referenceId: string }) => s.referenceId)).toEqual([made.hoodi]);
    const holesky = await t.request('POST', withContext(txMinedPath('ethereum', 'holesky')), {
      key: sepolia.key,
      body: item({ transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl }),
    });
    expectError(holesky, 400, 'uri_not_found', ['network']);
    expect(holesky.body.error.message).toBe("'holesky' is not a network; use one of: mainnet, sepolia, hoodi, goerli.");
    const onBitcoin = await t.request('POST', withContext(txMinedPath('bitcoin', 'sepolia')), {
      key: sepolia.key,
      body: item({ transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl }),
    });
    expectError(onBitcoin, 400, 'uri_not_found', ['network']);
    expect(onBitcoin.body.error.message).toBe("bitcoin has no network 'sepolia'; use one of: mainnet, testnet.");
  });

  it('400 uri_not_found for unknown paths and methods', async () => {
    expectError(await t.request('GET', withContext('/nothing/here'), { key: alice.key }), 400, 'uri_not_found');
    expectError(await t.request('PUT', withContext('/blockchain-events/ethereum/goerli/subscriptions'), { key: alice.key }), 400, 'uri_not_found');
    expectError(await t.request('PATCH', withContext(`/blockchain-events/subscriptions/${subscriptionId}`), { key: alice.key }), 400, 'uri_not_found');
  });

  it('context from the body is echoed, the query value wins, and an over-long context is refused', async () => {
    const body = { context: 'from-body', ...item({ transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }) };
    expect((await t.request('POST', txMinedPath(), { key: alice.key, body })).body.context).toBe('from-body');
    expect((await t.request('POST', `${txMinedPath()}?context=from-query`, { key: alice.key, body })).body.context).toBe('from-query');
    const long = await t.request('GET', `/wallet-as-a-service/wallets/all-assets?context=${'x'.repeat(101)}`, { key: alice.key });
    expect(long.status).toBe(409);
    expect(long.body.error.code).toBe('invalid_data');
    expect(long.body.context).toBeUndefined();
  });
});

describe('success shapes of the create endpoints', () => {
  const base = { referenceId: expect.stringMatching(/^[0-9a-f-]{36}$/), createdTimestamp: expect.any(Number), isActive: true, callbackUrl: SAMPLE.callbackUrl };

  it('1: 200 with transactionId echoed as spelled and an empty secret when none was given', async () => {
    const spelled = `0x${'AB'.repeat(32)}`;
    const r = await t.request('POST', txMinedPath(), {
      key: alice.key,
      body: item({ transactionId: spelled, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true }),
    });
    expect(r.status).toBe(200);
    expect(r.body.data.item).toEqual({ ...base, eventType: 'TRANSACTION_MINED', callbackSecretKey: '', transactionId: spelled });
    expect(Math.abs(r.body.data.item.createdTimestamp - Date.now() / 1000)).toBeLessThan(60);
  });

  it('2: 201 with receiveCallbackOn filled with the default 3', async () => {
    const r = await t.request('POST', tokensPath('binance-smart-chain', 'testnet'), {
      key: alice.key,
      body: item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 's3cret' }),
    });
    expect(r.status).toBe(201);
    expect(r.body.data.item).toEqual({
      ...base,
      eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
      callbackSecretKey: 's3cret',
      address: SAMPLE.evmAddress,
      receiveCallbackOn: 3,
    });
  });

  it('an empty callbackSecretKey is kept, not dropped, by every create endpoint that takes one: the answer, get and list echo it', async () => {
    const erin = await t.customer({ name: 'empty-secret' });
    const bodies: [string, Record<string, unknown>][] = [
      [txMinedPath(), { transactionId: SAMPLE.evmTx }],
      [tokensPath(), { address: SAMPLE.evmAddress }],
      [internalPath(), { amountHigherThan: 1 }],
      [blockMinedPath(), {}],
      [heightPath(), { blockHeightReached: 99 }],
      [tokensEachPath(), { address: SAMPLE.evmAddress }],
      [tokenAmountPath(), { amountHigherThan: 1, contractAddress: SAMPLE.evmAddress }],
      [coinsPath(), { address: SAMPLE.evmAddress }],
      [coinsAmountPath(), { amountHigherThan: 1 }],
      [coinsEachPath(), { address: SAMPLE.evmAddress }],
      [unconfirmedPath('coins'), { address: SAMPLE.evmAddress }],
      [unconfirmedPath('tokens'), { address: SAMPLE.evmAddress }],
    ];
    for (const [path, fields] of bodies) {
      const r = await t.request('POST', path, { key: erin.key, body: item({ ...fields, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: '' }) });
      expect(r.status, `${path}: ${r.text}`).toBeLessThan(300);
      expect(r.body.data.item.callbackSecretKey, path).toBe('');
      const got = await t.request('GET', `/blockchain-events/subscriptions/${r.body.data.item.referenceId}`, { key: erin.key });
      expect(got.body.data.item.callbackSecretKey, path).toBe('');
      // The bulk form too.
      const bulk = await t.request('POST', `${path}/bulk`, {
        key: erin.key,
        body: { data: { items: [{ ...fields, callbackUrl: `${SAMPLE.callbackUrl}/bulk`, callbackSecretKey: '' }] } },
      });
      expect(bulk.body.data.items[0], `${path}/bulk`).toMatchObject({ status: 'created', item: { callbackSecretKey: '' } });
    }
    const list = await t.request('GET', '/blockchain-events/ethereum/goerli/subscriptions', { key: erin.key });
    expect(list.body.data.items.map((s: { callbackSecretKey?: string }) => s.callbackSecretKey)).toEqual(Array(bodies.length * 2).fill(''));
  });

  it('all-assets is compact JSON throughout: no spacing from the database in records with several coins, tokens and NFTs', async () => {
    const frank = await t.customer({ name: 'compact-assets' });
    const post = (path: string, fields: Record<string, unknown>) => t.request('POST', path, { key: frank.key, body: item(fields) });
    const empty = (await post('/wallet-as-a-service/wallets', { walletName: 'empty "quoted" wallet' })).body.data.item;
    const full = (await post('/wallet-as-a-service/wallets', { walletName: 'full' })).body.data.item;
    expect((await post(`/wallet-as-a-service/wallets/${full.walletId}/ethereum/goerli/addresses`, { address: SAMPLE.evmAddress })).status).toBe(201);
    expect((await post(`/wallet-as-a-service/wallets/${full.walletId}/bitcoin/testnet/addresses`, { address: SAMPLE.btcTestnetAddress })).status).toBe(201);
    const db = t.app.database.db;
    await db.query(
      'test:tokens',
      `INSERT INTO wallet_token_balances (wallet_address_id, identifier, symbol, token_type, decimals, amount)
       SELECT a.id, v.identifier, v.symbol, 'ERC-20', 6, 1500000 FROM wallet_addresses a,
         (VALUES ('0x1111111111111111111111111111111111111111', 'ONE'), ('0x2222222222222222222222222222222222222222', 'TWO')) v (identifier, symbol)
       WHERE a.wallet_id = $1 AND a.blockchain = 'ethereum'`,
      [full.walletId],
    );
    await db.query(
      'test:nfts',
      `INSERT INTO wallet_nfts (wallet_address_id, identifier, token_id, symbol, token_type)
       SELECT a.id, '0x3333333333333333333333333333333333333333', v.token_id, 'NFT', 'ERC-721' FROM wallet_addresses a, (VALUES ('1'), ('2')) v (token_id)
       WHERE a.wallet_id = $1 AND a.blockchain = 'ethereum'`,
      [full.walletId],
    );
    const r = await t.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: frank.key });
    expect(r.status, r.text).toBe(200);
    expect(r.text).toBe(JSON.stringify(JSON.parse(r.text)));
    const [first, second] = r.body.data.items;
    expect(first).toEqual({ walletId: empty.walletId, walletName: 'empty "quoted" wallet', coins: [], fungibleTokens: [], nonFungibleTokens: [] });
    expect(second.coins.map((c: { blockchain: string }) => c.blockchain)).toEqual(['bitcoin', 'ethereum']);
    expect(second.fungibleTokens).toEqual([
      { amount: '1.5', blockchain: 'ethereum', network: 'goerli', identifier: '0x1111111111111111111111111111111111111111', symbol: 'ONE', type: 'ERC-20' },
      { amount: '1.5', blockchain: 'ethereum', network: 'goerli', identifier: '0x2222222222222222222222222222222222222222', symbol: 'TWO', type: 'ERC-20' },
    ]);
    expect(second.nonFungibleTokens.map((n: { tokenId: string }) => n.tokenId)).toEqual(['1', '2']);
    expect(Object.keys(second)).toEqual(['walletId', 'walletName', 'coins', 'fungibleTokens', 'nonFungibleTokens']);
    expect(Object.keys(second.coins[0])).toEqual(['blockchain', 'network', 'unit', 'confirmedBalance', 'totalReceived', 'totalSpent', 'openingBalance']);
  });

  it('3: 201 without callbackSecretKey when none was given', async () => {
    const r = await t.request('POST', internalPath('tron', 'nile'), { key: alice.key, body: item({ amountHigherThan: 0, callbackUrl: SAMPLE.callbackUrl }) });
    expect(r.status).toBe(201);
    expect(r.body.data.item).toEqual({ ...base, eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', amountHigherThan: 0 });
  });

  it('address-tokens-transactions-confirmed-each-confirmation: 200 with confirmationsCount (default 3, 1..100); no secret when none was given', async () => {
    const r = await t.request('POST', tokensEachPath('tron', 'nile'), {
      key: alice.key,
      body: item({ address: SAMPLE.tronAddress, callbackUrl: SAMPLE.callbackUrl }),
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.item).toEqual({
      ...base,
      eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
      address: SAMPLE.tronAddress,
      confirmationsCount: 3,
    });
    expect(r.headers.get('x-credits-consumed')).toBe('1000');
    const counted = await t.request('POST', tokensEachPath(), {
      key: alice.key,
      body: item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', confirmationsCount: 12 }),
    });
    expect(counted.status, counted.text).toBe(200);
    expect(counted.body.data.item).toMatchObject({ callbackSecretKey: 'k', confirmationsCount: 12 });
    const got = await t.request('GET', `/blockchain-events/subscriptions/${counted.body.data.item.referenceId}`, { key: alice.key });
    expect(got.body.data.item).toMatchObject({ confirmationsCount: 12, address: SAMPLE.evmAddress, blockchain: 'ethereum', network: 'goerli' });
    expect(got.body.data.item.receiveCallbackOn).toBeUndefined();
    for (const confirmationsCount of [0, 101, 2.5, '3']) {
      const bad = await t.request('POST', tokensEachPath(), {
        key: alice.key,
        body: item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, confirmationsCount, allowDuplicates: true }),
      });
      expect(bad.status, `${confirmationsCount}: ${bad.text}`).toBe(409);
      expect(bad.body.error.code).toBe('invalid_data');
    }
  });

  it('address-internal-transactions-confirmed-each-confirmation: 201 with confirmationsCount (default 3); secret and allowDuplicates required', async () => {
    const r = await t.request('POST', internalEachPath('tron', 'nile'), {
      key: alice.key,
      body: item({ address: SAMPLE.tronAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: false }),
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.item).toEqual({
      ...base,
      eventType: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
      callbackSecretKey: 'k',
      address: SAMPLE.tronAddress,
      confirmationsCount: 3,
    });
    expect(r.headers.get('x-credits-consumed')).toBe('1000');
    const missing = await t.request('POST', internalEachPath(), {
      key: alice.key,
      body: item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl }),
    });
    expect(missing.status, missing.text).toBe(409);
    expect(missing.body.error.code).toBe('missing_required_attributes');
  });

  it('address-coins-transactions-confirmed-each-confirmation: 201 with confirmationsCount (default 3); on every chain', async () => {
    const r = await t.request('POST', coinsEachPath('bitcoin', 'testnet'), {
      key: alice.key,
      body: item({ address: SAMPLE.btcTestnetAddress, callbackUrl: SAMPLE.callbackUrl }),
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.item).toEqual({
      ...base,
      eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
      callbackSecretKey: '',
      address: SAMPLE.btcTestnetAddress,
      confirmationsCount: 3,
    });
    expect(r.headers.get('x-credits-consumed')).toBe('1000');
    const xrp = await t.request('POST', coinsEachPath('xrp', 'testnet'), {
      key: alice.key,
      body: item({ address: 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh', callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', confirmationsCount: 7 }),
    });
    expect(xrp.status, xrp.text).toBe(201);
    expect(xrp.body.data.item).toMatchObject({ callbackSecretKey: 'k', confirmationsCount: 7 });
  });

  it('address-coins/tokens-transactions-unconfirmed: 201 with the address as given; duplicates refused; tokens on bitcoin (Omni), ethereum and ethereum-classic only', async () => {
    const btc = await t.request('POST', unconfirmedPath('coins', 'bitcoin', 'testnet'), {
      key: alice.key,
      body: item({ address: SAMPLE.btcTestnetAddress, callbackUrl: SAMPLE.callbackUrl }),
    });
    expect(btc.status, btc.text).toBe(201);
    expect(btc.body.data.item).toEqual({
      ...base,
      eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
      callbackSecretKey: '',
      address: SAMPLE.btcTestnetAddress,
    });
    expect(btc.headers.get('x-credits-consumed')).toBe('1000');
    const again = await t.request('POST', unconfirmedPath('coins', 'bitcoin', 'testnet'), {
      key: alice.key,
      body: item({ address: SAMPLE.btcTestnetAddress, callbackUrl: SAMPLE.callbackUrl }),
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('already_exists');
    const tokens = await t.request('POST', unconfirmedPath('tokens', 'ethereum-classic', 'mordor'), {
      key: alice.key,
      body: item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k' }),
    });
    expect(tokens.status, tokens.text).toBe(201);
    expect(tokens.body.data.item).toMatchObject({ eventType: 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED', callbackSecretKey: 'k', address: SAMPLE.evmAddress });
    const omni = await t.request('POST', unconfirmedPath('tokens', 'bitcoin', 'testnet'), {
      key: alice.key,
      body: item({ address: SAMPLE.btcTestnetAddress, callbackUrl: SAMPLE.callbackUrl }),
    });
    expect(omni.status, omni.text).toBe(201);
    expect(omni.body.data.item).toEqual({
      ...base,
      eventType: 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED',
      callbackSecretKey: '',
      address: SAMPLE.btcTestnetAddress,
    });
    const extra = await t.request('POST', unconfirmedPath('coins'), {
      key: alice.key,
      body: item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, receiveCallbackOn: 2 }),
    });
    expect(extra.body.error.code).toBe('extra_body_attributes');
  });

  it('block-mined: 200 without eventType, an empty secret when none was given', async () => {
    const r = await t.request('POST', blockMinedPath('litecoin', 'testnet'), { key: alice.key, body: item({ callbackUrl: SAMPLE.callbackUrl }) });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.item).toEqual({ ...base, callbackSecretKey: '' });
    expect(r.headers.get('x-credits-consumed')).toBe('1000');
  });

  it('block-height-reached: 201 without eventType, with blockHeightReached', async () => {
    const r = await t.request('POST', heightPath('tron', 'nile'), {
      key: alice.key,
      body: item({ blockHeightReached: 667_900, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k' }),
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.item).toEqual({ ...base, callbackSecretKey: 'k', blockHeightReached: 667_900 });
    expect(r.headers.get('x-credits-consumed')).toBe('10000');
  });

  it('reverted-block: 201 with eventType BLOCK_REVERTED; allowDuplicates as a boolean or the strings "true"/"false"; accepted on xrp', async () => {
    const r = await t.request('POST', revertedPath('xrp', 'testnet'), {
      key: alice.key,
      body: item({ callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: 'false' }),
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.item).toEqual({ ...base, eventType: 'BLOCK_REVERTED', callbackSecretKey: 'k' });
    expect(r.headers.get('x-credits-consumed')).toBe('1000');
    // "false" is false: a twin is refused; "true" lets it in.
    const twin = (allowDuplicates: unknown) =>
      t.request('POST', withContext(revertedPath('xrp', 'testnet')), {
        key: alice.key,
        body: item({ callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'other', allowDuplicates }),
      });
    expectError(await twin('false'), 409, 'already_exists');
    expectError(await twin(false), 409, 'already_exists');
    expect((await twin('true')).status).toBe(201);
    expect((await twin(true)).status).toBe(201);
  });

  it('409 already_exists for block events: same event, chain and callbackUrl (and height), per docs/reference/api.md#settled-duplicates', async () => {
    const bob = await t.customer({ name: 'bob-blocks' });
    const post = (path: string, fields: Record<string, unknown>) => t.request('POST', withContext(path), { key: bob.key, body: item(fields) });
    expect((await post(blockMinedPath(), { callbackUrl: SAMPLE.callbackUrl })).status).toBe(200);
    expectError(await post(blockMinedPath(), { callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'different' }), 409, 'already_exists');
    expect((await post(blockMinedPath('ethereum', 'mainnet'), { callbackUrl: SAMPLE.callbackUrl })).status).toBe(200); // another network
    expect((await post(blockMinedPath(), { callbackUrl: `${SAMPLE.callbackUrl}/2` })).status).toBe(200); // another callbackUrl
    expect((await post(heightPath(), { blockHeightReached: 5, callbackUrl: SAMPLE.callbackUrl })).status).toBe(201);
    expectError(await post(heightPath(), { blockHeightReached: 5, callbackUrl: SAMPLE.callbackUrl }), 409, 'already_exists');
    expect((await post(heightPath(), { blockHeightReached: 6, callbackUrl: SAMPLE.callbackUrl })).status).toBe(201); // another height
    expect((await post(revertedPath(), { callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k' })).status).toBe(201);
    expectError(await post(revertedPath(), { callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k' }), 409, 'already_exists');
    expect((await post(blockMinedPath(), { callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true })).status).toBe(200);
  });

  it('address-internal-transactions-confirmed: 200 with the address as spelled and receiveCallbackOn filled with the default 3; 1000 credits', async () => {
    const checksummed = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
    const r = await t.request('POST', internalAddressPath('ethereum-classic', 'mordor'), {
      key: alice.key,
      body: item({ address: checksummed, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 's3cret', allowDuplicates: false }),
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.item).toEqual({
      ...base,
      eventType: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
      callbackSecretKey: 's3cret',
      address: checksummed,
      receiveCallbackOn: 3,
    });
    expect(r.headers.get('x-credits-consumed')).toBe('1000');
    const tron = await t.request('POST', internalAddressPath('tron', 'nile'), {
      key: alice.key,
      body: item({ address: SAMPLE.tronAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: false, receiveCallbackOn: 20 }),
    });
    expect(tron.status, tron.text).toBe(200);
    expect(tron.body.data.item).toMatchObject({ address: SAMPLE.tronAddress, receiveCallbackOn: 20 });
  });

  it('address-internal-transactions-confirmed: callbackSecretKey and allowDuplicates are required (409 missing_required_attributes naming them)', async () => {
    const r = await t.request('POST', withContext(internalAddressPath()), {
      key: alice.key,
      body: item({ address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl }),
    });
    expectError(r, 409, 'missing_required_attributes', ['callbackSecretKey', 'allowDuplicates']);
  });

  it('tokens-transfers-for-specific-amount: 201 with contractAddress as spelled, no callbackSecretKey when none was given; 10000 credits', async () => {
    const checksummed = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
    const r = await t.request('POST', tokenAmountPath('binance-smart-chain', 'testnet'), {
      key: alice.key,
      body: item({ amountHigherThan: 250, contractAddress: checksummed, callbackUrl: SAMPLE.callbackUrl }),
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.item).toEqual({
      ...base,
      eventType: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
      amountHigherThan: 250,
      contractAddress: checksummed,
    });
    expect(r.headers.get('x-credits-consumed')).toBe('10000');
    const tron = await t.request('POST', tokenAmountPath('tron', 'nile'), {
      key: alice.key,
      body: item({ amountHigherThan: 0, contractAddress: SAMPLE.tronAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k' }),
    });
    expect(tron.status, tron.text).toBe(201);
    expect(tron.body.data.item).toMatchObject({ amountHigherThan: 0, contractAddress: SAMPLE.tronAddress, callbackSecretKey: 'k' });
  });

  it('409 already_exists for the internal address and token amount events (docs/reference/api.md#settled-duplicates: address and receiveCallbackOn; amount and contract)', async () => {
    const dave = await t.customer({ name: 'dave-internal' });
    const post = (path: string, fields: Record<string, unknown>) => t.request('POST', withContext(path), { key: dave.key, body: item(fields) });
    const internal = { address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: false };
    expect((await post(internalAddressPath(), internal)).status).toBe(200);
    // Another spelling of the same address is the same target.
    expectError(
      await post(internalAddressPath(), { ...internal, address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', callbackSecretKey: 'other' }),
      409,
      'already_exists',
    );
    expect((await post(internalAddressPath(), { ...internal, receiveCallbackOn: 5 })).status).toBe(200); // another receiveCallbackOn
    expect((await post(tokensPath(), { address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl })).status).toBe(201); // another event
    expect((await post(internalAddressPath(), { ...internal, allowDuplicates: true })).status).toBe(200);
    const amount = { amountHigherThan: 10, contractAddress: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl };
    expect((await post(tokenAmountPath(), amount)).status).toBe(201);
    expectError(await post(tokenAmountPath(), { ...amount, callbackSecretKey: 'different' }), 409, 'already_exists');
    expect((await post(tokenAmountPath(), { ...amount, amountHigherThan: 11 })).status).toBe(201); // another amount
    expect((await post(tokenAmountPath(), { ...amount, contractAddress: `0x${'12'.repeat(20)}` })).status).toBe(201); // another contract
    expect((await post(internalPath(), { amountHigherThan: 10, callbackUrl: SAMPLE.callbackUrl })).status).toBe(201); // the coin amount event is another
    expect((await post(tokenAmountPath(), { ...amount, allowDuplicates: true })).status).toBe(201);
  });

  it('list, get, activate and delete show internal address and token amount subscriptions', async () => {
    const erin = await t.customer({ name: 'erin-internal' });
    const created = [];
    for (const [path, fields] of [
      [internalAddressPath('tron', 'nile'), { address: SAMPLE.tronAddress, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: false }],
      [tokenAmountPath('tron', 'nile'), { amountHigherThan: 3, contractAddress: SAMPLE.tronAddress, callbackUrl: SAMPLE.callbackUrl }],
    ] as const) {
      created.push((await t.request('POST', path, { key: erin.key, body: item(fields) })).body.data.item);
    }
    const expected = created.map((c) => ({ ...c, blockchain: 'tron', network: 'nile' }));
    const list = await t.request('GET', '/blockchain-events/tron/nile/subscriptions', { key: erin.key });
    expect(list.body.data.items).toEqual(expected);
    for (const [i, e] of expected.entries()) {
      const id = created[i].referenceId;
      expect((await t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: erin.key })).body.data.item).toEqual(e);
      expect((await t.request('POST', `/blockchain-events/subscriptions/${id}/activate`, { key: erin.key })).body.data.item).toEqual(e);
      expect((await t.request('DELETE', `/blockchain-events/tron/nile/subscriptions/${id}`, { key: erin.key })).body.data.item).toEqual(e);
    }
  });

  it('list, get, activate and delete show block subscriptions with their eventType (and blockHeightReached)', async () => {
    const carol = await t.customer({ name: 'carol-blocks' });
    const created = [];
    for (const [path, fields] of [
      [blockMinedPath('dash', 'testnet'), { callbackUrl: SAMPLE.callbackUrl }],
      [heightPath('dash', 'testnet'), { blockHeightReached: 42, callbackUrl: SAMPLE.callbackUrl }],
      [revertedPath('dash', 'testnet'), { callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k' }],
    ] as const) {
      created.push((await t.request('POST', path, { key: carol.key, body: item(fields) })).body.data.item);
    }
    const chain = { blockchain: 'dash', network: 'testnet' };
    const expected = [
      { ...created[0], eventType: 'BLOCK_MINED', ...chain },
      { ...created[1], eventType: 'BLOCK_HEIGHT_REACHED', ...chain },
      { ...created[2], ...chain },
    ];
    expect(expected[1]).toMatchObject({ blockHeightReached: 42 });
    const list = await t.request('GET', '/blockchain-events/dash/testnet/subscriptions', { key: carol.key });
    expect(list.body.data.items).toEqual(expected);
    for (const [i, e] of expected.entries()) {
      const id = created[i].referenceId;
      expect((await t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: carol.key })).body.data.item).toEqual(e);
      expect((await t.request('POST', `/blockchain-events/subscriptions/${id}/activate`, { key: carol.key })).body.data.item).toEqual(e);
      expect((await t.request('DELETE', `/blockchain-events/dash/testnet/subscriptions/${id}`, { key: carol.key })).body.data.item).toEqual(e);
    }
  });

  it('address-coins-transactions-confirmed: 200, answers callbackUrl whichever spelling was sent (callbackURL or callbackUrl), also in bulk; receiveCallbackOn defaulted, 1000 credits', async () => {
    const spelled = '0x5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED';
    const r = await t.request('POST', coinsPath(), {
      key: alice.key,
      body: item({ address: spelled, callbackURL: SAMPLE.callbackUrl, allowDuplicates: true }),
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.item).toEqual({
      ...base,
      eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED',
      callbackSecretKey: '',
      address: spelled,
      receiveCallbackOn: 3,
    });
    expect(r.body.data.item.callbackURL).toBeUndefined();
    expect(r.headers.get('x-credits-consumed')).toBe('1000');
    const bulk = await t.request('POST', `${coinsPath()}/bulk`, {
      key: alice.key,
      body: {
        data: {
          items: [
            { address: spelled, callbackURL: SAMPLE.callbackUrl, allowDuplicates: true },
            { address: spelled, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true },
          ],
        },
      },
    });
    expect(bulk.status, bulk.text).toBe(200);
    for (const answer of bulk.body.data.items) {
      expect(answer.status).toBe('created');
      expect(answer.item.callbackUrl).toBe(SAMPLE.callbackUrl);
      expect(answer.item.callbackURL).toBeUndefined();
    }
    const r2 = await t.request('POST', coinsPath('bitcoin', 'testnet'), {
      key: alice.key,
      body: item({
        address: SAMPLE.btcTestnetAddress,
        callbackUrl: SAMPLE.callbackUrl,
        callbackSecretKey: 'k',
        receiveCallbackOn: 12,
        allowDuplicates: true,
      }),
    });
    expect(r2.status, r2.text).toBe(200);
    expect(r2.body.data.item).toEqual({
      ...base,
      eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED',
      callbackSecretKey: 'k',
      address: SAMPLE.btcTestnetAddress,
      receiveCallbackOn: 12,
    });
    // get says callbackUrl whatever the spelling of the create (the manage items of the contract).
    const got = await t.request('GET', `/blockchain-events/subscriptions/${r.body.data.item.referenceId}`, { key: alice.key });
    expect(got.body.data.item).toMatchObject({
      callbackUrl: SAMPLE.callbackUrl,
      blockchain: 'ethereum',
      network: 'goerli',
      address: spelled,
      receiveCallbackOn: 3,
    });
    expect(got.body.data.item.callbackURL).toBeUndefined();
  });

  it('address-coins-transactions-confirmed: callbackURL or callbackUrl, exactly one; none is 409 missing_required_attributes, both 409 invalid_data; nothing charged', async () => {
    const poorish = await t.customer({ name: 'coins-url-rules', credits: 5000n });
    const post = (fields: Record<string, unknown>) =>
      t.request('POST', withContext(coinsPath('xrp', 'testnet')), {
        key: poorish.key,
        body: item({ address: 'rPT1Sjq2YGrBMTttX4GZHjKu9dyfzbpAYe', ...fields }),
      });
    expectError(await post({}), 409, 'missing_required_attributes', ['callbackURL']);
    expectError(await post({ callbackURL: SAMPLE.callbackUrl, callbackUrl: SAMPLE.callbackUrl }), 409, 'invalid_data', ['callbackURL', 'callbackUrl']);
    expectError(await post({ callbackURL: 'https://unverified.example.net/x' }), 409, 'callback_url_not_verified');
    const ok = await post({ callbackUrl: SAMPLE.callbackUrl });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.headers.get('x-credits-available')).toBe('4000');
  });

  it('coins-transactions-for-specific-amount: 201, secret absent when none was given, 10000 credits; every chain', async () => {
    const r = await t.request('POST', coinsAmountPath('bitcoin-cash', 'testnet'), {
      key: alice.key,
      body: item({ amountHigherThan: 2, callbackUrl: SAMPLE.callbackUrl }),
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.item).toEqual({ ...base, eventType: 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', amountHigherThan: 2 });
    expect(r.headers.get('x-credits-consumed')).toBe('10000');
    for (const [chain, network] of [
      ['tron', 'nile'],
      ['xrp', 'testnet'],
      ['zcash', 'testnet'],
    ]) {
      const s = await t.request('POST', coinsAmountPath(chain, network), {
        key: alice.key,
        body: item({ amountHigherThan: 0, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 'k', allowDuplicates: true }),
      });
      expect(s.status, s.text).toBe(201);
      expect(s.body.data.item.callbackSecretKey).toBe('k');
    }
  });

  it('409 already_exists for coin events: same address (and receiveCallbackOn) or amount, chain and callbackUrl, whichever spelling', async () => {
    const dave = await t.customer({ name: 'dave-coins' });
    const post = (path: string, fields: Record<string, unknown>) => t.request('POST', withContext(path), { key: dave.key, body: item(fields) });
    expect((await post(coinsPath(), { address: SAMPLE.evmAddress, callbackURL: SAMPLE.callbackUrl })).status).toBe(200);
    // The same address in another case, the URL in the other spelling: the same subscription.
    expectError(
      await post(coinsPath(), { address: SAMPLE.evmAddress.toUpperCase().replace('0X', '0x'), callbackUrl: SAMPLE.callbackUrl }),
      409,
      'already_exists',
    );
    expect((await post(coinsPath(), { address: SAMPLE.evmAddress, callbackURL: `${SAMPLE.callbackUrl}/2` })).status).toBe(200);
    expect((await post(coinsPath(), { address: SAMPLE.evmAddress, callbackURL: SAMPLE.callbackUrl, allowDuplicates: true })).status).toBe(200);
    expect((await post(coinsAmountPath(), { amountHigherThan: 5, callbackUrl: SAMPLE.callbackUrl })).status).toBe(201);
    expectError(await post(coinsAmountPath(), { amountHigherThan: 5, callbackUrl: SAMPLE.callbackUrl }), 409, 'already_exists');
    expect((await post(coinsAmountPath(), { amountHigherThan: 6, callbackUrl: SAMPLE.callbackUrl })).status).toBe(201);
    // The internal amount event with the same threshold is another event type.
    expect((await post(internalPath(), { amountHigherThan: 5, callbackUrl: SAMPLE.callbackUrl })).status).toBe(201);
  });

  it('get, activate and delete return the item with blockchain and network; delete makes it gone', async () => {
    const created = await t.request('POST', txMinedPath('xrp', 'testnet'), {
      key: alice.key,
      body: item({ transactionId: 'AB'.repeat(32), callbackUrl: SAMPLE.callbackUrl }),
    });
    const id = created.body.data.item.referenceId;
    const expected = { ...created.body.data.item, blockchain: 'xrp', network: 'testnet' };
    expect((await t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: alice.key })).body.data.item).toEqual(expected);
    const activated = await t.request('POST', `/blockchain-events/subscriptions/${id}/activate`, { key: alice.key });
    expect(activated.status).toBe(201);
    expect(activated.body.data.item).toEqual(expected);
    const deleted = await t.request('DELETE', `/blockchain-events/xrp/testnet/subscriptions/${id}`, { key: alice.key });
    expect(deleted.body.data.item).toEqual(expected);
    expect((await t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: alice.key })).status).toBe(404);
  });

  it('an inactive subscription shows its deactivation reasons, and activate turns it back on', async () => {
    const created = await t.request('POST', txMinedPath('dogecoin', 'testnet'), {
      key: alice.key,
      body: item({ transactionId: 'ef'.repeat(32), callbackUrl: SAMPLE.callbackUrl }),
    });
    const id = created.body.data.item.referenceId;
    // Delivery deactivates subscriptions (callback_url_gone, maximum_retry_attempts_reached); here the test plays its part.
    await t.app.database.db.query('test:deactivate', `UPDATE subscriptions SET is_active = false, deactivation_reasons = $2 WHERE id = $1`, [
      id,
      JSON.stringify([{ reason: 'maximum_retry_attempts_reached', timestamp: 1700000000 }]),
    ]);
    const got = await t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: alice.key });
    expect(got.body.data.item).toMatchObject({ isActive: false, deactivationReasons: [{ reason: 'maximum_retry_attempts_reached', timestamp: 1700000000 }] });
    // A list page reads its own columns (store/subscriptions.ts, SHOWN_COLUMNS): the same item as the get.
    let listed: unknown;
    for (let offset = 0; listed === undefined; offset += 50) {
      const page = await t.request('GET', `/blockchain-events/dogecoin/testnet/subscriptions?limit=50&offset=${offset}`, { key: alice.key });
      expect(page.body.data.items.length, 'the subscription is on a page of the list').toBeGreaterThan(0);
      listed = page.body.data.items.find((i: { referenceId: string }) => i.referenceId === id);
    }
    expect(listed).toEqual(got.body.data.item);
    const activated = await t.request('POST', `/blockchain-events/subscriptions/${id}/activate`, { key: alice.key });
    expect(activated.body.data.item.isActive).toBe(true);
    expect(activated.body.data.item.deactivationReasons).toBeUndefined();
  });

  it('409 callback_url_not_verified names callbackUrl in its details also when the domain went away: activate and test-callback', async () => {
    const dave = await t.customer({ name: 'domain-gone', domains: ['gone.example.com'] });
    const created = await t.request('POST', txMinedPath('dogecoin', 'testnet'), {
      key: dave.key,
      body: item({ transactionId: 'ab'.repeat(32), callbackUrl: 'https://gone.example.com/cb' }),
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.data.item.referenceId;
    expect((await t.request('DELETE', '/blockchain-events/callback-domains/gone.example.com', { key: dave.key })).status).toBe(200);
    await t.app.database.db.query('test:deactivate-no-reasons', 'UPDATE subscriptions SET is_active = false WHERE id = $1', [id]);
    for (const path of [`/blockchain-events/subscriptions/${id}/activate`, `/blockchain-events/subscriptions/${id}/test-callback`]) {
      const r = await t.request('POST', withContext(path), { key: dave.key });
      expectError(r, 409, 'callback_url_not_verified', ['callbackUrl']);
      expect(r.body.error.message).toContain("'gone.example.com' is no longer a verified callback domain");
    }
  });
});

describe('recovery and secret rotation (issue 14): errors in the envelope', () => {
  const post = (path: string, body: unknown, key = alice.key) => t.request('POST', withContext(path), { key, body });
  const now = () => Math.floor(Date.now() / 1000);

  it("404 resource_not_found for an unknown, malformed or other customer's referenceId or recovery id", async () => {
    const bob = await t.customer({ name: `bob-${randomUUID()}` });
    for (const id of [randomUUID(), 'not-a-uuid']) {
      expectError(await post(`/blockchain-events/subscriptions/${id}/rotate-secret`, item({ callbackSecretKey: 'x' })), 404, 'resource_not_found');
      expectError(await post(`/blockchain-events/subscriptions/${id}/recover`, item({ since: hourAgo() })), 404, 'resource_not_found');
      expectError(await t.request('GET', withContext(`/blockchain-events/recoveries/${id}`), { key: alice.key }), 404, 'resource_not_found');
    }
    // Alice's subscription and recovery do not exist for Bob (and Bob pays nothing for asking).
    expectError(
      await post(`/blockchain-events/subscriptions/${subscriptionId}/rotate-secret`, item({ callbackSecretKey: 'x' }), bob.key),
      404,
      'resource_not_found',
    );
    expectError(await post(`/blockchain-events/subscriptions/${subscriptionId}/recover`, item({ since: hourAgo() }), bob.key), 404, 'resource_not_found');
    expectError(await t.request('GET', withContext(`/blockchain-events/recoveries/${recoveryId}`), { key: bob.key }), 404, 'resource_not_found');
    expectError(
      await t.request('POST', withContext(`/blockchain-events/subscriptions/${subscriptionId}/activate`, `&recoverSince=${hourAgo()}`), { key: bob.key }),
      404,
      'resource_not_found',
    );
  });

  it('409 invalid_data for a window in the future or ending before it starts, a non-https callbackUrl, an empty or over-long secret, a too long overlap', async () => {
    const recover = `/blockchain-events/subscriptions/${subscriptionId}/recover`;
    expectError(await post(recover, item({ since: now() + 3600 })), 409, 'invalid_data', ['since']);
    expectError(await post(recover, item({ since: hourAgo(), until: hourAgo() - 10 })), 409, 'invalid_data', ['until']);
    expectError(await post(recover, item({ since: -1 })), 409, 'invalid_data', ['since']);
    expectError(await post(recover, item({ since: 'yesterday' })), 409, 'invalid_data', ['since']);
    expectError(await post(recover, item({ since: hourAgo(), includeCancelled: 'yes' })), 409, 'invalid_data', ['includeCancelled']);
    expectError(
      await post('/blockchain-events/callbacks/recover', item({ callbackUrl: 'http://hooks.example.com/x', since: hourAgo() })),
      409,
      'invalid_data',
      ['callbackUrl'],
    );
    expectError(
      await post('/blockchain-events/callbacks/recover', item({ callbackUrl: SAMPLE.callbackUrl, since: hourAgo(), eventType: 'NOPE' })),
      409,
      'invalid_data',
      ['eventType'],
    );
    const rotate = `/blockchain-events/subscriptions/${subscriptionId}/rotate-secret`;
    expectError(await post(rotate, item({ callbackSecretKey: '' })), 409, 'invalid_data', ['callbackSecretKey']);
    expectError(await post(rotate, item({ callbackSecretKey: 'x'.repeat(513) })), 409, 'invalid_data', ['callbackSecretKey']);
    expectError(await post(rotate, item({ callbackSecretKey: 'x', overlapSeconds: 8 * 24 * 3600 })), 409, 'invalid_data', ['overlapSeconds']);
    expectError(await post(rotate, item({ callbackSecretKey: 'x', overlapSeconds: -1 })), 409, 'invalid_data', ['overlapSeconds']);
  });

  it('rotate-secret answers the item with the new secret and until when the old one still signs; costs 5 credits', async () => {
    const before = Math.floor(Date.now() / 1000);
    const r = await post(`/blockchain-events/subscriptions/${subscriptionId}/rotate-secret`, item({ callbackSecretKey: 'new-one', overlapSeconds: 600 }));
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-credits-consumed')).toBe('5');
    expect(r.body.data.item).toMatchObject({ referenceId: subscriptionId, callbackSecretKey: 'new-one' });
    // The contract test's subscription had a secret from the rotation rows above, or none: either way a number or null.
    const until = r.body.data.item.previousSecretValidUntil;
    if (until !== null) expect(until).toBeGreaterThanOrEqual(before + 600);
    const again = await post(`/blockchain-events/subscriptions/${subscriptionId}/rotate-secret`, item({ callbackSecretKey: 'newer', overlapSeconds: 0 }));
    expect(again.body.data.item.previousSecretValidUntil).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  it('recover answers 202 with the job, and GET recoveries shows its progress; an inactive subscription is 409 (activate with recoverSince instead)', async () => {
    const r = await post(`/blockchain-events/subscriptions/${subscriptionId}/recover`, item({ since: hourAgo(), includeCancelled: true }));
    expect(r.status, r.text).toBe(202);
    expect(r.headers.get('x-credits-consumed')).toBe('0');
    expect(r.body.data.item).toMatchObject({ referenceId: subscriptionId, includeCancelled: true, found: 0, queued: 0 });
    const got = await t.request('GET', withContext(`/blockchain-events/recoveries/${r.body.data.item.recoveryId}`), { key: alice.key });
    expect(got.status, got.text).toBe(200);
    expect(got.body.data.item).toMatchObject({ recoveryId: r.body.data.item.recoveryId, found: 0, queued: 0, pending: 0, delivered: 0, failed: 0 });

    const carol = await t.customer({ name: `carol-${randomUUID()}` });
    const created = await t.request('POST', txMinedPath(), { key: carol.key, body: item({ transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl }) });
    const id = created.body.data.item.referenceId;
    await t.app.database.db.query('test:issue14-deactivate', 'UPDATE subscriptions SET is_active = false WHERE id = $1', [id]);
    expectError(await post(`/blockchain-events/subscriptions/${id}/recover`, item({ since: hourAgo() }), carol.key), 409, 'invalid_data', ['referenceId']);
    const activated = await t.request('POST', withContext(`/blockchain-events/subscriptions/${id}/activate`, `&recoverSince=${hourAgo()}`), { key: carol.key });
    expect(activated.status, activated.text).toBe(201);
    expect(activated.body.data.item.isActive).toBe(true);
    expect(activated.body.data.recoveryId).toMatch(/^[0-9a-f-]{36}$/);
    expectError(
      await t.request('POST', withContext(`/blockchain-events/subscriptions/${id}/activate`, '&recoverSince=soon'), { key: carol.key }),
      409,
      'invalid_data',
      ['recoverSince'],
    );
  });

  it('402 when the credits do not cover one recovered callback: nothing started; activate with recoverSince is refused whole', async () => {
    const dave = await t.customer({ name: `dave-${randomUUID()}`, credits: 1004n });
    const created = await t.request('POST', txMinedPath(), { key: dave.key, body: item({ transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl }) });
    expect(created.status, created.text).toBe(200);
    const id = created.body.data.item.referenceId;
    // 4 credits left: less than one callback's 5.
    expectError(await post(`/blockchain-events/subscriptions/${id}/recover`, item({ since: hourAgo() }), dave.key), 402, 'insufficient_credits');
    expectError(
      await post('/blockchain-events/callbacks/recover', item({ callbackUrl: SAMPLE.callbackUrl, since: hourAgo() }), dave.key),
      402,
      'insufficient_credits',
    );
    const jobs = await t.app.database.db.query<{ n: number }>('test:issue14-count', 'SELECT count(*)::int AS n FROM recoveries WHERE customer_id = $1', [
      dave.id,
    ]);
    expect(jobs[0]?.n).toBe(0);
    await t.app.database.db.query('test:issue14-deactivate', 'UPDATE subscriptions SET is_active = false WHERE id = $1', [id]);
    await t.app.database.db.query('test:issue14-credits', 'UPDATE customers SET credits = 9 WHERE id = $1', [dave.id]);
    // 9 covers the activation (5) but not a callback beyond it: refused whole, still inactive, nothing charged.
    expectError(
      await t.request('POST', withContext(`/blockchain-events/subscriptions/${id}/activate`, `&recoverSince=${hourAgo()}`), { key: dave.key }),
      402,
      'insufficient_credits',
    );
    const [row] = await t.app.database.db.query<{ is_active: boolean; credits: string }>(
      'test:issue14-state',
      'SELECT s.is_active, c.credits FROM subscriptions s JOIN customers c ON c.id = s.customer_id WHERE s.id = $1',
      [id],
    );
    expect(row).toEqual({ is_active: false, credits: '9' });
  });
});

describe('hostile input found by the fuzz test, pinned', () => {
  it('a NUL character in any string is invalid_data naming the attribute, never a database error', async () => {
    const r = await t.request('POST', withContext('/wallet-as-a-service/wallets'), { key: alice.key, body: item({ walletName: 'a\u0000b' }) });
    expectError(r, 409, 'invalid_data', ['walletName']);
    const deep = await t.request('POST', withContext(txMinedPath()), {
      key: alice.key,
      body: item({ transactionId: SAMPLE.evmTx, callbackUrl: `${SAMPLE.callbackUrl}?x\u0000`, callbackSecretKey: '\u0000' }),
    });
    expectError(deep, 409, 'invalid_data', ['callbackUrl', 'callbackSecretKey']);
    expectError(await t.request('DELETE', withContext('/blockchain-events/callback-domains/%00'), { key: alice.key }), 400, 'uri_not_found');
  });

  it('a callbackUrl with control characters (CR, LF, tab) is refused naming callbackUrl, not stored raw; single and bulk', async () => {
    const grace = await t.customer({ name: 'control-characters' });
    const urls = [`${SAMPLE.callbackUrl}\r\nX-Injected: 1`, `${SAMPLE.callbackUrl}/a\nb`, `${SAMPLE.callbackUrl}/\ta`, `${SAMPLE.callbackUrl}/\u0085`];
    for (const callbackUrl of urls) {
      const r = await t.request('POST', withContext(txMinedPath()), { key: grace.key, body: item({ transactionId: SAMPLE.evmTx, callbackUrl }) });
      expectError(r, 409, 'invalid_data', ['callbackUrl']);
      expect(r.body.error.message).toMatch(/^The callbackUrl contains a control character \(U\+00(0D|0A|09|85), at position \d+\)/);
      const coins = await t.request('POST', withContext(coinsPath()), { key: grace.key, body: item({ address: SAMPLE.evmAddress, callbackURL: callbackUrl }) });
      expectError(coins, 409, 'invalid_data', ['callbackUrl']);
    }
    const bulk = await t.request('POST', `${txMinedPath()}/bulk`, {
      key: grace.key,
      body: { data: { items: urls.map((callbackUrl) => ({ transactionId: SAMPLE.evmTx, callbackUrl })) } },
    });
    expect(bulk.body.data).toMatchObject({ created: 0, failed: urls.length });
    const listed = await t.request('GET', '/blockchain-events/subscriptions', { key: grace.key });
    expect(listed.body.data.total).toBe(0);
  });

  it.each(['1e21', '18446744073709551616', '1e308'])('offset=%s is invalid_pagination', async (offset) => {
    expectError(
      await t.request('GET', withContext(`/wallet-as-a-service/wallets/all-assets?offset=${offset}`), { key: alice.key }),
      400,
      'invalid_pagination',
      ['offset'],
    );
  });

  it.each(['/wallet-as-a-service/wallets/%', '/wallet-as-a-service/wallets/%ff%fe', `/blockchain-events/subscriptions/${'a'.repeat(501)}`])(
    '%s is uri_not_found in the envelope',
    async (path) => {
      const r = await t.request('GET', withContext(path), { key: alice.key });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('uri_not_found');
      expect(r.body.requestId).toMatch(/^[0-9a-f]{24}$/);
      expect(r.headers.get('x-request-id')).toBe(r.body.requestId);
    },
  );
});

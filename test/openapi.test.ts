/**
 * The OpenAPI document (/openapi.json) against the server that serves it: a valid OpenAPI 3 document
 * (@apidevtools/swagger-parser), each endpoint offering exactly the chains it accepts, every error
 * status with the contract's error envelope, the fields the contract always sends marked required,
 * and real answers of every endpoint (successes and errors) valid against the document's schema for
 * their path, method and status.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import SwaggerParser from '@apidevtools/swagger-parser';
import AjvModule from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADDRESS_READ_CHAINS, CALLBACK_DATA_CHAINS } from '../src/api/routes/callback-data.ts';
import { loadConfig } from '../src/config/config.ts';
import { signCallback } from '../src/delivery/signing.ts';
import { callbackBody } from '../src/domain/callbacks.ts';
import { BLOCKCHAINS, CALLBACK_EVENT_TYPES, CHAINS, EVENT_BLOCKCHAINS, EVENT_TYPES, NETWORKS } from '../src/domain/chains.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { tripBreaker } from '../src/store/chain-holds.ts';
import { saveCursor } from '../src/store/chain-state.ts';
import { createOperatorToken } from '../src/store/operator-tokens.ts';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer, type TestResponse } from './harness.ts';
import { startTestDns, type TestDns } from './support/dns.ts';
import { sendEth } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { startFakeXrpDriver } from './support/fake-rippled.ts';
import { startFakeTronDriver } from './support/fake-tron-node.ts';
import { startFakeUtxoDriver } from './support/fake-utxo-node.ts';
import { testPublicKey } from './support/hd-keys.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const Ajv = AjvModule.default;
const FILE_PATH = '/.well-known/blockchain-events-verification.txt';
const SUBSCRIPTIONS = '/blockchain-events/{blockchain}/{network}/subscriptions';

// biome-ignore lint/suspicious/noExplicitAny: the document is arbitrary JSON
type Json = any;

let t: TestApp;
let receiver: Receiver;
let dns: TestDns;
let doc: Json;
// Chains followed, for the Callback Data reads: a real EVM node and a fake Bitcoin Core.
let evm: EvmNode;
let btc: Awaited<ReturnType<typeof startFakeUtxoDriver>>;
let xrp: Awaited<ReturnType<typeof startFakeXrpDriver>>;
let tron: Awaited<ReturnType<typeof startFakeTronDriver>>;

beforeAll(async () => {
  receiver = await startReceiver({ hostnames: ['localhost', 'verify.test'] });
  dns = await startTestDns();
  for (const host of ['localhost', 'verify.test']) dns.set(host, { A: ['127.0.0.1'] });
  dns.set('unproven.test', { A: ['127.0.0.1'] });
  [evm, btc, xrp, tron] = await Promise.all([startEvmNode({ automine: true }), startFakeUtxoDriver('bitcoin'), startFakeXrpDriver(), startFakeTronDriver()]);
  const follow = { pollIntervalMs: 50, concurrency: 4, requestTimeoutMs: 2000 };
  t = await startTestApp({
    chains: [
      { blockchain: 'ethereum', network: 'goerli', rpcUrl: evm.url, ...follow },
      { blockchain: 'bitcoin', network: 'testnet', rpcUrl: btc.rpcUrl, ...btc.chainConfig, ...follow },
      { blockchain: 'xrp', network: 'testnet', rpcUrl: xrp.rpcUrl, ...xrp.chainConfig, ...follow },
      { blockchain: 'tron', network: 'nile', rpcUrl: tron.rpcUrl, ...tron.chainConfig, ...follow },
    ],
    domainVerificationPort: receiver.port,
    delivery: {
      ...loadConfig({}, {}).delivery,
      allowNetworks: ['127.0.0.1/32', '::1/128'],
      caFile: writeCaFile(receiver.caPem),
      dnsServers: [dns.address],
      pollIntervalMs: 20,
    },
  });
  const res = await t.request('GET', '/openapi.json');
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await dns?.close();
  await evm?.close();
  await btc?.close();
  await xrp?.close();
  await tron?.close();
});

// --- the document, read as a client reads it ------------------------------------------------------

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  op: Json;
}

function operations(): Operation[] {
  const list: Operation[] = [];
  for (const [template, methods] of Object.entries<Json>(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    for (const [method, op] of Object.entries<Json>(methods)) list.push({ method: method.toUpperCase(), template, pattern, op });
  }
  return list;
}

/** The operation a request is answered by: the matching template with the fewest parameters (literal segments win, as in the router). */
function operationOf(method: string, path: string): Operation | undefined {
  const candidates = operations().filter((o) => o.method === method && o.pattern.test(path.split('?')[0] ?? ''));
  return candidates.sort((a, b) => a.template.split('{').length - b.template.split('{').length)[0];
}

function responseSchema(op: Json, status: number): Json {
  return op.responses[String(status)]?.content?.['application/json']?.schema;
}

function parameter(op: Json, name: string): Json {
  return op.parameters.find((p: Json) => p.name === name);
}

/**
 * OpenAPI schema -> JSON Schema for Ajv: `nullable` (OpenAPI 3.0; Ajv knows it, but not together with
 * `enum`), and objects closed, so that an answer with a field the document does not describe fails too.
 */
function strictJsonSchema(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(strictJsonSchema);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'example' ? v : strictJsonSchema(v);
  if (out.type === 'object' && out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  if (out.nullable === true && Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  return out;
}

const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);

/** The validator of a schema of the document, compiled once (the walk below validates hundreds of answers). */
const validators = new WeakMap<object, ReturnType<typeof ajv.compile>>();
function validatorOf(schema: Json): ReturnType<typeof ajv.compile> {
  let validate = validators.get(schema);
  if (!validate) {
    validate = ajv.compile(strictJsonSchema(schema));
    validators.set(schema, validate);
  }
  return validate;
}

/** Operation key -> statuses answered during the walk. */
const seen = new Map<string, Set<number>>();

/** A real request whose answer must be described by the document: path, method, status and body. */
async function call(
  method: string,
  path: string,
  options: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<TestResponse> {
  const res = await t.request(method, path, options);
  const found = operationOf(method, path);
  expect(found, `${method} ${path} is not in the document`).toBeDefined();
  const { template, op } = found as Operation;
  const schema = responseSchema(op, res.status);
  expect(schema, `${method} ${template} answered ${res.status} (${res.text.slice(0, 200)}), a status the document does not list`).toBeDefined();
  const validate = validatorOf(schema);
  const valid = validate(res.body);
  expect(valid, `${method} ${path} ${res.status}: ${JSON.stringify(validate.errors)} in ${res.text.slice(0, 400)}`).toBe(true);
  const key = `${method} ${template}`;
  seen.set(key, (seen.get(key) ?? new Set()).add(res.status));
  return res;
}

// --- the document itself ----------------------------------------------------------------------------

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document (swagger-parser)', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
  });

  it('offers on each endpoint exactly the blockchains and networks the endpoint accepts', async () => {
    const expected: Record<string, readonly string[]> = {
      [`POST ${SUBSCRIPTIONS}/transaction-mined`]: EVENT_BLOCKCHAINS.TRANSACTION_MINED,
      [`POST ${SUBSCRIPTIONS}/address-tokens-transactions-confirmed`]: ['bitcoin', 'ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
      [`POST ${SUBSCRIPTIONS}/internal-transactions-for-specific-amount`]: ['ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
      [`POST ${SUBSCRIPTIONS}/block-mined`]: BLOCKCHAINS,
      [`POST ${SUBSCRIPTIONS}/block-height-reached`]: BLOCKCHAINS,
      [`POST ${SUBSCRIPTIONS}/reverted-block`]: BLOCKCHAINS,
      [`POST ${SUBSCRIPTIONS}/address-coins-transactions-confirmed`]: BLOCKCHAINS,
      [`POST ${SUBSCRIPTIONS}/coins-transactions-for-specific-amount`]: BLOCKCHAINS,
      [`POST ${SUBSCRIPTIONS}/address-coins-transactions-confirmed-each-confirmation`]: BLOCKCHAINS,
      [`POST ${SUBSCRIPTIONS}/address-tokens-transactions-confirmed-each-confirmation`]: [
        'bitcoin',
        'ethereum',
        'ethereum-classic',
        'binance-smart-chain',
        'tron',
      ],
      [`POST ${SUBSCRIPTIONS}/address-internal-transactions-confirmed`]: ['ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
      [`POST ${SUBSCRIPTIONS}/tokens-transfers-for-specific-amount`]: ['ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
      [`POST ${SUBSCRIPTIONS}/address-internal-transactions-confirmed-each-confirmation`]: ['ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
      // docs/reference/api.md#settled-statuses-chains-and-prices (tokens on bitcoin: Omni Core's pending transactions).
      [`POST ${SUBSCRIPTIONS}/address-coins-transactions-unconfirmed`]: [
        'bitcoin',
        'bitcoin-cash',
        'litecoin',
        'dogecoin',
        'dash',
        'zcash',
        'ethereum',
        'ethereum-classic',
        'binance-smart-chain',
      ],
      [`POST ${SUBSCRIPTIONS}/address-tokens-transactions-unconfirmed`]: ['bitcoin', 'ethereum', 'ethereum-classic'],
      [`GET ${SUBSCRIPTIONS}`]: BLOCKCHAINS,
      [`DELETE ${SUBSCRIPTIONS}/{referenceId}`]: BLOCKCHAINS,
      'POST /wallet-as-a-service/wallets/{walletId}/{blockchain}/{network}/addresses': BLOCKCHAINS,
      'DELETE /wallet-as-a-service/wallets/{walletId}/{blockchain}/{network}/addresses/{address}': BLOCKCHAINS,
      'GET /blockchain-events/{blockchain}/{network}/addresses/{address}': ADDRESS_READ_CHAINS,
      'GET /blockchain-events/{blockchain}/{network}/blocks/hash/{blockHash}': CALLBACK_DATA_CHAINS,
      'GET /blockchain-events/{blockchain}/{network}/blocks/height/{blockHeight}': CALLBACK_DATA_CHAINS,
      'GET /blockchain-events/{blockchain}/{network}/transactions/{transactionId}': CALLBACK_DATA_CHAINS,
      'GET /operator/chains/{blockchain}/{network}/lag': BLOCKCHAINS,
      'POST /operator/chains/{blockchain}/{network}/reset': BLOCKCHAINS,
      'POST /operator/chains/{blockchain}/{network}/release': BLOCKCHAINS,
      'PUT /account/confirmation-policies/{blockchain}/{network}': BLOCKCHAINS,
      'DELETE /account/confirmation-policies/{blockchain}/{network}': BLOCKCHAINS,
    };
    // Each create endpoint's bulk form offers the same chains.
    for (const [k, chains] of Object.entries(expected)) if (k.startsWith(`POST ${SUBSCRIPTIONS}/`)) expected[`${k}/bulk`] = chains;
    // docs/concepts/wallet-keys.md: the Bitcoin family and the account chains' BIP44 keys, not xrp; no bulk form.
    expected[`POST ${SUBSCRIPTIONS}/xpub-coins-transactions-confirmed`] = [
      'bitcoin',
      'bitcoin-cash',
      'litecoin',
      'dogecoin',
      'dash',
      'zcash',
      'ethereum',
      'ethereum-classic',
      'binance-smart-chain',
      'tron',
    ];
    // The mempool event: the Bitcoin family and the EVM chains (not tron: its pending pool is not read).
    expected[`POST ${SUBSCRIPTIONS}/xpub-coins-transactions-unconfirmed`] = [
      'bitcoin',
      'bitcoin-cash',
      'litecoin',
      'dogecoin',
      'dash',
      'zcash',
      'ethereum',
      'ethereum-classic',
      'binance-smart-chain',
    ];
    // A wallet's extended keys: the chains of the wallet-key subscriptions.
    for (const k of [
      'POST /wallet-as-a-service/wallets/{walletId}/{blockchain}/{network}/xpubs',
      'DELETE /wallet-as-a-service/wallets/{walletId}/{blockchain}/{network}/xpubs/{xpubId}',
      'GET /wallet-as-a-service/wallets/{walletId}/{blockchain}/{network}/xpubs/{xpubId}/addresses',
    ]) {
      expected[k] = expected[`POST ${SUBSCRIPTIONS}/xpub-coins-transactions-confirmed`] as readonly string[];
    }
    const withChain = operations().filter((o) => o.template.includes('{blockchain}'));
    expect(withChain.map((o) => `${o.method} ${o.template}`).sort()).toEqual(Object.keys(expected).sort());
    for (const o of withChain) {
      const chains = expected[`${o.method} ${o.template}`] as readonly string[];
      expect(parameter(o.op, 'blockchain').schema.enum, `${o.method} ${o.template}`).toEqual([...chains]);
      const networks = NETWORKS.filter((n) => chains.some((c) => CHAINS[c as keyof typeof CHAINS].networks.includes(n)));
      expect(parameter(o.op, 'network').schema.enum, `${o.method} ${o.template}`).toEqual(networks);
    }
    // ethereum's test networks: today's two and goerli, kept for existing clients; and the pairs said in words.
    for (const o of withChain.filter((w) => parameter(w.op, 'blockchain').schema.enum.includes('ethereum'))) {
      expect(parameter(o.op, 'network').schema.enum, `${o.method} ${o.template}`).toEqual(expect.arrayContaining(['mainnet', 'sepolia', 'hoodi', 'goerli']));
      const described = parameter(o.op, 'blockchain').description ?? parameter(o.op, 'blockchain').schema.description;
      expect(described, `${o.method} ${o.template}`).toContain('ethereum (mainnet, sepolia, hoodi, goerli)');
    }
    const crossChain = operations().find((o) => o.method === 'GET' && o.template === '/blockchain-events/subscriptions');
    expect(parameter(crossChain?.op, 'network').schema.enum).toEqual([...NETWORKS]);
    expect(NETWORKS).toEqual(expect.arrayContaining(['sepolia', 'hoodi', 'goerli']));
  });

  it('the chains offered are the chains the server accepts, and no others', async () => {
    const c = await t.customer();
    for (const event of [
      'transaction-mined',
      'address-tokens-transactions-confirmed',
      'internal-transactions-for-specific-amount',
      'block-mined',
      'block-height-reached',
      'reverted-block',
      'address-tokens-transactions-confirmed-each-confirmation',
      'address-internal-transactions-confirmed',
      'tokens-transfers-for-specific-amount',
      'address-internal-transactions-confirmed-each-confirmation',
      'address-coins-transactions-confirmed',
      'coins-transactions-for-specific-amount',
      'address-coins-transactions-confirmed-each-confirmation',
      'address-coins-transactions-unconfirmed',
      'address-tokens-transactions-unconfirmed',
    ]) {
      const op = doc.paths[`${SUBSCRIPTIONS}/${event}`].post;
      const offered: string[] = parameter(op, 'blockchain').schema.enum;
      for (const blockchain of BLOCKCHAINS) {
        // An empty item: the chain is checked first, then the body (409 for the missing attributes).
        const res = await call('POST', `/blockchain-events/${blockchain}/mainnet/subscriptions/${event}`, { key: c.key, body: { data: { item: {} } } });
        const refused = res.status === 400 && res.body.error.code === 'uri_not_found';
        expect(refused, `${event} on ${blockchain}: ${res.status} ${res.body.error?.code}`).toBe(!offered.includes(blockchain));
      }
    }
  });

  it('lists every error status of every operation, each with the error envelope and its codes', () => {
    for (const { method, template, op } of operations()) {
      const statuses = Object.keys(op.responses).map(Number);
      const name = `${method} ${template}`;
      // Every documented operation needs an API key (the operations endpoints are not in the document),
      // but the operator's, which need an operator token (and are not rate-limited).
      if (template.startsWith('/operator/')) {
        expect(statuses, name).toEqual(expect.arrayContaining([400, 401, 500, 503]));
        expect(responseSchema(op, 401).properties.error.properties.code.enum, name).toEqual(['invalid_operator_token']);
        expect(op.security, name).toEqual([{ operatorToken: [] }]);
      } else expect(statuses, name).toEqual(expect.arrayContaining([400, 401, 403, 429, 500, 503]));
      if (template.includes('{')) expect(responseSchema(op, 400).properties.error.properties.code.enum, name).toContain('uri_not_found');
      if (op.requestBody) expect(statuses, name).toEqual(expect.arrayContaining([409, 413, 415, 422]));
      if (parameter(op, 'limit')) {
        expect(responseSchema(op, 400).properties.error.properties.code.enum, name).toEqual(
          expect.arrayContaining(['invalid_pagination', 'limit_greater_than_allowed']),
        );
      }
      expect(responseSchema(op, 503).properties.error.properties.code.enum, name).toEqual(['service_unavailable']);
      if (!template.startsWith('/operator/')) expect(op.responses['429'].headers['retry-after'], name).toBeDefined();
      for (const status of statuses.filter((s) => s >= 400)) {
        const schema = responseSchema(op, status);
        expect(schema.required, `${name} ${status}`).toEqual(['apiVersion', 'requestId', 'error']);
        expect(schema.properties.error.required, `${name} ${status}`).toEqual(['code', 'message']);
        expect(schema.properties.error.properties.details.items.required, `${name} ${status}`).toEqual(['attribute', 'message']);
        expect(op.responses[String(status)].description, `${name} ${status}`).toMatch(/error\.code is one of/);
      }
    }
  });

  it('marks required every field the contract says is always present', () => {
    const itemOf = (template: string, method: string, status: number) => responseSchema(doc.paths[template][method], status).properties.data.properties.item;
    const base = ['referenceId', 'createdTimestamp', 'isActive', 'callbackUrl', 'eventType'];
    expect(itemOf(`${SUBSCRIPTIONS}/transaction-mined`, 'post', 200).required.sort()).toEqual([...base, 'callbackSecretKey', 'transactionId'].sort());
    // receiveCallbackOn: always present unless the extension's confirmationTiers or finality decide instead (docs/concepts/confirmations-and-reorganisations.md#confirmation-tiers-by-amount).
    const tokens = itemOf(`${SUBSCRIPTIONS}/address-tokens-transactions-confirmed`, 'post', 201);
    expect(tokens.required.sort()).toEqual([...base, 'callbackSecretKey', 'address'].sort());
    expect(Object.keys(tokens.properties)).toEqual(expect.arrayContaining(['receiveCallbackOn', 'confirmationTiers', 'finality']));
    // docs/reference/api.md#address-coins-transactions-confirmed and #settled-request-fields: the request takes the URL in either spelling (so neither is required by its schema); the answer always says callbackUrl.
    const coins = itemOf(`${SUBSCRIPTIONS}/address-coins-transactions-confirmed`, 'post', 200);
    expect(coins.required.sort()).toEqual([...base, 'callbackSecretKey', 'address'].sort());
    expect(Object.keys(coins.properties)).toEqual(expect.arrayContaining(['receiveCallbackOn', 'confirmationTiers', 'finality']));
    expect(Object.keys(coins.properties)).not.toContain('callbackURL');
    const coinsRequest =
      doc.paths[`${SUBSCRIPTIONS}/address-coins-transactions-confirmed`].post.requestBody.content['application/json'].schema.properties.data.properties.item;
    expect(coinsRequest.required).toEqual(['address']);
    expect(Object.keys(coinsRequest.properties)).toEqual(expect.arrayContaining(['callbackUrl', 'callbackURL', 'receiveCallbackOn']));
    const coinsAmount = itemOf(`${SUBSCRIPTIONS}/coins-transactions-for-specific-amount`, 'post', 201);
    expect(coinsAmount.required.sort()).toEqual([...base, 'amountHigherThan'].sort());
    const internal = itemOf(`${SUBSCRIPTIONS}/internal-transactions-for-specific-amount`, 'post', 201);
    expect(internal.required.sort()).toEqual([...base, 'amountHigherThan'].sort());
    expect(Object.keys(internal.properties)).toContain('callbackSecretKey');
    // The block items of docs/reference/api.md#block-height-reached and #block-mined have no eventType; reverted-block has one (docs/reference/api.md#settled-answer-items).
    const blockBase = base.filter((f) => f !== 'eventType');
    const blockMined = itemOf(`${SUBSCRIPTIONS}/block-mined`, 'post', 200);
    expect(blockMined.required.sort()).toEqual([...blockBase, 'callbackSecretKey'].sort());
    // backfill: the extension's optional progress of a create with fromBlockHeight (docs/guides/recover-and-replay.md "Backfill and replay").
    // pullOnly: the extension's flag, present (true) on a pull-only subscription only (docs/concepts/event-stream.md#pull-only-subscriptions).
    expect(Object.keys(blockMined.properties).sort()).toEqual([...blockBase, 'callbackSecretKey', 'backfill', 'pullOnly'].sort());
    expect(blockMined.required).not.toContain('pullOnly');
    expect(blockMined.required).not.toContain('backfill');
    const height = itemOf(`${SUBSCRIPTIONS}/block-height-reached`, 'post', 201);
    expect(height.required.sort()).toEqual([...blockBase, 'callbackSecretKey', 'blockHeightReached'].sort());
    expect(Object.keys(height.properties)).not.toContain('eventType');
    expect(itemOf(`${SUBSCRIPTIONS}/reverted-block`, 'post', 201).required.sort()).toEqual([...base, 'callbackSecretKey'].sort());
    const requestItem = (path: string) =>
      doc.paths[`${SUBSCRIPTIONS}/${path}`].post.requestBody.content['application/json'].schema.properties.data.properties.item;
    // What a request without pullOnly: true requires: the item's own required attributes and, in its `else`, the
    // delivery attributes (with pullOnly: true, `then` refuses them instead: docs/concepts/event-stream.md#pull-only-subscriptions).
    const requiredOf = (item: { required?: string[]; else?: { required?: string[] } }) => [...(item.required ?? []), ...(item.else?.required ?? [])].sort();
    expect(requiredOf(requestItem('reverted-block'))).toEqual(['callbackSecretKey', 'callbackUrl']);
    expect(requestItem('reverted-block').if).toEqual({ properties: { pullOnly: { enum: [true] } }, required: ['pullOnly'] });
    expect(Object.keys(requestItem('reverted-block').then.properties).sort()).toEqual(['callbackSecretKey', 'callbackUrl']);
    // docs/reference/api.md#address-internal-transactions-confirmed: the request requires callbackSecretKey and allowDuplicates; the response has every field.
    expect(requiredOf(requestItem('address-internal-transactions-confirmed'))).toEqual(['address', 'allowDuplicates', 'callbackSecretKey', 'callbackUrl']);
    expect(itemOf(`${SUBSCRIPTIONS}/address-internal-transactions-confirmed`, 'post', 200).required.sort()).toEqual(
      [...base, 'callbackSecretKey', 'address'].sort(),
    );
    // docs/reference/api.md#tokens-transfers-for-specific-amount: callbackSecretKey optional in the response.
    expect(requiredOf(requestItem('tokens-transfers-for-specific-amount'))).toEqual(['amountHigherThan', 'callbackUrl', 'contractAddress']);
    const tokenAmount = itemOf(`${SUBSCRIPTIONS}/tokens-transfers-for-specific-amount`, 'post', 201);
    expect(tokenAmount.required.sort()).toEqual([...base, 'amountHigherThan', 'contractAddress'].sort());
    expect(Object.keys(tokenAmount.properties)).toContain('callbackSecretKey');
    for (const [template, method, status] of [
      ['/blockchain-events/subscriptions/{referenceId}', 'get', 200],
      [`${SUBSCRIPTIONS}/{referenceId}`, 'delete', 200],
      ['/blockchain-events/subscriptions/{referenceId}/activate', 'post', 201],
    ] as const) {
      expect(itemOf(template, method, status).required.sort(), template).toEqual([...base, 'blockchain', 'network'].sort());
    }
    const assets = responseSchema(doc.paths['/wallet-as-a-service/wallets/all-assets'].get, 200);
    expect(assets.required).toEqual(['apiVersion', 'requestId', 'data']);
    expect(assets.properties.data.required).toEqual(['limit', 'offset', 'total', 'items']);
    const record = assets.properties.data.properties.items.items;
    expect(record.required).toEqual(['walletId', 'walletName', 'coins', 'fungibleTokens', 'nonFungibleTokens']);
    expect(record.properties.coins.items.required).toEqual(
      expect.arrayContaining(['blockchain', 'network', 'unit', 'confirmedBalance', 'totalReceived', 'totalSpent']),
    );
    expect(record.properties.fungibleTokens.items.required).toEqual(['amount', 'blockchain', 'network', 'identifier', 'symbol', 'type']);
    expect(record.properties.nonFungibleTokens.items.required).toEqual(['blockchain', 'network', 'identifier', 'symbol', 'tokenId', 'type']);
  });
});

// --- real answers ---------------------------------------------------------------------------------

async function waitForCallbackStatus(c: TestCustomer, referenceId: string, status: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const res = await call('GET', `/blockchain-events/subscriptions/${referenceId}/callbacks`, { key: c.key });
    const entry = res.body.data.items.find((e: Json) => e.status === status);
    if (entry) return entry.callbackId;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const last = await t.request('GET', `/blockchain-events/subscriptions/${referenceId}/callbacks`, { key: c.key });
  throw new Error(`no callback of ${referenceId} reached ${status}: ${last.text}`);
}

describe('real answers match the document', () => {
  // Every endpoint in turn: 7-15 s alone on the loaded 2-core machine (load 12-16), past the default 30 s beside other files.
  it('successes of every endpoint', async () => {
    const c = await t.customer({ domains: ['localhost'] });
    const key = c.key;
    const callbackUrl = `${receiver.url}/cb`;
    const chain = '/blockchain-events/ethereum/goerli/subscriptions';

    const coinsURL = await call('POST', `${chain}/address-coins-transactions-confirmed`, {
      key,
      body: { data: { item: { address: SAMPLE.evmAddress, callbackURL: callbackUrl } } },
    });
    expect(coinsURL.status).toBe(200);
    expect(coinsURL.body.data.item.callbackUrl).toBe(callbackUrl);
    const coinsUrl = await call('POST', `${chain}/address-coins-transactions-confirmed`, {
      key,
      body: { data: { item: { address: SAMPLE.evmAddress, callbackUrl, receiveCallbackOn: 7 } } },
    });
    expect(coinsUrl.status).toBe(200);
    expect(coinsUrl.body.data.item.callbackUrl).toBe(callbackUrl);
    const coinsAmount = await call('POST', `${chain}/coins-transactions-for-specific-amount`, {
      key,
      body: { data: { item: { amountHigherThan: 1, callbackUrl } } },
    });
    expect(coinsAmount.status).toBe(201);
    const mined = await call('POST', `${chain}/transaction-mined?context=walk`, {
      key,
      body: { data: { item: { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl } } },
    });
    expect(mined.status).toBe(200);
    expect(mined.body.context).toBe('walk');
    const tokens = await call('POST', `${chain}/address-tokens-transactions-confirmed`, {
      key,
      body: { context: 'in-body', data: { item: { address: SAMPLE.evmAddress, callbackUrl, callbackSecretKey: 's' } } },
    });
    expect(tokens.status).toBe(201);
    const internal = await call('POST', `${chain}/internal-transactions-for-specific-amount`, {
      key,
      body: { data: { item: { amountHigherThan: 5, callbackUrl } } },
    });
    expect(internal.status).toBe(201);
    expect(internal.body.data.item).not.toHaveProperty('callbackSecretKey');
    const blockMined = await call('POST', `${chain}/block-mined`, { key, body: { data: { item: { callbackUrl } } } });
    expect(blockMined.status).toBe(200);
    const height = await call('POST', `${chain}/block-height-reached`, { key, body: { data: { item: { blockHeightReached: 10, callbackUrl } } } });
    expect(height.status).toBe(201);
    const reverted = await call('POST', `${chain}/reverted-block`, {
      key,
      body: { data: { item: { callbackUrl, callbackSecretKey: 's', allowDuplicates: 'true' } } },
    });
    expect(reverted.status).toBe(201);
    const tokensEach = await call('POST', `${chain}/address-tokens-transactions-confirmed-each-confirmation`, {
      key,
      body: { data: { item: { address: SAMPLE.evmAddress, callbackUrl, confirmationsCount: 5 } } },
    });
    expect(tokensEach.status).toBe(200);
    expect(tokensEach.body.data.item).not.toHaveProperty('callbackSecretKey');
    const internalAddress = await call('POST', `${chain}/address-internal-transactions-confirmed`, {
      key,
      body: { data: { item: { address: SAMPLE.evmAddress, callbackUrl, callbackSecretKey: 's', allowDuplicates: false, receiveCallbackOn: 2 } } },
    });
    expect(internalAddress.status).toBe(200);
    const tokenAmount = await call('POST', `${chain}/tokens-transfers-for-specific-amount`, {
      key,
      body: { data: { item: { amountHigherThan: 7, contractAddress: SAMPLE.evmAddress, callbackUrl } } },
    });
    expect(tokenAmount.status).toBe(201);
    expect(tokenAmount.body.data.item).not.toHaveProperty('callbackSecretKey');
    const internalEach = await call('POST', `${chain}/address-internal-transactions-confirmed-each-confirmation`, {
      key,
      body: { data: { item: { address: SAMPLE.evmAddress, callbackUrl, callbackSecretKey: 's', allowDuplicates: false, confirmationsCount: 4 } } },
    });
    expect(internalEach.status).toBe(201);
    const coinsEach = await call('POST', `${chain}/address-coins-transactions-confirmed-each-confirmation`, {
      key,
      body: { data: { item: { address: SAMPLE.evmAddress, callbackUrl, confirmationsCount: 2 } } },
    });
    expect(coinsEach.status).toBe(201);
    const coinsUnconfirmed = await call('POST', `${chain}/address-coins-transactions-unconfirmed`, {
      key,
      body: { data: { item: { address: SAMPLE.evmAddress, callbackUrl, callbackSecretKey: 's' } } },
    });
    expect(coinsUnconfirmed.status).toBe(201);
    const tokensUnconfirmed = await call('POST', `${chain}/address-tokens-transactions-unconfirmed`, {
      key,
      body: { data: { item: { address: SAMPLE.evmAddress, callbackUrl, allowDuplicates: false } } },
    });
    expect(tokensUnconfirmed.status).toBe(201);
    // List, get and activate items of the block subscriptions are checked against the document too.
    const listed = await call('GET', `${chain}?limit=50`, { key });
    expect(listed.body.data.items.map((i: Json) => i.eventType)).toEqual([
      'ADDRESS_COINS_TRANSACTION_CONFIRMED',
      'ADDRESS_COINS_TRANSACTION_CONFIRMED',
      'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
      'TRANSACTION_MINED',
      'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
      'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
      'BLOCK_MINED',
      'BLOCK_HEIGHT_REACHED',
      'BLOCK_REVERTED',
      'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
      'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
      'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
      'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
      'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
      'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
      'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED',
    ]);
    for (const s of [blockMined, height, reverted, internalAddress, tokenAmount, coinsURL, coinsUrl, coinsAmount, coinsUnconfirmed, tokensUnconfirmed]) {
      const id = s.body.data.item.referenceId;
      expect((await call('GET', `/blockchain-events/subscriptions/${id}`, { key })).status).toBe(200);
      expect((await call('POST', `/blockchain-events/subscriptions/${id}/activate`, { key })).status).toBe(201);
      expect((await call('DELETE', `${chain}/${id}`, { key })).status).toBe(200);
    }

    const referenceId = mined.body.data.item.referenceId;
    expect((await call('GET', `${chain}?limit=2&offset=1`, { key })).status).toBe(200);
    expect((await call('GET', `/blockchain-events/subscriptions/${referenceId}`, { key })).status).toBe(200);
    const sameUrl = mined.body.data.item.callbackUrl;
    expect(
      (await call('POST', `/blockchain-events/subscriptions/${referenceId}/callback-url`, { key, body: { data: { item: { callbackUrl: sameUrl } } } })).status,
    ).toBe(200);
    // Paused and resumed (docs/reference/api.md#pause-a-subscription).
    expect((await call('POST', `/blockchain-events/subscriptions/${referenceId}/pause`, { key })).status).toBe(200);
    expect((await call('POST', `/blockchain-events/subscriptions/${referenceId}/activate`, { key })).status).toBe(201);
    expect((await call('POST', `/blockchain-events/subscriptions/${referenceId}/test-callback`, { key })).status).toBe(200);
    // The events catalogue and a sample sent to the subscription's URL (docs/reference/api.md#send-a-sample-callback).
    expect((await call('GET', '/blockchain-events/event-types?blockchain=ethereum', { key })).body.data.items.length).toBeGreaterThan(17);
    const sample = await call('POST', '/blockchain-events/event-types/BLOCK_MINED/send-sample', { key, body: { data: { item: { referenceId } } } });
    expect(sample.status, sample.text).toBe(200);

    // A delivered callback (queued as chain following would), then resent.
    const idempotencyKey = randomBytes(32).toString('hex');
    const body = callbackBody({ id: referenceId, eventType: 'TRANSACTION_MINED', apiVersion: '2021-03-20' }, idempotencyKey, { n: 1 });
    await t.app.database.db.transaction('test:enqueue', (tx) =>
      enqueueCallbacks(
        tx,
        [{ id: randomUUID(), customerId: c.id, subscriptionId: referenceId, eventType: 'TRANSACTION_MINED', idempotencyKey, body, callbackUrl }],
        new Date(),
      ),
    );
    const callbackId = await waitForCallbackStatus(c, referenceId, 'delivered');
    expect((await call('POST', `/blockchain-events/callbacks/${callbackId}/resend`, { key })).status).toBe(201);
    await waitForCallbackStatus(c, referenceId, 'delivered');
    // The console's reads (issue 13): one callback, the cross-chain list with health, the account and its usage.
    const detail = await call('GET', `/blockchain-events/callbacks/${callbackId}`, { key });
    expect(detail.body.data.item.payload).toEqual(JSON.parse(body));
    const crossChain = await call('GET', `/blockchain-events/subscriptions?blockchain=ethereum&active=true&q=${referenceId}`, { key });
    expect(crossChain.body.data.items[0].health.delivered).toBeGreaterThan(0);
    expect((await call('GET', '/account', { key })).status).toBe(200);
    expect((await call('GET', '/account/usage?days=7', { key })).body.data.items.length).toBeGreaterThan(0);
    expect((await call('GET', '/account/overview', { key })).status).toBe(200);
    expect((await call('GET', '/blockchain-events/callbacks?status=delivered', { key })).status).toBe(200);
    // The default confirmation policies (docs/reference/api.md#confirmation-policies).
    const policy = { data: { item: { confirmationTiers: [{ upTo: '0.5', confirmations: 1 }, { confirmations: 4 }] } } };
    expect((await call('PUT', '/account/confirmation-policies/ethereum/sepolia', { key, body: policy })).status).toBe(200);
    expect((await call('GET', '/account/confirmation-policies', { key })).body.data.items).toHaveLength(1);
    expect((await call('DELETE', '/account/confirmation-policies/ethereum/sepolia', { key })).status).toBe(200);

    // Recovery and rotation (issue 14).
    const since = Math.floor(Date.now() / 1000) - 3600;
    const rotated = await call('POST', `/blockchain-events/subscriptions/${referenceId}/rotate-secret`, {
      key,
      body: { data: { item: { callbackSecretKey: 'rotated', overlapSeconds: 60 } } },
    });
    expect(rotated.status).toBe(200);
    const recovering = await call('POST', `/blockchain-events/subscriptions/${referenceId}/recover`, {
      key,
      body: { data: { item: { since, includeCancelled: true } } },
    });
    expect(recovering.status).toBe(202);
    expect((await call('GET', `/blockchain-events/recoveries/${recovering.body.data.item.recoveryId}`, { key })).status).toBe(200);
    const byUrl = await call('POST', '/blockchain-events/callbacks/recover', {
      key,
      body: { data: { item: { callbackUrl, eventType: 'TRANSACTION_MINED', since } } },
    });
    expect(byUrl.status).toBe(202);
    // The Deliveries page's filters, counted first (docs/reference/api.md#recover-callbacks-by-filter).
    const counted = await call('POST', '/blockchain-events/callbacks/recover', {
      key,
      body: { data: { item: { blockchain: 'ethereum', since, dryRun: true } } },
    });
    expect(counted.status, counted.text).toBe(200);
    const withRecovery = await call('POST', `/blockchain-events/subscriptions/${referenceId}/activate?recoverSince=${since}`, { key });
    expect(withRecovery.status).toBe(201);
    expect(withRecovery.body.data.recoveryId).toBeDefined();

    for (const s of [mined, tokens, internal]) {
      expect((await call('DELETE', `${chain}/${s.body.data.item.referenceId}`, { key })).status).toBe(200);
    }

    const wallet = await call('POST', '/wallet-as-a-service/wallets', { key, body: { data: { item: { walletName: 'main' } } } });
    expect(wallet.status).toBe(201);
    const walletPath = `/wallet-as-a-service/wallets/${wallet.body.data.item.walletId}`;
    const address = `${walletPath}/ethereum/goerli/addresses`;
    expect((await call('POST', address, { key, body: { data: { item: { address: SAMPLE.evmAddress } } } })).status).toBe(201);
    expect((await call('GET', walletPath, { key })).status).toBe(200);
    const assets = await call('GET', '/wallet-as-a-service/wallets/all-assets', { key });
    expect(assets.status).toBe(200);
    expect(assets.body.data.items[0].coins).toHaveLength(1);
    expect((await call('DELETE', `${address}/${SAMPLE.evmAddress}`, { key })).status).toBe(200);
    // An extended key in the wallet (issue 32): added, listed with the wallet, its addresses, removed.
    const walletKey = await call('POST', `${walletPath}/bitcoin/testnet/xpubs`, {
      key,
      body: { data: { item: { extendedPublicKey: testPublicKey("m/84'/1'/0'", 0x045f1cf6), gapLimit: 2 } } },
    });
    expect(walletKey.status, walletKey.text).toBe(201);
    expect((await call('GET', walletPath, { key })).body.data.item.xpubs).toHaveLength(1);
    const keyPath = `${walletPath}/bitcoin/testnet/xpubs/${walletKey.body.data.item.xpubId}`;
    expect((await call('GET', `${keyPath}/addresses?change=false`, { key })).body.data.total).toBe(2);
    expect((await call('DELETE', keyPath, { key })).status).toBe(200);

    const registered = await call('POST', '/blockchain-events/callback-domains', { key, body: { data: { item: { domain: 'verify.test' } } } });
    expect(registered.status).toBe(201);
    receiver.byPath(FILE_PATH, { kind: 'status', status: 200, body: registered.body.data.item.verificationToken });
    expect((await call('POST', '/blockchain-events/callback-domains/verify.test/verify', { key })).status).toBe(200);
    expect((await call('GET', '/blockchain-events/callback-domains', { key })).status).toBe(200);
    expect((await call('DELETE', '/blockchain-events/callback-domains/verify.test', { key })).status).toBe(200);

    expect((await call('GET', '/blockchain-events/status', { key })).status).toBe(200);

    // Backfill and replay (issue 14): a block-mined subscription from the processed height, a dry run, a replay job.
    const evmProcessed = await until('ethereum to be followed', async () => {
      const items = (await call('GET', '/blockchain-events/status', { key })).body.data.items as { blockchain: string; processedHeight: number }[];
      return items.find((i) => i.blockchain === 'ethereum')?.processedHeight;
    });
    const backfilled = await call('POST', `${chain}/block-mined`, {
      key,
      body: { data: { item: { callbackUrl, fromBlockHeight: evmProcessed, allowDuplicates: true } } },
    });
    expect(backfilled.status, backfilled.text).toBe(200);
    expect(backfilled.body.data.item.backfill.toBlockHeight).toBe(evmProcessed);
    const replayed = backfilled.body.data.item.referenceId;
    const replayItem = (dryRun: boolean) => ({ data: { item: { fromBlockHeight: evmProcessed, toBlockHeight: evmProcessed, dryRun } } });
    const dry = await call('POST', `/blockchain-events/subscriptions/${replayed}/replay`, { key, body: replayItem(true) });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body.data.item.callbacks).toHaveLength(1);
    await until(
      'the backfill to finish',
      async () => (await call('GET', `/blockchain-events/subscriptions/${replayed}`, { key })).body.data.item.backfill === undefined,
    );
    const replayJob = await call('POST', `/blockchain-events/subscriptions/${replayed}/replay`, { key, body: replayItem(false) });
    expect(replayJob.status, replayJob.text).toBe(202);
    expect((await call('GET', `/blockchain-events/replays/${replayJob.body.data.item.replayId}`, { key })).status).toBe(200);

    // Callback Data reads: an EVM block (its fields at the top level too) and transaction, a Bitcoin block
    // and transaction (their own blockchainSpecific variants), and a subscribed, watched address.
    const sent = await sendEth(evm, SAMPLE.evmAddress as `0x${string}`, 10n ** 15n);
    const evmHeight = Number(sent.receipt?.blockNumber);
    const evmBlock = await call('GET', `/blockchain-events/ethereum/goerli/blocks/height/${evmHeight}`, { key });
    expect(evmBlock.status).toBe(200);
    const evmByHash = await call('GET', `/blockchain-events/ethereum/goerli/blocks/hash/${evmBlock.body.data.item.hash}`, { key });
    expect(evmByHash.body.data.item.gasUsed).toBeDefined();
    expect((await call('GET', `/blockchain-events/ethereum/goerli/transactions/${sent.hash}`, { key })).status).toBe(200);
    const btcHeight = await btc.mine(1);
    expect((await call('GET', `/blockchain-events/bitcoin/testnet/blocks/height/${btcHeight}`, { key })).status).toBe(200);
    expect((await call('GET', `/blockchain-events/bitcoin/testnet/blocks/hash/${await btc.blockHash(btcHeight)}`, { key })).status).toBe(200);
    const coinbase = (btc.node.rpc('getblock', [await btc.blockHash(btcHeight), 1]) as { tx: string[] }).tx[0];
    expect((await call('GET', `/blockchain-events/bitcoin/testnet/transactions/${coinbase}`, { key })).status).toBe(200);
    const payment = await xrp.send(await xrp.newAddress(), 20_000_000n);
    const xrpHeight = await xrp.mine(1);
    expect((await call('GET', `/blockchain-events/xrp/testnet/blocks/hash/${await xrp.blockHash(xrpHeight)}`, { key })).status).toBe(200);
    expect((await call('GET', `/blockchain-events/xrp/testnet/transactions/${payment}`, { key })).status).toBe(200);
    const trx = await tron.send(await tron.newAddress(), 3_000_000n);
    const tronHeight = await tron.mine(1);
    expect((await call('GET', `/blockchain-events/tron/nile/blocks/height/${tronHeight}`, { key })).status).toBe(200);
    expect((await call('GET', `/blockchain-events/tron/nile/transactions/${trx}`, { key })).status).toBe(200);
    await call('POST', `${chain}/address-tokens-transactions-confirmed`, { key, body: { data: { item: { address: SAMPLE.evmAddress, callbackUrl } } } });
    expect((await call('POST', address, { key, body: { data: { item: { address: SAMPLE.evmAddress } } } })).status).toBe(201);
    expect((await call('GET', `/blockchain-events/ethereum/goerli/addresses/${SAMPLE.evmAddress}`, { key })).status).toBe(200);

    // A wallet key (issue 32): the create, its derived addresses and the next one, its get.
    const xpub = await call('POST', '/blockchain-events/bitcoin/testnet/subscriptions/xpub-coins-transactions-confirmed', {
      key,
      body: { data: { item: { extendedPublicKey: testPublicKey("m/84'/1'/0'", 0x045f1cf6), gapLimit: 3, callbackUrl } } },
    });
    expect(xpub.status, xpub.text).toBe(201);
    const xpubId = xpub.body.data.item.referenceId;
    expect((await call('GET', `/blockchain-events/subscriptions/${xpubId}/addresses?change=false&used=false`, { key })).body.data.total).toBe(3);
    expect((await call('GET', `/blockchain-events/subscriptions/${xpubId}/addresses/next`, { key })).status).toBe(200);
    expect((await call('GET', `/blockchain-events/subscriptions/${xpubId}`, { key })).body.data.item.gapLimit).toBe(3);
    const unconfirmedXpub = await call('POST', '/blockchain-events/bitcoin/testnet/subscriptions/xpub-coins-transactions-unconfirmed', {
      key,
      body: { data: { item: { extendedPublicKey: testPublicKey("m/84'/1'/0'", 0x045f1cf6), gapLimit: 3, callbackUrl } } },
    });
    expect(unconfirmedXpub.status, unconfirmedXpub.text).toBe(201);

    // The event stream (issue 34): this customer's events so far, and a cursor older than nothing yet.
    const stream = await call('GET', '/blockchain-events/events?limit=5', { key });
    expect(stream.status).toBe(200);
    expect(stream.body.data.items.length).toBeGreaterThan(0);

    // The operator's routes (issue 13), with an operator token.
    const made = await createOperatorToken(t.app.database.db, 'openapi');
    const operator = { headers: { authorization: `Bearer ${made?.token}` } };
    expect((await call('GET', '/operator/whoami', operator)).status).toBe(200);
    expect((await call('GET', '/operator/customers?limit=5', operator)).status).toBe(200);
    expect((await call('GET', `/operator/customers/${c.name}`, operator)).status).toBe(200);
    const newKey = await call('POST', `/operator/customers/${c.name}/keys`, operator);
    expect(newKey.status).toBe(201);
    expect((await call('POST', `/operator/customers/${c.name}/keys/${newKey.body.data.item.keyId}/revoke`, operator)).status).toBe(200);
    expect((await call('POST', `/operator/customers/${c.name}/credits`, { ...operator, body: { data: { item: { amount: 10 } } } })).status).toBe(200);
    expect((await call('POST', `/operator/customers/${c.name}/domains/ops.example.com/verify`, operator)).status).toBe(200);
    // The console's operator pages (issue 35): create a customer, change its plan, the failed callbacks across customers.
    expect((await call('POST', '/operator/customers', { ...operator, body: { data: { item: { name: `${c.name}-made`, credits: 5 } } } })).status).toBe(201);
    expect(
      (await call('POST', `/operator/customers/${c.name}-made/plan`, { ...operator, body: { data: { item: { maxActiveSubscriptions: null } } } })).status,
    ).toBe(200);
    expect((await call('GET', '/operator/callbacks?status=failed&limit=5', operator)).status).toBe(200);
    // A chain held by the deep-reorganisation breaker: its hold in the chains' answer, released below.
    await t.app.database.db.transaction('test:hold', async (tx) => {
      await saveCursor(tx, { blockchain: 'dash', network: 'testnet' }, { height: 20, hash: 'h20', timestamp: 1 }, 20);
      const blocks = [{ height: 19, orphanedHash: 'o19', newHash: 'n19' }];
      const trip = { at: new Date().toISOString(), reason: 'reorganisation' as const, depth: 4, ancestorHeight: 18, ancestorHash: 'h18', blocks, detail: null };
      await tripBreaker(tx, { blockchain: 'dash', network: 'testnet' }, trip, 3);
    });
    const chains = await call('GET', '/operator/chains', operator);
    expect(chains.body.data.items.find((i: Json) => i.blockchain === 'dash').hold).toMatchObject({ depth: 4, heldCallbacks: 0 });
    expect(chains.body.data.items.map((i: Json) => i.blockchain)).toContain('ethereum');
    expect((await call('GET', '/operator/chains/ethereum/goerli/lag?minutes=60', operator)).status).toBe(200);
    expect((await call('GET', '/operator/delivery?minutes=5', operator)).body.data.item.attemptsPerMinute).toHaveLength(5);
    const released = await call('POST', '/operator/chains/dash/testnet/release', operator);
    expect(released.body.data.item).toMatchObject({ released: true, hold: { depth: 4 } });
    expect((await call('POST', '/operator/chains/dash/testnet/reset', operator)).status).toBe(200);
    const missing = await call('GET', '/operator/customers/nobody', operator);
    expect(missing.body.error.code).toBe('resource_not_found');
    expect((await call('GET', '/operator/whoami')).body.error.code).toBe('invalid_operator_token');
    // Bulk creates: one created item (and a duplicate, and an item's error) on two events; an item's error on every other.
    const bulk = await call('POST', `${chain}/transaction-mined/bulk`, {
      key,
      body: {
        data: { items: [{ transactionId: `0x${'e1'.repeat(32)}`, callbackUrl }, { transactionId: `0x${'e1'.repeat(32)}`, callbackUrl }, { callbackUrl }] },
      },
    });
    expect(bulk.status, bulk.text).toBe(200);
    expect(bulk.body.data.items.map((i: { status: string }) => i.status)).toEqual(['created', 'duplicate', 'failed']);
    const bulkTokens = await call('POST', `${chain}/address-tokens-transactions-confirmed/bulk`, {
      key,
      body: { data: { items: [{ address: '0x00000000000000000000000000000000000000b1', callbackUrl }] } },
    });
    expect(bulkTokens.body.data.items[0].status, bulkTokens.text).toBe('created');
    for (const { method, template } of operations()) {
      if (method !== 'POST' || !template.endsWith('/bulk') || seen.has(`${method} ${template}`)) continue;
      const path = template.replace('{blockchain}', 'ethereum').replace('{network}', 'goerli');
      expect((await call('POST', path, { key, body: { data: { items: [{}] } } })).status, path).toBe(200);
    }

    // Every operation of the document answered with its success status.
    for (const { method, template, op } of operations()) {
      const success = Object.keys(op.responses)
        .map(Number)
        .find((s) => s < 300);
      expect(seen.get(`${method} ${template}`), `${method} ${template} was not called`).toContain(success);
    }
  }, 90_000);

  it('the main errors', async () => {
    const c = await t.customer();
    const key = c.key;
    const mined = '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined';
    const item = { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl };
    const codeOf = (r: TestResponse) => `${r.status} ${r.body.error.code}`;

    expect(codeOf(await call('GET', '/blockchain-events/status'))).toBe('401 missing_api_key');
    expect(codeOf(await call('GET', '/blockchain-events/status', { key: 'nope' }))).toBe('401 invalid_api_key');
    expect(codeOf(await call('GET', '/blockchain-events/status', { key, headers: { 'x-api-version': '1999-01-01' } }))).toBe('400 invalid_api_version');
    expect(codeOf(await call('POST', mined.replace('goerli', 'mordor'), { key, body: { data: { item } } }))).toBe('400 uri_not_found');
    expect(codeOf(await call('DELETE', `/blockchain-events/xrp/nile/subscriptions/${randomUUID()}`, { key }))).toBe('400 uri_not_found');
    expect(codeOf(await call('GET', '/blockchain-events/ethereum/goerli/subscriptions?limit=0', { key }))).toBe('400 invalid_pagination');
    expect(codeOf(await call('GET', '/wallet-as-a-service/wallets/all-assets?limit=51', { key }))).toBe('400 limit_greater_than_allowed');
    expect(codeOf(await call('GET', `/blockchain-events/subscriptions/${randomUUID()}?context=x`, { key }))).toBe('404 resource_not_found');
    expect(codeOf(await call('GET', `/blockchain-events/subscriptions/${randomUUID()}/callbacks`, { key }))).toBe('404 resource_not_found');
    expect(codeOf(await call('POST', `/blockchain-events/callbacks/${randomUUID()}/resend`, { key }))).toBe('404 resource_not_found');
    expect(codeOf(await call('GET', `/wallet-as-a-service/wallets/${randomUUID()}`, { key }))).toBe('404 resource_not_found');
    expect(codeOf(await call('DELETE', '/blockchain-events/callback-domains/none.test', { key }))).toBe('404 resource_not_found');
    expect(codeOf(await call('GET', '/blockchain-events/bitcoin/testnet/blocks/height/99999', { key }))).toBe('404 blockchain_data_block_not_found');
    expect(codeOf(await call('GET', `/blockchain-events/ethereum/goerli/blocks/hash/0x${'ab'.repeat(32)}`, { key }))).toBe(
      '404 blockchain_data_block_not_found',
    );
    expect(codeOf(await call('GET', `/blockchain-events/bitcoin/testnet/transactions/${SAMPLE.btcTx}`, { key }))).toBe('404 resource_not_found');
    expect(codeOf(await call('GET', `/blockchain-events/ethereum/goerli/addresses/${SAMPLE.evmAddress}`, { key }))).toBe(
      '404 blockchain_data_address_event_subscription_not_found',
    );
    expect(codeOf(await call('GET', '/blockchain-events/ethereum/goerli/blocks/height/x', { key }))).toBe('409 invalid_data');
    expect(codeOf(await call('GET', `/blockchain-events/tron/nile/addresses/${SAMPLE.tronAddress}`, { key }))).toBe('400 uri_not_found');
    evm.down();
    try {
      expect(codeOf(await call('GET', '/blockchain-events/ethereum/goerli/blocks/height/1', { key }))).toBe('503 service_unavailable');
    } finally {
      evm.up();
    }
    expect(codeOf(await call('GET', '/blockchain-events/status?foo=1', { key }))).toBe('409 extra_query_attributes');
    expect(codeOf(await call('POST', mined, { key, body: { data: { item: { callbackUrl: SAMPLE.callbackUrl } } } }))).toBe('409 missing_required_attributes');
    expect(codeOf(await call('POST', mined, { key, body: { data: { item: { ...item, extra: 1 } } } }))).toBe('409 extra_body_attributes');
    expect(codeOf(await call('POST', mined, { key, body: { data: { item: { ...item, transactionId: 'zz' } } } }))).toBe('409 invalid_data');
    expect(codeOf(await call('POST', mined, { key, rawBody: '{"data":', headers: { 'content-type': 'application/json' } }))).toBe('409 bad_json');
    expect(codeOf(await call('POST', mined, { key, body: { data: { item: { ...item, callbackUrl: 'https://elsewhere.example.org/cb' } } } }))).toBe(
      '409 callback_url_not_verified',
    );
    expect((await call('POST', mined, { key, body: { data: { item } } })).status).toBe(200);
    expect(codeOf(await call('POST', mined, { key, body: { data: { item } } }))).toBe('409 already_exists');
    expect(codeOf(await call('POST', mined, { key, rawBody: 'x', headers: { 'content-type': 'text/plain' } }))).toBe('415 unsupported_media_type');
    expect(codeOf(await call('POST', mined, { key, body: { data: { item: { ...item, callbackSecretKey: 'x'.repeat(70_000) } } } }))).toBe(
      '413 request_entity_too_large',
    );
    expect(codeOf(await call('POST', mined, { key, body: { item } }))).toBe('422 invalid_request_body_structure');
    // A body where none is needed is still parsed.
    const activate = `/blockchain-events/subscriptions/${randomUUID()}/activate`;
    expect(codeOf(await call('POST', activate, { key, rawBody: 'x', headers: { 'content-type': 'text/plain' } }))).toBe('415 unsupported_media_type');
    expect(
      codeOf(await call('DELETE', '/blockchain-events/callback-domains/none.test', { key, rawBody: '{', headers: { 'content-type': 'application/json' } })),
    ).toBe('409 bad_json');
    const wallet = await call('POST', '/wallet-as-a-service/wallets', { key, body: { data: { item: { walletName: 'w' } } } });
    const address = `/wallet-as-a-service/wallets/${wallet.body.data.item.walletId}/tron/nile/addresses`;
    expect((await call('POST', address, { key, body: { data: { item: { address: SAMPLE.tronAddress } } } })).status).toBe(201);
    expect(codeOf(await call('POST', address, { key, body: { data: { item: { address: SAMPLE.tronAddress } } } }))).toBe('409 already_exists');
    await call('POST', '/blockchain-events/callback-domains', { key, body: { data: { item: { domain: 'unproven.test' } } } });
    expect(codeOf(await call('POST', '/blockchain-events/callback-domains/unproven.test/verify', { key }))).toBe('409 domain_verification_failed');

    const poor = await t.customer({ credits: 0n });
    expect(codeOf(await call('POST', mined, { key: poor.key, body: { data: { item } } }))).toBe('402 insufficient_credits');
    const testnetOnly = await t.customer({ plan: { mainnetAllowed: false } });
    expect(codeOf(await call('POST', mined.replace('goerli', 'mainnet'), { key: testnetOnly.key, body: { data: { item } } }))).toBe(
      '403 feature_mainnets_not_allowed_for_plan',
    );
    const capped = await t.customer({ plan: { maxActiveSubscriptions: 0 } });
    expect(codeOf(await call('POST', mined, { key: capped.key, body: { data: { item } } }))).toBe('403 blockchain_events_callbacks_limit_reached');
    const restricted = await t.customer({ allowedEndpoints: ['status'] });
    expect(codeOf(await call('GET', '/wallet-as-a-service/wallets/all-assets', { key: restricted.key }))).toBe('403 endpoint_not_allowed_for_api_key');
    const slow = await t.customer({ plan: { requestsPerSecond: 1 } });
    await call('GET', '/blockchain-events/status', { key: slow.key });
    const limited = await call('GET', '/blockchain-events/status', { key: slow.key });
    expect(codeOf(limited)).toBe('429 request_limit_reached');
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});

// --- callbacks: the webhooks of the document (docs/reference/events/README.md) ----------------------

/** The schema of the body of a webhook (an event type's callback). */
function webhookSchema(event: string): Json {
  return doc.webhooks[event]?.post.requestBody.content['application/json'].schema;
}

describe('webhooks: the callbacks in the document', () => {
  it('has one entry per event type, with its body schema and the callback headers', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...CALLBACK_EVENT_TYPES].sort());
    for (const event of CALLBACK_EVENT_TYPES) {
      const schema = webhookSchema(event);
      expect(schema.required, event).toEqual(['apiVersion', 'referenceId', 'idempotencyKey', 'data']);
      expect(schema.properties.data.properties.event.const, event).toBe(event);
      expect(schema.properties.data.properties.item.required, event).toEqual(expect.arrayContaining(['blockchain', 'network']));
      const headers = doc.webhooks[event].post.parameters.map((p: Json) => `${p.in}:${p.name}`);
      expect(headers, event).toEqual(
        expect.arrayContaining([
          'header:x-signature',
          'header:webhook-id',
          'header:webhook-timestamp',
          'header:webhook-signature',
          'header:x-callback-sequence',
        ]),
      );
    }
  });

  it('describes exactly what herald sends: a signed test callback of every event type, body and headers', async () => {
    const c = await t.customer({ domains: ['localhost'] });
    const callbackUrl = `${receiver.url}/webhooks`;
    const secret = 'webhook-secret';
    const common = { callbackUrl, callbackSecretKey: secret, allowDuplicates: true };
    const items: Record<string, Record<string, unknown>> = {
      'transaction-mined': { transactionId: SAMPLE.evmTx },
      'block-mined': {},
      'block-height-reached': { blockHeightReached: 10 },
      'reverted-block': {},
      'internal-transactions-for-specific-amount': { amountHigherThan: 1 },
      'coins-transactions-for-specific-amount': { amountHigherThan: 1 },
      'tokens-transfers-for-specific-amount': { amountHigherThan: 1, contractAddress: SAMPLE.evmAddress },
      'xpub-coins-transactions-confirmed': { extendedPublicKey: testPublicKey("m/44'/1'/0'", 0x043587cf) },
      'xpub-coins-transactions-unconfirmed': { extendedPublicKey: testPublicKey("m/44'/1'/0'", 0x043587cf) },
    };
    // Wallet keys are served on the Bitcoin family only (docs/concepts/wallet-keys.md).
    const chainOf = (path: string) => (path.startsWith('xpub-coins-transactions-') ? 'bitcoin/testnet' : 'ethereum/goerli');
    const paths = operations()
      .filter(
        (o) => o.method === 'POST' && o.template.startsWith(`${SUBSCRIPTIONS}/`) && !o.template.endsWith('/bulk') && !o.template.includes('{referenceId}'),
      )
      .map((o) => o.template.slice(SUBSCRIPTIONS.length + 1));
    expect(paths).toHaveLength(EVENT_TYPES.length);
    const ids = new Map<string, string>();
    for (const path of paths) {
      const item = { ...common, ...(items[path] ?? { address: SAMPLE.evmAddress }) };
      const created = await t.request('POST', `/blockchain-events/${chainOf(path)}/subscriptions/${path}`, { key: c.key, body: { data: { item } } });
      expect(created.status, created.text).toBeLessThan(300);
      const sent = await t.request('POST', `/blockchain-events/subscriptions/${created.body.data.item.referenceId}/test-callback`, { key: c.key });
      expect(sent.body.data?.item?.delivered, sent.text).toBe(true);
      ids.set(created.body.data.item.referenceId, path);
    }
    const received = receiver.received.filter((r) => r.path === '/webhooks');
    const events = new Set<string>();
    for (const request of received) {
      const body = JSON.parse(request.rawBody.toString('utf8'));
      if (!ids.has(body.referenceId)) continue;
      const event = body.data.event;
      events.add(event);
      const validate = validatorOf(webhookSchema(event));
      expect(validate(body), `${event}: ${JSON.stringify(validate.errors)} in ${request.rawBody}`).toBe(true);
      const parameters: Json[] = doc.webhooks[event].post.parameters;
      for (const p of parameters) {
        const value = request.headers[p.name];
        if (p.required) expect(value, `${event} header ${p.name}`).toBeDefined();
        if (value === undefined) continue;
        const check = ajv.compile(p.schema);
        expect(check(value), `${event} header ${p.name}: ${value}`).toBe(true);
      }
      // Every header of herald's own (x-*, webhook-*) is one the document names.
      const named = new Set(parameters.map((p) => p.name));
      for (const name of Object.keys(request.headers).filter((h) => h.startsWith('x-') || h.startsWith('webhook-'))) {
        expect(named.has(name), `${event} sends ${name}, which the webhook does not list`).toBe(true);
      }
      expect(request.headers['x-signature']).toBe(signCallback(secret, request.rawBody, body.idempotencyKey, 0)['x-signature']);
    }
    expect([...events].sort()).toEqual([...EVENT_TYPES].sort());
  });
});

// --- docs/: the reference and its JSON examples, checked against the document -------------------

const DOCS = fileURLToPath(new URL('../docs/', import.meta.url));

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? markdownFiles(path) : entry.name.endsWith('.md') ? [path] : [];
  });
}

interface JsonExample {
  file: string;
  line: number;
  /** The comment before the block: `webhook EVENT`, `METHOD /path request` or `METHOD /path response STATUS`. */
  marker: string | undefined;
  text: string;
}

/** The ```json blocks of a Markdown file, each with the `<!-- openapi: ... -->` comment on the line before it. */
function jsonExamples(file: string): JsonExample[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const examples: JsonExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== '```json') continue;
    const end = lines.findIndex((l, j) => j > i && l.trim() === '```');
    const marker = /^<!--\s*openapi:\s*(.+?)\s*-->$/.exec(lines[i - 1]?.trim() ?? '')?.[1];
    examples.push({ file: file.slice(DOCS.length), line: i + 1, marker, text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return examples;
}

/** The schema a marker names in the document. */
function markedSchema(marker: string): Json {
  const webhook = /^webhook (\w+)$/.exec(marker);
  if (webhook) return webhookSchema(webhook[1] as string);
  const [method = '', path = '', part, status] = marker.split(' ');
  const op = doc.paths[path]?.[method.toLowerCase()];
  if (!op) return undefined;
  if (part === 'request') return op.requestBody?.content['application/json'].schema;
  return part === 'response' ? responseSchema(op, Number(status)) : undefined;
}

describe('docs/: the API and events reference', () => {
  const examples = markdownFiles(DOCS).flatMap(jsonExamples);

  it('every JSON example of a request, response or callback names its part of the document and is valid against it', () => {
    expect(examples.filter((e) => e.marker).length).toBeGreaterThan(15);
    for (const example of examples) {
      const where = `${example.file}:${example.line}`;
      let value: Json;
      expect(() => {
        value = JSON.parse(example.text);
      }, `${where} is not JSON`).not.toThrow();
      if (!example.marker) {
        // An unmarked block must not be an API body: those are checked, so they say which they are.
        const apiLike = value && typeof value === 'object' && ('apiVersion' in value || value.data?.item !== undefined || value.data?.items !== undefined);
        expect(
          apiLike,
          `${where}: an API example needs <!-- openapi: METHOD /path request|response STATUS --> or <!-- openapi: webhook EVENT --> before it`,
        ).toBe(false);
        continue;
      }
      const schema = markedSchema(example.marker);
      expect(schema, `${where}: '${example.marker}' names nothing in the document`).toBeDefined();
      const validate = validatorOf(schema);
      expect(validate(value), `${where} (${example.marker}): ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it('docs/reference/api.md has every operation, and docs/reference/events/ a page per event with its example', () => {
    const api = readFileSync(join(DOCS, 'reference/api.md'), 'utf8');
    for (const { method, template } of operations()) {
      const name = template.endsWith('/bulk') ? '/subscriptions/{create endpoint}/bulk' : `\`${method} ${template}\``;
      expect(api, `${method} ${template}`).toContain(name);
    }
    for (const event of CALLBACK_EVENT_TYPES) {
      const page = `reference/events/${event.toLowerCase().replaceAll('_', '-')}.md`;
      expect(
        examples.some((e) => e.file === page && e.marker === `webhook ${event}`),
        page,
      ).toBe(true);
    }
  });

  it("the events pages' example signatures are those of their bodies", () => {
    for (const file of readdirSync(join(DOCS, 'reference/events')).filter((f) => f !== 'README.md')) {
      const text = readFileSync(join(DOCS, 'reference/events', file), 'utf8');
      const secret = /`callbackSecretKey` `([^`]+)`/.exec(text)?.[1] as string;
      const header = (name: string) => new RegExp(`^${name}: (.+)$`, 'm').exec(text)?.[1] as string;
      const body = /```text\n(.+)\n```/.exec(text)?.[1] as string;
      expect(JSON.parse(body), file).toEqual(JSON.parse(jsonExamples(join(DOCS, 'reference/events', file))[0]?.text as string));
      const signed = signCallback(secret, Buffer.from(body), header('webhook-id'), Number(header('webhook-timestamp')));
      expect([header('x-signature'), header('webhook-signature')], file).toEqual([signed['x-signature'], signed['webhook-signature']]);
    }
  });

  it('the citations of docs/reference in src/ and test/ name pages and #anchors that exist', () => {
    const ROOT = fileURLToPath(new URL('../', import.meta.url));
    const slug = (heading: string) =>
      heading
        .replaceAll('`', '')
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-');
    const anchorsOf = (page: string) =>
      new Set(
        [
          ...readFileSync(join(ROOT, page), 'utf8')
            .replace(/^```[\s\S]*?^```/gm, '')
            .matchAll(/^#+\s+(.+)$/gm),
        ].map((m) => slug(m[1] as string)),
      );
    const sources = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sources(join(dir, e.name)) : /\.(ts|sql)$/.test(e.name) ? [join(dir, e.name)] : [],
      );
    let cited = 0;
    for (const file of [...sources('src'), ...sources('test')]) {
      for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(/(docs\/reference\/[a-z/-]+\.md)((?:#[a-z0-9-]+)?(?:(?:,| and) #[a-z0-9-]+)*)/g)) {
        const page = m[1] as string;
        const anchors = [...(m[2] as string).matchAll(/#([a-z0-9-]+)/g)].map((a) => a[1] as string);
        const known = anchorsOf(page);
        for (const anchor of anchors) expect(known.has(anchor), `${file} cites ${page}#${anchor}`).toBe(true);
        cited++;
      }
    }
    expect(cited).toBeGreaterThan(100);
  });
});

/**
 * The events catalogue (src/services/event-samples.ts): every sample, on every chain and network its event
 * is sent on, is valid against that event's body schema in the OpenAPI document's webhooks (the schemas the
 * receiver kit's types are generated from), so a sample cannot drift from what herald sends. Then through a
 * real herald: the catalogue lists every event type with its sample, and a sample sent to the customer's
 * URL arrives signed as a real callback (x-signature, webhook-signature), marked as a test, charged as a
 * test callback; refused for an unverified domain, and past the per-customer cap of samples in flight.
 */
import { createHmac } from 'node:crypto';
import AjvModule from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhooks } from '../src/api/callback-schemas.ts';
import { loadConfig } from '../src/config/config.ts';
import { CALLBACK_EVENT_TYPES, CHAINS } from '../src/domain/chains.ts';
import { blockchainsOf, SAMPLE_REFERENCE_ID, SAMPLES_IN_FLIGHT_PER_CUSTOMER, sampleBody } from '../src/services/event-samples.ts';
import { findCustomerByName } from '../src/store/customers.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { type ReceivedRequest, type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const Ajv = AjvModule.default;
const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
// biome-ignore lint/suspicious/noExplicitAny: the document's JSON
const hooks = webhooks() as any;
const validatorOf = (event: string) => ajv.compile(hooks[event].post.requestBody.content['application/json'].schema);
const NOW = new Date('2026-12-02T12:00:00Z');

describe('event samples against the callback schemas', () => {
  it('every event type on every chain and network it is sent on', () => {
    let checked = 0;
    for (const event of CALLBACK_EVENT_TYPES) {
      const validate = validatorOf(event);
      for (const blockchain of blockchainsOf(event)) {
        for (const network of CHAINS[blockchain].networks) {
          const body = sampleBody(event, blockchain, network, NOW, '2021-03-20');
          expect(validate(body), `${event} on ${blockchain}/${network}: ${JSON.stringify(validate.errors)}`).toBe(true);
          expect(body).toMatchObject({ referenceId: SAMPLE_REFERENCE_ID, data: { event, isTest: true, item: { blockchain, network } } });
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('a sample that leaves the schema is caught (the check can fail)', () => {
    const body = sampleBody('ADDRESS_COINS_TRANSACTION_CONFIRMED', 'bitcoin', 'mainnet', NOW, '2021-03-20') as { data: { item: Record<string, unknown> } };
    const validate = validatorOf('ADDRESS_COINS_TRANSACTION_CONFIRMED');
    expect(validate(body)).toBe(true);
    expect(validate({ ...body, data: { ...body.data, item: { ...body.data.item, amount: 1 } } })).toBe(false);
    const { direction: _gone, ...withoutDirection } = body.data.item;
    expect(validate({ ...body, data: { ...body.data, item: withoutDirection } })).toBe(false);
  });

  it('the wallet-key samples carry a key and its first derived address; the DROPPED ones a reason and no verdict', () => {
    const xpub = sampleBody('XPUB_COINS_TRANSACTION_CONFIRMED', 'litecoin', 'mainnet', NOW, '2021-03-20') as { data: { item: Record<string, unknown> } };
    expect(xpub.data.item.extendedPublicKey).toMatch(/^xpub/);
    expect((xpub.data.item.addresses as { address: string }[])[0]?.address).toMatch(/^(L|M|ltc1)/);
    const dropped = sampleBody('ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED', 'bitcoin', 'mainnet', NOW, '2021-03-20') as {
      data: { item: Record<string, unknown> };
    };
    expect(dropped.data.item).toMatchObject({ reason: 'replaced' });
    expect(dropped.data.item.safety).toBeUndefined();
  });
});

describe('the catalogue and sending a sample, through the API', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    const ca = await createTestCa();
    receiver = await startReceiver({ ca });
    t = await startTestApp({
      delivery: { ...loadConfig({}, {}).delivery, allowNetworks: ['127.0.0.1/32', '::1/128'], caFile: writeCaFile(ca.caPem), timeoutMs: 3000 },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('lists every callback event type with a valid sample, on the chain asked for where the event is sent there', async () => {
    const c = await t.customer({ domains: ['localhost'] });
    const res = await t.request('GET', '/blockchain-events/event-types?blockchain=tron', { key: c.key });
    expect(res.status, res.text).toBe(200);
    const items = res.body.data.items as { event: string; blockchain: string; sample: unknown; subscriptionEvent: string }[];
    expect(items.map((i) => i.event)).toEqual([...CALLBACK_EVENT_TYPES]);
    for (const item of items) expect(validatorOf(item.event)(item.sample), item.event).toBe(true);
    expect(items.find((i) => i.event === 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED')?.blockchain).toBe('tron');
    // Not sent on tron: shown on its first chain.
    expect(items.find((i) => i.event === 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED')?.blockchain).toBe('bitcoin');
    expect(items.find((i) => i.event === 'XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED')?.subscriptionEvent).toBe('XPUB_COINS_TRANSACTION_UNCONFIRMED');
  });

  it('sends a sample to the URL, signed with the secret given and marked as a test, charged as a test callback', async () => {
    const c = await t.customer({ domains: ['localhost'] });
    const secret = 'sample-sëcret';
    const before = (await findCustomerByName(t.app.database.db, c.name))?.credits ?? 0n;
    const res = await t.request('POST', '/blockchain-events/event-types/ADDRESS_TOKENS_TRANSACTION_CONFIRMED/send-sample', {
      key: c.key,
      body: { data: { item: { callbackUrl: `${receiver.url}/samples`, callbackSecretKey: secret, blockchain: 'ethereum' } } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.item).toMatchObject({
      event: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
      blockchain: 'ethereum',
      network: 'mainnet',
      delivered: true,
      httpStatus: 200,
    });
    const got = receiver.received.find((r) => r.path === '/samples') as ReceivedRequest;
    expect(got).toBeDefined();
    expect(got.headers['x-callback-test']).toBe('true');
    expect(got.headers['x-signature']).toBe(createHmac('sha256', secret).update(got.rawBody).digest('hex'));
    const id = got.headers['webhook-id'] as string;
    const signed = Buffer.concat([Buffer.from(`${id}.${got.headers['webhook-timestamp']}.`, 'utf8'), got.rawBody]);
    expect(got.headers['webhook-signature']).toBe(`v1,${createHmac('sha256', secret).update(signed).digest('base64')}`);
    const body = JSON.parse(got.rawBody.toString('utf8'));
    expect(validatorOf('ADDRESS_TOKENS_TRANSACTION_CONFIRMED')(body)).toBe(true);
    expect(body).toMatchObject({ referenceId: SAMPLE_REFERENCE_ID, idempotencyKey: res.body.data.item.idempotencyKey, data: { isTest: true } });
    expect(body.idempotencyKey).toMatch(/^test-[0-9a-f]{59}$/);
    const after = (await findCustomerByName(t.app.database.db, c.name))?.credits ?? 0n;
    expect(before - after).toBe(BigInt(t.config.costs.getSubscription));
  });

  it("sends to a subscription's URL with its referenceId and secret", async () => {
    const c = await t.customer({ domains: ['localhost'] });
    const created = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/block-mined', {
      key: c.key,
      body: { data: { item: { callbackUrl: `${receiver.url}/sub`, callbackSecretKey: 'sub-secret' } } },
    });
    expect(created.status, created.text).toBe(200);
    const referenceId = created.body.data.item.referenceId as string;
    const res = await t.request('POST', '/blockchain-events/event-types/BLOCK_REVERTED/send-sample', { key: c.key, body: { data: { item: { referenceId } } } });
    expect(res.status, res.text).toBe(200);
    const got = receiver.received.filter((r) => r.path === '/sub').at(-1) as ReceivedRequest;
    expect(got.headers['x-signature']).toBe(createHmac('sha256', 'sub-secret').update(got.rawBody).digest('hex'));
    expect(JSON.parse(got.rawBody.toString('utf8'))).toMatchObject({ referenceId, data: { event: 'BLOCK_REVERTED', isTest: true } });
  });

  it('refuses an unverified domain, both or neither target, and a burst past the per-customer cap', async () => {
    const c = await t.customer({ domains: ['localhost'] });
    const path = '/blockchain-events/event-types/BLOCK_MINED/send-sample';
    const unverified = await t.request('POST', path, { key: c.key, body: { data: { item: { callbackUrl: 'https://elsewhere.example/x' } } } });
    expect(unverified.status).toBe(409);
    expect(unverified.body.error.code).toBe('callback_url_not_verified');
    const neither = await t.request('POST', path, { key: c.key, body: { data: { item: {} } } });
    expect(neither.status).toBe(409);
    expect(neither.body.error.code).toBe('invalid_data');
    // A receiver that never answers holds each sample for the delivery timeout: one more than the cap is refused at once.
    receiver.setDefault({ kind: 'timeout' });
    try {
      const held = Array.from({ length: SAMPLES_IN_FLIGHT_PER_CUSTOMER }, () =>
        t.request('POST', path, { key: c.key, body: { data: { item: { callbackUrl: `${receiver.url}/held` } } } }),
      );
      await until(
        'the held samples reach the receiver',
        async () => receiver.received.filter((r) => r.path === '/held').length >= SAMPLES_IN_FLIGHT_PER_CUSTOMER,
        10_000,
      );
      const refused = await t.request('POST', path, { key: c.key, body: { data: { item: { callbackUrl: `${receiver.url}/held` } } } });
      expect(refused.status, refused.text).toBe(429);
      expect(refused.body.error.code).toBe('request_limit_reached');
      const answers = await Promise.all(held);
      for (const a of answers) expect(a.body.data.item.delivered).toBe(false);
    } finally {
      receiver.setDefault({ kind: 'status', status: 200 });
    }
  });
});

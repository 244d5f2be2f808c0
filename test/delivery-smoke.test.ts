import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { callbackBody } from '../src/domain/callbacks.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { SAMPLE, type TestApp, startTestApp } from './harness.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { writeCaFile } from './support/tls.ts';

let t: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
  t = await startTestApp({ delivery: { ...(await import('../src/config/config.ts')).loadConfig({}, {}).delivery, allowNetworks: ['127.0.0.1/32', '::1/128'], caFile: writeCaFile(receiver.caPem), pollIntervalMs: 50 } });
});
afterAll(async () => {
  await t.close();
  await receiver.close();
});

it('a queued callback reaches the receiver, signed', async () => {
  const c = await t.customer({ domains: ['localhost'] });
  const sub = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
    key: c.key,
    body: { data: { item: { transactionId: SAMPLE.evmTx, callbackUrl: `${receiver.url}/cb`, callbackSecretKey: 'k' } } },
  });
  expect(sub.status).toBe(200);
  const s = sub.body.data.item;
  const key = randomBytes(32).toString('hex');
  await t.app.database.db.transaction('test', (tx) =>
    enqueueCallbacks(tx, [
      {
        id: randomUUID(),
        customerId: c.id,
        subscriptionId: s.referenceId,
        eventType: 'TRANSACTION_MINED',
        idempotencyKey: key,
        body: callbackBody({ id: s.referenceId, eventType: 'TRANSACTION_MINED', apiVersion: '2021-03-20' }, key, { x: 1 }),
        callbackUrl: s.callbackUrl,
      },
    ]),
  );
  const [got] = await receiver.waitFor(1);
  expect(got?.headers['webhook-id']).toBe(key);
  const log = await t.request('GET', `/blockchain-events/subscriptions/${s.referenceId}/callbacks`, { key: c.key });
  expect(log.status).toBe(200);
  await new Promise((r) => setTimeout(r, 200));
  const log2 = await t.request('GET', `/blockchain-events/subscriptions/${s.referenceId}/callbacks`, { key: c.key });
  expect(log2.body.data.items[0].status).toBe('delivered');
  const test = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
  expect(test.body.data.item.delivered, test.text).toBe(true);
});

/**
 * Callback secrets at rest (docs/operations/secrets-at-rest.md): with secrets.encryptionKey the database holds
 * them encrypted, the API and the delivery worker read them as given, and `herald secrets rotate-key`
 * (the real CLI) moves every row to a new key, after which the old key is not needed.
 */
import { execFile } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { callbackBody } from '../src/domain/callbacks.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { keyringOf, useKeyring } from '../src/store/secret-box.ts';
import { getSubscription } from '../src/store/subscriptions.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';

const run = promisify(execFile);
const firstKey = randomBytes(32).toString('base64');
const secondKey = randomBytes(32).toString('base64');
const idOf = (key: string) => keyringOf({ encryptionKey: key, previousEncryptionKeys: [] })?.current.id as string;
let t: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  const ca = await createTestCa();
  receiver = await startReceiver({ ca });
  t = await startTestApp({
    delivery: receiverDelivery(writeCaFile(ca.caPem)),
    secrets: { encryptionKey: firstKey, previousEncryptionKeys: [] },
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
  useKeyring(undefined);
});

const stored = async (id: string) =>
  (
    await t.app.database.db.query<{ callback_secret_key: string | null; previous_callback_secret_key: string | null }>(
      'test:stored-secrets',
      'SELECT callback_secret_key, previous_callback_secret_key FROM subscriptions WHERE id = $1',
      [id],
    )
  )[0];

it('the secret is stored encrypted, shown and signed with as given, rotated encrypted; rotate-key moves every row to the new key', async () => {
  const c = await t.customer({ domains: ['localhost'] });
  const secret = `s3cret-${randomBytes(4).toString('hex')}`;
  const created = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
    key: c.key,
    body: { data: { item: { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl: `${receiver.url}/cb`, callbackSecretKey: secret } } },
  });
  expect(created.status, created.text).toBe(200);
  const id = created.body.data.item.referenceId as string;
  const row = await stored(id);
  expect(row?.callback_secret_key).toMatch(new RegExp(`^enc:v1:${idOf(firstKey)}:`));
  expect(row?.callback_secret_key).not.toContain(secret);
  expect((await t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: c.key })).body.data.item.callbackSecretKey).toBe(secret);

  // The delivery worker decrypts the row it claimed: the receiver's signature checks out with the secret.
  const idempotencyKey = randomBytes(32).toString('hex');
  const body = callbackBody({ id, eventType: 'TRANSACTION_MINED', apiVersion: '2021-03-20' }, idempotencyKey, { n: 1 });
  await t.app.database.db.transaction('test:enqueue', (tx) =>
    enqueueCallbacks(
      tx,
      [{ id: randomUUID(), customerId: c.id, subscriptionId: id, eventType: 'TRANSACTION_MINED', idempotencyKey, body, callbackUrl: `${receiver.url}/cb` }],
      new Date(),
    ),
  );
  const [got] = await receiver.waitFor(1);
  expect(got?.headers['x-signature']).toBe(
    createHmac('sha256', secret)
      .update(got?.rawBody as Buffer)
      .digest('hex'),
  );

  // A rotation stores both secrets encrypted.
  const rotated = await t.request('POST', `/blockchain-events/subscriptions/${id}/rotate-secret`, {
    key: c.key,
    body: { data: { item: { callbackSecretKey: `${secret}-2` } } },
  });
  expect(rotated.status, rotated.text).toBe(200);
  const after = await stored(id);
  for (const value of [after?.callback_secret_key, after?.previous_callback_secret_key]) expect(value).toMatch(/^enc:v1:/);

  // rotate-key, by the real CLI with the new key current and the old one as previous.
  const env = {
    ...process.env,
    DATABASE_URL: t.config.databaseUrl as string,
    HERALD_LOG_LEVEL: 'warn',
    HERALD_SECRETS_ENCRYPTION_KEY: secondKey,
    HERALD_SECRETS_PREVIOUS_ENCRYPTION_KEYS: firstKey,
  };
  const { stdout } = await run('node', ['bin/herald.js', 'secrets', 'rotate-key', '--batch-size', '1'], { env });
  expect(stdout).toMatch(new RegExp(`encrypted 1 of \\d+ subscriptions' callback secrets with key ${idOf(secondKey)}; every secret is now under that key`));
  const moved = await stored(id);
  for (const value of [moved?.callback_secret_key, moved?.previous_callback_secret_key]) expect(value).toMatch(new RegExp(`^enc:v1:${idOf(secondKey)}:`));
  // Run again, it changes nothing (resumable).
  expect((await run('node', ['bin/herald.js', 'secrets', 'rotate-key'], { env })).stdout).toMatch(/encrypted 0 of/);

  // The old key is no longer needed to read the secrets.
  useKeyring(keyringOf({ encryptionKey: secondKey, previousEncryptionKeys: [] }));
  const read = await getSubscription(t.app.database.db, c.id, id);
  expect([read?.callbackSecretKey, read?.previousCallbackSecretKey]).toEqual([`${secret}-2`, secret]);
}, 120_000);

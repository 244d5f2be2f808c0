/**
 * Confirmation tiers by amount on a REAL litecoind 0.21 (regtest), docs/concepts/confirmations-and-reorganisations.md#confirmation-tiers-by-amount:
 * one address subscription with tiers gets a small and a large deposit mined in the same block; the small
 * one is called back at its tier's first confirmation, the large one only at its tier's third. The create
 * refuses two of receiveCallbackOn / confirmationTiers / finality, tiers out of order, and finality on
 * litecoin (no finality signal) with an error naming the chain.
 */
import { expect, it } from 'vitest';
import { useFollowedApp } from './support/followed-app.ts';
import { litecoinTestAccount } from './support/hd-keys.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-litecoin-tiers';
const TIERS = [{ upTo: '0.5', confirmations: 1 }, { upTo: '10', confirmations: 3 }, { confirmations: 6 }];

describeWithRealNode('confirmation tiers on a real litecoind (regtest)', litecoind, () => {
  const f = useFollowedApp(() => startLitecoinDriver({ addressType: 'bech32' }), { chain: { confirmations: 2 }, secret: SECRET });
  const { subscribe, callbacksOf, expectSigned, indexed } = f;

  const create = (item: Record<string, unknown>) =>
    f.t.request('POST', '/blockchain-events/litecoin/testnet/subscriptions/address-coins-transactions-confirmed', {
      key: f.c.key,
      body: { data: { item: { callbackUrl: `${f.receiver.url}/hooks/refused`, ...item } } },
    });

  it('a small deposit is called back at its tier (1 confirmation), a large one of the same block only at its tier (3)', async () => {
    const address = await f.node.newAddress();
    const created = await subscribe('address-coins-transactions-confirmed', { address, confirmationTiers: TIERS }, 'tiers');
    expect(created.item).toMatchObject({ address, confirmationTiers: TIERS });
    expect(created.item).not.toHaveProperty('receiveCallbackOn');
    await f.t.app.ingest?.settled();

    const small = await f.node.send(address, 20_000_000n); // 0.2 LTC: tier 1
    const large = await f.node.send(address, 200_000_000n); // 2 LTC: tier 2
    const minedAt = await f.mineAndProcess();
    const [first] = await until(
      'the small deposit at its first confirmation',
      async () => callbacksOf(created.referenceId).length === 1 && callbacksOf(created.referenceId),
    );
    expectSigned(first);
    expect(first?.json.data.item).toMatchObject({ transactionId: small, amount: '0.2', direction: 'incoming', minedInBlock: { height: minedAt } });

    await f.mineAndProcess(); // the second confirmation: the large one still waits
    await new Promise((r) => setTimeout(r, 300));
    expect(callbacksOf(created.referenceId)).toHaveLength(1);
    await f.mineAndProcess(); // the third
    await until('the large deposit at its third confirmation', async () => callbacksOf(created.referenceId).length === 2);
    expect(callbacksOf(created.referenceId)[1]?.json.data.item).toMatchObject({ transactionId: large, amount: '2', minedInBlock: { height: minedAt } });
    await f.mineAndProcess(4);
    await new Promise((r) => setTimeout(r, 300));
    expect(callbacksOf(created.referenceId)).toHaveLength(2); // once each

    const listed = await f.t.request('GET', '/blockchain-events/litecoin/testnet/subscriptions', { key: f.c.key });
    expect(listed.body.data.items.find((i: { referenceId: string }) => i.referenceId === created.referenceId)).toMatchObject({ confirmationTiers: TIERS });
  });

  it('refuses two confirmation fields, tiers out of order, and finality on litecoin naming the chain', async () => {
    const address = await f.node.newAddress();
    const both = await create({ address, receiveCallbackOn: 2, confirmationTiers: TIERS });
    expect(both.status, both.text).toBe(409);
    expect(both.body.error.code).toBe('invalid_data');
    expect(both.body.error.details.map((d: { attribute: string }) => d.attribute)).toEqual(['receiveCallbackOn', 'confirmationTiers']);

    const unordered = await create({ address, confirmationTiers: [{ upTo: '5', confirmations: 1 }, { upTo: '2', confirmations: 2 }, { confirmations: 3 }] });
    expect(unordered.status).toBe(409);
    expect(unordered.body.error.details).toEqual([{ attribute: 'confirmationTiers[1].upTo', message: expect.stringMatching(/ascending/) }]);

    const finality = await create({ address, finality: 'finalized' });
    expect(finality.status).toBe(409);
    expect(finality.body.error.details).toEqual([{ attribute: 'finality', message: expect.stringMatching(/not available on litecoin/) }]);
  });

  it("a customer's default policy for the chain (PUT /account/confirmation-policies) is taken by a create that gives none, and only by such a create", async () => {
    const path = '/account/confirmation-policies/litecoin/testnet';
    const put = await f.t.request('PUT', path, { key: f.c.key, body: { data: { item: { confirmationTiers: TIERS } } } });
    expect(put.status, put.text).toBe(200);
    expect(put.body.data.item).toEqual({ blockchain: 'litecoin', network: 'testnet', confirmationTiers: TIERS, updatedTimestamp: expect.any(Number) });
    const listed = await f.t.request('GET', '/account/confirmation-policies', { key: f.c.key });
    expect(listed.body.data.items).toEqual([put.body.data.item]);

    const address = await f.node.newAddress();
    const defaulted = await subscribe('address-coins-transactions-confirmed', { address }, 'defaulted');
    expect(defaulted.item).toMatchObject({ confirmationTiers: TIERS });
    expect(defaulted.item).not.toHaveProperty('receiveCallbackOn');
    const own = await subscribe('address-coins-transactions-confirmed', { address, receiveCallbackOn: 2 }, 'own');
    expect(own.item).toMatchObject({ receiveCallbackOn: 2 });
    expect(own.item).not.toHaveProperty('confirmationTiers');
    // Other event types do not take it.
    const each = await subscribe('address-coins-transactions-confirmed-each-confirmation', { address }, 'each');
    expect(each.item).toMatchObject({ confirmationsCount: 3 });

    // The bulk form too: the default where an item gives none, the item's own otherwise, its refusal per item.
    const bulk = await f.t.request('POST', '/blockchain-events/litecoin/testnet/subscriptions/address-coins-transactions-confirmed/bulk', {
      key: f.c.key,
      body: {
        data: {
          items: [
            { address, callbackUrl: `${f.receiver.url}/hooks/bulk-default` },
            { address, callbackUrl: `${f.receiver.url}/hooks/bulk-own`, finality: 'finalized' },
            { address, callbackUrl: `${f.receiver.url}/hooks/bulk-own`, receiveCallbackOn: 5 },
          ],
        },
      },
    });
    expect(bulk.status, bulk.text).toBe(200);
    const [viaDefault, refused, viaOwn] = bulk.body.data.items;
    expect(viaDefault).toMatchObject({ status: 'created', item: { confirmationTiers: TIERS } });
    expect(refused).toMatchObject({ status: 'failed', error: { code: 'invalid_data', details: [{ attribute: 'finality' }] } });
    expect(viaOwn).toMatchObject({ status: 'created', item: { receiveCallbackOn: 5 } });

    const finality = await f.t.request('PUT', path, { key: f.c.key, body: { data: { item: { finality: 'finalized' } } } });
    expect(finality.status).toBe(409);
    expect(finality.body.error.details).toEqual([{ attribute: 'finality', message: expect.stringMatching(/not available on litecoin/) }]);
    const neither = await f.t.request('PUT', path, { key: f.c.key, body: { data: { item: {} } } });
    expect(neither.status).toBe(409);

    expect((await f.t.request('DELETE', path, { key: f.c.key })).status).toBe(200);
    const gone = await f.t.request('DELETE', path, { key: f.c.key });
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('resource_not_found');
    const plain = await subscribe('address-coins-transactions-confirmed', { address }, 'plain');
    expect(plain.item).toMatchObject({ receiveCallbackOn: 3 });
  });

  it('a wallet-key subscription takes tiers too: its small deposit at tier 1, its large one at tier 3', async () => {
    const { tpub, at: address } = litecoinTestAccount("m/84'/1'/7'");
    const at = (index: number) => address(0, index);
    const created = await subscribe('xpub-coins-transactions-confirmed', { extendedPublicKey: tpub, derivation: 'segwit', confirmationTiers: TIERS }, 'xpub');
    expect(created.item).toMatchObject({ confirmationTiers: TIERS });
    expect(created.item).not.toHaveProperty('receiveCallbackOn');
    await indexed();
    const small = await f.node.send(at(0), 20_000_000n);
    const large = await f.node.send(at(1), 200_000_000n);
    await f.mineAndProcess();
    await until('the small deposit', async () => callbacksOf(created.referenceId).length === 1);
    expect(callbacksOf(created.referenceId)[0]?.json.data.item).toMatchObject({ transactionId: small, amount: '0.2' });
    await f.mineAndProcess();
    await new Promise((r) => setTimeout(r, 300));
    expect(callbacksOf(created.referenceId)).toHaveLength(1);
    await f.mineAndProcess();
    await until('the large deposit at its third confirmation', async () => callbacksOf(created.referenceId).length === 2);
    expect(callbacksOf(created.referenceId)[1]?.json.data.item).toMatchObject({ transactionId: large, amount: '2' });
  });
});

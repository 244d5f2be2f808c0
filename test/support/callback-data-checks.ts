/**
 * The Callback Data reads of a Bitcoin-family chain checked end to end against a node driver (a fake node
 * of fake-utxo-node.ts or the real litecoind): herald's answers compared with what the test made happen
 * on the chain (amounts, fee, addresses, spent outputs) and with the node's own RPC answers.
 */
import { expect } from 'vitest';
import { formatUnits } from '../../src/domain/amounts.ts';
import { CHAINS } from '../../src/domain/chains.ts';
import type { TestApp, TestCustomer } from '../harness.ts';
import type { ChainDriver } from './chain-driver.ts';

/** docs/reference/api.md#callback-data-reads: the blockchainSpecific keys of each Bitcoin-family chain. */
export const BLOCK_KEYS: Record<string, string[]> = {
  bitcoin: ['bits', 'chainwork', 'difficulty', 'merkleRoot', 'nonce', 'size', 'strippedSize', 'version', 'versionHex', 'weight'],
  'bitcoin-cash': ['bits', 'chainwork', 'difficulty', 'merkleRoot', 'nonce', 'size', 'version', 'versionHex'],
  litecoin: ['bits', 'chainwork', 'difficulty', 'merkleRoot', 'nonce', 'size', 'strippedsize', 'version', 'versionHex', 'weight'],
  dash: ['bits', 'chainwork', 'difficulty', 'merkleRoot', 'nonce', 'size', 'version', 'versionHex'],
  dogecoin: ['bits', 'chainwork', 'difficulty', 'merkleRoot', 'nonce', 'size', 'strippedSize', 'version', 'weight'],
  zcash: ['bits', 'chainwork', 'merkleRoot', 'nonce', 'size', 'version'],
};
const UTXO_TX = ['locktime', 'size', 'version', 'vin', 'vout'];
export const TX_KEYS: Record<string, string[]> = {
  bitcoin: [...UTXO_TX, 'vSize'],
  litecoin: [...UTXO_TX, 'vSize'],
  'bitcoin-cash': UTXO_TX,
  dash: UTXO_TX,
  dogecoin: UTXO_TX,
  zcash: [
    ...UTXO_TX,
    'bindingSig',
    'expiryHeight',
    'joinSplitPubKey',
    'joinSplitSig',
    'overwintered',
    'vJoinSplit',
    'vShieldedOutput',
    'vShieldedSpend',
    'valueBalance',
    'versionGroupId',
  ],
};

const sorted = (o: object) => Object.keys(o).sort();

/**
 * Pays `amount` to a new address A, then A spends `amount / 2` to B (fee known), and checks the block and
 * transaction reads of both transactions.
 */
export async function checkUtxoReads(
  t: TestApp,
  c: TestCustomer,
  d: ChainDriver,
  amount: bigint,
  nodeRpc: (method: string, params: unknown[]) => Promise<unknown>,
) {
  if (!d.spend) throw new Error('the driver cannot spend');
  const base = `/blockchain-events/${d.blockchain}/${d.network}`;
  const a = await d.newAddress();
  const b = await d.newAddress();
  const funding = await d.send(a, amount);
  const fundingHeight = await d.mine(1);
  const { transactionId: spendId, fee } = await d.spend(a, b, amount / 2n);
  const height = await d.mine(1);
  const hash = await d.blockHash(height);

  // Block by height and by hash: the same block, in this chain's spelling.
  const byHeight = await t.request('GET', `${base}/blocks/height/${height}?context=h`, { key: c.key });
  expect(byHeight.status, byHeight.text).toBe(200);
  expect(byHeight.body.context).toBe('h');
  expect(byHeight.headers.get('x-credits-consumed')).toBe('500');
  const block = byHeight.body.data.item;
  expect(block.hash).toBe(hash);
  expect(block.height).toBe(height);
  expect(block.previousBlockHash).toBe(await d.blockHash(height - 1));
  expect(block.transactionsCount).toBe(2);
  expect(sorted(block)).toEqual(['blockchainSpecific', 'hash', 'height', 'previousBlockHash', 'timestamp', 'transactionsCount']);
  expect(sorted(block.blockchainSpecific)).toEqual(BLOCK_KEYS[d.blockchain]);
  const raw = (await nodeRpc('getblock', [hash, true])) as Record<string, unknown>;
  expect(block.timestamp).toBe(raw.time);
  expect(block.blockchainSpecific.merkleRoot).toBe(raw.merkleroot);
  expect(block.blockchainSpecific.bits).toBe(raw.bits);
  const byHash = await t.request('GET', `${base}/blocks/hash/${hash.toUpperCase()}`, { key: c.key });
  expect(byHash.status, byHash.text).toBe(200);
  // Not an EVM chain: no EVM fields at the top level (docs/reference/api.md#settled-callback-data-reads).
  expect(byHash.body.data.item).toEqual(block);

  // The spend: A's coin in, B's amount and the change out, the fee the node took.
  const spend = await t.request('GET', `${base}/transactions/${spendId}`, { key: c.key });
  expect(spend.status, spend.text).toBe(200);
  const tx = spend.body.data.item;
  const units = (value: bigint) => formatUnits(value, 8);
  expect(tx.isConfirmed).toBe(true);
  expect(tx.minedInBlockHash).toBe(hash);
  expect(tx.minedInBlockHeight).toBe(height);
  expect(tx.index).toBe(1);
  expect(tx.timestamp).toBe(block.timestamp);
  expect(tx.fee).toEqual({ amount: units(fee), unit: CHAINS[d.blockchain].unit });
  expect(tx.senders).toEqual([{ address: a, amount: units(amount) }]);
  expect(tx.recipients).toContainEqual({ address: b, amount: units(amount / 2n) });
  expect(tx.recipients).toHaveLength(2);
  const paid = tx.recipients.reduce((sum: bigint, r: { amount: string }) => sum + BigInt(Math.round(Number(r.amount) * 1e8)), 0n);
  expect(paid + fee).toBe(amount);
  expect(sorted(tx.blockchainSpecific)).toEqual(TX_KEYS[d.blockchain]?.slice().sort());
  const [vin] = tx.blockchainSpecific.vin;
  expect(vin).toMatchObject({ txid: funding, addresses: [a], value: units(amount) });
  expect(tx.blockchainSpecific.vout.every((o: { isSpent: boolean }) => o.isSpent === false)).toBe(true);

  // The funding transaction: its output to A is spent now.
  const fundingRead = await t.request('GET', `${base}/transactions/${funding}`, { key: c.key });
  expect(fundingRead.status, fundingRead.text).toBe(200);
  expect(fundingRead.body.data.item.minedInBlockHeight).toBe(fundingHeight);
  const toA = fundingRead.body.data.item.blockchainSpecific.vout.find((o: { scriptPubKey: { addresses: string[] } }) => o.scriptPubKey.addresses[0] === a);
  expect(toA).toMatchObject({ isSpent: true, value: units(amount) });

  // What is not on the chain.
  const beyond = await t.request('GET', `${base}/blocks/height/${height + 1000}`, { key: c.key });
  expect(`${beyond.status} ${beyond.body.error?.code}`).toBe('404 blockchain_data_block_not_found');
  const unknownHash = await t.request('GET', `${base}/blocks/hash/${'ab'.repeat(32)}`, { key: c.key });
  expect(`${unknownHash.status} ${unknownHash.body.error?.code}`).toBe('404 blockchain_data_block_not_found');
  const unknownTx = await t.request('GET', `${base}/transactions/${'cd'.repeat(32)}`, { key: c.key });
  expect(`${unknownTx.status} ${unknownTx.body.error?.code}`).toBe('404 resource_not_found');
  // Pending (not mined yet): not answered.
  const pending = await d.send(b, amount / 4n);
  const pendingRead = await t.request('GET', `${base}/transactions/${pending}`, { key: c.key });
  expect(`${pendingRead.status} ${pendingRead.body.error?.code}`).toBe('404 resource_not_found');
  await d.mine(1);
  return { height, hash, spendId };
}

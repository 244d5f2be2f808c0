/**
 * Unconfirmed events on the EVM test node with automine off (a real pending pool): the pending
 * transaction filter, the transactions read by hash, coin value and ERC-20 `transfer` calldata matched;
 * the unconfirmed callback before any block, then, once mined, the confirmed callback of the other
 * subscription; a replacement (same nonce, higher fee) fires nothing more but the original's DROPPED (reason replaced);
 * a transaction with the same nonce mined without passing through the pool gives the original's DROPPED (reason conflicted).
 */
import { type Address, encodeFunctionData, parseAbi } from 'viem';
import { expect, it } from 'vitest';
import { deployContract, sendEth, walletClient, writeContract } from './support/evm-contracts.ts';
import { followedEvmNode } from './support/evm-driver.ts';
import { startEvmNode } from './support/evm-node.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-evm-mempool';

let token: Address;

const f = useFollowedApp(
  async () => {
    // Automine on while the test token is deployed and minted, then off: a real pending pool.
    const node = await startEvmNode({ automine: true });
    token = await deployContract(node, 'TestToken', ['Test Token', 'TT', 6]);
    await writeContract(node, 'TestToken', token, 'mint', [node.accounts[0]?.address, 1_000_000_000n]);
    await node.setAutomine(false);
    return followedEvmNode(node);
  },
  { chain: { mempoolPollIntervalMs: 50 }, secret: SECRET },
);
const { processed, subscribe, indexed, callbacksOf, expectSigned, mineAndProcess } = f;

const items = (id: string) => callbacksOf(id).map((cb) => cb.json.data.item);

it('a pending ETH payment fires ADDRESS_COINS_TRANSACTION_UNCONFIRMED before any block; mined, the confirmed subscription fires and nothing more unconfirmed', async () => {
  const to = f.node.accounts[5]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'eth-unconfirmed')).referenceId;
  const confirmed = (await subscribe('address-coins-transactions-confirmed', { address: to, receiveCallbackOn: 1 }, 'eth-confirmed')).referenceId;
  await indexed();
  const head = Number(await f.node.request<string>('eth_blockNumber', []));
  const { hash } = await sendEth(f.node, to, 1_500_000_000_000_000_000n, { wait: false });
  const [seen] = await until('the unconfirmed payment', async () => callbacksOf(sub).length === 1 && callbacksOf(sub));
  expect(Number(await f.node.request<string>('eth_blockNumber', []))).toBe(head); // nothing mined yet
  expectSigned(seen);
  expect(seen?.json.data.item).toEqual({
    blockchain: 'ethereum',
    network: 'goerli',
    address: to,
    transactionId: hash,
    amount: '1.5',
    unit: 'ETH',
    direction: 'incoming',
    firstSeenInMempoolTimestamp: expect.any(Number),
    safety: { verdict: 'ok', flags: [] }, // rbf is the Bitcoin family's flag: every pending EVM transaction can be replaced by its nonce
  });
  expect(callbacksOf(confirmed)).toHaveLength(0);
  await mineAndProcess();
  await until('the confirmed payment', async () => callbacksOf(confirmed).length === 1);
  expect(items(confirmed)[0]).toMatchObject({ transactionId: hash, direction: 'incoming' });
  await new Promise((r) => setTimeout(r, 300));
  expect(callbacksOf(sub)).toHaveLength(1);
});

it('a pending ERC-20 transfer() fires ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED to the recipient (incoming) and the sender (outgoing), with the token read from the contract', async () => {
  const from = f.node.accounts[0]?.address as Address;
  const to = f.node.accounts[6]?.address as Address;
  const incoming = (await subscribe('address-tokens-transactions-unconfirmed', { address: to }, 'tt-in')).referenceId;
  const outgoing = (await subscribe('address-tokens-transactions-unconfirmed', { address: from }, 'tt-out')).referenceId;
  await indexed();
  const { hash } = await writeContract(f.node, 'TestToken', token, 'transfer', [to, 2_500_000n], { wait: false });
  await until('both token callbacks', async () => callbacksOf(incoming).length === 1 && callbacksOf(outgoing).length === 1);
  const tokenObject = { name: 'Test Token', symbol: 'TT', decimals: '6', amount: '2.5', contractAddress: token.toLowerCase() };
  expect(items(incoming)).toEqual([
    {
      blockchain: 'ethereum',
      network: 'goerli',
      address: to,
      transactionId: hash,
      tokenType: 'ERC-20',
      token: tokenObject,
      direction: 'incoming',
      firstSeenInMempoolTimestamp: expect.any(Number),
      safety: { verdict: 'ok', flags: [] },
    },
  ]);
  expect(items(outgoing)).toEqual([expect.objectContaining({ address: from, transactionId: hash, token: tokenObject, direction: 'outgoing' })]);
  await mineAndProcess();
});

it("a replacement (same nonce, higher fee) of a pending payment already reported fires nothing more but the original's DROPPED, replaced, naming the replacement", async () => {
  const to = f.node.accounts[7]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'eth-replaced')).referenceId;
  await indexed();
  const wallet = walletClient(f.node, 1);
  const account = wallet.account ?? null;
  const nonce = Number(await f.node.request<string>('eth_getTransactionCount', [f.node.accounts[1]?.address, 'pending']));
  const fee = { maxFeePerGas: 10_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
  const original = await wallet.sendTransaction({ to, value: 1_000n, nonce, ...fee, account, chain: wallet.chain });
  await until('the original', async () => callbacksOf(sub).length === 1);
  const replacement = await wallet.sendTransaction({
    to,
    value: 1_000n,
    nonce,
    maxFeePerGas: 3n * fee.maxFeePerGas,
    maxPriorityFeePerGas: 3n * fee.maxPriorityFeePerGas,
    account,
    chain: wallet.chain,
  });
  expect(replacement).not.toBe(original);
  await new Promise((r) => setTimeout(r, 400));
  await f.t.app.worker?.settled();
  await until('the dropped original', async () => callbacksOf(sub).length === 2);
  // docs/reference/events/address-coins-transaction-unconfirmed-dropped.md: same sender and nonce.
  expect(callbacksOf(sub).map((cb) => (cb.json.data as { event?: string }).event)).toEqual([
    'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
    'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
  ]);
  expect(items(sub)[1]).toMatchObject({ transactionId: original, amount: '0.000000000000001', reason: 'replaced', replacedByTransactionId: replacement });
  expectSigned(callbacksOf(sub)[1]);
  await mineAndProcess();
  await new Promise((r) => setTimeout(r, 400));
  await f.t.app.worker?.settled();
  expect(callbacksOf(sub)).toHaveLength(2);
});

it('a pending ERC-20 transfer() replaced by another call with the same nonce: the recipient gets ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED_DROPPED, replaced, naming the replacement', async () => {
  const to = f.node.accounts[9]?.address as Address;
  const sub = (await subscribe('address-tokens-transactions-unconfirmed', { address: to }, 'tt-replaced')).referenceId;
  await indexed();
  const wallet = walletClient(f.node, 0);
  const account = wallet.account ?? null;
  const transfer = (recipient: Address) =>
    encodeFunctionData({
      abi: parseAbi(['function transfer(address to, uint256 amount) returns (bool)']),
      functionName: 'transfer',
      args: [recipient, 1_000_000n],
    });
  const nonce = Number(await f.node.request<string>('eth_getTransactionCount', [f.node.accounts[0]?.address, 'pending']));
  const fee = { maxFeePerGas: 10_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
  const original = await wallet.sendTransaction({ to: token, data: transfer(to), gas: 100_000n, nonce, ...fee, account, chain: wallet.chain });
  await until('the announced transfer', async () => callbacksOf(sub).length === 1);
  const replacement = await wallet.sendTransaction({
    to: token,
    data: transfer(f.node.accounts[4]?.address as Address),
    gas: 100_000n,
    nonce,
    maxFeePerGas: 3n * fee.maxFeePerGas,
    maxPriorityFeePerGas: 3n * fee.maxPriorityFeePerGas,
    account,
    chain: wallet.chain,
  });
  await until('the dropped transfer', async () => callbacksOf(sub).length === 2);
  expect(callbacksOf(sub)[1]?.json.data).toMatchObject({ event: 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED_DROPPED' });
  expect(items(sub)[1]).toEqual({
    blockchain: 'ethereum',
    network: 'goerli',
    address: to,
    transactionId: original,
    tokenType: 'ERC-20',
    token: { name: 'Test Token', symbol: 'TT', decimals: '6', amount: '1', contractAddress: token.toLowerCase() },
    direction: 'incoming',
    firstSeenInMempoolTimestamp: items(sub)[0]?.firstSeenInMempoolTimestamp,
    reason: 'replaced',
    replacedByTransactionId: replacement,
  });
  expectSigned(callbacksOf(sub)[1]);
  await mineAndProcess();
});

it('a pending payment whose nonce a mined transaction takes (never seen pending) is DROPPED, conflicted, naming the mined one; the block fires nothing more', async () => {
  const to = f.node.accounts[3]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'eth-conflicted')).referenceId;
  await indexed();
  const wallet = walletClient(f.node, 2);
  const account = wallet.account ?? null;
  const nonce = Number(await f.node.request<string>('eth_getTransactionCount', [f.node.accounts[2]?.address, 'pending']));
  const fee = { maxFeePerGas: 10_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
  const original = await wallet.sendTransaction({ to, value: 1_000n, nonce, ...fee, account, chain: wallet.chain });
  await until('the original', async () => callbacksOf(sub).length === 1);
  // The same nonce paid elsewhere and mined at once (automine): a block herald's pending reads never saw
  // in the pool, as one a miner built from a transaction it never relayed.
  expect(await f.node.request<boolean>('hardhat_dropTransaction', [original])).toBe(true);
  await f.node.setAutomine(true);
  const other = f.node.accounts[4]?.address as Address;
  const conflict = await wallet.sendTransaction({ to: other, value: 2_000n, nonce, ...fee, account, chain: wallet.chain });
  await f.node.setAutomine(false);
  const mined = await f.node.request<{ blockNumber: string | null }>('eth_getTransactionByHash', [conflict]);
  expect(mined.blockNumber).not.toBeNull();
  await processed(Number(mined.blockNumber));
  await until('the dropped original', async () => callbacksOf(sub).length === 2);
  expect(callbacksOf(sub).map((cb) => (cb.json.data as { event?: string }).event)).toEqual([
    'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
    'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
  ]);
  expect(items(sub)[1]).toEqual({
    ...items(sub)[0],
    safety: undefined,
    reason: 'conflicted',
    replacedByTransactionId: conflict,
  });
  expectSigned(callbacksOf(sub)[1]);
  await mineAndProcess();
  await new Promise((r) => setTimeout(r, 400));
  await f.t.app.worker?.settled();
  expect(callbacksOf(sub)).toHaveLength(2);
});

it('a payment that entered the pool while herald was stopped is seen after the restart: the new filter comes with a read of the pending block', async () => {
  const to = f.node.accounts[8]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'eth-pooled')).referenceId;
  await indexed();
  let hash = '';
  await f.t.restart(async () => {
    // A filter made from now on would not announce this one.
    hash = (await sendEth(f.node, to, 2_000_000_000_000_000n, { wait: false })).hash;
  });
  const [seen] = await until('the pooled payment', async () => callbacksOf(sub).length === 1 && callbacksOf(sub));
  expect(seen?.json.data.item).toMatchObject({ transactionId: hash, amount: '0.002', direction: 'incoming' });
  await mineAndProcess();
});

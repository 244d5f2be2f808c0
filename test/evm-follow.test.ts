/**
 * EVM chain following end to end against a real EVM node (EDR over HTTP and WebSocket): contracts
 * compiled from source and deployed here, the service following ethereum/goerli, callbacks received by
 * a real HTTPS receiver with exact bodies and valid signatures, confirmations counted block by block,
 * thresholds compared in wei, reorganisations made with evm_snapshot/evm_revert, and the wallet ledger
 * compared with a recount from the node.
 *
 * Automine is off: each test mines its blocks itself and waits for the follower to process them
 * (GET /blockchain-events/status), so "not before the N-th confirmation" is checked at every block.
 */
import { type Address, getAddress, type Hex, keccak256 } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { createOperatorToken } from '../src/store/operator-tokens.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { compileContracts, deployContract, publicClient, readContract, sendEth, walletClient, writeContract } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type ReceivedRequest, type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const ETH = 10n ** 18n;
const SECRET = 'whsec-evm-follow';
/** The safety verdict of a callback nothing is wrong with (docs/concepts/deposit-safety.md). */
const OK = { verdict: 'ok', flags: [] };

let node: EvmNode;
let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;
let token: Address;
let nft: Address;
let forwarder: Address;
let swallower: Address;

beforeAll(async () => {
  const ca = await createTestCa();
  [node, receiver] = await Promise.all([startEvmNode({ automine: true }), startReceiver({ ca })]);
  await compileContracts();
  token = await deployContract(node, 'TestToken', ['Herald Test Token', 'HTT', 6]);
  nft = await deployContract(node, 'TestNft', ['Herald Test NFT', 'HNFT']);
  forwarder = await deployContract(node, 'Forwarder');
  swallower = await deployContract(node, 'Swallower');
  await writeContract(node, 'TestToken', token, 'mint', [node.accounts[0]?.address, 1_000_000n * 10n ** 6n]);
  await node.setAutomine(false);
  t = await startTestApp({
    chains: [
      {
        blockchain: 'ethereum',
        network: 'goerli',
        rpcUrl: node.url,
        wsUrl: node.wsUrl,
        pollIntervalMs: 50,
        concurrency: 8,
        requestTimeoutMs: 5000,
        // The test token is this chain's well-known token: a copy of its symbol elsewhere is a look-alike.
        knownTokens: [{ contract: getAddress(token), symbol: 'HTT', name: 'Herald Test Token' }],
      },
    ],
    delivery: receiverDelivery(writeCaFile(ca.caPem)),
  });
  c = await t.customer({ domains: ['localhost'] });
  await processed(await head());
}, 60_000);

afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await node?.close();
});

// --- helpers -------------------------------------------------------------------------------------

const account = (i: number) => node.accounts[i]?.address as Address;
const head = async () => Number(await publicClient(node).getBlockNumber());

const follow = followHelpers(() => ({ t, customer: c, receiver, blockchain: 'ethereum', network: 'goerli' }), SECRET);
const { processed, callbacksOf } = follow;

/** Mines one block and waits until it is processed and every callback it made due is out. */
async function mineAndProcess(): Promise<number> {
  const height = await node.mine(1);
  await processed(height);
  await t.app.worker?.settled();
  return height;
}

const subscribe = async (event: string, item: Record<string, unknown>): Promise<string> => (await follow.subscribe(event, item)).referenceId;

function expectSigned(r: ReceivedRequest) {
  follow.expectSigned(r);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
}

async function blockOf(height: number) {
  const b = await publicClient(node).getBlock({ blockNumber: BigInt(height) });
  return { height, hash: b.hash as string, timestamp: Number(b.timestamp) };
}

// --- tests ---------------------------------------------------------------------------------------

describe('EVM chain following (ethereum/goerli on a local EDR node)', () => {
  it('TRANSACTION_MINED: the exact contract body, signed, once the block is processed; and at once for a transaction mined before subscribing', async () => {
    const pending = await sendEth(node, account(3), 12345n, { from: 1, wait: false });
    const id = await subscribe('transaction-mined', { transactionId: pending.hash });
    await t.app.ingest?.settled();
    const height = await mineAndProcess();
    const [cb] = await until('the mined callback', async () => callbacksOf(id).length === 1 && callbacksOf(id));
    expectSigned(cb as ReceivedRequest);
    expect(cb?.json).toEqual({
      apiVersion: '2021-03-20',
      referenceId: id,
      idempotencyKey: expect.stringMatching(/^[0-9a-f]{64}$/),
      data: {
        product: 'BLOCKCHAIN_EVENTS',
        event: 'TRANSACTION_MINED',
        item: { blockchain: 'ethereum', network: 'goerli', transactionId: pending.hash, minedInBlock: await blockOf(height) },
      },
    });
    const nextHeight = await node.mine(1);
    const status = await processed(nextHeight);
    expect(status).toMatchObject({ state: 'following', nodeHeight: nextHeight, processedHeight: nextHeight, lagBlocks: 0, lagSeconds: 0 });
    expect(status.processedHash).toBe((await blockOf(nextHeight)).hash);
    await t.app.worker?.settled();
    expect(callbacksOf(id)).toHaveLength(1);

    // Broadcast, mined, then subscribed: the callback comes without another block.
    const early = await sendEth(node, account(3), 777n, { from: 1, wait: false });
    const minedAt = await mineAndProcess();
    // Subscribed in upper-case hex: the callback echoes the client's spelling, as the responses do.
    const spelled = `0x${early.hash.slice(2).toUpperCase()}`;
    const lateId = await subscribe('transaction-mined', { transactionId: spelled });
    const [late] = await until('the already-mined callback', async () => callbacksOf(lateId).length === 1 && callbacksOf(lateId));
    expect(late?.json.data.item).toEqual({ blockchain: 'ethereum', network: 'goerli', transactionId: spelled, minedInBlock: await blockOf(minedAt) });
  });

  it('ADDRESS_TOKENS_TRANSACTION_CONFIRMED: ERC-20 and ERC-721 transfers fire on exactly the receiveCallbackOn-th confirmation, never again; the address as subscribed (checksummed)', async () => {
    const holder = account(4);
    expect(holder).not.toBe(holder.toLowerCase()); // a checksummed (mixed-case) spelling
    const id = await subscribe('address-tokens-transactions-confirmed', { address: holder, receiveCallbackOn: 4 });
    await t.app.ingest?.settled();
    const fungible = await writeContract(node, 'TestToken', token, 'transfer', [holder, 2_500_000n], { wait: false });
    const minted = await writeContract(node, 'TestNft', nft, 'mint', [account(0), 42n], { wait: false });
    const minedAt = await mineAndProcess();
    const nftTransfer = await writeContract(node, 'TestNft', nft, 'transferFrom', [account(0), holder, 42n], { wait: false });
    const nftMinedAt = await mineAndProcess();
    expect((await publicClient(node).getTransactionReceipt({ hash: minted.hash })).status).toBe('success');

    // Confirmations of the first block: 2 (nft block), then 3: nothing yet.
    await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(0);
    await mineAndProcess(); // 4th confirmation of the ERC-20 block
    const first = await until('the ERC-20 callback', async () => callbacksOf(id).length === 1 && callbacksOf(id));
    expectSigned(first[0] as ReceivedRequest);
    expect(first[0]?.json.data.item).toEqual({
      blockchain: 'ethereum',
      network: 'goerli',
      address: holder, // the subscribed spelling, not the lower-case form matching uses
      minedInBlock: await blockOf(minedAt),
      transactionId: fungible.hash,
      tokenType: 'ERC-20',
      token: { name: 'Herald Test Token', symbol: 'HTT', decimals: '6', amount: '2.5', contractAddress: token.toLowerCase() },
      direction: 'incoming',
      safety: OK,
    });
    await mineAndProcess(); // 4th confirmation of the NFT block
    const both = await until('the ERC-721 callback', async () => callbacksOf(id).length === 2 && callbacksOf(id));
    expect(both[1]?.json.data.item).toEqual({
      blockchain: 'ethereum',
      network: 'goerli',
      address: holder,
      minedInBlock: await blockOf(nftMinedAt),
      transactionId: nftTransfer.hash,
      tokenType: 'ERC-721',
      token: { name: 'Herald Test NFT', symbol: 'HNFT', tokenId: '42', contractAddress: nft.toLowerCase() },
      direction: 'incoming',
      safety: OK,
    });
    for (let i = 0; i < 3; i++) await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(2);
  });

  it('CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: equal fires, one wei below does not, a reverted inner frame never does', async () => {
    const id = await subscribe('internal-transactions-for-specific-amount', { amountHigherThan: 1 });
    await t.app.ingest?.settled();
    const recipient = account(5);
    const equal = await writeContract(node, 'Forwarder', forwarder, 'forward', [recipient], { value: ETH, wait: false, from: 2 });
    const below = await writeContract(node, 'Forwarder', forwarder, 'forward', [recipient], { value: ETH - 1n, wait: false, from: 2 });
    const swallowed = await writeContract(node, 'Swallower', swallower, 'trySend', [recipient], { value: 5n * ETH, wait: false, from: 2 });
    const minedAt = await mineAndProcess();
    expect((await publicClient(node).getTransactionReceipt({ hash: swallowed.hash })).status).toBe('success');
    await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(0);
    await mineAndProcess(); // 3 confirmations: the chain default
    const [cb] = await until('the internal transfer callback', async () => callbacksOf(id).length >= 1 && callbacksOf(id));
    for (let i = 0; i < 2; i++) await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(1);
    expectSigned(cb as ReceivedRequest);
    expect(cb?.json.data.item).toEqual({
      blockchain: 'ethereum',
      network: 'goerli',
      address: recipient.toLowerCase(),
      minedInBlock: await blockOf(minedAt),
      parentTransactionId: equal.hash,
      operationId: 'call_0',
      amount: '1',
      unit: 'ETH',
      safety: OK,
    });
    expect(below.hash).not.toBe(equal.hash);
    // The one-wei-below transfer did happen (so its silence is the threshold's doing, not a failure).
    expect((await publicClient(node).getTransactionReceipt({ hash: below.hash })).status).toBe('success');
  });

  it('ADDRESS_INTERNAL_TRANSACTION_CONFIRMED: internal in (recipient) and out (the forwarding contract) at each receiveCallbackOn, the address as subscribed; a reverted frame never', async () => {
    const payee = privateKeyToAddress(generatePrivateKey()); // checksummed, fresh: only these transfers touch it
    const contract = getAddress(forwarder);
    const inId = await subscribe('address-internal-transactions-confirmed', { address: payee, allowDuplicates: false, receiveCallbackOn: 2 });
    const outId = await subscribe('address-internal-transactions-confirmed', { address: contract, allowDuplicates: false });
    await t.app.ingest?.settled();
    const paid = await writeContract(node, 'Forwarder', forwarder, 'forward', [payee], { value: 2n * ETH, wait: false, from: 2 });
    const swallowed = await writeContract(node, 'Swallower', swallower, 'trySend', [payee], { value: 3n * ETH, wait: false, from: 2 });
    const minedAt = await mineAndProcess();
    expect((await publicClient(node).getTransactionReceipt({ hash: swallowed.hash })).status).toBe('success');
    expect(callbacksOf(inId)).toHaveLength(0);
    await mineAndProcess(); // 2nd confirmation: the payee's receiveCallbackOn
    const [incoming] = await until('the incoming internal callback', async () => callbacksOf(inId).length >= 1 && callbacksOf(inId));
    expect(callbacksOf(outId)).toHaveLength(0);
    await mineAndProcess(); // 3rd: the chain default of the forwarder's subscription
    const [outgoing] = await until('the outgoing internal callback', async () => callbacksOf(outId).length >= 1 && callbacksOf(outId));
    for (let i = 0; i < 2; i++) await mineAndProcess();
    // One each: the swallowed (reverted) payment to the payee never fires.
    expect(callbacksOf(inId)).toHaveLength(1);
    expect(callbacksOf(outId)).toHaveLength(1);
    expectSigned(incoming as ReceivedRequest);
    const common = {
      blockchain: 'ethereum',
      network: 'goerli',
      minedInBlock: await blockOf(minedAt),
      parentTransactionId: paid.hash,
      operationId: 'call_0',
      amount: '2',
      unit: 'ETH',
    };
    expect(incoming?.json).toEqual({
      apiVersion: '2021-03-20',
      referenceId: inId,
      idempotencyKey: expect.stringMatching(/^[0-9a-f]{64}$/),
      data: {
        product: 'BLOCKCHAIN_EVENTS',
        event: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
        item: { ...common, address: payee, direction: 'incoming', safety: OK },
      },
    });
    expect(outgoing?.json.data).toEqual({
      product: 'BLOCKCHAIN_EVENTS',
      event: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
      item: { ...common, address: contract, direction: 'outgoing', safety: OK },
    });
  });

  it('ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: one callback at each confirmation 1..N with its counts and own key, signed; a reverted frame never', async () => {
    const payee = privateKeyToAddress(generatePrivateKey());
    const id = await subscribe('address-internal-transactions-confirmed-each-confirmation', { address: payee, allowDuplicates: false, confirmationsCount: 3 });
    await t.app.ingest?.settled();
    const paid = await writeContract(node, 'Forwarder', forwarder, 'forward', [payee], { value: ETH, wait: false, from: 2 });
    await writeContract(node, 'Swallower', swallower, 'trySend', [payee], { value: 3n * ETH, wait: false, from: 2 });
    const minedAt = await mineAndProcess();
    for (let i = 0; i < 4; i++) await mineAndProcess();
    const all = await until('confirmations 1 to 3', async () => callbacksOf(id).length === 3 && callbacksOf(id));
    for (const cb of all) expectSigned(cb);
    const items = all.map((cb) => cb.json.data.item).sort((a, b) => (a.currentConfirmations as number) - (b.currentConfirmations as number));
    const item = {
      blockchain: 'ethereum',
      network: 'goerli',
      address: payee,
      minedInBlock: await blockOf(minedAt),
      parentTransactionId: paid.hash,
      operationId: 'call_0',
      amount: '1',
      unit: 'ETH',
      direction: 'incoming',
      safety: OK,
      targetConfirmations: 3,
    };
    expect(items).toEqual([1, 2, 3].map((currentConfirmations) => ({ ...item, currentConfirmations })));
    expect(new Set(all.map((cb) => cb.json.idempotencyKey)).size).toBe(3);
  });

  it('CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: whole tokens after the decimals, equal fires and one base unit below does not; an NFT counts as 1', async () => {
    const two = await subscribe('tokens-transfers-for-specific-amount', { amountHigherThan: 2, contractAddress: getAddress(token) });
    const nftOne = await subscribe('tokens-transfers-for-specific-amount', { amountHigherThan: 1, contractAddress: nft });
    const nftTwo = await subscribe('tokens-transfers-for-specific-amount', { amountHigherThan: 2, contractAddress: nft });
    await t.app.ingest?.settled();
    const equal = await writeContract(node, 'TestToken', token, 'transfer', [account(3), 2_000_000n], { wait: false });
    await writeContract(node, 'TestToken', token, 'transfer', [account(3), 1_999_999n], { wait: false });
    const minted = await writeContract(node, 'TestNft', nft, 'mint', [account(3), 77n], { wait: false });
    const minedAt = await mineAndProcess();
    await mineAndProcess();
    expect(callbacksOf(two)).toHaveLength(0);
    await mineAndProcess(); // 3 confirmations: the chain default
    const [fungible] = await until('the ERC-20 amount callback', async () => callbacksOf(two).length >= 1 && callbacksOf(two));
    const [nonFungible] = await until('the ERC-721 amount callback', async () => callbacksOf(nftOne).length >= 1 && callbacksOf(nftOne));
    for (let i = 0; i < 2; i++) await mineAndProcess();
    expect(callbacksOf(two)).toHaveLength(1);
    expect(callbacksOf(nftOne)).toHaveLength(1);
    expect(callbacksOf(nftTwo)).toHaveLength(0);
    expectSigned(fungible as ReceivedRequest);
    const minedInBlock = await blockOf(minedAt);
    expect(fungible?.json.data).toEqual({
      product: 'BLOCKCHAIN_EVENTS',
      event: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
      item: {
        blockchain: 'ethereum',
        network: 'goerli',
        transactionId: equal.hash,
        minedInBlock,
        tokenType: 'ERC-20',
        token: { name: 'Herald Test Token', symbol: 'HTT', decimals: '6', amount: '2', contractAddress: token.toLowerCase() },
        safety: OK,
      },
    });
    expect(nonFungible?.json.data.item).toEqual({
      blockchain: 'ethereum',
      network: 'goerli',
      transactionId: minted.hash,
      minedInBlock,
      tokenType: 'ERC-721',
      token: { name: 'Herald Test NFT', symbol: 'HNFT', tokenId: '77', contractAddress: nft.toLowerCase() },
      safety: OK,
    });
  });

  it('a reorganisation cancels the orphaned pending callback; the transaction mined again fires with the new block and a new key; the ledger equals a recount', async () => {
    const holder = account(6);
    const wallet = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: 'reorg' } } } });
    const walletId = wallet.body.data.item.walletId as string;
    const added = await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/ethereum/goerli/addresses`, {
      key: c.key,
      body: { data: { item: { address: holder } } },
    });
    expect(added.status, added.text).toBe(201);
    const tokenSub = await subscribe('address-tokens-transactions-confirmed', { address: holder, receiveCallbackOn: 3 });
    await mineAndProcess();

    const signer = walletClient(node, 0);
    const request = await signer.prepareTransactionRequest({
      account: signer.account as NonNullable<typeof signer.account>,
      chain: signer.chain,
      to: token,
      data: encodeTransfer(holder, 7_000_000n),
    });
    const raw = await signer.signTransaction(request as Parameters<typeof signer.signTransaction>[0]);
    const txHash = keccak256(raw);
    const minedSub = await subscribe('transaction-mined', { transactionId: txHash });
    await t.app.ingest?.settled();

    // The snapshot is taken before the transaction reaches the pool, so reverting forgets it.
    const snapshot = await node.snapshot();
    expect(await node.request('eth_sendRawTransaction', [raw])).toBe(txHash);
    const ethToHolder = await sendEth(node, holder, 3n * ETH, { from: 7, wait: false });
    const orphanHeight = await mineAndProcess();
    const [orphanMined] = await until('the mined callback of the first branch', async () => callbacksOf(minedSub).length === 1 && callbacksOf(minedSub));
    expect(orphanMined?.json.data.item.minedInBlock).toEqual(await blockOf(orphanHeight));
    await mineAndProcess(); // 2 confirmations: still pending

    // The new branch: from the snapshot, one empty block (another timestamp, so another hash), then the
    // same signed transaction again, then enough blocks to be longer than the old branch.
    await node.revert(snapshot);
    const base = await publicClient(node).getBlock();
    await node.mine(1, { timestamp: Number(base.timestamp) + 100 });
    await node.request('eth_sendRawTransaction', [raw]);
    const remined = await node.mine(1, { timestamp: Number(base.timestamp) + 101 });
    const tip = await node.mine(1, { timestamp: Number(base.timestamp) + 102 });
    await processed(tip);
    await t.app.worker?.settled();
    expect(remined).toBe(orphanHeight + 1);
    // The operator's chains page counts it: recorded in the rewind's own transaction.
    const operator = await createOperatorToken(t.app.database.db, 'evm-follow');
    const chains = await t.request('GET', '/operator/chains', { headers: { authorization: `Bearer ${operator?.token}` } });
    const goerli = chains.body.data.items.find((i: { blockchain: string; network: string }) => i.blockchain === 'ethereum' && i.network === 'goerli');
    expect(goerli.reorganisations).toBeGreaterThanOrEqual(1);
    expect(goerli.state).toBe('following');

    const minedCallbacks = await until('the mined callback of the new branch', async () => callbacksOf(minedSub).length === 2 && callbacksOf(minedSub));
    expect(minedCallbacks[1]?.json.data.item.minedInBlock).toEqual(await blockOf(remined));
    expect(minedCallbacks[1]?.json.idempotencyKey).not.toBe(minedCallbacks[0]?.json.idempotencyKey);
    expect(callbacksOf(tokenSub)).toHaveLength(0); // the orphaned block's pending event was dropped
    await mineAndProcess(); // 3rd confirmation of the re-mined block
    const [tokenCb] = await until('the token callback of the new branch', async () => callbacksOf(tokenSub).length === 1 && callbacksOf(tokenSub));
    expect(tokenCb?.json.data.item.minedInBlock).toEqual(await blockOf(remined));
    expect(tokenCb?.json.data.item.transactionId).toBe(txHash);
    for (let i = 0; i < 3; i++) await mineAndProcess();
    expect(callbacksOf(tokenSub)).toHaveLength(1);
    expect(
      (
        await publicClient(node)
          .getTransaction({ hash: ethToHolder.hash })
          .catch(() => undefined)
      )?.blockNumber ?? null,
    ).toBeNull();

    // Ledger: coins moved on the final branch, then the service's confirmed figures are compared with a
    // recount from the node (balance at the confirmed height; received and spent from the receipts).
    const incoming = await sendEth(node, holder, 2n * ETH, { from: 7, wait: false });
    const outgoing = await sendEth(node, account(8), ETH / 2n, { from: 6, wait: false });
    await mineAndProcess();
    for (let i = 0; i < 3; i++) await mineAndProcess();
    const receipt = await publicClient(node).getTransactionReceipt({ hash: outgoing.hash });
    const fee = receipt.gasUsed * receipt.effectiveGasPrice;
    expect((await publicClient(node).getTransactionReceipt({ hash: incoming.hash })).status).toBe('success');
    const confirmedHeight = (await head()) - 3 + 1;
    const coin = await publicClient(node).getBalance({ address: holder, blockNumber: BigInt(confirmedHeight) });
    const tokens = await readContract<bigint>(node, 'TestToken', token, 'balanceOf', [holder]);
    const assets = await t.request('GET', `/wallet-as-a-service/wallets/${walletId}`, { key: c.key });
    expect(assets.status, assets.text).toBe(200);
    const item = assets.body.data.item;
    expect(item.coins).toEqual([
      {
        blockchain: 'ethereum',
        network: 'goerli',
        unit: 'ETH',
        confirmedBalance: formatEth(coin),
        totalReceived: formatEth(2n * ETH),
        totalSpent: formatEth(ETH / 2n + fee),
        openingBalance: 'read',
      },
    ]);
    expect(coin).toBe(10_000n * ETH + 2n * ETH - ETH / 2n - fee); // the orphaned 3 ETH are not there
    expect(item.fungibleTokens).toEqual([
      { blockchain: 'ethereum', network: 'goerli', identifier: token.toLowerCase(), symbol: 'HTT', type: 'ERC-20', amount: formatUnits(tokens, 6) },
    ]);
    expect(tokens).toBe(7_000_000n);
  });

  it('ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: a callback at each confirmation 1..N; a reorganisation in the middle starts again at 1 in the new block, and the dropped block never reaches N', async () => {
    const holder = getAddress(`0x${'4b'.repeat(20)}`); // checksummed; no key needed to receive tokens
    const sub = await subscribe('address-tokens-transactions-confirmed-each-confirmation', { address: holder, confirmationsCount: 3 });
    await t.app.ingest?.settled();
    const signer = walletClient(node, 0);
    const request = await signer.prepareTransactionRequest({
      account: signer.account as NonNullable<typeof signer.account>,
      chain: signer.chain,
      to: token,
      data: encodeTransfer(holder, 1_250_000n),
    });
    const raw = await signer.signTransaction(request as Parameters<typeof signer.signTransaction>[0]);
    const txHash = keccak256(raw);

    const snapshot = await node.snapshot(); // before the transaction reaches the pool: reverting forgets it
    await node.request('eth_sendRawTransaction', [raw]);
    const orphanHeight = await mineAndProcess(); // confirmation 1
    await mineAndProcess(); // confirmation 2
    const orphan = await blockOf(orphanHeight);
    await until('confirmations 1 and 2 of the first branch', async () => callbacksOf(sub).length === 2);

    await node.revert(snapshot);
    const base = await publicClient(node).getBlock();
    await node.mine(1, { timestamp: Number(base.timestamp) + 100 });
    await node.request('eth_sendRawTransaction', [raw]);
    const remined = await node.mine(1, { timestamp: Number(base.timestamp) + 101 });
    await processed(await node.mine(1, { timestamp: Number(base.timestamp) + 102 }));
    await mineAndProcess();
    for (let i = 0; i < 3; i++) await mineAndProcess(); // past N: nothing more
    const all = await until('confirmations 1 to 3 of the new branch', async () => callbacksOf(sub).length === 5 && callbacksOf(sub));
    for (const cb of all) expectSigned(cb);

    const reminedBlock = await blockOf(remined);
    const tokenItem = { name: 'Herald Test Token', symbol: 'HTT', decimals: '6', amount: '1.25', contractAddress: token.toLowerCase() };
    const itemAt = (minedInBlock: unknown, current: number) => ({
      blockchain: 'ethereum',
      network: 'goerli',
      address: holder,
      minedInBlock,
      transactionId: txHash,
      tokenType: 'ERC-20',
      token: tokenItem,
      direction: 'incoming',
      safety: OK,
      currentConfirmations: current,
      targetConfirmations: 3,
    });
    const ofBlock = (hash: string) =>
      all
        .filter((cb) => (cb.json.data.item.minedInBlock as { hash: string }).hash === hash)
        .map((cb) => cb.json.data.item)
        .sort((a, b) => (a.currentConfirmations as number) - (b.currentConfirmations as number));
    expect(ofBlock(orphan.hash)).toEqual([itemAt(orphan, 1), itemAt(orphan, 2)]);
    expect(ofBlock(reminedBlock.hash)).toEqual([itemAt(reminedBlock, 1), itemAt(reminedBlock, 2), itemAt(reminedBlock, 3)]);
    expect(new Set(all.map((cb) => cb.json.idempotencyKey)).size).toBe(5);
    for (const cb of all) expect((cb.json.data as { event?: string }).event).toBe('ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION');
  });

  it('block events: BLOCK_MINED for every block, BLOCK_HEIGHT_REACHED at its height (at once when passed), BLOCK_REVERTED per dropped block; replacements fire again with new keys', async () => {
    const start = await head();
    const minedSub = await subscribe('block-mined', {});
    const passedSub = await subscribe('block-height-reached', { blockHeightReached: start - 1 });
    const futureSub = await subscribe('block-height-reached', { blockHeightReached: start + 2 });
    const revertedSub = await subscribe('reverted-block', { allowDuplicates: 'false' });
    await t.app.ingest?.settled();
    const flat = (event: string, referenceId: string, block: { height: number; hash: string; timestamp: number }) => ({
      apiVersion: '2021-03-20',
      referenceId,
      idempotencyKey: expect.stringMatching(/^[0-9a-f]{64}$/),
      data: { product: 'BLOCKCHAIN_EVENTS', event, item: { blockchain: 'ethereum', network: 'goerli', ...block } },
    });

    // A height already applied fires at once, without another block.
    const [passed] = await until('the callback of a height already passed', async () => callbacksOf(passedSub).length === 1 && callbacksOf(passedSub));
    expectSigned(passed as ReceivedRequest);
    expect(passed?.json).toEqual(flat('BLOCK_HEIGHT_REACHED', passedSub, await blockOf(start - 1)));
    expect(callbacksOf(minedSub)).toHaveLength(0);
    expect(callbacksOf(futureSub)).toHaveLength(0);

    const snapshot = await node.snapshot();
    const first = [await blockOf(await mineAndProcess())];
    expect(callbacksOf(futureSub)).toHaveLength(0); // not its height yet
    first.push(await blockOf(await mineAndProcess()));
    const minedFirst = await until('a BLOCK_MINED per block', async () => callbacksOf(minedSub).length === 2 && callbacksOf(minedSub));
    for (const [i, cb] of minedFirst.entries()) {
      expectSigned(cb);
      expect(cb.json).toEqual(flat('BLOCK_MINED', minedSub, first[i] as { height: number; hash: string; timestamp: number }));
    }
    const [reached] = await until('the height reached', async () => callbacksOf(futureSub).length === 1 && callbacksOf(futureSub));
    expectSigned(reached as ReceivedRequest);
    expect(reached?.json).toEqual(flat('BLOCK_HEIGHT_REACHED', futureSub, first[1] as { height: number; hash: string; timestamp: number }));
    expect(callbacksOf(revertedSub)).toHaveLength(0);

    // The two blocks are replaced by a longer branch of three.
    await node.revert(snapshot);
    const base = await publicClient(node).getBlock();
    const tip = await node.mine(3, { timestamp: Number(base.timestamp) + 50 });
    await processed(tip);
    await t.app.worker?.settled();
    const second = [await blockOf(start + 1), await blockOf(start + 2), await blockOf(start + 3)];
    expect(second[0]?.hash).not.toBe(first[0]?.hash);
    expect(second[1]?.hash).not.toBe(first[1]?.hash);

    const reverted = await until('a BLOCK_REVERTED per dropped block', async () => callbacksOf(revertedSub).length === 2 && callbacksOf(revertedSub));
    for (const cb of reverted) expectSigned(cb);
    expect(reverted.map((cb) => cb.json).sort((a, b) => (a.data.item.height as number) - (b.data.item.height as number))).toEqual(
      first.map((b) => flat('BLOCK_REVERTED', revertedSub, b)),
    );
    const minedAll = await until('a BLOCK_MINED per replacement block', async () => callbacksOf(minedSub).length === 5 && callbacksOf(minedSub));
    expect(minedAll.slice(2).map((cb) => cb.json)).toEqual(second.map((b) => flat('BLOCK_MINED', minedSub, b)));
    expect(new Set(minedAll.map((cb) => cb.json.idempotencyKey)).size).toBe(5);
    const reachedAll = await until(
      'the height reached again in the replacement block',
      async () => callbacksOf(futureSub).length === 2 && callbacksOf(futureSub),
    );
    expect(reachedAll[1]?.json).toEqual(flat('BLOCK_HEIGHT_REACHED', futureSub, second[1] as { height: number; hash: string; timestamp: number }));
    expect(reachedAll[1]?.json.idempotencyKey).not.toBe(reachedAll[0]?.json.idempotencyKey);

    await mineAndProcess();
    expect(callbacksOf(passedSub)).toHaveLength(1);
    expect(callbacksOf(futureSub)).toHaveLength(2);
    expect(callbacksOf(revertedSub)).toHaveLength(2);
    expect(callbacksOf(minedSub)).toHaveLength(6);
    for (const id of [minedSub, passedSub, futureSub, revertedSub]) {
      expect((await t.request('DELETE', `/blockchain-events/ethereum/goerli/subscriptions/${id}`, { key: c.key })).status).toBe(200);
    }
  });

  it("a head replaced at the same height is a reorganisation at once: the orphaned block's undelivered callback is cancelled before any further block is mined", async () => {
    receiver.byPath('/hooks/same-height', { kind: 'status', status: 503 }); // keeps the callback undelivered (retrying)
    const snapshot = await node.snapshot(); // before the transaction reaches the pool: reverting forgets it
    const sent = await sendEth(node, account(3), 4242n, { from: 2, wait: false });
    const { referenceId } = await follow.subscribe('transaction-mined', { transactionId: sent.hash }, 'same-height');
    await t.app.ingest?.settled();
    const orphanHeight = await mineAndProcess();
    const orphan = await blockOf(orphanHeight);
    await until('a failed delivery attempt of the orphaned callback', async () => receiver.received.some((r) => r.path === '/hooks/same-height'));
    const rows = () =>
      t.app.database.db.query<{ status: string; outcome: string | null; body: string }>(
        'test:same-height-callbacks',
        'SELECT status, outcome, body FROM callbacks WHERE subscription_id = $1 ORDER BY created_at',
        [referenceId],
      );
    expect(await rows()).toMatchObject([{ status: 'pending', outcome: null }]);

    // The node switches to another block at the same height (another timestamp, no transaction): no new height.
    await node.revert(snapshot);
    const base = await publicClient(node).getBlock();
    expect(await node.mine(1, { timestamp: Number(base.timestamp) + 100 })).toBe(orphanHeight);
    const replacement = await blockOf(orphanHeight);
    expect(replacement.hash).not.toBe(orphan.hash);

    const [cancelled] = await until('the orphaned callback to be cancelled', async () => {
      const r = await rows();
      return r[0]?.status === 'cancelled' && r;
    });
    expect(cancelled).toMatchObject({ status: 'cancelled', outcome: 'reorganised' });
    expect(JSON.parse((cancelled as { body: string }).body).data.item.minedInBlock.hash).toBe(orphan.hash);
    // ... and the follower is on the replacement, while the node is still at the same height.
    await until('the replacement block to be processed', async () => {
      const res = await t.request('GET', '/blockchain-events/status', { key: c.key });
      const item = res.body?.data?.items?.find((i: { blockchain: string }) => i.blockchain === 'ethereum');
      return item?.processedHash === replacement.hash;
    });
    expect(await head()).toBe(orphanHeight);
    expect(await rows()).toHaveLength(1);
  });

  it('coin events: ADDRESS_COINS_TRANSACTION_CONFIRMED in and out (fee in the outgoing amount, a self-transfer outgoing by its fee, an internal ETH transfer counted as the ledger counts it), CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER at >= 1 ETH; the signed sum of the callbacks equals the balance change in all-assets', async () => {
    const watched = account(7);
    expect(watched).not.toBe(watched.toLowerCase());
    const wallet = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: 'coins' } } } });
    const walletId = wallet.body.data.item.walletId as string;
    await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/ethereum/goerli/addresses`, {
      key: c.key,
      body: { data: { item: { address: watched } } },
    });
    const assets = async () => {
      const r = await t.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: c.key });
      return r.body.data.items.find((w: { walletId: string }) => w.walletId === walletId).coins[0];
    };
    for (let i = 0; i < 3; i++) await mineAndProcess();
    const before = await until('the opening balance', async () => {
      const coin = await assets();
      return coin?.openingBalance === 'read' && coin;
    });
    const coinsId = await subscribe('address-coins-transactions-confirmed', { address: watched, receiveCallbackOn: 2 });
    const amountId = await subscribe('coins-transactions-for-specific-amount', { amountHigherThan: 1 });
    await t.app.ingest?.settled();

    const incoming = await sendEth(node, watched, 2n * ETH, { from: 1, wait: false });
    const internal = await writeContract(node, 'Forwarder', forwarder, 'forward', [watched], { value: ETH, wait: false, from: 2 });
    const firstAt = await mineAndProcess();
    expect(callbacksOf(coinsId)).toHaveLength(0); // one confirmation; receiveCallbackOn is 2
    const outgoing = await sendEth(node, account(8), ETH / 2n, { from: 7, wait: false });
    const self = await sendEth(node, watched, ETH, { from: 7, wait: false });
    const secondAt = await mineAndProcess();
    await until('the first block’s coin callbacks', async () => callbacksOf(coinsId).length === 2);
    expect(callbacksOf(amountId)).toHaveLength(0); // the amount event waits for the chain's 3 confirmations
    await mineAndProcess();
    await mineAndProcess();
    await until('every coin callback', async () => callbacksOf(coinsId).length === 4 && callbacksOf(amountId).length === 2);

    const feeOf = async (hash: Hex) => {
      const r = await publicClient(node).getTransactionReceipt({ hash });
      return r.gasUsed * r.effectiveGasPrice;
    };
    const first = await blockOf(firstAt);
    const second = await blockOf(secondAt);
    const item = (minedInBlock: unknown, transactionId: string, amount: bigint, direction: string) => ({
      blockchain: 'ethereum',
      network: 'goerli',
      address: watched, // as subscribed (checksummed)
      minedInBlock,
      transactionId,
      amount: formatEth(amount),
      unit: 'ETH',
      direction,
      safety: OK,
    });
    const byTx = (list: { json: { data: { item: Record<string, unknown> } } }[]) =>
      list.map((cb) => cb.json.data.item).sort((a, b) => String(a.transactionId).localeCompare(String(b.transactionId)));
    for (const cb of callbacksOf(coinsId)) {
      expectSigned(cb);
      expect(cb.json.data).toMatchObject({ product: 'BLOCKCHAIN_EVENTS', event: 'ADDRESS_COINS_TRANSACTION_CONFIRMED' });
    }
    const expected = [
      item(first, incoming.hash, 2n * ETH, 'incoming'),
      item(first, internal.hash, ETH, 'incoming'),
      item(second, outgoing.hash, ETH / 2n + (await feeOf(outgoing.hash)), 'outgoing'),
      item(second, self.hash, await feeOf(self.hash), 'outgoing'),
    ];
    expect(byTx(callbacksOf(coinsId))).toEqual(byTx(expected.map((i) => ({ json: { data: { item: i } } }))));
    expect(byTx(callbacksOf(amountId))).toEqual(
      byTx(
        [
          { blockchain: 'ethereum', network: 'goerli', transactionId: incoming.hash, minedInBlock: first, amount: '2', unit: 'ETH', safety: OK },
          { blockchain: 'ethereum', network: 'goerli', transactionId: internal.hash, minedInBlock: first, amount: '1', unit: 'ETH', safety: OK },
        ].map((i) => ({ json: { data: { item: i } } })),
      ),
    );
    for (const cb of callbacksOf(amountId)) expect((cb.json.data as { event?: string }).event).toBe('CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER');

    // The ledger and the coin events read the same movements: once both blocks are confirmed for the
    // ledger (3 confirmations), the balance moved by exactly the signed sum of the callbacks.
    const signedSum = callbacksOf(coinsId).reduce((sum, cb) => {
      const wei = parseEth(cb.json.data.item.amount as string);
      return cb.json.data.item.direction === 'incoming' ? sum + wei : sum - wei;
    }, 0n);
    const after = await assets();
    expect(parseEth(after.confirmedBalance) - parseEth(before.confirmedBalance)).toBe(signedSum);
    expect(parseEth(after.confirmedBalance)).toBe(await publicClient(node).getBalance({ address: watched, blockNumber: BigInt(secondAt) }));
    await t.request('DELETE', `/blockchain-events/ethereum/goerli/subscriptions/${amountId}`, { key: c.key });
  });

  it('the wallet ledger: opening balance from the node, ERC-20 first seen from balanceOf, NFTs held now', async () => {
    const owner = account(9);
    await writeContract(node, 'TestToken', token, 'transfer', [owner, 1_000_000n], { wait: false }); // before watching
    await mineAndProcess();
    const wallet = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: 'ledger' } } } });
    const walletId = wallet.body.data.item.walletId as string;
    const added = await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/ethereum/goerli/addresses`, {
      key: c.key,
      body: { data: { item: { address: owner } } },
    });
    expect(added.body.data.item.watchedFromBlock).toBe(await head());
    await writeContract(node, 'TestToken', token, 'transfer', [owner, 250_000n], { wait: false });
    await writeContract(node, 'TestNft', nft, 'mint', [owner, 7n], { wait: false });
    await writeContract(node, 'TestNft', nft, 'mint', [owner, 8n], { wait: false });
    await mineAndProcess();
    await writeContract(node, 'TestNft', nft, 'transferFrom', [owner, account(0), 8n], { wait: false, from: 9 });
    await mineAndProcess();
    for (let i = 0; i < 3; i++) await mineAndProcess();
    const confirmedHeight = (await head()) - 3 + 1;
    const coin = await publicClient(node).getBalance({ address: owner, blockNumber: BigInt(confirmedHeight) });
    const item = (await t.request('GET', `/wallet-as-a-service/wallets/${walletId}`, { key: c.key })).body.data.item;
    expect(item.coins[0].confirmedBalance).toBe(formatEth(coin));
    expect(item.coins[0].totalReceived).toBe('0');
    expect(item.fungibleTokens).toEqual([expect.objectContaining({ identifier: token.toLowerCase(), amount: '1.25', symbol: 'HTT' })]);
    expect(item.nonFungibleTokens).toEqual([expect.objectContaining({ identifier: nft.toLowerCase(), tokenId: '7', symbol: 'HNFT', type: 'ERC-721' })]);
  });

  it('safety verdict: a look-alike of the listed token, a zero-value transfer of the listed one and a token without name or symbol are "review" with their flag; a failed transaction\'s fee callback says failed', async () => {
    const holder = privateKeyToAddress(generatePrivateKey());
    const payer = account(1);
    // Deployed beside the listed token, with its very symbol and name.
    await node.setAutomine(true);
    const lookalike = await deployContract(node, 'TestToken', ['Herald Test Token', 'HTT', 6]);
    const nameless = await deployContract(node, 'NoDecimalsToken', ['', '']);
    await writeContract(node, 'TestToken', lookalike, 'mint', [account(0), 10n ** 12n]);
    await writeContract(node, 'NoDecimalsToken', nameless, 'mint', [account(0), 10n ** 12n]);
    await node.setAutomine(false);
    await mineAndProcess();
    const tokensId = await subscribe('address-tokens-transactions-confirmed', { address: holder, receiveCallbackOn: 1 });
    const coinsId = await subscribe('address-coins-transactions-confirmed', { address: payer, receiveCallbackOn: 1 });
    await t.app.ingest?.settled();

    const copy = await writeContract(node, 'TestToken', lookalike, 'transfer', [holder, 1_000_000n], { wait: false });
    const zero = await writeContract(node, 'TestToken', token, 'transfer', [holder, 0n], { wait: false });
    const listed = await writeContract(node, 'TestToken', token, 'transfer', [holder, 1_000_000n], { wait: false });
    const unnamed = await writeContract(node, 'NoDecimalsToken', nameless, 'transfer', [holder, 5n], { wait: false });
    // More than the payer holds of the listed token: reverts on chain (gas given, so nothing estimates it first).
    const failed = await writeContract(node, 'TestToken', token, 'transfer', [holder, 10n ** 18n], { wait: false, from: 1, gas: 200_000n });
    const minedAt = await mineAndProcess();
    expect((await publicClient(node).getTransactionReceipt({ hash: failed.hash })).status).toBe('reverted');
    await until('the token callbacks', async () => callbacksOf(tokensId).length === 4);
    await until("the failed transaction's fee callback", async () => callbacksOf(coinsId).length === 1);
    for (const cb of [...callbacksOf(tokensId), ...callbacksOf(coinsId)]) expectSigned(cb);
    const safetyOf = new Map(callbacksOf(tokensId).map((cb) => [cb.json.data.item.transactionId, cb.json.data.item.safety]));
    expect(Object.fromEntries(safetyOf)).toEqual({
      [copy.hash]: { verdict: 'review', flags: ['lookalike-token'] },
      [zero.hash]: { verdict: 'review', flags: ['zero-value'] },
      [listed.hash]: OK,
      [unnamed.hash]: { verdict: 'review', flags: ['unknown-token'] },
    });
    const fee = await publicClient(node).getTransactionReceipt({ hash: failed.hash });
    expect(callbacksOf(coinsId)[0]?.json.data.item).toEqual({
      blockchain: 'ethereum',
      network: 'goerli',
      address: payer,
      minedInBlock: await blockOf(minedAt),
      transactionId: failed.hash,
      amount: formatEth(fee.gasUsed * fee.effectiveGasPrice),
      unit: 'ETH',
      direction: 'outgoing',
      safety: { verdict: 'review', flags: ['failed'] },
    });
    await t.request('DELETE', `/blockchain-events/ethereum/goerli/subscriptions/${coinsId}`, { key: c.key });
  });
});

function encodeTransfer(to: Address, amount: bigint): Hex {
  return `0xa9059cbb${to.slice(2).toLowerCase().padStart(64, '0')}${amount.toString(16).padStart(64, '0')}` as Hex;
}

const formatEth = (wei: bigint) => formatUnits(wei, 18);

function parseEth(text: string): bigint {
  const [whole = '0', fraction = ''] = text.split('.');
  return BigInt(whole) * ETH + BigInt(fraction.padEnd(18, '0') || '0');
}

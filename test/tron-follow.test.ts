/**
 * Tron chain following end to end against the fake java-tron node (test/support/fake-tron-node.ts): the
 * service follows tron/nile in-process on a real database, callbacks reach a real HTTPS receiver with
 * exact bodies and valid signatures, confirmations are counted block by block, the internal-transfer
 * threshold is compared in sun, and the wallet ledger is compared with the node's own balances.
 *
 * First the fake itself is checked against the recorded java-tron answers (test/fixtures/tron):
 * block ids, transaction ids, signatures and field names, so that what the service follows here is what
 * a java-tron node prints.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { keccak_256 } from '@noble/hashes/sha3';
import { sha256 } from '@noble/hashes/sha256';
import { hex } from '@scure/base';
import { recoverAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUnits } from '../src/domain/amounts.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { abiString, blockIdOf, encodeRawData, FEES, startFakeTronDriver, type TronDriver, toBase58 } from './support/fake-tron-node.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { DEFAULT_SCENARIOS, describeFollowScenarios } from './support/follow-scenarios.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

type Json = Record<string, unknown>;

function fixture<T = Json>(rel: string): T {
  return JSON.parse(readFileSync(resolve(process.cwd(), 'test/fixtures/tron', rel), 'utf8')) as T;
}

const keys = (o: unknown): string[] => Object.keys(o as Json).sort();
/** A value deep in parsed JSON (undefined on the way: undefined). */
const get = (o: unknown, ...path: (string | number)[]): unknown => path.reduce<unknown>((v, k) => (v as Record<string | number, unknown> | undefined)?.[k], o);
const TRX = 1_000_000n;
/** The safety verdict of a callback nothing is wrong with (docs/concepts/deposit-safety.md). */
const OK = { verdict: 'ok', flags: [] };
const textHex = (text: string): string => Buffer.from(text, 'utf8').toString('hex');

// ---------------------------------------------------------------------------------------------------------------
// The fake against java-tron's recorded answers
// ---------------------------------------------------------------------------------------------------------------

describe('the fake java-tron node speaks what java-tron prints', () => {
  let d: TronDriver;
  let block: Json;
  let infos: Json[];

  beforeAll(async () => {
    d = await startFakeTronDriver();
    const to = await d.newAddress();
    await d.send(to, 10n * TRX);
    await d.transferToken(to, 5n);
    await d.forward(to, TRX);
    await d.transferNft(to, 7n);
    const h = await d.mine(1);
    const post = async (path: string, body: Json) => (await fetch(`${d.rpcUrl}/${path}`, { method: 'POST', body: JSON.stringify(body) })).json();
    block = (await post('wallet/getblockbynum', { num: h })) as Json;
    infos = (await post('wallet/gettransactioninfobyblocknum', { num: h })) as Json[];
  });

  afterAll(async () => {
    await d?.close();
  });

  it('block ids: 8-byte height + the tail of sha256(protobuf header), as the recorded blocks 100 (mainnet), 66987565 and 66987627 (Nile)', () => {
    for (const rel of [
      'mainnet/issues/walletsolidity_getblockbynum_100.json',
      'nile/documentation-en/getblockbynum_66987565_header_only.json',
      'nile/documentation-en/getnowblock_66987627_header_only.json',
    ]) {
      const recorded = fixture(rel) as { blockID: string; block_header: { raw_data: Json } };
      expect(blockIdOf(recorded.block_header.raw_data)).toBe(recorded.blockID);
    }
    const raw = (block.block_header as { raw_data: Json }).raw_data;
    expect(blockIdOf(raw)).toBe(block.blockID);
  });

  it('transaction ids: sha256 of the protobuf raw_data, as the recorded transaction (its untruncated head) and the documented constant call', () => {
    const recorded = fixture('nile/documentation-en/gettransactionbyid_01b4cde4_TRUNCATED.json') as { raw_data: Json; raw_data_hex: string };
    const { ref_block_bytes, ref_block_hash, expiration } = recorded.raw_data;
    const head = hex.encode(encodeRawData({ ref_block_bytes, ref_block_hash, expiration }));
    expect(recorded.raw_data_hex.startsWith(head)).toBe(true);
    expect(head).toBe('0a021c8b2208d78785ed02dd918f4088d2b2bcdd33');
    // A complete transaction: the response example of /wallet/triggerconstantcontract in java-tron's
    // documentation (tronprotocol/documentation-en, docs/api/http/smart-contract/triggerconstantcontract.md).
    const documented = {
      contract: [
        {
          parameter: {
            value: {
              data: '70a08231000000000000000000000000dd791d6b49e190062d650e6a23c575510d35f2f9',
              owner_address: '41dd791d6b49e190062d650e6a23c575510d35f2f9',
              contract_address: '41eca9bc828a3005b9a3b909f2cc5c2a54794de05f',
            },
            type_url: 'type.googleapis.com/protocol.TriggerSmartContract',
          },
          type: 'TriggerSmartContract',
        },
      ],
      ref_block_bytes: '28c0',
      ref_block_hash: '9eabbe133123b34c',
      expiration: 1777447218000,
      timestamp: 1777447160779,
    };
    const bytes = encodeRawData(documented);
    expect(hex.encode(bytes)).toBe(
      '0a0228c022089eabbe133123b34c40d0d6f0c0dd335a8e01081f1289010a31747970652e676f6f676c65617069732e636f6d2f70726f746f636f6c2e54726967676572536d617274436f6e747261637412540a1541dd791d6b49e190062d650e6a23c575510d35f2f9121541eca9bc828a3005b9a3b909f2cc5c2a54794de05f222470a08231000000000000000000000000dd791d6b49e190062d650e6a23c575510d35f2f970cb97edc0dd33',
    );
    expect(hex.encode(sha256(bytes))).toBe('cff6488e738ce77f7325572fe0aa2470f87dbf1c95eeeb2c25feec59d5afa35c');
    for (const tx of block.transactions as { txID: string; raw_data: Json; raw_data_hex: string }[]) {
      expect(hex.encode(encodeRawData(tx.raw_data))).toBe(tx.raw_data_hex);
      expect(hex.encode(sha256(hex.decode(tx.raw_data_hex)))).toBe(tx.txID);
    }
  });

  it("each transaction is signed by its owner's key (secp256k1 over the txID, r||s||v)", async () => {
    for (const tx of block.transactions as { txID: string; signature: string[]; raw_data: { contract: { parameter: { value: Json } }[] } }[]) {
      const signer = await recoverAddress({ hash: `0x${tx.txID}`, signature: `0x${tx.signature[0]}` });
      expect(`41${signer.slice(2).toLowerCase()}`).toBe(tx.raw_data.contract[0]?.parameter.value.owner_address);
    }
  });

  it("reorganises: the last blocks replaced by another producer's, later in time; their transactions mined again unless dropped", async () => {
    const kept = await d.send(await d.newAddress(), 3n * TRX);
    const dropped = await d.send(await d.newAddress(), 4n * TRX);
    const h = await d.mine(2);
    const old = [d.node.blockHash(h - 1), d.node.blockHash(h)];
    const oldMs = get(d.node.blocks[h - 1]?.json, 'block_header', 'raw_data', 'timestamp') as bigint;
    expect(await d.reorg(2, { drop: [dropped] })).toBe(h + 1);
    expect([d.node.blockHash(h - 1), d.node.blockHash(h)]).not.toContain(old[0]);
    expect(d.node.blockHash(h)).not.toBe(old[1]);
    expect(get(d.node.blocks[h - 1]?.json, 'block_header', 'raw_data', 'parentHash')).toBe(d.node.blockHash(h - 2));
    expect(get(d.node.blocks[h - 1]?.json, 'block_header', 'raw_data', 'timestamp') as bigint).toBeGreaterThan(oldMs);
    expect(d.node.blocks[h - 1]?.intents.map((i) => i.txID)).toEqual([kept]);
    const info = async (value: string) =>
      (await fetch(`${d.rpcUrl}/wallet/gettransactioninfobyid`, { method: 'POST', body: JSON.stringify({ value }) })).json();
    expect(await info(dropped)).toEqual({});
    expect(await info(kept)).toMatchObject({ id: kept, blockNumber: h - 1 });
  });

  it('field names as recorded: block, header, transaction, infos (transfer, TRC-20, internal transfer)', () => {
    const nile = fixture('nile/documentation-en/getblockbynum_66987565_header_only.json');
    expect(keys(block)).toEqual(keys(nile));
    expect(keys(block.block_header)).toEqual(keys(nile.block_header));
    expect(keys(get(block, 'block_header', 'raw_data'))).toEqual(keys(get(nile, 'block_header', 'raw_data')));
    const [transfer, trigger, forward] = block.transactions as Json[];
    const recordedTx = fixture('nile/documentation-en/gettransactionbyid_01b4cde4_TRUNCATED.json');
    expect(keys(trigger)).toEqual(keys(recordedTx));
    for (const path of [['raw_data'], ['raw_data', 'contract', 0], ['raw_data', 'contract', 0, 'parameter', 'value']]) {
      expect([path, keys(get(trigger, ...path))]).toEqual([path, keys(get(recordedTx, ...path))]);
    }
    expect(get(transfer, 'ret', 0)).toEqual({ contractRet: 'SUCCESS' });
    expect(keys(get(transfer, 'raw_data', 'contract', 0, 'parameter', 'value'))).toEqual(['amount', 'owner_address', 'to_address']);

    const [transferInfo, tokenInfo, forwardInfo] = infos;
    expect(keys(transferInfo)).toEqual(keys(get(fixture('nile/documentation-en/gettransactioninfobyblocknum_66987565_first2of4.json'), 0)));
    const usdt = fixture('mainnet/issues/gettransactioninfobyid_efde2ab4_trc20_usdt_transfer.json');
    expect(keys(tokenInfo)).toEqual(keys(usdt));
    expect(keys(get(tokenInfo, 'log', 0))).toEqual(keys(get(usdt, 'log', 0)));
    expect(keys(get(tokenInfo, 'receipt'))).toEqual(keys(get(fixture('mainnet/issues/gettransactioninfobyid_e5bb8a54_contract_call.json'), 'receipt')));
    expect(get(tokenInfo, 'log', 0, 'address')).toMatch(/^[0-9a-f]{40}$/); // no 41, as java-tron prints it
    const fragment = fixture('mainnet/issues/internal_transactions_fragment_issue5945.json');
    expect(keys(get(forwardInfo, 'internal_transactions', 0))).toEqual(keys(get(fragment, 'internal_transactions', 0)));
    expect(get(forward, 'txID')).toBe(get(forwardInfo, 'id'));
  });

  it('TRC-721: TriggerSmartContract transferFrom(from, to, id); the info logs Approval then Transfer, 4 topics each and no data; constant calls answer as the contract would', async () => {
    const nftTx = (block.transactions as Json[])[3] as Json;
    const nftInfo = infos[3] as Json;
    const value = get(nftTx, 'raw_data', 'contract', 0, 'parameter', 'value') as Json;
    expect(keys(value)).toEqual(['contract_address', 'data', 'owner_address']); // no call_value: none is sent
    expect(value.contract_address).toBe(d.nft.hex);
    const holder = (value.data as string).slice(8 + 64 + 24, 8 + 128);
    expect(value.data).toBe(`23b872dd${(value.owner_address as string).slice(2).padStart(64, '0')}${holder.padStart(64, '0')}${'7'.padStart(64, '0')}`);
    expect(keys(nftInfo)).toEqual(keys(infos[1]));
    const approvalTopic = hex.encode(keccak_256('Approval(address,address,uint256)'));
    const transferTopic = hex.encode(keccak_256('Transfer(address,address,uint256)'));
    expect(get(nftInfo, 'log')).toEqual([
      {
        address: d.nft.hex.slice(2),
        topics: [approvalTopic, (value.owner_address as string).slice(2).padStart(64, '0'), '0'.repeat(64), '7'.padStart(64, '0')],
      },
      {
        address: d.nft.hex.slice(2),
        topics: [transferTopic, (value.owner_address as string).slice(2).padStart(64, '0'), holder.padStart(64, '0'), '7'.padStart(64, '0')],
      },
    ]);
    expect(d.node.nftOwner(7n)).toBe(toBase58(`41${holder}`));

    const call = async (function_selector: string, parameter = '') =>
      (await fetch(`${d.rpcUrl}/wallet/triggerconstantcontract`, {
        method: 'POST',
        body: JSON.stringify({ owner_address: d.nft.hex, contract_address: d.nft.hex, function_selector, parameter, visible: false }),
      }).then((r) => r.json())) as Json;
    const word = (v: string) => v.padStart(64, '0');
    expect(await call('name()')).toMatchObject({ result: { result: true }, constant_result: [abiString('Herald Tron Punks')] });
    expect(await call('symbol()')).toMatchObject({ constant_result: [abiString('HTP')] });
    expect(await call('ownerOf(uint256)', word('7'))).toMatchObject({ constant_result: [word(holder)] });
    expect(await call('balanceOf(address)', word(holder))).toMatchObject({ constant_result: [word('1')] });
    expect(await call('supportsInterface(bytes4)', '80ac58cd'.padEnd(64, '0'))).toMatchObject({ constant_result: [word('1')] });
    // An unknown token: Error(string) revert data and a failed transaction, with result still true, as java-tron answers a revert.
    const unknown = await call('ownerOf(uint256)', word('ffff'));
    expect(unknown).toMatchObject({ result: { result: true, message: textHex('REVERT opcode executed') }, transaction: { ret: [{ ret: 'FAILED' }] } });
    expect((get(unknown, 'constant_result', 0) as string).slice(0, 8)).toBe('08c379a0');
    expect(await call('decimals()')).toMatchObject({ constant_result: [''], transaction: { ret: [{ ret: 'FAILED' }] } });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The shared scenarios
// ---------------------------------------------------------------------------------------------------------------

describeFollowScenarios('Tron (tron/nile, fake java-tron): shared follow scenarios', () => startFakeTronDriver({ network: 'nile' }), {
  confirmations: 3,
  amount: 5n * TRX,
  // The fake keeps balance history (storage.balance.history.lookup) from genesis, as such a node does.
  opening: 'read',
  // Tron's token events: TRC-20 and TRC-721 in the confirmed and each-confirmation callbacks (docs/reference/api.md#settled-callback-contents).
  scenarios: [...DEFAULT_SCENARIOS, 'coins-each', 'tokens', 'internal'],
});

// ---------------------------------------------------------------------------------------------------------------
// Tron's own events
// ---------------------------------------------------------------------------------------------------------------

const SECRET = 'whsec-tron-follow';

describe('Tron chain following (tron/nile on the fake java-tron node)', () => {
  let d: TronDriver;
  let receiver: Receiver;
  let t: TestApp;
  let c: TestCustomer;

  beforeAll(async () => {
    const ca = await createTestCa();
    [d, receiver] = await Promise.all([startFakeTronDriver({ network: 'nile' }), startReceiver({ ca })]);
    t = await startTestApp({
      chains: [{ blockchain: 'tron', network: 'nile', rpcUrl: d.rpcUrl, ...d.chainConfig, pollIntervalMs: 50, concurrency: 8, requestTimeoutMs: 5000 }],
      delivery: receiverDelivery(writeCaFile(ca.caPem)),
    });
    c = await t.customer({ domains: ['localhost'] });
    await processed(await d.height());
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await d?.close();
  });

  const { processed, subscribe, callbacksOf, expectSigned } = followHelpers(() => ({ t, customer: c, receiver, blockchain: 'tron', network: 'nile' }), SECRET);

  async function mineAndProcess(): Promise<number> {
    const height = await d.mine(1);
    await processed(height);
    await t.app.worker?.settled();
    return height;
  }

  /** minedInBlock as the contract prints it: the node's block id and its time in seconds. */
  function blockOf(height: number) {
    const ms = get(d.node.blocks[height]?.json, 'block_header', 'raw_data', 'timestamp') as bigint;
    return { height, hash: d.node.blockHash(height), timestamp: Number(ms / 1000n) };
  }

  const formatTrx = (sun: bigint) => formatUnits(sun, 6);

  it('ADDRESS_TOKENS_TRANSACTION_CONFIRMED: TRC-20 in and out on exactly the 3rd confirmation; subscribed as 41-hex, answered in that spelling (what the client sent); a reverted transfer never (its fee coin callback is flagged failed)', async () => {
    const holder = d.node.newAccount();
    const other = await d.newAddress();
    const { referenceId: id, item } = await subscribe('address-tokens-transactions-confirmed', { address: holder.hex, receiveCallbackOn: 3 });
    expect(item.address).toBe(holder.hex); // the response echoes the client's spelling
    const { referenceId: coinsId } = await subscribe('address-coins-transactions-confirmed', { address: holder.hex, receiveCallbackOn: 3 });
    await t.app.ingest?.settled();
    await d.send(holder.address, 30n * TRX); // TRX for its own transfers' fees
    const incoming = await d.transferToken(holder.address, 2_500_000n);
    const inAt = await mineAndProcess();
    const outgoing = await d.transferToken(other, 1_000_000n, holder.address);
    const reverted = await d.transferToken(other, 50_000_000n, holder.address); // more than it holds
    const outAt = await mineAndProcess();
    expect(d.node.blocks[outAt]?.intents.map((i) => i.txID)).toEqual([outgoing, reverted]);
    expect(get(d.node.blocks[outAt]?.infos, 1, 'result')).toBe('FAILED');
    expect(callbacksOf(id)).toHaveLength(0); // 2 confirmations of the first block
    await mineAndProcess();
    const [first] = await until('the incoming callback', async () => callbacksOf(id).length === 1 && callbacksOf(id));
    expectSigned(first);
    const token = { name: 'Herald Tether', symbol: 'HUSDT', decimals: '6', contractAddress: d.token.address };
    expect(first?.json.data.item).toEqual({
      blockchain: 'tron',
      network: 'nile',
      address: holder.hex, // as subscribed, not the base58 form matching uses
      minedInBlock: blockOf(inAt),
      transactionId: incoming,
      tokenType: 'TRC-20',
      token: { ...token, amount: '2.5' },
      direction: 'incoming',
      safety: OK,
    });
    await mineAndProcess();
    const both = await until('the outgoing callback', async () => callbacksOf(id).length === 2 && callbacksOf(id));
    expect(both[1]?.json.data.item).toEqual({
      blockchain: 'tron',
      network: 'nile',
      address: holder.hex,
      minedInBlock: blockOf(outAt),
      transactionId: outgoing,
      tokenType: 'TRC-20',
      token: { ...token, amount: '1' },
      direction: 'outgoing',
      safety: OK,
    });
    for (let i = 0; i < 3; i++) await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(2);
    expect(d.node.tokenBalance(holder.address)).toBe(1_500_000n);
    // The reverted transfer still burnt its fee: its coin callback says so (contractRet not SUCCESS: `failed`).
    const coinItems = callbacksOf(coinsId).map((cb) => cb.json.data.item);
    expect(coinItems.find((i) => i.transactionId === reverted)).toMatchObject({ direction: 'outgoing', safety: { verdict: 'review', flags: ['failed'] } });
    expect(coinItems.find((i) => i.transactionId === outgoing)).toMatchObject({ direction: 'outgoing', safety: OK });
    await t.request('DELETE', `/blockchain-events/tron/nile/subscriptions/${coinsId}`, { key: c.key });
  });

  it('CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: 1 TRX fires, one sun below does not, a rejected inner transfer never does', async () => {
    const { referenceId: id } = await subscribe('internal-transactions-for-specific-amount', { amountHigherThan: 1 });
    await t.app.ingest?.settled();
    const recipient = await d.newAddress();
    const equal = await d.forward(recipient, TRX);
    const below = await d.forward(recipient, TRX - 1n);
    const swallowed = await d.forward(recipient, 5n * TRX, { swallow: true });
    const minedAt = await mineAndProcess();
    expect(d.node.blocks[minedAt]?.intents.map((i) => i.txID)).toEqual([equal, below, swallowed]);
    await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(0);
    await mineAndProcess(); // 3 confirmations: the chain default
    const [cb] = await until('the internal transfer callback', async () => callbacksOf(id).length >= 1 && callbacksOf(id));
    for (let i = 0; i < 2; i++) await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(1);
    expectSigned(cb);
    expect(cb?.json.data.item).toEqual({
      blockchain: 'tron',
      network: 'nile',
      address: recipient,
      minedInBlock: blockOf(minedAt),
      parentTransactionId: equal,
      operationId: 'internal_0',
      amount: '1',
      unit: 'TRX',
      safety: OK,
    });
    // The one-sun-below transfer did reach the recipient and the swallowed one did not: the silence is the threshold's and the rejection's doing.
    expect(d.node.balance(recipient)).toBe(2n * TRX - 1n);
    expect(d.node.balance(d.node.swallower)).toBe(5n * TRX);
    expect(get(d.node.blocks[minedAt]?.infos, 2, 'internal_transactions', 0, 'rejected')).toBe(true);
  });

  it('ADDRESS_INTERNAL_TRANSACTION_CONFIRMED: internal TRX in (recipient, subscribed as 41-hex) and out (the forwarder) at each receiveCallbackOn; a rejected inner transfer never', async () => {
    const recipient = d.node.newAccount();
    const { referenceId: inId } = await subscribe('address-internal-transactions-confirmed', {
      address: recipient.hex,
      allowDuplicates: false,
      receiveCallbackOn: 2,
    });
    const { referenceId: outId } = await subscribe('address-internal-transactions-confirmed', { address: d.node.forwarder, allowDuplicates: false });
    await t.app.ingest?.settled();
    const paid = await d.forward(recipient.address, 3n * TRX);
    const swallowed = await d.forward(recipient.address, 4n * TRX, { swallow: true });
    const minedAt = await mineAndProcess();
    expect(d.node.blocks[minedAt]?.intents.map((i) => i.txID)).toEqual([paid, swallowed]);
    expect(callbacksOf(inId)).toHaveLength(0);
    await mineAndProcess(); // 2nd confirmation: the recipient's receiveCallbackOn
    const [incoming] = await until('the incoming internal callback', async () => callbacksOf(inId).length >= 1 && callbacksOf(inId));
    expect(callbacksOf(outId)).toHaveLength(0);
    await mineAndProcess(); // 3rd: the chain default
    const [outgoing] = await until('the outgoing internal callback', async () => callbacksOf(outId).length >= 1 && callbacksOf(outId));
    for (let i = 0; i < 2; i++) await mineAndProcess();
    expect(callbacksOf(inId)).toHaveLength(1);
    expect(callbacksOf(outId)).toHaveLength(1);
    expectSigned(incoming);
    const common = {
      blockchain: 'tron',
      network: 'nile',
      minedInBlock: blockOf(minedAt),
      parentTransactionId: paid,
      operationId: 'internal_0',
      amount: '3',
      unit: 'TRX',
      safety: OK,
    };
    expect(incoming?.json.data).toEqual({
      product: 'BLOCKCHAIN_EVENTS',
      event: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
      item: { ...common, address: recipient.hex, direction: 'incoming' }, // as subscribed
    });
    expect(outgoing?.json.data.item).toEqual({ ...common, address: d.node.forwarder, direction: 'outgoing' });
    expect(d.node.balance(recipient.address)).toBe(3n * TRX); // the rejected transfer did not arrive
  });

  it('CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: TRC-20 in whole tokens after the decimals (equal fires, one base unit below not), the contract subscribed as 41-hex', async () => {
    const { referenceId: id } = await subscribe('tokens-transfers-for-specific-amount', { amountHigherThan: 3, contractAddress: d.token.hex });
    const { referenceId: higher } = await subscribe('tokens-transfers-for-specific-amount', { amountHigherThan: 4, contractAddress: d.token.address });
    await t.app.ingest?.settled();
    const to = await d.newAddress();
    const equal = await d.transferToken(to, 3_000_000n);
    await d.transferToken(to, 2_999_999n);
    const minedAt = await mineAndProcess();
    await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(0);
    await mineAndProcess(); // 3 confirmations: the chain default
    const [cb] = await until('the token amount callback', async () => callbacksOf(id).length >= 1 && callbacksOf(id));
    for (let i = 0; i < 2; i++) await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(1);
    expect(callbacksOf(higher)).toHaveLength(0);
    expectSigned(cb);
    expect(cb?.json.data).toEqual({
      product: 'BLOCKCHAIN_EVENTS',
      event: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
      item: {
        blockchain: 'tron',
        network: 'nile',
        transactionId: equal,
        minedInBlock: blockOf(minedAt),
        tokenType: 'TRC-20',
        token: { name: 'Herald Tether', symbol: 'HUSDT', decimals: '6', amount: '3', contractAddress: d.token.address },
        safety: OK,
      },
    });
  });

  it('a node in trouble (503s, then refusing connections): the follower retries, then catches up; nothing missed, nothing doubled', async () => {
    const tx = await d.send(await d.newAddress(), TRX);
    const { referenceId: id } = await subscribe('transaction-mined', { transactionId: tx });
    await t.app.ingest?.settled();
    let failed = 0;
    d.node.intercept = () => {
      failed++;
      return { status: 503, body: 'Service Unavailable' };
    };
    const minedAt = await d.mine(1);
    await d.mine(1);
    await until('the follower to be refused a few times', async () => failed >= 3);
    await d.down?.();
    d.node.intercept = undefined;
    const tip = await d.mine(1);
    await d.up?.();
    await processed(tip);
    await t.app.worker?.settled();
    const [cb] = await until('the mined callback', async () => callbacksOf(id).length === 1 && callbacksOf(id));
    expect(cb?.json.data.item).toEqual({ blockchain: 'tron', network: 'nile', transactionId: tx, minedInBlock: blockOf(minedAt) });
    await mineAndProcess();
    expect(callbacksOf(id)).toHaveLength(1);
  });

  it("the wallet ledger of a watched address: TRX received (plain and internal), spent with fees, TRC-20 held, against the node's balances", async () => {
    const account = d.node.newAccount();
    const created = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: 'tron' } } } });
    const walletId = created.body.data.item.walletId as string;
    const added = await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/tron/nile/addresses`, {
      key: c.key,
      body: { data: { item: { address: account.address } } },
    });
    expect(added.status, added.text).toBe(201);
    expect(added.body.data.item.watchedFromBlock).toBe(await d.height());

    await d.send(account.address, 30n * TRX);
    await d.forward(account.address, 2n * TRX);
    await d.transferToken(account.address, 4_200_000n);
    await mineAndProcess();
    const other = await d.newAddress();
    const paid = await d.node.sendTrx(account, other, 5n * TRX);
    await d.node.transferToken(account, other, 1_200_000n);
    const spentAt = await mineAndProcess();
    expect(d.node.blocks[spentAt]?.intents[0]?.txID).toBe(paid);
    for (let i = 0; i < 2; i++) await mineAndProcess();

    const spent = 5n * TRX + FEES.transferNewAccount + FEES.contractEnergyFee + FEES.contractNetFee;
    const confirmedHeight = (await d.height()) - 3 + 1;
    expect(confirmedHeight).toBe(spentAt);
    expect(d.node.balance(account.address, confirmedHeight)).toBe(32n * TRX - spent);
    const item = (await t.request('GET', `/wallet-as-a-service/wallets/${walletId}`, { key: c.key })).body.data.item;
    expect(item.coins).toEqual([
      {
        blockchain: 'tron',
        network: 'nile',
        unit: 'TRX',
        confirmedBalance: formatTrx(d.node.balance(account.address, confirmedHeight)),
        totalReceived: formatTrx(32n * TRX),
        totalSpent: formatTrx(spent),
        openingBalance: 'read',
      },
    ]);
    expect(item.fungibleTokens).toEqual([
      {
        blockchain: 'tron',
        network: 'nile',
        identifier: d.token.address,
        symbol: 'HUSDT',
        type: 'TRC-20',
        amount: formatUnits(d.node.tokenBalance(account.address), 6),
      },
    ]);
    expect(d.node.tokenBalance(account.address)).toBe(3_000_000n);
  });
});

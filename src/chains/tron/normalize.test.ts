import { readFileSync } from 'node:fs';
import { sha256 } from '@noble/hashes/sha256';
import { createBase58check, hex } from '@scure/base';
import { describe, expect, it } from 'vitest';
import { TRON_BLOCK_100 } from '../../../test/support/recorded-blocks.ts';
import type { CoinMovement, NormalizedBlock } from '../types.ts';
import {
  decodeTronTransferLog,
  internalTransfersOfInfo,
  normalizeTronBlock,
  normalizeTronBlockHeader,
  TRANSFER_TOPIC,
  type TronNetwork,
  TronNormalizeError,
} from './normalize.ts';
import type { TronBlock, TronContract, TronInternalTransaction, TronLog, TronTransaction, TronTransactionInfo } from './rpc-types.ts';

/** Reads a recorded file; a missing or unparsable file throws, so the test fails (never skips). java-tron answers plain JSON, no envelope. */
function fixture<T>(rel: string): T {
  return JSON.parse(readFileSync(new URL(`../../../test/fixtures/tron/${rel}`, import.meta.url), 'utf8')) as T;
}

const b58 = createBase58check(sha256);
/** base58 T... → hex 41... (to build node-shaped input from blockbook's base58 expectations). */
const hexOf = (address: string): string => hex.encode(b58.decode(address));

/** A block id / parent hash whose first 8 bytes are `height` (as java-tron's), with a filler tail: a stand-in where none is recorded. */
const standInId = (height: number, fill = '0'): string => `${height.toString(16).padStart(16, '0')}${fill.repeat(48)}`;

function header(
  height: number,
  timestampMs: number,
  transactions: TronTransaction[],
  hash = standInId(height, 'a'),
  parentHash = standInId(height - 1, 'b'),
): TronBlock {
  return { blockID: hash, block_header: { raw_data: { number: height, parentHash, timestamp: timestampMs } }, transactions };
}

function tx(txID: string, type: string, value: Record<string, unknown>, contractRet: string | undefined = 'SUCCESS'): TronTransaction {
  const contract: TronContract = { type, parameter: { value, type_url: `type.googleapis.com/protocol.${type}` } };
  return { txID, ...(contractRet === undefined ? {} : { ret: [{ contractRet }] }), raw_data: { contract: [contract] } };
}

function normalize(block: TronBlock, infos: TronTransactionInfo[], network: TronNetwork = 'mainnet'): NormalizedBlock {
  return normalizeTronBlock({ block, infos }, { network });
}

const movementsOf = (n: NormalizedBlock, txId: string): CoinMovement[] => n.coinMovements.filter((m) => m.transactionId === txId);

/** TRX as blockbook prints it (a JSON number with up to 6 decimals) → sun. */
function sun(trx: number): bigint {
  const [whole = '0', frac = ''] = trx.toFixed(6).split('.');
  return BigInt(whole) * 1_000_000n + BigInt(frac);
}

const TX_A = '1'.repeat(64);
const TX_B = '2'.repeat(64);
const TX_C = '3'.repeat(64);
const OWNER = '41796258bfbd23d238a304fb54dbb835b7714b8130'; // TM32aWxTekCu39YWZhh5JcP5mckzqvgDFe
const OWNER_B58 = 'TM32aWxTekCu39YWZhh5JcP5mckzqvgDFe';
const USDT_B58 = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t'; // fixtures README: 41a614f8...ded13c

describe('recorded blocks (headers)', () => {
  it('mainnet block 100 from /walletsolidity (empty block: no `transactions` key at all), infos [] or {}', () => {
    const block = fixture<TronBlock>('mainnet/issues/walletsolidity_getblockbynum_100.json');
    for (const infos of [[], {}] as const) {
      const n = normalizeTronBlock({ block, infos }, { network: 'mainnet' });
      expect(n).toEqual(TRON_BLOCK_100);
    }
  });

  it('Nile getblockbynum 66987565 and getnowblock 66987627 (documentation, transactions elided to [])', () => {
    const byNum = normalize(fixture<TronBlock>('nile/documentation-en/getblockbynum_66987565_header_only.json'), [], 'nile');
    expect([byNum.height, byNum.hash, byNum.parentHash, byNum.timestamp]).toEqual([
      66987565,
      '0000000003fe262d52bfa4b2814f816fd2e57af5b98a33d60d8630a03a908e0e',
      '0000000003fe262c85cd6b02033f4c3e5c1efa35de256a17bd906dc61fb1aeed',
      1777445121,
    ]);
    expect(byNum.transactionIds).toEqual([]);
    const now = normalizeTronBlockHeader(fixture<TronBlock>('nile/documentation-en/getnowblock_66987627_header_only.json'));
    expect(now).toEqual({
      height: 66987627,
      hash: '0000000003fe266bf6b6d392f654dc2e5011601546ed04623d9fcc4e9d439a25',
      parentHash: '0000000003fe266a65d5194c947f6f7a059d4646c8e9a5293226bc7fdcfc775e',
      timestamp: 1777445307,
      transactionIds: [],
    });
  });

  it('the recorded Nile header with its recorded infos throws: the docs elided the transactions the infos belong to', () => {
    const block = fixture<TronBlock>('nile/documentation-en/getblockbynum_66987565_header_only.json');
    const infos = fixture<TronTransactionInfo[]>('nile/documentation-en/gettransactioninfobyblocknum_66987565_first2of4.json');
    expect(() => normalize(block, infos, 'nile')).toThrow(TronNormalizeError);
    expect(() => normalize(block, infos, 'nile')).toThrow(/belongs to no transaction of block 66987565/);
  });
});

describe('recorded Nile gettransactioninfobyblocknum 66987565 (2 of 4 entries)', () => {
  const recorded = fixture<TronBlock>('nile/documentation-en/getblockbynum_66987565_header_only.json');
  const infos = fixture<TronTransactionInfo[]>('nile/documentation-en/gettransactioninfobyblocknum_66987565_first2of4.json');
  // The transaction bodies are not recorded: stand-ins of a type the normaliser does not know, owned by OWNER.
  const block: TronBlock = { ...recorded, transactions: infos.map((i) => tx(i.id as string, 'UnrecordedContract', { owner_address: OWNER }, undefined)) };
  const n = normalize(block, infos, 'nile');

  it('entries without receipt.result (non-contract transactions) are successful and their fee (net_fee) is paid by the owner', () => {
    expect(n.height).toBe(66987565);
    expect(n.transactionIds).toEqual([
      'ff44a2823a870c12f12a4ca6e7647650356bc2bb5e02c5855312cf2db4c950c1',
      '0419405287081aa44f4d78725e6fabac8d14e71abf9e28825ad4f4e61a5bccb7',
    ]);
    expect(n.coinMovements).toEqual(n.transactionIds.map((transactionId) => ({ transactionId, address: OWNER_B58, delta: -267000n })));
    expect(n.tokenTransfers).toEqual([]);
    expect(n.internalTransfers).toEqual([]);
  });

  it('a transaction whose info is missing throws (the normaliser never half-normalises a block)', () => {
    expect(() => normalize(block, infos.slice(0, 1), 'nile')).toThrow(/no transaction info for 1 of 2 transactions of block 66987565/);
  });
});

describe('recorded gettransactioninfobyid efde2ab4 (mainnet 29129143): a TRC-20 USDT transfer', () => {
  const info = fixture<TronTransactionInfo>('mainnet/issues/gettransactioninfobyid_efde2ab4_trc20_usdt_transfer.json');
  const txId = 'efde2ab4d7522f67c5bd3c5bf546d2112a4004fe76d45db2d5b94334b8077878';
  // The block is not recorded: a stand-in header at the info's height and time, and a TriggerSmartContract from the Transfer's sender.
  const call = tx(txId, 'TriggerSmartContract', { owner_address: OWNER, contract_address: '41a614f803b6fd780986a42c78ec9c7f77e6ded13c', data: 'a9059cbb' });
  const block = header(29129143, 1617807429000, [call]);

  it('decodes the Transfer log: contract, from, to (base58), 1 000 000 units', () => {
    const n = normalize(block, [info]);
    expect(n.height).toBe(29129143);
    expect(n.timestamp).toBe(1617807429);
    expect(n.transactionIds).toEqual([txId]);
    expect(n.tokenTransfers).toEqual([
      {
        transactionId: txId,
        logIndex: 0,
        tokenType: 'TRC-20',
        contract: USDT_B58,
        from: OWNER_B58,
        to: 'TNSBbAP7srYaFDcHSCG52JadTB7FS9bVyL',
        amount: 1_000_000n,
      },
    ]);
    // The base58 forms are the fixture's hex: 41 + the topics' last 20 bytes.
    const transfer = n.tokenTransfers[0];
    expect(hexOf(transfer?.from as string)).toBe(`41${info.log?.[0]?.topics?.[1]?.slice(24)}`);
    expect(hexOf(transfer?.to as string)).toBe(`41${info.log?.[0]?.topics?.[2]?.slice(24)}`);
    expect(n.internalTransfers).toEqual([]);
    expect(n.coinMovements).toEqual([{ transactionId: txId, address: OWNER_B58, delta: -1231300n }]);
  });

  it('decodeTronTransferLog on the recorded log alone', () => {
    const log = info.log?.[0] as TronLog;
    expect(TRANSFER_TOPIC).toBe(log.topics?.[0]);
    expect(decodeTronTransferLog(log, txId, 7, 'mainnet')).toMatchObject({ logIndex: 7, tokenType: 'TRC-20', contract: USDT_B58, amount: 1_000_000n });
  });

  it('the same transaction reverted: no token transfer, the fee is still paid', () => {
    for (const failed of [
      { ...info, result: 'FAILED', receipt: { ...info.receipt, result: 'REVERT' } },
      { ...info, receipt: { ...info.receipt, result: 'OUT_OF_ENERGY' } },
    ]) {
      const n = normalize(block, [failed]);
      expect(n.tokenTransfers).toEqual([]);
      expect(n.coinMovements).toEqual([{ transactionId: txId, address: OWNER_B58, delta: -1231300n }]);
      expect(n.failedTransactionIds).toEqual([txId]);
    }
    expect(normalize(block, [info]).failedTransactionIds).toBeUndefined();
    const byRet = normalize(header(29129143, 1617807429000, [{ ...call, ret: [{ contractRet: 'REVERT' }] }]), [info]);
    expect(byRet.tokenTransfers).toEqual([]);
  });
});

describe('recorded gettransactioninfobyid e5bb8a54 (mainnet 33886423): a contract call with a non-Transfer event', () => {
  const info = fixture<TronTransactionInfo>('mainnet/issues/gettransactioninfobyid_e5bb8a54_contract_call.json');
  const txId = 'e5bb8a5464e2dc04a6b4e104503bdce7d527d034a3ec9f387ff24d5ddc306fb5';
  const call = tx(txId, 'TriggerSmartContract', { owner_address: OWNER, contract_address: '41867288dc1903136bbd57b8a61d7c4c16a97b0a9a' });

  it('no token transfer (topic 7fa05134… is not Transfer), no internal transfers (the node kept none), the fee from the owner', () => {
    const n = normalize(header(33886423, 1632173124000, [call]), [info]);
    expect(n.tokenTransfers).toEqual([]);
    expect(info.internal_transactions).toBeUndefined(); // per the issue the call moved 230 TRX internally; without saveInternalTx it is invisible
    expect(n.internalTransfers).toEqual([]);
    expect(n.coinMovements).toEqual([{ transactionId: txId, address: OWNER_B58, delta: -5192740n }]);
  });

  it('its log still takes a log index: a Transfer in the next transaction is logIndex 1', () => {
    const usdt = fixture<TronTransactionInfo>('mainnet/issues/gettransactioninfobyid_efde2ab4_trc20_usdt_transfer.json');
    const second = { ...usdt, id: TX_A, blockNumber: 33886423 };
    const n = normalize(header(33886423, 1632173124000, [call, tx(TX_A, 'TriggerSmartContract', { owner_address: OWNER })]), [second, info]);
    expect(n.tokenTransfers.map((t) => [t.transactionId, t.logIndex])).toEqual([[TX_A, 1]]);
  });
});

describe('recorded internal_transactions (issue 5945 fragment)', () => {
  const fragment = fixture<{ internal_transactions: TronInternalTransaction[] }>('mainnet/issues/internal_transactions_fragment_issue5945.json');

  it('only the 18.108682 TRX call counts: the empty callValueInfo [{}] is zero, the unfreezeBalanceV2ForEnergy note is a stake operation', () => {
    expect(internalTransfersOfInfo(fragment, TX_A, 'mainnet')).toEqual([
      {
        parentTransactionId: TX_A,
        operationId: 'internal_0',
        from: 'TU2MJ5Veik1LRAgjeSzEdvmDYx7mefJZvd',
        to: 'TU3kjFuhtEo42tsCBtfYUAZxoqQ4yuSLQ5',
        amount: 18_108_682n,
      },
    ]);
  });

  it('in a block: internal transfer and its TRX movement; the same entry rejected is excluded', () => {
    const block = header(64000000, 1723000000000, [tx(TX_A, 'TriggerSmartContract', { owner_address: OWNER })]);
    const n = normalize(block, [{ id: TX_A, internal_transactions: fragment.internal_transactions }]);
    expect(n.internalTransfers.map((t) => [t.operationId, t.amount])).toEqual([['internal_0', 18_108_682n]]);
    expect(n.coinMovements).toEqual([
      { transactionId: TX_A, address: 'TU2MJ5Veik1LRAgjeSzEdvmDYx7mefJZvd', delta: -18_108_682n },
      { transactionId: TX_A, address: 'TU3kjFuhtEo42tsCBtfYUAZxoqQ4yuSLQ5', delta: 18_108_682n },
    ]);
    const rejected = fragment.internal_transactions.map((e, i) => (i === 0 ? { ...e, rejected: true } : e));
    expect(normalize(block, [{ id: TX_A, internal_transactions: rejected }]).internalTransfers).toEqual([]);
  });
});

describe('recorded Nile gettransactionbyid + gettransactioninfobyid 01b4cde4 (66985120, truncated by the docs)', () => {
  const transaction = fixture<TronTransaction>('nile/documentation-en/gettransactionbyid_01b4cde4_TRUNCATED.json');
  const info = fixture<TronTransactionInfo>('nile/documentation-en/gettransactioninfobyid_01b4cde4_TRUNCATED.json');

  it('reads both: a successful contract call, no token transfer (event c66625d0… is not Transfer), no TRX internal transfer, the fee from the owner', () => {
    const n = normalize(header(66985120, 1777437762000, [transaction]), [info], 'nile');
    const txId = '01b4cde4197b9d1a1ff09ef5d2b1d939d3ec2401b3f002ebd0802c0f30a6e4ca';
    expect(n.transactionIds).toEqual([txId]);
    expect(n.tokenTransfers).toEqual([]);
    expect(n.internalTransfers).toEqual([]); // callValueInfo [{}]: a call without value
    expect(n.coinMovements).toEqual([{ transactionId: txId, address: 'TWAFRfZFmhVQZjxM3De7Mp5UZ9sLqWqpHp', delta: -5254500n }]);
  });
});

interface BlockbookTx {
  txid: string;
  blockTime?: number;
  blocktime?: number;
  value?: number;
  from?: string[];
  to?: string[];
  vin: { addresses?: string[] }[];
  vout: { value: number | null; scriptPubKey: { addresses?: string[] } }[];
  coinSpecificData?: { chainExtraData?: { contractType?: string; operation?: string; totalFee?: string } };
}

describe('blockbook-expected mainnet block 10000000', () => {
  const expected = fixture<{ blockHeight: number; blockHash: string; blockTime: number; blockTxs: string[]; txDetails: Record<string, BlockbookTx> }>(
    'blockbook-expected/rpc_testdata_tron.json',
  );
  const inBlock = (id: string): BlockbookTx | undefined => {
    const d = expected.txDetails[id];
    return d?.blockTime === expected.blockTime ? d : undefined;
  };
  // Node-shaped input rebuilt from blockbook's expectations: TransferContract for the plain TRX transfers, TriggerSmartContract
  // with call_value for the "contractCall", TransferAssetContract for the TRC-10 transfer; stand-ins for the transactions
  // blockbook does not detail. Infos carry blockbook's totalFee.
  const transactions = expected.blockTxs.map((id): TronTransaction => {
    const d = inBlock(id);
    if (d === undefined) return tx(id, 'UnrecordedContract', {});
    const owner_address = hexOf(d.vin[0]?.addresses?.[0] as string);
    const to = hexOf(d.vout[0]?.scriptPubKey.addresses?.[0] as string);
    const extra = d.coinSpecificData?.chainExtraData;
    if (extra?.contractType === 'TransferAssetContract')
      return tx(id, 'TransferAssetContract', { owner_address, to_address: to, asset_name: '1000001', amount: 1 });
    if (extra?.operation === 'contractCall')
      return tx(id, 'TriggerSmartContract', { owner_address, contract_address: to, call_value: Number(sun(d.vout[0]?.value ?? 0)) });
    return tx(id, 'TransferContract', { owner_address, to_address: to, amount: Number(sun(d.vout[0]?.value ?? 0)) });
  });
  const infos = expected.blockTxs.map((id): TronTransactionInfo => {
    const fee = inBlock(id)?.coinSpecificData?.chainExtraData?.totalFee;
    return { id, blockNumber: expected.blockHeight, blockTimeStamp: expected.blockTime * 1000, ...(fee === undefined ? {} : { fee: Number(fee) }) };
  });
  const block = header(expected.blockHeight, expected.blockTime * 1000, transactions, expected.blockHash);
  const n = normalize(block, infos);

  it('height, hash, time and the 44 transaction ids in order', () => {
    expect(n.height).toBe(10000000);
    expect(n.hash).toBe('0000000000989680c8808334bae97e8b27d5e75e559a22d883caa5143e1a3894');
    expect(n.timestamp).toBe(1560186390);
    expect(n.transactionIds).toEqual(expected.blockTxs);
    expect(n.transactionIds).toHaveLength(44);
  });

  it('TRX movements of the TransferContract transactions equal blockbook from/to/value (base58)', () => {
    const plain = expected.blockTxs.filter((id) => inBlock(id) !== undefined && inBlock(id)?.coinSpecificData === undefined);
    expect(plain).toHaveLength(5);
    for (const id of plain) {
      const d = inBlock(id) as BlockbookTx;
      const value = sun(d.vout[0]?.value as number);
      expect(movementsOf(n, id)).toEqual([
        { transactionId: id, address: d.vin[0]?.addresses?.[0], delta: -value },
        { transactionId: id, address: d.vout[0]?.scriptPubKey.addresses?.[0], delta: value },
      ]);
    }
    expect(movementsOf(n, '13af67164380d8cd1ac351c21d2fc463acbbac9d802d12b2c705431fc933b2d9')[1]).toEqual({
      transactionId: '13af67164380d8cd1ac351c21d2fc463acbbac9d802d12b2c705431fc933b2d9',
      address: 'TBdViR1Vj1pZ3mv5eu85H7JMY7XwoUWc9Q',
      delta: 10_635_620n,
    });
  });

  it('the contract call moves its 10 TRX call value to the contract and pays blockbook totalFee 3500 sun; the TRC-10 transfer moves no TRX and is no token transfer', () => {
    const call = 'd1b2d1abee8ece16ca68ac48ad259594b370a8ad1b81c8dcdf2a0cd31e5d8961';
    expect(movementsOf(n, call)).toEqual([
      { transactionId: call, address: 'TXKXC79eUqUU9zw4bSneML1TfFKqNfwS4Q', delta: -10_003_500n },
      { transactionId: call, address: 'TRkXAjRA6rRsCZ31DofFsZYYPjtz8fvL1u', delta: 10_000_000n },
    ]);
    expect(movementsOf(n, '98c2cbd1cf1cfb9ef0c100acb56908a5b7a890521158acac4e623047769a92ec')).toEqual([]);
    // The fee and its payer, the owner (the wallet-key callbacks' fee); none for the free TRC-10 transfer.
    expect(n.fees?.filter((f) => f.transactionId === call)).toEqual([{ transactionId: call, payer: 'TXKXC79eUqUU9zw4bSneML1TfFKqNfwS4Q', amount: 3500n }]);
    expect(n.fees?.some((f) => f.transactionId === '98c2cbd1cf1cfb9ef0c100acb56908a5b7a890521158acac4e623047769a92ec')).toBe(false);
    expect(n.tokenTransfers).toEqual([]);
    expect(n.internalTransfers).toEqual([]);
  });

  it('the other contract types blockbook details (vote, undelegate, withdraw, unfreeze, freeze, activate) never throw and only pay their fee', () => {
    const others = Object.values(expected.txDetails).filter((d) => d.blockTime !== expected.blockTime);
    expect(others.map((d) => d.coinSpecificData?.chainExtraData?.contractType)).toEqual([
      'VoteWitnessContract',
      'UnDelegateResourceContract',
      'WithdrawBalanceContract',
      'WithdrawExpireUnfreezeContract',
      'UnfreezeBalanceV2Contract',
      'FreezeBalanceV2Contract',
      'AccountCreateContract',
    ]);
    const mixed = header(
      70000000,
      1775651697000,
      others.map((d) => {
        const value: Record<string, unknown> = { owner_address: hexOf(d.vin[0]?.addresses?.[0] as string) };
        const to = d.vout[0]?.scriptPubKey.addresses?.[0];
        if (to !== undefined) value.receiver_address = hexOf(to);
        return tx(d.txid, d.coinSpecificData?.chainExtraData?.contractType as string, value);
      }),
    );
    const fees = others.map((d): TronTransactionInfo => ({ id: d.txid, fee: Number(d.coinSpecificData?.chainExtraData?.totalFee ?? 0) }));
    const m = normalize(mixed, fees);
    expect(m.tokenTransfers).toEqual([]);
    expect(m.internalTransfers).toEqual([]);
    expect(m.coinMovements).toEqual([
      { transactionId: '6eb8207437337630ef532d91fb857352970917c11ddeab0d51ea413d25943e9a', address: 'TBBNyK23Mtcus51nJUCU3G8H79Ask8xn9A', delta: -1_000_000n },
      { transactionId: 'e5babca390bfb5ba2e26151f031893f5b01237536fbd700f5f563423a1dc1b7d', address: 'THK69pBoDrnkjoTg11PUmAkQHQd4nWqdev', delta: -1_100_000n },
    ]);
  });
});

describe('blockbook-expected Nile blocks', () => {
  it('40000011: header, 4 transaction ids, the 0.313 TRX TransferContract', () => {
    const expected = fixture<{ blockHeight: number; blockHash: string; blockTime: number; blockTxs: string[]; txDetails: Record<string, BlockbookTx> }>(
      'blockbook-expected/rpc_testdata_tron_testnet_nile.json',
    );
    const transfer = expected.txDetails.edb7c46764f5864c85f2887b6521c9a59819d8bc0661a4a10a3be0545ba67b17 as BlockbookTx;
    const from = transfer.vin[0]?.addresses?.[0] as string;
    const to = transfer.vout[0]?.scriptPubKey.addresses?.[0] as string;
    const transactions = expected.blockTxs.map((id) =>
      id === transfer.txid
        ? tx(id, 'TransferContract', { owner_address: hexOf(from), to_address: hexOf(to), amount: Number(sun(transfer.vout[0]?.value as number)) })
        : tx(id, 'UnrecordedContract', {}),
    );
    const n = normalize(
      header(expected.blockHeight, expected.blockTime * 1000, transactions, expected.blockHash),
      expected.blockTxs.map((id) => ({ id })),
      'nile',
    );
    expect([n.height, n.hash, n.timestamp]).toEqual([40000011, '0000000002625a0ba978c29860fa4b30e286bd809d5885a83a34dc7e10b05307', 1694226804]);
    expect(n.transactionIds).toEqual(expected.blockTxs);
    expect(n.coinMovements).toEqual([
      { transactionId: transfer.txid, address: 'TXyYbRRkixvU3YYDvmt4seDRNv2ErqPLV1', delta: -313_000n },
      { transactionId: transfer.txid, address: 'TANPXHGakLN5DkcyH3sqBBjHUfQRZ1b2y8', delta: 313_000n },
    ]);
  });

  it('40000000 → 40000003 (sync): heights, hashes, parent links, transaction ids, from/to/value', () => {
    const sync = fixture<{ connectBlocks: { blocks: Record<string, { height: number; hash: string; noTxs: number; txDetails: BlockbookTx[] }> } }>(
      'blockbook-expected/sync_testdata_tron_testnet_nile.json',
    );
    const strip = (h: string): string => h.replace(/^0x/, '');
    const heights = [40000000, 40000001, 40000002, 40000003];
    let parentHash = standInId(39999999, 'c'); // the parent of 40000000 is not recorded
    const normalized = heights.map((height) => {
      const b = sync.connectBlocks.blocks[String(height)];
      if (b === undefined) throw new Error(`block ${height} missing from the fixture`);
      expect(b.txDetails).toHaveLength(b.noTxs);
      // Value-0 transactions become contract calls to `to` without call value; a valued one a TransferContract of `value` sun.
      const transactions = b.txDetails.map((d) => {
        const owner_address = hexOf(d.from?.[0] as string);
        const to = hexOf(d.to?.[0] as string);
        return d.value
          ? tx(strip(d.txid), 'TransferContract', { owner_address, to_address: to, amount: d.value })
          : tx(strip(d.txid), 'TriggerSmartContract', { owner_address, contract_address: to });
      });
      const block = header(height, (b.txDetails[0]?.blocktime as number) * 1000, transactions, strip(b.hash), parentHash);
      const n = normalize(
        block,
        b.txDetails.map((d) => ({ id: strip(d.txid), blockNumber: height })),
        'nile',
      );
      parentHash = strip(b.hash);
      expect(n.height).toBe(height);
      expect(n.hash).toBe(strip(b.hash));
      expect(n.transactionIds).toEqual(b.txDetails.map((d) => strip(d.txid)));
      return n;
    });
    for (let i = 1; i < normalized.length; i++) expect(normalized[i]?.parentHash).toBe(normalized[i - 1]?.hash);
    expect(normalized.map((n) => n.timestamp)).toEqual([1694226768, 1694226771, 1694226774, 1694226777]);
    const valued = '90be178ce85f7ea2b173ad24008e9782411e77ff6fca92cf20b51997531eb5b9';
    expect(normalized.flatMap((n) => n.coinMovements)).toEqual([
      { transactionId: valued, address: 'TXyYbRRkixvU3YYDvmt4seDRNv2ErqPLV1', delta: -299_000n },
      { transactionId: valued, address: 'TPfsxopnbS7U6UkDiovDzxpiHANqbqre7B', delta: 299_000n },
    ]);
  });
});

describe('synthetic: internal transactions, TRC-721, failures', () => {
  const contract = '41a614f803b6fd780986a42c78ec9c7f77e6ded13c';
  const other = '4188bb8fcadbf29ee90dffbc8c7fd1e02a485fbeff'; // TNSBbAP7srYaFDcHSCG52JadTB7FS9bVyL
  const word = (h: string): string => h.slice(2).padStart(64, '0');
  const noteHex = (note: string): string => Buffer.from(note, 'latin1').toString('hex');

  const block = header(50000000, 1700000000000, [
    tx(TX_A, 'TriggerSmartContract', { owner_address: OWNER, contract_address: contract, call_value: 5 }),
    tx(TX_B, 'TriggerSmartContract', { owner_address: OWNER, contract_address: contract, call_value: 7 }, 'REVERT'),
    tx(TX_C, 'TransferAssetContract', { owner_address: OWNER, to_address: other, asset_name: '1002000', amount: 99 }),
  ]);
  const internal = (over: Partial<TronInternalTransaction>): TronInternalTransaction => ({
    hash: 'f'.repeat(64),
    caller_address: contract,
    transferTo_address: other,
    callValueInfo: [{ callValue: 1000 }],
    note: noteHex('call'),
    ...over,
  });
  const infos: TronTransactionInfo[] = [
    {
      id: TX_A,
      blockNumber: 50000000,
      fee: 100,
      receipt: { result: 'SUCCESS' },
      log: [
        { address: contract.slice(2), topics: ['ffff'.repeat(16)], data: '' },
        // TRC-721: 4 topics, token id in topics[3], no data.
        { address: contract.slice(2), topics: [TRANSFER_TOPIC, word(OWNER), word(other), (12345).toString(16).padStart(64, '0')] },
      ],
      internal_transactions: [
        internal({ rejected: true }), // reverted frame: excluded
        internal({ callValueInfo: [{ callValue: 2000 }] }),
        internal({ callValueInfo: [{ callValue: 50, tokenId: '1002000' }] }), // TRC-10 only: no TRX
        internal({ note: noteHex('freezeBalanceV2ForEnergy'), caller_address: contract, transferTo_address: contract }), // stake operation
        internal({ note: noteHex('suicide'), callValueInfo: [{ callValue: 300 }, { callValue: 9, tokenId: '1002000' }] }),
        internal({ caller_address: 'nonsense' }), // malformed: skipped
      ],
    },
    {
      id: TX_B,
      blockNumber: 50000000,
      fee: 40,
      result: 'FAILED',
      receipt: { result: 'REVERT' },
      log: [{ address: contract.slice(2), topics: [TRANSFER_TOPIC, word(OWNER), word(other)], data: word('0x01') }],
      internal_transactions: [internal({})],
    },
    { id: TX_C, blockNumber: 50000000 },
  ];
  const n = normalize(block, infos);

  it('rejected, TRC-10-only, stake and malformed internal transactions are excluded; operationId is the position in the list', () => {
    expect(n.internalTransfers).toEqual([
      { parentTransactionId: TX_A, operationId: 'internal_1', from: USDT_B58, to: 'TNSBbAP7srYaFDcHSCG52JadTB7FS9bVyL', amount: 2000n },
      { parentTransactionId: TX_A, operationId: 'internal_4', from: USDT_B58, to: 'TNSBbAP7srYaFDcHSCG52JadTB7FS9bVyL', amount: 300n },
    ]);
  });

  it('a TRC-721 Transfer log gives a decimal tokenId; the failed transaction gives nothing but its fee', () => {
    expect(n.tokenTransfers).toEqual([
      {
        transactionId: TX_A,
        logIndex: 1,
        tokenType: 'TRC-721',
        contract: USDT_B58,
        from: OWNER_B58,
        to: 'TNSBbAP7srYaFDcHSCG52JadTB7FS9bVyL',
        tokenId: '12345',
      },
    ]);
    expect(n.coinMovements).toEqual([
      { transactionId: TX_A, address: OWNER_B58, delta: -105n },
      { transactionId: TX_A, address: USDT_B58, delta: 5n - 2300n },
      { transactionId: TX_A, address: 'TNSBbAP7srYaFDcHSCG52JadTB7FS9bVyL', delta: 2300n },
      { transactionId: TX_B, address: OWNER_B58, delta: -40n },
    ]);
  });

  it('malformed Transfer logs are skipped without throwing', () => {
    const bad: TronLog[] = [
      { address: contract.slice(2), topics: [TRANSFER_TOPIC, word(OWNER), word(other)], data: 'zz' },
      { address: contract.slice(2), topics: [TRANSFER_TOPIC, `01${word(OWNER).slice(2)}`, word(other)], data: word('0x01') },
      { address: 'T-not-an-address', topics: [TRANSFER_TOPIC, word(OWNER), word(other)], data: word('0x01') },
      { address: contract.slice(2), topics: [TRANSFER_TOPIC, word(OWNER), word(other), word('0x01')], data: word('0x01') },
      { address: contract.slice(2), topics: [TRANSFER_TOPIC, word(OWNER)], data: word('0x01') },
      { address: contract.slice(2), topics: null },
    ];
    for (const log of bad) expect(decodeTronTransferLog(log, TX_A, 0, 'mainnet')).toBeUndefined();
  });

  it('addresses printed with "visible": true (base58) are accepted', () => {
    const visible = header(50000000, 1700000000000, [tx(TX_A, 'TransferContract', { owner_address: OWNER_B58, to_address: USDT_B58, amount: 3 })]);
    const m = normalize(visible, [{ id: TX_A, log: [{ address: USDT_B58, topics: [TRANSFER_TOPIC, word(OWNER), word(other)], data: word('0x02') }] }]);
    expect(m.coinMovements.map((c) => [c.address, c.delta])).toEqual([
      [OWNER_B58, -3n],
      [USDT_B58, 3n],
    ]);
    expect(m.tokenTransfers[0]?.contract).toBe(USDT_B58);
  });

  it('amounts given as decimal strings or bigint (a lossless JSON parser) are read; an unsafe JSON number is refused', () => {
    const big = header(50000000, 1700000000000, [tx(TX_A, 'TransferContract', { owner_address: OWNER, to_address: other, amount: '99000000000000000' })]);
    expect(normalize(big, [{ id: TX_A, fee: 1n }]).coinMovements.map((c) => c.delta)).toEqual([-99000000000000001n, 99000000000000000n]);
    const lossy = header(50000000, 1700000000000, [tx(TX_A, 'TransferContract', { owner_address: OWNER, to_address: other, amount: 99000000000000000 })]);
    expect(() => normalize(lossy, [{ id: TX_A }])).toThrow(/MAX_SAFE_INTEGER/);
  });
});

describe('synthetic: structurally invalid input throws TronNormalizeError', () => {
  const ok = header(50000000, 1700000000000, [tx(TX_A, 'TransferContract', { owner_address: OWNER, to_address: OWNER, amount: 1 })]);
  const cases: [string, () => unknown][] = [
    ['block not found ({})', () => normalize({}, [])],
    ['block is null', () => normalizeTronBlock({ block: null as unknown as TronBlock, infos: [] }, { network: 'mainnet' })],
    ['blockID not starting with the height', () => normalize({ ...ok, blockID: standInId(49999999) }, [{ id: TX_A }])],
    ['parentHash not starting with height − 1', () => normalize(header(50000000, 0, [], standInId(50000000), standInId(50000000)), [])],
    ['non-hex blockID', () => normalize({ ...ok, blockID: 'xyz' }, [])],
    ['missing timestamp', () => normalize({ ...ok, block_header: { raw_data: { number: 50000000, parentHash: standInId(49999999) } } }, [])],
    ['transactions not an array', () => normalize({ ...ok, transactions: {} as unknown as TronTransaction[] }, [])],
    ['a transaction without txID', () => normalize(header(50000000, 0, [{ raw_data: {} }]), [])],
    ['the same txID twice', () => normalize(header(50000000, 0, [tx(TX_A, 'X', {}), tx(TX_A, 'X', {})]), [{ id: TX_A }])],
    ['infos not an array', () => normalizeTronBlock({ block: ok, infos: 'nope' as unknown as TronTransactionInfo[] }, { network: 'mainnet' })],
    ['an info of another block', () => normalize(ok, [{ id: TX_A, blockNumber: 49999999 }])],
    ['an info of a transaction not in the block', () => normalize(ok, [{ id: TX_A }, { id: TX_B }])],
    ['two infos for one transaction', () => normalize(ok, [{ id: TX_A }, { id: TX_A }])],
    ['a missing info', () => normalize(ok, [])],
    ['a transaction without raw_data.contract', () => normalize(header(50000000, 0, [{ txID: TX_A, raw_data: {} }]), [{ id: TX_A }])],
    ['a fee without an owner', () => normalize(header(50000000, 0, [tx(TX_A, 'VoteWitnessContract', {})]), [{ id: TX_A, fee: 10 }])],
    ['a negative fee', () => normalize(ok, [{ id: TX_A, fee: -1 }])],
    [
      'a TransferContract without to_address',
      () => normalize(header(50000000, 0, [tx(TX_A, 'TransferContract', { owner_address: OWNER, amount: 1 })]), [{ id: TX_A }]),
    ],
    [
      'a TransferContract with a fractional amount',
      () => normalize(header(50000000, 0, [tx(TX_A, 'TransferContract', { owner_address: OWNER, to_address: OWNER, amount: 1.5 })]), [{ id: TX_A }]),
    ],
  ];
  it.each(cases)('%s', (_name, run) => {
    expect(run).toThrow(TronNormalizeError);
  });

  it('a genesis-like header without number and timestamp (protobuf JSON omits zeros) is height 0, time 0; its parent is not checked', () => {
    const genesis: TronBlock = { blockID: standInId(0, 'e'), block_header: { raw_data: { parentHash: 'e'.repeat(64) } } };
    expect(normalizeTronBlockHeader(genesis)).toEqual({ height: 0, hash: standInId(0, 'e'), parentHash: 'e'.repeat(64), timestamp: 0, transactionIds: [] });
  });

  it('unknown contract types, contracts without parameter and a failed TransferContract (fee only) never throw', () => {
    const block = header(50000000, 0, [
      { txID: TX_A, raw_data: { contract: [{ type: 'ShieldedTransferContract' }] } },
      tx(TX_B, 'SomeFutureContract', { owner_address: OWNER, amount: 'whatever' }),
      tx(TX_C, 'TransferContract', { owner_address: OWNER, to_address: OWNER, amount: 5 }, 'FAILED'),
    ]);
    const n = normalize(block, [{ id: TX_A }, { id: TX_B, fee: 3 }, { id: TX_C, fee: 2 }]);
    expect(n.coinMovements).toEqual([
      { transactionId: TX_B, address: OWNER_B58, delta: -3n },
      { transactionId: TX_C, address: OWNER_B58, delta: -2n },
    ]);
  });
});

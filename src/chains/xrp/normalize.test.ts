import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validateAddress, validateTransactionId } from '../../domain/addresses.ts';
import type { CoinMovement } from '../types.ts';
import {
  ledgerFromResponse,
  normalizeXrpLedger,
  normalizeXrpLedgerHeader,
  RIPPLE_EPOCH_OFFSET,
  RippledError,
  readXrpTransaction,
  unwrapRippledResult,
  XrpNormalizeError,
  xrpBalanceChanges,
  xrpDeliveredDrops,
  xrpPaymentRuleChanges,
} from './normalize.ts';
import type { RpcLedger, RpcLedgerTransaction, RpcTransactionFields, RpcTransactionMeta } from './rpc-types.ts';

const MAINNET = { network: 'mainnet' } as const;

/** Reads a recorded file as it is (envelope included); a missing or unparsable file throws, so the test fails (never skips). */
function load(rel: string): unknown {
  return JSON.parse(readFileSync(new URL(`../../../test/fixtures/xrp/${rel}`, import.meta.url), 'utf8')) as unknown;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => v as Json;

/** Expanded transactions of a ledger object, as recorded. */
function expanded(ledger: RpcLedger): RpcLedgerTransaction[] {
  return (ledger.transactions ?? []).map((t) => {
    if (typeof t === 'string') throw new Error('expected expanded transactions');
    return t;
  });
}

function movementsOf(movements: CoinMovement[], txId: string): [string, bigint][] {
  return movements.filter((m) => m.transactionId === txId).map((m) => [m.address, m.delta]);
}

const sameChanges = (a: Map<string, bigint>, b: Map<string, bigint>): boolean => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);

const sum = (values: Iterable<bigint>): bigint => [...values].reduce((a, b) => a + b, 0n);

/**
 * Independent reading of the data: in execution order (TransactionIndex), every AccountRoot's previous
 * balance in a transaction must equal its final balance after the previous transaction that changed it.
 */
function checkBalanceChains(txs: RpcLedgerTransaction[]): number {
  const last = new Map<string, string>();
  let checked = 0;
  const ordered = [...txs].sort((a, b) => (a.metaData?.TransactionIndex ?? 0) - (b.metaData?.TransactionIndex ?? 0));
  for (const tx of ordered) {
    for (const node of tx.metaData?.AffectedNodes ?? []) {
      const body = node.ModifiedNode ?? node.DeletedNode;
      if (body?.LedgerEntryType !== 'AccountRoot' || body.FinalFields === undefined) continue;
      const account = body.FinalFields.Account as string;
      const before = body.PreviousFields?.Balance ?? body.FinalFields.Balance;
      const seen = last.get(account);
      if (seen !== undefined) {
        expect(before, `${account} in ${tx.hash}`).toBe(seen);
        checked++;
      }
      last.set(account, body.FinalFields.Balance as string);
    }
  }
  return checked;
}

describe('ledgerFull7501326.json: bare ledger object, 17 expanded transactions (API v1 metaData)', () => {
  const raw = load('xrpl.js/ledgerFull7501326.json');
  const { ledger, validated } = ledgerFromResponse(raw);
  const n = normalizeXrpLedger(ledger, MAINNET);
  const txs = expanded(ledger);

  it('is read as a bare ledger (no envelope, so no validated flag)', () => {
    expect(ledger).toBe(raw);
    expect(validated).toBeUndefined();
  });

  it('header: height from the string ledger_index, hash, parent, Ripple-epoch close time', () => {
    expect(ledger.ledger_index).toBe('7501326');
    expect(n.height).toBe(7501326);
    expect(n.hash).toBe('E212F3EA7454A298BC0D0BCD79CE37EE08068976216AB94C71E9DDDFE45C81A4');
    expect(n.parentHash).toBe('664D5B5110E1E9880B4FACD3BDA0996C502E0ABC71C87312900EB57E0E7A2413');
    expect(n.timestamp).toBe(457517030 + RIPPLE_EPOCH_OFFSET);
    // close_time_human "2014-Jul-01 08:03:50" (UTC): an independent check of the epoch offset.
    expect(ledger.close_time_human).toBe('2014-Jul-01 08:03:50');
    expect(new Date(n.timestamp * 1000).toISOString()).toBe('2014-07-01T08:03:50.000Z');
    expect(n.tokenTransfers).toEqual([]);
    expect(n.internalTransfers).toEqual([]);
  });

  it('transaction ids: all 17, tec results included, in the node order, canonical per validateTransactionId', () => {
    expect(n.transactionIds).toEqual([
      '0582B697494C9B519E717DD363A83137EDE7616E9698DAB0DF9702B626B41BE5',
      '104514626FFB561440700F1130A9B0004DAD872AD6FBBCCD96D06AF6D4D50B11',
      '11924CD353C46F4C73A9B24C766E54D904E01DFEC40E794ABA1E326750EB7177',
      '15974EC466FDB61442CD3C3FA0B1FF8CE8F51E902989CC8016B0DA3CB81E9AEE',
      '2404D179D60384599490E9BD5B0081A2E06AA9D91180DE2BB91E0B931181429A',
      '2564A4F4F1BE20AA13394FB06DA620814190A090DCDC03320CCB257F00D80B92',
      '3D5A3E510A8DAF5F0065D396681099807DEE69830148BE27A70825ED1BE77FF2',
      '41D99C0A0500BE871082C1A280F6FC9BEAE608A791296C8D73452E5BA1D2C7FD',
      '81194BA550B151BDDE040CD70A348201A7FE981AA530160D4B715655C99B2B83',
      '983A3B9A866035F6F35E55510F137F3830A3C9700D33134B419470EE1AB5D204',
      'A170E26F13201A9BA851A47B2F63A6A9F4DDB8F433740086C39F88BACC5D3DB4',
      'BBC14D64A2DD834D0F5372788A197877E07A56F7AB86E391ECE6072165767163',
      'C40A25F1EFD69772A2CE40A8862695256FA5CF8CA9851D1E76FF2560950226E4',
      'C50138F7B3BB5228BFF8950E16683877AD316CE125938895A218B2A63C54CA4F',
      'E0E1704031E5CF7D4C89232DA5F58A53AA0E31B93DE9C2387BA5083AA4E48975',
      'E2B43CBB800BE8550923A28654B08EFBB537A652F3046D0BF26F533DACFEA5E1',
      'F0F263E6D4A91E43AFCAD5A33AE620CE849CA9FB2D119D92A2F6D5242CC10982',
    ]);
    expect(n.transactionIds).toEqual(txs.map((t) => t.hash));
    for (const id of n.transactionIds) expect(validateTransactionId('xrp', 'mainnet', id)).toEqual({ ok: true, normalized: id });
    const results = txs.map((t) => t.metaData?.TransactionResult);
    expect(results.filter((r) => r !== 'tesSUCCESS')).toEqual(['tecUNFUNDED_OFFER', 'tecPATH_DRY']);
    // The tec… transactions are named as failed (safety flag `failed` on their fee-only coin events).
    expect(new Set(n.failedTransactionIds)).toEqual(new Set(txs.filter((t) => t.metaData?.TransactionResult !== 'tesSUCCESS').map((t) => t.hash)));
  });

  it('movements: literal values of fee-only, tec, XRP-crossing offer and XRP-bridged IOU payments', () => {
    expect(n.coinMovements).toHaveLength(25);
    // OfferCreate that crossed nothing in XRP: the fee only.
    expect(movementsOf(n.coinMovements, n.transactionIds[0] as string)).toEqual([['r2d2iZiCcJmNL6vhUGFjs8U8BuUq6BnmT', -64n]]);
    // OfferCreate by the same account that crossed XRP offers: +1773564765 drops net of its 64-drop fee.
    expect(movementsOf(n.coinMovements, '104514626FFB561440700F1130A9B0004DAD872AD6FBBCCD96D06AF6D4D50B11')).toEqual([
      ['rMfLjFNCsFQxKc2hdgkZqjfLEKTot7S3ii', -5739784n],
      ['rn7Dk7YcNRmUb9q9WUVX1oh9Kp1Dkuy9xE', -429555184n],
      ['r2d2iZiCcJmNL6vhUGFjs8U8BuUq6BnmT', 1773564765n],
      ['rHhuL3YUYgXEwzKxB2YtfLAun1iFshXWcH', -1338269861n],
    ]);
    // Two 16 JPY payments auto-bridged through XRP: the sender pays only its fee in XRP, two market makers swap XRP.
    for (const id of ['2404D179D60384599490E9BD5B0081A2E06AA9D91180DE2BB91E0B931181429A', '2564A4F4F1BE20AA13394FB06DA620814190A090DCDC03320CCB257F00D80B92']) {
      expect(movementsOf(n.coinMovements, id)).toEqual([
        ['rfcXiCHA5TJaCr4B6natrHKGkCrnJNKsnT', 42553192n],
        ['r4X3WWZ3UZMDw3Z7T32FXK2NAaiitSWZ9c', -12n],
        ['rM3X3QSr8icjTGpaF52dozhbT2BZSXJQYM', -42553192n],
      ]);
    }
    // tec results are in the ledger and burn their fee (and nothing else).
    expect(movementsOf(n.coinMovements, '81194BA550B151BDDE040CD70A348201A7FE981AA530160D4B715655C99B2B83')).toEqual([
      ['rn694SpeUFw3VJwapyRKx6bpru3ZpDHzji', -10n],
    ]);
    expect(movementsOf(n.coinMovements, 'F0F263E6D4A91E43AFCAD5A33AE620CE849CA9FB2D119D92A2F6D5242CC10982')).toEqual([
      ['rfESTMcbvbvCBqU1FTvGWiJP8cmUSu4GKg', -10n],
    ]);
    for (const m of n.coinMovements) {
      expect(m.delta).not.toBe(0n);
      expect(validateAddress('xrp', 'mainnet', m.address)).toEqual({ ok: true, normalized: m.address });
    }
  });

  it('independent check: all AccountRoot changes of the ledger sum to minus the fees burnt, per transaction and in total', () => {
    const fees = txs.map((t) => BigInt(t.Fee as string));
    expect(sum(fees)).toBe(294n); // 2 × 64 + 3 × 15 + 3 × 12 + 9 × 10
    expect(sum(n.coinMovements.map((m) => m.delta))).toBe(-sum(fees));
    txs.forEach((t, i) => {
      expect(sum(n.coinMovements.filter((m) => m.transactionId === t.hash).map((m) => m.delta)), t.hash).toBe(-(fees[i] as bigint));
    });
  });

  it('independent check: AccountRoot balances chain from transaction to transaction in TransactionIndex order', () => {
    expect(checkBalanceChains(txs)).toBeGreaterThan(5);
  });

  it('cross-check with the type-based Payment rule: equal except where offers or bridged payments move XRP', () => {
    const differ: string[] = [];
    for (const entry of txs) {
      const tx = readXrpTransaction(entry);
      const fromMeta = xrpBalanceChanges(tx.meta);
      const byRule = xrpPaymentRuleChanges(tx);
      // The sender's AccountRoot always changes: it pays the fee, whatever else it gains or loses.
      if (!fromMeta.has(tx.account)) throw new Error(`${tx.id}: the fee payer has no balance change`);
      if (!sameChanges(fromMeta, byRule)) differ.push(tx.id.slice(0, 8));
    }
    // 1045…: OfferCreate crossing XRP offers; 2404…/2564…: JPY payments bridged through XRP; A170…: OfferCreate crossing an XRP offer.
    expect(differ).toEqual(['10451462', '2404D179', '2564A4F4', 'A170E26F']);
  });

  it('API v2 shape (tx_json + meta + hash, numeric ledger_index) normalises to the same block', () => {
    const v2: RpcLedger = {
      ...ledger,
      ledger_index: 7501326,
      hash: undefined,
      transactions: txs.map(({ metaData, hash, ...fields }) => ({ hash, meta: metaData, tx_json: fields })),
    };
    expect(normalizeXrpLedger(v2, MAINNET)).toEqual(n);
  });

  it('a pseudo-transaction (EnableAmendment from ACCOUNT_ZERO, fee 0) is listed and moves nothing', () => {
    const pseudo: RpcLedgerTransaction = {
      Account: 'rrrrrrrrrrrrrrrrrrrrrhoLvTp',
      Fee: '0',
      Sequence: 0,
      SigningPubKey: '',
      TransactionType: 'EnableAmendment',
      hash: 'ab'.repeat(32),
      metaData: {
        AffectedNodes: [{ ModifiedNode: { LedgerEntryType: 'Amendments', FinalFields: { Flags: 0 }, PreviousFields: {} } }],
        TransactionIndex: 17,
        TransactionResult: 'tesSUCCESS',
      },
    };
    const withPseudo = normalizeXrpLedger({ ...ledger, transactions: [...txs, pseudo] }, MAINNET);
    expect(withPseudo.transactionIds.at(-1)).toBe('AB'.repeat(32));
    expect(withPseudo.coinMovements).toEqual(n.coinMovements);
  });

  it('unknown transaction types do not crash and change nothing', () => {
    const renamed: RpcLedger = { ...ledger, transactions: txs.map((t) => ({ ...t, TransactionType: 'SomeFutureType' })) };
    expect(normalizeXrpLedger(renamed, MAINNET)).toEqual(n);
  });
});

describe('ledgerWithPartialPayment.json: WebSocket envelope, 6 transactions, an IOU partial payment', () => {
  const raw = load('xrpl.js-historical/ledgerWithPartialPayment.json');
  const { ledger, validated } = ledgerFromResponse(raw);
  const n = normalizeXrpLedger(ledger, MAINNET);
  const partialId = 'A0A074D10355223CBE2520A42F93A52E3CC8B4D692570EB4841084F9BBB39F7A';

  it('header and transaction ids', () => {
    expect(validated).toBe(true);
    expect(n.height).toBe(22420574);
    expect(n.hash).toBe('4F6C0495378FF68A15749C0D51D097EB638DA70319FDAC7A97A27CE63E0BFFED');
    expect(n.parentHash).toBe('4F636662B714CD9CCE965E9C23BB2E1058A2DF496F5A2416299317AE03F1CD35');
    expect(new Date(n.timestamp * 1000).toISOString()).toBe('2016-07-07T16:53:51.000Z');
    expect(n.transactionIds).toEqual([
      '1257EB8C80DE5AF6ACE91E0C05407CC1329E7B6FFBBBFFE9F734682871BD7655',
      '43A53F005AF1AE095B39244D3C56E49150C43D16D89B7DA8673937E142858D38',
      '54DE214FAD77DB326E00100B0112612AC3D7BA3BE17C2AF3480CF919A13DA4A5',
      '5B79A66B1FD0619159783A8A85F43E14B159D91D3ACB36AEB954A101026BB68E',
      partialId,
      'B1B959CA2B3B46F07B2F1373C84E927C46B124E9728C79A2736F32AA3F2DB7FB',
    ]);
  });

  it('the partial payment delivers an IOU: its ledger metadata has DeliveredAmount (no delivered_amount), and XRP only pays the fee', () => {
    const entry = expanded(ledger).find((t) => t.hash === partialId) as RpcLedgerTransaction;
    expect(entry.Flags).toBe(131072);
    expect(entry.Amount).toEqual({ currency: 'USD', issuer: 'rvYAfWj5gh67oV6fW32ZzP3Aw4Eubs59B', value: '10' });
    expect(entry.metaData?.delivered_amount).toBeUndefined();
    expect(entry.metaData?.DeliveredAmount).toEqual({ currency: 'USD', issuer: 'rvYAfWj5gh67oV6fW32ZzP3Aw4Eubs59B', value: '9.980039920159681' });
    expect(xrpDeliveredDrops(entry, entry.metaData as RpcTransactionMeta)).toBeUndefined();
    expect(movementsOf(n.coinMovements, partialId)).toEqual([['rGFuMiw48HdbnrUbkRYuitXTmfrDBNTCnX', -10000n]]);
    // The recorded validated ledger's tfPartialPayment Payment is named (safety flag `partial-payment`).
    expect(n.partialPaymentIds).toEqual([partialId]);
  });

  it('every transaction here moves only its fee: movements sum to minus the fees, and equal the Payment rule', () => {
    const txs = expanded(ledger);
    expect(sum(n.coinMovements.map((m) => m.delta))).toBe(-sum(txs.map((t) => BigInt(t.Fee as string))));
    expect(n.coinMovements).toHaveLength(6);
    for (const entry of txs) {
      const tx = readXrpTransaction(entry);
      expect([...xrpBalanceChanges(tx.meta)]).toEqual([...xrpPaymentRuleChanges(tx)]);
    }
    checkBalanceChains(txs); // asserts inside; each account changes once in this ledger
  });

  it('the same result re-wrapped as an HTTP JSON-RPC answer gives the same ledger', () => {
    const http = { result: { ...obj(obj(raw).result), status: 'success' } };
    const again = ledgerFromResponse(http);
    expect(again.validated).toBe(true);
    expect(normalizeXrpLedger(again.ledger, MAINNET)).toEqual(n);
  });
});

describe('ledger.json: expand false (hashes only)', () => {
  const raw = load('xrpl.js/ledger.json');
  const { ledger, validated } = ledgerFromResponse(raw);

  it('header reads; ledger_index is a string inside ledger', () => {
    expect(validated).toBe(true);
    const h = normalizeXrpLedgerHeader(ledger);
    expect(h).toEqual({
      height: 9038214,
      hash: '0F7ED9F40742D8A513AE86029462B7A6768325583DF8EE21B7EC663019DD6A0F',
      parentHash: '4BB9CBE44C39DC67A1BE849C7467FE1A6D1F73949EA163C38A0121A15E04FFDE',
      timestamp: 464908910 + RIPPLE_EPOCH_OFFSET,
      transactionIds: ['1FC4D12C30CE206A6E23F46FAC62BD393BE9A79A1C452C6F3A04A13BC7A5E5A3', 'E25C38FDB8DD4A2429649588638EE05D055EE6D839CABAF8ABFB4BD17CFE1F3E'],
    });
    expect(new Date(h.timestamp * 1000).toISOString()).toBe('2014-09-24T21:21:50.000Z');
    // result.ledger_hash of this fixture does not match ledger.ledger_hash (README section 5): only the ledger object is read.
  });

  it('the full normaliser refuses a hash-only ledger (it would lose the movements)', () => {
    expect(() => normalizeXrpLedger(ledger, MAINNET)).toThrow(XrpNormalizeError);
    expect(() => normalizeXrpLedger(ledger, MAINNET)).toThrow(/expand: true/);
  });
});

describe('unwrapRippledResult and rippled errors', () => {
  it('lgrNotFound (WebSocket shape) throws RippledError with its code', () => {
    const raw = load('xrpl.js-historical/ledgerNotFound.json');
    let error: unknown;
    try {
      unwrapRippledResult(raw);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RippledError);
    expect(error).toMatchObject({ code: 'lgrNotFound', errorCode: 20, message: 'rippled error lgrNotFound (20): ledgerNotFound' });
    expect(() => ledgerFromResponse(raw)).toThrow(RippledError);
  });

  it('lgrNotFound re-wrapped as HTTP JSON-RPC ({result: {..., status: "error"}}) throws the same', () => {
    const { id: _id, type: _type, ...body } = obj(load('xrpl.js-historical/ledgerNotFound.json'));
    expect(() => unwrapRippledResult({ result: body })).toThrow(expect.objectContaining({ code: 'lgrNotFound', errorCode: 20 }));
  });

  it('txnNotFound, and a JSON-RPC 2.0 style error object', () => {
    expect(() => unwrapRippledResult(load('xrpl.js-historical/tx_notFound.json'))).toThrow(expect.objectContaining({ code: 'txnNotFound', errorCode: 24 }));
    expect(() => unwrapRippledResult({ jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' } })).toThrow(RippledError);
  });

  it('the three success shapes: WebSocket, HTTP JSON-RPC, bare', () => {
    const ws = obj(load('xrpl.js/ledger.json'));
    const result = obj(ws.result);
    expect(unwrapRippledResult(ws)).toBe(result);
    const http = { result: { ...result, status: 'success' } };
    expect(unwrapRippledResult(http)).toBe(http.result);
    const bare = load('xrpl.js/ledgerFull7501326.json');
    expect(unwrapRippledResult(bare)).toBe(bare);
  });

  it('non-objects and result-less responses are XrpNormalizeError', () => {
    for (const bad of [null, 'x', 1, [], { result: 'x' }, { id: 1, status: 'success', type: 'response' }]) {
      expect(() => unwrapRippledResult(bad), JSON.stringify(bad)).toThrow(XrpNormalizeError);
    }
    expect(() => ledgerFromResponse({ result: { account: 'r' } })).toThrow(XrpNormalizeError);
  });
});

describe('per-transaction helpers on the recorded tx fixtures', () => {
  it('partialPaymentXRP.json: delivered_amount (1 XRP) is used, not DeliverMax (2 XRP); its metadata, edited from the IOU one, moves only the fee', () => {
    const tx = readXrpTransaction(obj(load('xrpl.js/partialPaymentXRP.json')));
    expect(tx.id).toBe('A0A074D10355223CBE2520A42F93A52E3CC8B4D692570EB4841084F9BBB39F7A');
    expect(tx.fields.DeliverMax).toBe('2000000');
    expect(xrpDeliveredDrops(tx.fields, tx.meta)).toBe(1000000n);
    expect([...xrpPaymentRuleChanges(tx)]).toEqual([
      ['rGFuMiw48HdbnrUbkRYuitXTmfrDBNTCnX', -1010000n],
      ['rNNuQMuExCiEjeZ4h9JJnj5PSWypdMXDj4', 1000000n],
    ]);
    // The fixture is the IOU payment of ledger 22420574 with Amount/delivered_amount replaced by XRP strings:
    // its AffectedNodes still describe the USD payment. The normaliser trusts the metadata.
    expect([...xrpBalanceChanges(tx.meta)]).toEqual([['rGFuMiw48HdbnrUbkRYuitXTmfrDBNTCnX', -10000n]]);
  });

  it('partialPaymentIOU.json: IOU delivered, fee only in XRP', () => {
    const tx = readXrpTransaction(obj(load('xrpl.js/partialPaymentIOU.json')));
    expect(xrpDeliveredDrops(tx.fields, tx.meta)).toBeUndefined();
    expect([...xrpBalanceChanges(tx.meta)]).toEqual([['rGFuMiw48HdbnrUbkRYuitXTmfrDBNTCnX', -10000n]]);
    expect([...xrpPaymentRuleChanges(tx)]).toEqual([['rGFuMiw48HdbnrUbkRYuitXTmfrDBNTCnX', -10000n]]);
  });

  it('streams_partialPaymentTransaction.json: a real XRP partial payment, 4456 drops delivered of 10^15 asked; rule and metadata agree', () => {
    const msg = obj(load('xrpl.js/streams_partialPaymentTransaction.json'));
    const fields = msg.transaction as RpcTransactionFields;
    const meta = msg.meta as RpcTransactionMeta;
    expect(fields.Amount).toBe('1000000000000000');
    expect(xrpDeliveredDrops(fields, meta)).toBe(4456n);
    expect([...xrpBalanceChanges(meta)]).toEqual([
      ['rPT1Sjq2YGrBMTttX4GZHjKu9dyfzbpAYe', 4456n],
      ['rrvV6w5Jho4RYpcdH8x1subhYzK89DZDW', -4468n],
    ]);
    // The recorded stream message has no transaction hash (xrpl.js trimmed it), so it is not a readable transaction.
    expect(() => readXrpTransaction(msg)).toThrow(/transaction hash/);
    const tx = readXrpTransaction({ ...msg, hash: '0'.repeat(64) });
    expect(new Map(xrpPaymentRuleChanges(tx))).toEqual(xrpBalanceChanges(meta));
  });

  it('transactionEntry.json (tx_json + metadata, DeliverMax): XRP payment with the partial flag, all delivered', () => {
    const tx = readXrpTransaction(obj(unwrapRippledResult(load('xrpl.js/transactionEntry.json'))));
    expect(tx).toMatchObject({ id: '3F437BAAC9E713F24DF2954EADB7BE80F608D8B758116298B999BA252DF4816C', type: 'Payment', fee: 6000n, result: 'tesSUCCESS' });
    expect(xrpDeliveredDrops(tx.fields, tx.meta)).toBe(104169972n);
    const expected = [
      ['rLSn6Z3T8uCxbcd1oxwfGQN1Fdn5CyGujK', -104175972n],
      ['rEb8TK3gBgk5auZkwc6sHnwrGVJH8DuaLh', 104169972n],
    ];
    expect([...xrpBalanceChanges(tx.meta)]).toEqual(expected);
    expect([...xrpPaymentRuleChanges(tx)]).toEqual(expected);
  });

  it('tx_payment.json (API v2): an IOU payment paid with XRP through the order book; only the metadata sees the XRP', () => {
    const tx = readXrpTransaction(obj(unwrapRippledResult(load('xrpl.js/tx_payment.json'))));
    expect(tx.id).toBe('F4AB442A6D4CBB935D66E1DA7309A5FC71C7143ED4049053EC14E3875B0CF9BF');
    expect([...xrpBalanceChanges(tx.meta)]).toEqual([
      ['r9cZA1mLK5R5Am25ArfXFmqgNwjZgnfk59', -1101208n],
      ['r9tGqzZgKxVFvzKFdUqXAqTzazWBUia8Qr', 1101198n],
    ]);
    expect([...xrpPaymentRuleChanges(tx)]).toEqual([['r9cZA1mLK5R5Am25ArfXFmqgNwjZgnfk59', -10n]]);
  });

  it('tx_paymentChannelClaim.json: the claim credits the account (801000 drops less the 12-drop fee)', () => {
    const tx = readXrpTransaction(obj(unwrapRippledResult(load('xrpl.js-historical/tx_paymentChannelClaim.json'))));
    expect([...xrpBalanceChanges(tx.meta)]).toEqual([['rBmNDZ7vbTCwakKXsX3pDAwDdQuxM7yBRa', 800988n]]);
    expect([...xrpPaymentRuleChanges(tx)]).toEqual([['rBmNDZ7vbTCwakKXsX3pDAwDdQuxM7yBRa', -12n]]);
  });

  it('tx_escrowCreation.json: 2 drops go into the escrow (in no account), so the change is −(fee + 2)', () => {
    const tx = readXrpTransaction(obj(unwrapRippledResult(load('xrpl.js-historical/tx_escrowCreation.json'))));
    expect(tx.fee).toBe(12n);
    // The destination's AccountRoot appears with threading fields only (no FinalFields): no change.
    expect([...xrpBalanceChanges(tx.meta)]).toEqual([['rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh', -14n]]);
  });

  it('tx_offerCreateSell.json: tecUNFUNDED_OFFER burns the fee', () => {
    const tx = readXrpTransaction(obj(unwrapRippledResult(load('xrpl.js/tx_offerCreateSell.json'))));
    expect(tx.result).toBe('tecUNFUNDED_OFFER');
    expect([...xrpBalanceChanges(tx.meta)]).toEqual([['rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh', -12n]]);
    expect([...xrpPaymentRuleChanges(tx)]).toEqual([['rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh', -12n]]);
  });

  it('fee-only transactions in every other shape: tx v1, {tx, meta, hash}, account_tx elements', () => {
    const entries: Json[] = [
      obj(unwrapRippledResult(load('xrpl.js-historical/tx_trustSet.json'))),
      obj(unwrapRippledResult(load('xrpl.js-historical/tx_notValidated.json'))),
      // NFTokenMint: the issuer's AccountRoot is modified without a balance change (omitted).
      obj(load('xrpl.js/tx_NFTokenMint.json')),
      ...(obj(unwrapRippledResult(load('xrpl.js/accountTx.json'))).transactions as Json[]),
    ];
    const seen = entries.map((e) => {
      const tx = readXrpTransaction(e);
      const changes = xrpBalanceChanges(tx.meta);
      expect([...changes]).toEqual([[tx.account, -tx.fee]]);
      expect(xrpPaymentRuleChanges(tx)).toEqual(changes);
      return tx.type;
    });
    expect(seen).toEqual(['TrustSet', 'AccountSet', 'NFTokenMint', 'CheckCreate', 'DepositPreauth']);
  });
});

describe('structurally invalid input throws XrpNormalizeError', () => {
  const good = ledgerFromResponse(load('xrpl.js-historical/ledgerWithPartialPayment.json')).ledger;
  const txs = expanded(good);
  const first = txs[0] as RpcLedgerTransaction;
  const firstMeta = first.metaData as RpcTransactionMeta;
  const withFirst = (tx: unknown): RpcLedger => ({ ...good, transactions: [tx as RpcLedgerTransaction, ...txs.slice(1)] });

  const cases: [string, unknown][] = [
    ['not an object', 'ledger'],
    ['open ledger', { ...good, closed: false }],
    ['bad ledger_index', { ...good, ledger_index: '-1' }],
    ['fractional ledger_index', { ...good, ledger_index: 1.5 }],
    ['missing hash', { ...good, ledger_hash: undefined }],
    ['short hash', { ...good, ledger_hash: 'ABCD' }],
    ['two different hashes', { ...good, hash: good.parent_hash }],
    ['missing parent', { ...good, parent_hash: undefined }],
    ['missing close_time', { ...good, close_time: undefined }],
    ['no transactions array', { ...good, transactions: undefined }],
    ['duplicate transaction', { ...good, transactions: [first, first] }],
    ['transaction without metadata', withFirst({ ...first, metaData: undefined })],
    ['metadata without AffectedNodes', withFirst({ ...first, metaData: { ...firstMeta, AffectedNodes: undefined } })],
    ['metadata without TransactionResult', withFirst({ ...first, metaData: { ...firstMeta, TransactionResult: undefined } })],
    ['bad Fee', withFirst({ ...first, Fee: '1.5' })],
    ['bad Account', withFirst({ ...first, Account: 'rNotAnAddress' })],
    ['AffectedNodes element of no known kind', withFirst({ ...first, metaData: { ...firstMeta, AffectedNodes: [{ Other: {} }] } })],
    [
      'AccountRoot balance that is not drops',
      withFirst({
        ...first,
        metaData: {
          ...firstMeta,
          AffectedNodes: [
            { ModifiedNode: { LedgerEntryType: 'AccountRoot', FinalFields: { Account: first.Account, Balance: '-5' }, PreviousFields: { Balance: '10' } } },
          ],
        },
      }),
    ],
    [
      'AccountRoot with a previous balance but no final fields',
      withFirst({
        ...first,
        metaData: { ...firstMeta, AffectedNodes: [{ ModifiedNode: { LedgerEntryType: 'AccountRoot', PreviousFields: { Balance: '10' } } }] },
      }),
    ],
  ];
  for (const [name, input] of cases) {
    it(name, () => {
      expect(() => normalizeXrpLedger(input as RpcLedger, MAINNET)).toThrow(XrpNormalizeError);
    });
  }

  it('a created account counts its whole balance; a deleted account its last change', () => {
    const meta: RpcTransactionMeta = {
      TransactionResult: 'tesSUCCESS',
      AffectedNodes: [
        { CreatedNode: { LedgerEntryType: 'AccountRoot', NewFields: { Account: 'rNNuQMuExCiEjeZ4h9JJnj5PSWypdMXDj4', Balance: '20000000' } } },
        {
          DeletedNode: {
            LedgerEntryType: 'AccountRoot',
            FinalFields: { Account: 'rGFuMiw48HdbnrUbkRYuitXTmfrDBNTCnX', Balance: '0' },
            PreviousFields: { Balance: '20000012' },
          },
        },
        { ModifiedNode: { LedgerEntryType: 'RippleState', FinalFields: { Balance: { currency: 'USD', value: '1' } }, PreviousFields: { Balance: 'x' } } },
      ],
    };
    expect([...xrpBalanceChanges(meta)]).toEqual([
      ['rNNuQMuExCiEjeZ4h9JJnj5PSWypdMXDj4', 20000000n],
      ['rGFuMiw48HdbnrUbkRYuitXTmfrDBNTCnX', -20000012n],
    ]);
  });
});

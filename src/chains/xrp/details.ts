/**
 * The Callback Data reads on the XRP Ledger (docs/reference/api.md#block-by-hash, #block-by-height, #transaction-details and #callback-data-reads): a validated ledger by
 * index or hash (`ledger`), a transaction of a validated ledger (`tx`). Like chain following, only
 * validated ledgers are answered: a closed ledger that is not validated yet may still be replaced.
 * Amounts: XRP in drops inside, whole XRP (6 decimals) out; an issued currency's amount is its value
 * with the currency code as unit.
 */
import { formatUnits } from '../../domain/amounts.ts';
import { type BlockDetails, type BlockSelector, NodeReadError, type TransactionDetails, type UnitAmount } from '../details.ts';
import { NodeRpcError } from '../rpc-error.ts';
import { ledgerFromResponse, normalizeXrpLedgerHeader, RIPPLE_EPOCH_OFFSET, readXrpTransaction, xrpDeliveredDrops } from './normalize.ts';
import { isRippledError, type RippledClient } from './rpc.ts';
import type { RpcAmount, RpcLedgerTransaction } from './rpc-types.ts';

const DROPS = /^\d{1,20}$/;
const xrp = (drops: bigint): UnitAmount => ({ amount: formatUnits(drops, 6), unit: 'XRP' });

/** An XRP (drops) or issued-currency amount as `{ amount, unit }`; zero XRP when absent. */
function unitAmount(value: RpcAmount | undefined): UnitAmount {
  if (typeof value === 'string' && DROPS.test(value)) return xrp(BigInt(value));
  if (value !== null && typeof value === 'object' && typeof value.value === 'string') return { amount: value.value, unit: String(value.currency ?? '') };
  return xrp(0n);
}

export interface XrpDetailsReader {
  getBlockDetails(block: BlockSelector): Promise<BlockDetails | undefined>;
  getTransactionDetails(transactionId: string): Promise<TransactionDetails | undefined>;
}

export function createXrpDetailsReader(rpc: RippledClient): XrpDetailsReader {
  /** A rippled call; `notFound` error tokens answer undefined, anything else that is not an answer is NodeReadError. */
  async function call(method: string, params: Record<string, unknown>, notFound: string[]): Promise<unknown> {
    try {
      return await rpc.request<Record<string, unknown>>(method, params);
    } catch (error) {
      if (notFound.some((code) => isRippledError(error, code))) return undefined;
      const what = error instanceof NodeRpcError && error.unanswered ? 'did not answer' : 'answered with an error';
      throw new NodeReadError('unavailable', `The xrp node ${what} (${method}); retry in a moment.`, { cause: error });
    }
  }

  function garbage(what: string, error: unknown): NodeReadError {
    return new NodeReadError('unavailable', `The xrp node answered a ${what} herald cannot read; retry in a moment.`, { cause: error });
  }

  async function getBlockDetails(selector: BlockSelector): Promise<BlockDetails | undefined> {
    const which = 'height' in selector ? { ledger_index: selector.height } : { ledger_hash: selector.hash.toUpperCase() };
    const answer = await call('ledger', { ...which, transactions: true, expand: true }, ['lgrNotFound', 'invalidParams', 'lgrIdxMalformed']);
    if (answer === undefined) return undefined;
    try {
      const { ledger, validated } = ledgerFromResponse(answer);
      if (validated !== true || ledger.closed === false) return undefined;
      const header = normalizeXrpLedgerHeader(ledger);
      let fees = 0n;
      for (const entry of ledger.transactions ?? []) fees += readXrpTransaction(entry as RpcLedgerTransaction).fee;
      const total = typeof ledger.total_coins === 'string' && DROPS.test(ledger.total_coins) ? BigInt(ledger.total_coins) : 0n;
      return {
        hash: header.hash,
        height: header.height,
        previousBlockHash: header.parentHash,
        timestamp: header.timestamp,
        transactionsCount: header.transactionIds.length,
        blockchainSpecific: { totalCoins: xrp(total), totalFees: xrp(fees) },
      };
    } catch (error) {
      throw garbage('ledger', error);
    }
  }

  async function getTransactionDetails(transactionId: string): Promise<TransactionDetails | undefined> {
    const id = transactionId.toUpperCase();
    const answer = (await call('tx', { transaction: id, binary: false }, ['txnNotFound', 'notImpl', 'invalidParams'])) as Record<string, unknown> | undefined;
    // Unknown, or not in a validated ledger yet.
    if (answer === undefined || answer.validated !== true) return undefined;
    try {
      const tx = readXrpTransaction(answer);
      const txJson = (answer.tx_json ?? {}) as Record<string, unknown>;
      const index = Number(answer.ledger_index ?? txJson.ledger_index ?? answer.inLedger);
      // API v1 answers carry no ledger hash: the ledger (header only) tells it, and its close time.
      const header = await call('ledger', { ledger_index: index }, ['lgrNotFound']);
      if (header === undefined) return undefined;
      const { ledger, validated } = ledgerFromResponse(header);
      if (validated !== true) return undefined;
      const f = tx.fields as Record<string, unknown>;
      const delivered = xrpDeliveredDrops(tx.fields, tx.meta);
      const value =
        delivered !== undefined ? xrp(delivered) : unitAmount((tx.meta.delivered_amount as RpcAmount | undefined) ?? tx.fields.Amount ?? tx.fields.DeliverMax);
      const sent = delivered ?? 0n;
      const destination = typeof f.Destination === 'string' ? f.Destination : undefined;
      const specific: Record<string, unknown> = {
        additionalData: '',
        offer: unitAmount(f.TakerGets as RpcAmount | undefined),
        receive: unitAmount(f.TakerPays as RpcAmount | undefined),
        sequence: typeof f.Sequence === 'number' ? f.Sequence : 0,
        status: tx.result,
        type: tx.type,
        value,
      };
      if (typeof f.DestinationTag === 'number') specific.destinationTag = f.DestinationTag;
      return {
        index: typeof tx.meta.TransactionIndex === 'number' ? tx.meta.TransactionIndex : 0,
        isConfirmed: true,
        minedInBlockHash: String(ledger.ledger_hash ?? ledger.hash ?? '').toUpperCase(),
        minedInBlockHeight: index,
        recipients: destination ? [{ address: destination, amount: value.unit === 'XRP' ? value.amount : '0' }] : [],
        senders: [{ address: tx.account, amount: formatUnits(sent + tx.fee, 6) }],
        timestamp: Number(ledger.close_time ?? 0) + RIPPLE_EPOCH_OFFSET,
        transactionHash: tx.id,
        fee: xrp(tx.fee),
        blockchainSpecific: specific,
      };
    } catch (error) {
      if (error instanceof NodeReadError) throw error;
      throw garbage('transaction', error);
    }
  }

  return { getBlockDetails, getTransactionDetails };
}

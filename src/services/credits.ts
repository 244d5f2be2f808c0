/** Charging a call: the debit either covers the cost or the call fails with 402 and takes nothing. */
import { ApiError } from '../domain/errors.ts';
import { type DebitResult, debitCredits } from '../store/customers.ts';
import type { Db, Queryable } from '../store/db.ts';

function insufficient(cost: bigint, available: bigint): ApiError {
  return new ApiError(
    'insufficient_credits',
    `This call costs ${cost} credits but the customer has ${available}. Ask the operator to add credits (herald credits add).`,
  );
}

function settle(result: DebitResult, cost: bigint): { consumed: bigint; available: bigint } {
  if (!result.ok) throw insufficient(cost, result.available);
  return { consumed: cost, available: result.available };
}

/** Charges inside the caller's transaction: a later failure in it rolls the debit back too. */
export async function chargeInTransaction(tx: Queryable, customerId: string, cost: bigint) {
  return settle(await debitCredits(tx, customerId, cost, (work) => work(tx)), cost);
}

/** Charges a read after it succeeded; the result is only returned when the debit went through. */
export async function chargeRead(db: Db, customerId: string, cost: bigint) {
  return settle(await debitCredits(db, customerId, cost, (work) => db.transaction('credits:rebalance', work)), cost);
}

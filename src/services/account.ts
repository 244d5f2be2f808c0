/** The customer's own account: balance, plan, active subscriptions, and credits spent per endpoint and day. Free calls. */

import { PAUSED_REASON } from '../domain/subscriptions.ts';
import { creditUsage, findCustomerByName } from '../store/customers.ts';
import { customerOverview } from '../store/overview.ts';
import { countActive } from '../store/subscriptions.ts';
import type { Caller, Common } from './context.ts';

export async function account(common: Common, caller: Caller) {
  const { customerId, customerName } = caller.owner;
  // The plan as stored, read now rather than from the key cache, with the balance.
  const [customer, activeSubscriptions] = await Promise.all([findCustomerByName(common.db, customerName), countActive(common.db, customerId)]);
  const charge = await common.credits.charge(customerId, 0n, caller.endpoint);
  const plan = customer ?? caller.owner;
  // Without billing (docs/operations/single-tenant.md) the plan's limits do not apply: it says so.
  const billing = common.config.billing.enabled;
  return {
    value: {
      customerName,
      billingEnabled: billing,
      credits: charge.available,
      plan: {
        mainnetAllowed: billing ? plan.mainnetAllowed : true,
        maxActiveSubscriptions: billing ? plan.maxActiveSubscriptions : null,
        requestsPerSecond: plan.requestsPerSecond,
      },
      activeSubscriptions,
    },
    ...charge,
  };
}

/** Usage of the last `days` UTC days (today included), newest day first, then by endpoint. */
export async function usage(common: Common, caller: Caller, days: number) {
  const rows = await creditUsage(common.db, caller.owner.customerId, days);
  const items = rows.map((r) => ({ day: r.day, endpoint: r.endpoint, requests: Number(r.requests), credits: Number(r.credits) }));
  return { value: items, ...(await common.credits.charge(caller.owner.customerId, 0n, caller.endpoint)) };
}

/** How far back the overview counts callbacks (docs/reference/api.md#account-overview). */
export const OVERVIEW_WINDOW_MS = 24 * 3_600_000;
/** How many failing subscriptions the overview names (all are counted). */
export const OVERVIEW_FAILING_LIMIT = 20;

/** The console's landing page: the last 24 h of callbacks, what needs attention, the first-run checklist. Free. */
export async function overview(common: Common, caller: Caller, now: Date) {
  const since = new Date(now.getTime() - OVERVIEW_WINDOW_MS);
  const value = await customerOverview(common.db, caller.owner.customerId, since, PAUSED_REASON, OVERVIEW_FAILING_LIMIT);
  return { value: { since, ...value }, ...(await common.credits.charge(caller.owner.customerId, 0n, caller.endpoint)) };
}

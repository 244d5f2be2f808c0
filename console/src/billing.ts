/**
 * Whether this installation charges credits (billing.enabled, docs/operations/single-tenant.md). When it
 * does not, the console shows no balance, price or credit form. Read once per session: GET /account for a
 * customer, GET /operator/whoami for the operator. Taken as on until known (or when the read fails): the
 * API still answers what it charges.
 */
import { api } from './api.ts';
import { type Session, session } from './session.ts';
import { observable, useValue } from './state.ts';

const billing = observable(true);
let readFor: Session | null = null;

async function read(s: Session): Promise<void> {
  try {
    const path = s.kind === 'customer' ? '/account' : '/operator/whoami';
    const answer = await api<{ item: { billingEnabled?: boolean } }>('GET', path);
    if (session.get() === s) billing.set(answer.item.billingEnabled !== false);
  } catch {
    // A key not allowed GET /account, or herald not answering: the pages say what failed on their own.
  }
}

/** true unless this installation is known to have billing off; read for the session signed in. */
export function useBillingEnabled(): boolean {
  const s = useValue(session);
  if (s && s !== readFor) {
    readFor = s;
    void read(s);
  }
  return useValue(billing);
}

/** Callback domains of a customer: registered with a token, verified by proof or by the operator. */
import { randomBytes } from 'node:crypto';
import type { Queryable } from './db.ts';

export interface CallbackDomain {
  domain: string;
  verificationToken: string;
  verifiedAt: Date | null;
  verifiedBy: string | null;
  createdAt: Date;
}

interface DomainRow {
  domain: string;
  verification_token: string;
  verified_at: Date | null;
  verified_by: string | null;
  created_at: Date;
}

const toDomain = (r: DomainRow): CallbackDomain => ({
  domain: r.domain,
  verificationToken: r.verification_token,
  verifiedAt: r.verified_at,
  verifiedBy: r.verified_by,
  createdAt: r.created_at,
});

export function newVerificationToken(): string {
  return `herald-verification=${randomBytes(16).toString('hex')}`;
}

export async function verifiedDomains(q: Queryable, customerId: string): Promise<string[]> {
  const rows = await q.query<{ domain: string }>('domains:verified', 'SELECT domain FROM callback_domains WHERE customer_id = $1 AND verified_at IS NOT NULL', [
    customerId,
  ]);
  return rows.map((r) => r.domain);
}

export async function isDomainVerified(q: Queryable, customerId: string, domain: string): Promise<boolean> {
  const rows = await q.query('domains:is-verified', 'SELECT 1 FROM callback_domains WHERE customer_id = $1 AND domain = $2 AND verified_at IS NOT NULL', [
    customerId,
    domain,
  ]);
  return rows.length > 0;
}

/** Registers a domain (keeping the token of one registered before) and optionally marks it verified. */
export async function upsertDomain(q: Queryable, customerId: string, domain: string, verifiedBy: string | null): Promise<CallbackDomain> {
  const [row] = await q.query<DomainRow>(
    'domains:upsert',
    `INSERT INTO callback_domains (customer_id, domain, verification_token, verified_at, verified_by)
     VALUES ($1, $2, $3, CASE WHEN $4::text IS NULL THEN NULL ELSE now() END, $4)
     ON CONFLICT (customer_id, domain) DO UPDATE SET
       verified_at = CASE WHEN $4::text IS NULL THEN callback_domains.verified_at ELSE coalesce(callback_domains.verified_at, now()) END,
       verified_by = coalesce(callback_domains.verified_by, $4)
     RETURNING *`,
    [customerId, domain, newVerificationToken(), verifiedBy],
  );
  return toDomain(row as DomainRow);
}

export async function getDomain(q: Queryable, customerId: string, domain: string): Promise<CallbackDomain | undefined> {
  const [row] = await q.query<DomainRow>('domains:get', 'SELECT * FROM callback_domains WHERE customer_id = $1 AND domain = $2', [customerId, domain]);
  return row ? toDomain(row) : undefined;
}

/**
 * Marks a registered domain verified by `verifiedBy` ('https-file', 'dns-txt', ...), provided it still
 * has the token that was proven (a domain removed and registered again meanwhile has a new one). One
 * verified before keeps its first time and method. Undefined when no such registration exists.
 */
export async function markVerified(
  q: Queryable,
  customerId: string,
  domain: string,
  verificationToken: string,
  verifiedBy: string,
): Promise<CallbackDomain | undefined> {
  const [row] = await q.query<DomainRow>(
    'domains:mark-verified',
    `UPDATE callback_domains SET
       verified_at = coalesce(verified_at, now()),
       verified_by = CASE WHEN verified_at IS NULL THEN $4 ELSE verified_by END
     WHERE customer_id = $1 AND domain = $2 AND verification_token = $3
     RETURNING *`,
    [customerId, domain, verificationToken, verifiedBy],
  );
  return row ? toDomain(row) : undefined;
}

export async function listDomains(
  q: Queryable,
  customerId: string,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: CallbackDomain[] }> {
  const [rows, counts] = await Promise.all([
    q.query<DomainRow>('domains:list', 'SELECT * FROM callback_domains WHERE customer_id = $1 ORDER BY created_at, domain LIMIT $2 OFFSET $3', [
      customerId,
      page.limit,
      page.offset,
    ]),
    q.query<{ n: number }>('domains:count', 'SELECT count(*)::int AS n FROM callback_domains WHERE customer_id = $1', [customerId]),
  ]);
  return { total: counts[0]?.n ?? 0, items: rows.map(toDomain) };
}

export async function deleteDomain(q: Queryable, customerId: string, domain: string): Promise<CallbackDomain | undefined> {
  const [row] = await q.query<DomainRow>('domains:delete', 'DELETE FROM callback_domains WHERE customer_id = $1 AND domain = $2 RETURNING *', [
    customerId,
    domain,
  ]);
  return row ? toDomain(row) : undefined;
}

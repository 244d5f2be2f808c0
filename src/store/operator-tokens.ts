/**
 * Operator tokens: the Bearer tokens of the /operator/* routes (the operator console). Made, listed and
 * revoked by `herald operator-tokens`; stored as API keys are, by SHA-256 hash (32 random bytes need no
 * slow hash), the token itself shown once and never kept.
 */
import { randomBytes } from 'node:crypto';
import { hashApiKey } from './customers.ts';
import type { Queryable } from './db.ts';

export interface OperatorToken {
  id: string;
  name: string;
  prefix: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** Undefined when an active token already has that name. */
export async function createOperatorToken(q: Queryable, name: string): Promise<{ id: string; token: string } | undefined> {
  const token = `hop_${randomBytes(32).toString('base64url')}`;
  const [row] = await q.query<{ id: string }>(
    'operator-tokens:insert',
    `INSERT INTO operator_tokens (name, token_hash, token_prefix) VALUES ($1, $2, $3)
     ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING id`,
    [name, hashApiKey(token), token.slice(0, 10)],
  );
  return row ? { id: row.id, token } : undefined;
}

export async function listOperatorTokens(q: Queryable): Promise<OperatorToken[]> {
  const rows = await q.query<{ id: string; name: string; token_prefix: string; created_at: Date; revoked_at: Date | null }>(
    'operator-tokens:list',
    'SELECT id, name, token_prefix, created_at, revoked_at FROM operator_tokens ORDER BY id',
  );
  return rows.map((r) => ({ id: r.id, name: r.name, prefix: r.token_prefix, createdAt: r.created_at, revokedAt: r.revoked_at }));
}

/** Revokes the active token of that name at once; false when there is none. */
export async function revokeOperatorToken(q: Queryable, name: string): Promise<boolean> {
  const rows = await q.query('operator-tokens:revoke', 'UPDATE operator_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL RETURNING id', [
    name,
  ]);
  return rows.length > 0;
}

/** The name of the active token `token`, or undefined (unknown or revoked). */
export async function operatorTokenName(q: Queryable, token: string): Promise<string | undefined> {
  const [row] = await q.query<{ name: string }>('operator-tokens:find', 'SELECT name FROM operator_tokens WHERE token_hash = $1 AND revoked_at IS NULL', [
    hashApiKey(token),
  ]);
  return row?.name;
}

/**
 * Operator tokens: the API reads them (operator-auth), the command line makes, lists and revokes them
 * (`herald operator-tokens`).
 */
import * as store from '../store/operator-tokens.ts';
import type { Common } from './context.ts';

/** The name of the active operator token `token`; undefined when it is unknown or revoked (unknown ones are remembered briefly: services/access.ts). */
export async function operatorNamed(common: Common, token: string): Promise<string | undefined> {
  return await common.access.operatorName(token);
}

/** A new token for `name`, in clear this once; undefined when the name already has an active one. */
export async function createOperatorToken(common: Pick<Common, 'db'>, name: string): Promise<{ id: string; token: string } | undefined> {
  return await store.createOperatorToken(common.db, name);
}

export async function listOperatorTokens(common: Pick<Common, 'db'>) {
  return await store.listOperatorTokens(common.db);
}

/** Revokes the active token of `name`; false when there is none. */
export async function revokeOperatorToken(common: Pick<Common, 'db'>, name: string): Promise<boolean> {
  return await store.revokeOperatorToken(common.db, name);
}

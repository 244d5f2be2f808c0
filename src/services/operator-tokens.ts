/** Operator tokens as the API reads them (the CLI makes and revokes them through the store). */
import { operatorTokenName } from '../store/operator-tokens.ts';
import type { Common } from './context.ts';

/** The name of the active operator token `token`; undefined when it is unknown or revoked. */
export async function operatorNamed(common: Common, token: string): Promise<string | undefined> {
  return await operatorTokenName(common.db, token);
}

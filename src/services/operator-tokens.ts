/** Operator tokens as the API reads them (the CLI makes and revokes them through the store). */
import type { Common } from './context.ts';

/** The name of the active operator token `token`; undefined when it is unknown or revoked (unknown ones are remembered briefly: services/access.ts). */
export async function operatorNamed(common: Common, token: string): Promise<string | undefined> {
  return await common.access.operatorName(token);
}

/**
 * Who is operating: the Authorization: Bearer header of the /operator/* routes resolved to its operator
 * token's name. A known token is read from the database on every request (operator calls are few), so a
 * revoked token stops working at once, in every process; an unknown one is remembered for a few seconds
 * (services/access.ts), so a flood of made-up tokens does not cost a database read each.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import type { Common } from '../services/context.ts';
import { operatorNamed } from '../services/operator-tokens.ts';

export async function authenticateOperator(common: Common, request: FastifyRequest): Promise<string> {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
  const token = match?.[1];
  // Tokens we issue are short; a long value cannot be one and is not worth hashing.
  const name = token && token.length <= 200 ? await operatorNamed(common, token) : undefined;
  if (!name) {
    throw new ApiError(
      'invalid_operator_token',
      token
        ? 'The operator token is unknown or has been revoked. Make a new one with: herald operator-tokens create --name NAME'
        : 'Send an operator token in the Authorization header: "Bearer <token>" (herald operator-tokens create --name NAME makes one).',
    );
  }
  return name;
}

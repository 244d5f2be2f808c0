import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { DbError } from '../store/db.ts';
import { handleError, newRequestId, utf8Of } from './envelope.ts';

/** A Fastify server with herald's error handler and one route that throws `error`. */
async function answerTo(error: unknown) {
  const app = Fastify({ genReqId: newRequestId, logger: false });
  app.setErrorHandler(handleError(1024));
  app.get('/x', async () => {
    throw error;
  });
  try {
    const res = await app.inject({ method: 'GET', url: '/x' });
    return { status: res.statusCode, headers: res.headers, body: res.json() };
  } finally {
    await app.close();
  }
}

describe('errors the store raises, as the API answers them', () => {
  it('the database unavailable for a moment (PostgreSQL restarting, the pooler logging in again): 503 service_unavailable with Retry-After', async () => {
    for (const [sqlstate, message] of [
      ['57P01', 'terminating connection due to administrator command'],
      ['08P01', 'server login has been failing, try again later (server_login_retry)'],
      [undefined, 'Connection terminated unexpectedly'],
    ] as const) {
      const res = await answerTo(new DbError('keys:owner', sqlstate, true, undefined, new Error(message)));
      expect(res.status, message).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.body.requestId).toMatch(/^[0-9a-f]{24}$/);
    }
  });

  it('any other store failure stays a 500 unexpected_server_error (a bug to report, not a moment to wait)', async () => {
    const res = await answerTo(new DbError('keys:owner', '42P01', false, undefined, new Error('relation "api_keys" does not exist')));
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('unexpected_server_error');
    expect(res.headers['retry-after']).toBeUndefined();
  });
});

describe('utf8Of: JSON pieces written into one buffer', () => {
  it('gives the bytes of the pieces joined, ASCII or not, also when the pieces outgrow the first buffer', () => {
    const cases: string[][] = [
      [],
      [''],
      ['{"items":[', '{"a":1', '}', '],"hasMore":false}'],
      // Two to four bytes a character: the first buffer (one byte a character) is outgrown.
      ['{"name":"', 'é'.repeat(5000), '","cjk":"', '漢字'.repeat(3000), '","emoji":"', '🦊'.repeat(2000), '"}'],
      ['x'.repeat(100_000), 'ü'],
      ['ü', 'x'.repeat(100_000)],
    ];
    for (const pieces of cases) {
      const joined = Buffer.from(pieces.join(''));
      expect(utf8Of(pieces).equals(joined), `${pieces.length} pieces, ${joined.length} bytes`).toBe(true);
    }
  });
});

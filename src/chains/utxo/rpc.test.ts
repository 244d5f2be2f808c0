/**
 * The Bitcoin-family JSON-RPC client against a stub speaking Core's wire format over real HTTP: request
 * shape, exact amounts, Core's error statuses, authentication (user/password, URL credentials, the cookie
 * file rewritten by a node restart), batches, timeouts and garbage.
 */

import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StubReply, startUtxoRpcStub, type UtxoRpcStub } from '../../../test/support/utxo-rpc-stub.ts';
import { parseCoinAmount } from './normalize.ts';
import { createUtxoRpcClient, quoteAmounts, type UtxoRpcClient, UtxoRpcError } from './rpc.ts';
import type { RpcBlock } from './rpc-types.ts';

const FIXTURES = path.resolve(process.cwd(), 'test/fixtures');
const fixtureText = (rel: string) => readFileSync(path.join(FIXTURES, rel), 'utf8');

let stub: UtxoRpcStub;
let dir: string;
const clients: UtxoRpcClient[] = [];

beforeAll(async () => {
  stub = await startUtxoRpcStub(() => ({ result: null }));
  dir = await mkdtemp(path.join(tmpdir(), 'utxo-rpc-'));
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await stub.close();
  await rm(dir, { recursive: true, force: true });
});

function client(options: Partial<Parameters<typeof createUtxoRpcClient>[0]> = {}): UtxoRpcClient {
  const c = createUtxoRpcClient({ url: stub.url, ...options });
  clients.push(c);
  return c;
}

function serve(handle: (method: string, params: unknown[]) => StubReply, credentials?: string): void {
  stub.calls.length = 0;
  stub.handle = handle;
  stub.credentials = credentials;
}

async function failure(promise: Promise<unknown>): Promise<UtxoRpcError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UtxoRpcError);
  return error as UtxoRpcError;
}

describe('requests and answers', () => {
  it('sends JSON-RPC 1.0 requests with positional params and returns the result', async () => {
    serve((method, params) => ({ result: { method, params } }));
    expect(await client().request('getblockhash', [50000])).toEqual({ method: 'getblockhash', params: [50000] });
    expect(stub.calls).toEqual([{ method: 'getblockhash', params: [50000], authorization: undefined, batched: false, jsonrpc: '1.0' }]);
  });

  it('a recorded block (Core 22 format) arrives with every amount as the decimal text the node printed', async () => {
    const text = fixtureText('bitcoin/mainnet/vivita/getblock_2_height766390_000000000000000000042a94.json');
    serve(() => ({ resultText: text }));
    const block = await client().request<Omit<RpcBlock, 'tx'> & { tx: { vout: { value: unknown }[]; fee?: unknown }[] }>('getblock', ['00', 2]);
    const printed = [...text.matchAll(/"value"\s*:\s*([-0-9.eE+]+)/g)].map((m) => m[1]);
    const received = block.tx.flatMap((t) => t.vout.map((o) => o.value));
    expect(received).toEqual(printed);
    expect(received.every((v) => typeof v === 'string')).toBe(true);
    expect(typeof block.tx[1]?.fee).toBe('string');
    // Other numbers stay numbers.
    expect(typeof block.height).toBe('number');
  });

  it('an amount a double cannot carry (above 2^26 coins with 8 decimals, as on dogecoin) stays exact', async () => {
    // Sanity: through a double, these digits change.
    expect(String(JSON.parse('92233720.36854776'))).toBe('92233720.36854777');
    serve(() => ({ resultText: '{"vout":[{"value":92233720.36854776,"n":0}],"amount":1e-8}' }));
    const r = await client().request<{ vout: { value: string; n: number }[]; amount: string }>('getrawtransaction', ['ab', true]);
    expect(r.vout[0]?.value).toBe('92233720.36854776');
    expect(parseCoinAmount(r.vout[0]?.value)).toBe(9223372036854776n);
    expect(r.amount).toBe('1e-8');
    expect(r.vout[0]?.n).toBe(0);
  });

  it('quoteAmounts leaves string contents alone (a quote inside a string is always escaped)', () => {
    const text = '{"asm":"\\"value\\": 5","value":5.1,"x":{"amount" : -0.5},"values":[1.5],"fee":2}';
    expect(JSON.parse(quoteAmounts(text))).toEqual({ asm: '"value": 5', value: '5.1', x: { amount: '-0.5' }, values: [1.5], fee: '2' });
  });
});

describe('errors: Core puts RPC errors in the body of HTTP 500 / 404', () => {
  it('-5 at HTTP 500 is an rpc error with the node message and code', async () => {
    serve(() => ({ error: { code: -5, message: 'No such mempool or blockchain transaction. Use gettransaction for wallet transactions.' } }));
    const e = await failure(client().request('getrawtransaction', ['00', true]));
    expect([e.kind, e.code, e.status]).toEqual(['rpc', -5, 500]);
    expect(e.message).toContain('getrawtransaction failed at');
    expect(e.nodeMessage).toMatch(/No such mempool/);
  });

  it('-32601 "Method not found" (HTTP 404) is unsupported', async () => {
    serve(() => ({ error: { code: -32601, message: 'Method not found' } }));
    const e = await failure(client().request('scantxoutset', ['start', []]));
    expect([e.kind, e.code, e.status]).toEqual(['unsupported', -32601, 404]);
  });

  it('a 503 page, a 500 without JSON and a 200 with garbage are http errors, never unsupported', async () => {
    serve(() => ({ status: 503, body: 'Work queue depth exceeded' }));
    const busy = await failure(client().request('getblockcount', []));
    expect([busy.kind, busy.status, busy.nodeMessage]).toEqual(['http', 503, 'Work queue depth exceeded']);
    serve(() => ({ status: 500, body: '<html>Internal Server Error</html>' }));
    expect((await failure(client().request('getblockcount', []))).kind).toBe('http');
    serve(() => ({ status: 200, body: 'not json' }));
    expect((await failure(client().request('getblockcount', []))).kind).toBe('http');
    serve(() => ({ status: 502, body: JSON.stringify({ result: null, error: { code: -32601, message: 'Method not found' }, id: 1 }) }));
    expect((await failure(client().request('getblockcount', []))).kind).toBe('http');
  });

  it('an answer that is not for this request is refused', async () => {
    serve(() => ({ status: 200, body: '{"result":7,"error":null,"id":999999}' }));
    expect((await failure(client().request('getblockcount', []))).nodeMessage).toMatch(/request 999999/);
    serve(() => ({ status: 200, body: '[1,2]' }));
    expect((await failure(client().request('getblockcount', []))).kind).toBe('http');
  });

  it('a node that does not answer in time is a timeout', async () => {
    serve(() => ({ hang: true }));
    const e = await failure(client({ timeoutMs: 200 }).request('getblock', ['00', 3]));
    expect(e.kind).toBe('timeout');
    // A per-call timeout overrides the client's.
    const c = client({ timeoutMs: 60_000 });
    expect((await failure(c.request('scantxoutset', ['start', []], { timeoutMs: 200 }))).kind).toBe('timeout');
  });

  it('a dropped connection is retried once; a node that keeps dropping is a network error', async () => {
    let n = 0;
    serve(() => (n++ === 0 ? { drop: true } : { result: 7 }));
    expect(await client().request('getblockcount', [])).toBe(7);
    expect(stub.count('getblockcount')).toBe(2);
    serve(() => ({ drop: true }));
    expect((await failure(client().request('getblockcount', []))).kind).toBe('network');
    expect(stub.count('getblockcount')).toBe(2);
  });

  it('a closed port is a network error naming the redacted URL', async () => {
    const closed = await startUtxoRpcStub(() => ({ result: 1 }));
    const url = closed.url.replace('http://', 'http://alice:secret@');
    await closed.close();
    const c = createUtxoRpcClient({ url });
    clients.push(c);
    const e = await failure(c.request('getblockcount', []));
    expect(e.kind).toBe('network');
    expect(e.message).not.toContain('secret');
    expect(c.url).toBe(closed.url);
  });
});

describe('authentication', () => {
  it('user and password go as Basic authentication', async () => {
    serve(() => ({ result: 1 }), 'alice:s3cret');
    expect(await client({ auth: { user: 'alice', password: 's3cret' } }).request('getblockcount', [])).toBe(1);
    expect(stub.calls[0]?.authorization).toBe(`Basic ${Buffer.from('alice:s3cret').toString('base64')}`);
  });

  it('credentials in the URL are stripped from it and sent as Basic authentication (percent-decoded)', async () => {
    serve(() => ({ result: 2 }), 'bob:p@ss:word');
    const c = client({ url: stub.url.replace('http://', 'http://bob:p%40ss%3Aword@') });
    expect(c.url).toBe(stub.url);
    expect(await c.request('getblockcount', [])).toBe(2);
  });

  it('refused credentials (401, 403) name the settings to check', async () => {
    serve(() => ({ result: 1 }), 'alice:right');
    const e = await failure(client({ auth: { user: 'alice', password: 'wrong' } }).request('getblockcount', []));
    expect([e.kind, e.status]).toEqual(['auth', 401]);
    expect(e.message).toMatch(/refused the credentials.*rpcUser\/rpcPassword or rpcCookieFile/);
    serve(() => ({ status: 403, body: '' }));
    const forbidden = await failure(client().request('getblockcount', []));
    expect([forbidden.kind, forbidden.status]).toEqual(['auth', 403]);
    expect(forbidden.message).toMatch(/rpcallowip/);
  });

  it('the cookie file is read on first use and read again once when the node (restarted) refuses it', async () => {
    const file = path.join(dir, '.cookie');
    await writeFile(file, '__cookie__:aaaa\n');
    serve(() => ({ result: 3 }), '__cookie__:aaaa');
    const c = client({ auth: { cookieFile: file } });
    expect(await c.request('getblockcount', [])).toBe(3);
    expect(await c.request('getblockcount', [])).toBe(3);
    // The node restarts and writes a new cookie.
    await writeFile(file, '__cookie__:bbbb\n');
    stub.credentials = '__cookie__:bbbb';
    stub.calls.length = 0;
    expect(await c.request('getblockcount', [])).toBe(3);
    expect(stub.calls.map((s) => s.authorization)).toEqual([
      `Basic ${Buffer.from('__cookie__:aaaa').toString('base64')}`,
      `Basic ${Buffer.from('__cookie__:bbbb').toString('base64')}`,
    ]);
    // A cookie the node still refuses after the re-read: an auth error after exactly one more try.
    stub.credentials = '__cookie__:cccc';
    stub.calls.length = 0;
    const e = await failure(c.request('getblockcount', []));
    expect(e.kind).toBe('auth');
    expect(stub.calls).toHaveLength(2);
  });

  it('a missing cookie file is an auth error naming it; it is tried again on the next request', async () => {
    const file = path.join(dir, 'missing.cookie');
    serve(() => ({ result: 4 }), '__cookie__:dddd');
    const c = client({ auth: { cookieFile: file } });
    const e = await failure(c.request('getblockcount', []));
    expect(e.kind).toBe('auth');
    expect(e.message).toContain(file);
    expect(stub.calls).toHaveLength(0);
    await writeFile(file, '__cookie__:dddd');
    expect(await c.request('getblockcount', [])).toBe(4);
  });
});

describe('batches', () => {
  it('one HTTP request, answers in call order, per-call errors returned', async () => {
    serve((method, params) =>
      params[0] === 'bad' ? { error: { code: -5, message: 'No such transaction found in the provided block.' } } : { result: `${method}:${String(params[0])}` },
    );
    const answers = await client().batch([
      { method: 'getrawtransaction', params: ['a', true, 'h'] },
      { method: 'getrawtransaction', params: ['bad', true, 'h'] },
      { method: 'omni_gettransaction', params: ['c'] },
    ]);
    expect(stub.calls.every((c) => c.batched)).toBe(true);
    expect(answers[0]).toEqual({ ok: true, result: 'getrawtransaction:a' });
    expect(answers[1]?.ok).toBe(false);
    const error = (answers[1] as { error: UtxoRpcError }).error;
    expect([error.kind, error.code, error.method]).toEqual(['rpc', -5, 'getrawtransaction']);
    expect(answers[2]).toEqual({ ok: true, result: 'omni_gettransaction:c' });
    expect(await client().batch([])).toEqual([]);
  });

  it('a batch whose HTTP request fails (timeout, garbage, auth) throws', async () => {
    serve(() => ({ status: 500, body: 'oops' }));
    expect((await failure(client().batch([{ method: 'getblockcount', params: [] }]))).kind).toBe('http');
    serve(() => ({ hang: true }));
    expect((await failure(client({ timeoutMs: 200 }).batch([{ method: 'getblockcount', params: [] }]))).kind).toBe('timeout');
    serve(() => ({ result: 1 }), 'x:y');
    expect((await failure(client().batch([{ method: 'getblockcount', params: [] }]))).kind).toBe('auth');
  });
});

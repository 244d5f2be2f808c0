/** The java-tron HTTP client against a scripted node over real HTTP: paths, answers, error kinds, timeout, retry, big integers. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedPort, rejection, type ScriptedAnswer, type ScriptedServer, startScriptedServer } from '../../../test/support/scripted-http.ts';
import { createTronRpcClient, parseJsonLossless, TronRpcError } from './rpc.ts';

interface Seen {
  url: string;
  body: unknown;
  authorization?: string;
  contentType?: string;
}

let server: ScriptedServer;
let base: string;
const seen: Seen[] = [];
let answer: (path: string, attempt: number) => ScriptedAnswer = () => [200, {}];

beforeAll(async () => {
  server = await startScriptedServer((req, text) => {
    seen.push({ url: req.url ?? '', body: JSON.parse(text), authorization: req.headers.authorization, contentType: req.headers['content-type'] });
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    return answer(path, seen.filter((s) => s.url === req.url).length);
  }, 'text/html');
  base = server.base;
});

afterAll(() => server.close());

function respond(fn: typeof answer): void {
  seen.length = 0;
  answer = fn;
}

const failure = (promise: Promise<unknown>) => rejection(promise, TronRpcError);

describe('createTronRpcClient', () => {
  it('POSTs JSON to {base}/{path}; keeps a gateway path and query; credentials go as Basic authentication, never shown', async () => {
    respond((path) => [200, path === '/gw/wallet/getnowblock' ? { blockID: 'ab' } : []]);
    const rpc = createTronRpcClient({ url: `${base.replace('http://', 'http://alice:s3cret@')}/gw/?apikey=k123#frag` });
    expect(rpc.url).toBe(`${base}/gw/`);
    expect(await rpc.post('wallet/getnowblock')).toEqual({ blockID: 'ab' });
    expect(await rpc.post('wallet/gettransactioninfobyblocknum', { num: 7 })).toEqual([]);
    expect(seen.map((s) => [s.url, s.body])).toEqual([
      ['/gw/wallet/getnowblock?apikey=k123', {}],
      ['/gw/wallet/gettransactioninfobyblocknum?apikey=k123', { num: 7 }],
    ]);
    expect(seen[0]?.authorization).toBe(`Basic ${Buffer.from('alice:s3cret').toString('base64')}`);
    expect(seen[0]?.contentType).toBe('application/json');
    await rpc.close();
  });

  it('{"Error": ...} (HTTP 200, as java-tron answers a failure inside a servlet) is kind node, with the message', async () => {
    const rpc = createTronRpcClient({ url: base });
    const error = 'class org.tron.core.exception.ItemNotFoundException : This block does not exist';
    respond(() => [200, { Error: error }]);
    const e = await failure(rpc.post('wallet/getblockbalance', { hash: '00', number: 1 }));
    expect(e).toMatchObject({ kind: 'node', method: 'wallet/getblockbalance', nodeMessage: error });
    expect(e.message).toBe(`wallet/getblockbalance failed at ${base}/: node: ${error}`);
  });

  it("a path the node does not serve (Jetty's 404, 405, 501) is kind unsupported; other statuses are http; never retried", async () => {
    const rpc = createTronRpcClient({ url: base });
    respond(() => [404, '<html><body><h2>HTTP ERROR 404 Not Found</h2></body></html>']);
    expect(await failure(rpc.post('wallet/getblockbalance'))).toMatchObject({ kind: 'unsupported', status: 404 });
    respond(() => [405, 'HTTP method GET is not supported by this URL']);
    expect(await failure(rpc.post('wallet/getblockbalance'))).toMatchObject({ kind: 'unsupported', status: 405 });
    respond(() => [503, '<html>Service Unavailable</html>']);
    const e = await failure(rpc.post('wallet/getblockbynum', { num: 1 }));
    expect(e).toMatchObject({ kind: 'http', status: 503 });
    expect(e.message).toContain('Service Unavailable');
    respond(() => [429, { Error: 'rate limited' }]);
    expect(await failure(rpc.post('wallet/getblockbynum', { num: 1 }))).toMatchObject({ kind: 'http', status: 429 });
    expect(seen).toHaveLength(1);
  });

  it('a body that is not JSON is kind http', async () => {
    const rpc = createTronRpcClient({ url: base });
    respond(() => [200, 'this is not json']);
    expect(await failure(rpc.post('wallet/getnowblock'))).toMatchObject({ kind: 'http', nodeMessage: expect.stringContaining('invalid JSON') });
  });

  it('a request without an answer is kind timeout after timeoutMs, not retried', async () => {
    const rpc = createTronRpcClient({ url: base, timeoutMs: 150 });
    respond(() => 'hang');
    const e = await failure(rpc.post('wallet/getnowblock'));
    expect(e).toMatchObject({ kind: 'timeout', nodeMessage: 'no answer within 150 ms' });
    expect(seen).toHaveLength(1);
  });

  it('a dropped connection is retried once; twice is kind network; a refused one names the node without credentials', async () => {
    const rpc = createTronRpcClient({ url: base });
    respond((_p, attempt) => (attempt === 1 ? 'drop' : [200, { blockID: 'cd' }]));
    expect(await rpc.post('wallet/getnowblock')).toEqual({ blockID: 'cd' });
    expect(seen).toHaveLength(2);
    respond(() => 'drop');
    expect(await failure(rpc.post('wallet/getnowblock'))).toMatchObject({ kind: 'network' });
    expect(seen).toHaveLength(2);

    const port = await refusedPort();
    const refused = createTronRpcClient({ url: `http://bob:hunter2@127.0.0.1:${port}/` });
    const e = await failure(refused.post('wallet/getnowblock'));
    expect(e.kind).toBe('network');
    expect(e.message).toContain(`http://127.0.0.1:${port}/`);
    expect(e.message).not.toContain('hunter2');
  });

  it('int64 values beyond Number.MAX_SAFE_INTEGER arrive exact (as decimal strings)', async () => {
    const rpc = createTronRpcClient({ url: base });
    respond(() => [200, '{"balance":50000000000000000123,"block_identifier":{"hash":"00","number":12}}']);
    expect(await rpc.post('wallet/getaccountbalance')).toEqual({ balance: '50000000000000000123', block_identifier: { hash: '00', number: 12 } });
  });
});

describe('parseJsonLossless', () => {
  it('quotes integer literals of 16+ digits in value positions only; strings, small numbers and fractions stay', () => {
    const text =
      '{"a":9007199254740993,"b":[1234567890123456789, -98765432109876543210],"c":"x:1234567890123456789,","d":12,"e":0.12345678901234567890,"f":{"g":12345678901234567}}';
    expect(parseJsonLossless(text)).toEqual({
      a: '9007199254740993',
      b: ['1234567890123456789', '-98765432109876543210'],
      c: 'x:1234567890123456789,',
      d: 12,
      e: 0.12345678901234568,
      f: { g: '12345678901234567' },
    });
    // Hex strings full of digits are left alone, escaped quotes included.
    expect(parseJsonLossless('{"topics":["0000000000000000000000001234567890123456","a\\"1234567890123456789"]}')).toEqual({
      topics: ['0000000000000000000000001234567890123456', 'a"1234567890123456789'],
    });
    expect(() => parseJsonLossless('{"a":')).toThrow();
  });
});

/** The shared node transport against a real local HTTP server: credentials, the timeout, the size bound, failures below HTTP, the retry. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedPort, type ScriptedServer, startScriptedServer } from '../../test/support/scripted-http.ts';
import { createNodeHttp, type NodeHttp, NodeTransportError, nodeEndpoint } from './node-http.ts';

interface Seen {
  url: string;
  body: string;
  authorization?: string;
  contentType?: string;
}

/** [HTTP status, body text], 'drop' (destroy the socket) or 'hang'. */
type Answer = [number, string] | 'drop' | 'hang';

let server: ScriptedServer;
let base: string;
const seen: Seen[] = [];
let answer: (attempt: number) => Answer = () => [200, '{}'];
const clients: NodeHttp[] = [];

beforeAll(async () => {
  server = await startScriptedServer((req, body) => {
    seen.push({ url: req.url ?? '', body, authorization: req.headers.authorization, contentType: req.headers['content-type'] });
    return answer(seen.length);
  }, 'application/json');
  base = server.base;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server.close();
});

function respond(fn: typeof answer): void {
  seen.length = 0;
  answer = fn;
}

function http(maxResponseBytes = 1024): NodeHttp {
  const c = createNodeHttp({ maxResponseBytes });
  clients.push(c);
  return c;
}

describe('nodeEndpoint', () => {
  it('strips credentials from the URL (percent-decoded into Basic authorization); the redacted URL hides them and the query', () => {
    const node = nodeEndpoint('https://bob:p%40ss%3Aword@node.example:8545/rpc?key=abc');
    expect(node).toEqual({
      endpoint: 'https://node.example:8545/rpc?key=abc',
      redactedUrl: 'https://node.example:8545/rpc',
      credentials: 'bob:p@ss:word',
      authorization: `Basic ${Buffer.from('bob:p@ss:word').toString('base64')}`,
    });
    expect(nodeEndpoint('http://127.0.0.1:8332/')).toEqual({ endpoint: 'http://127.0.0.1:8332/', redactedUrl: 'http://127.0.0.1:8332/' });
  });
});

describe('createNodeHttp', () => {
  it('POSTs the JSON body to the endpoint with the Basic authorization; any status is an answer', async () => {
    const node = nodeEndpoint(`${base.replace('http://', 'http://alice:s3cret@')}/gw?k=1`);
    respond(() => [500, '{"error":"boom"}']);
    expect(await http().post(node.endpoint, '{"method":"x"}', { timeoutMs: 5_000, authorization: node.authorization })).toEqual({
      status: 500,
      text: '{"error":"boom"}',
    });
    expect(seen).toEqual([
      { url: '/gw?k=1', body: '{"method":"x"}', authorization: `Basic ${Buffer.from('alice:s3cret').toString('base64')}`, contentType: 'application/json' },
    ]);
  });

  it('a request without an answer is kind timeout, not retried', async () => {
    respond(() => 'hang');
    const failed = http().post(base, '{}', { timeoutMs: 150, retryDroppedConnection: true });
    await expect(failed).rejects.toBeInstanceOf(NodeTransportError);
    await expect(failed).rejects.toMatchObject({ kind: 'timeout', message: 'no answer within 150 ms' });
    expect(seen).toHaveLength(1);
  });

  it('a body over the bound is kind too-large; one at the bound is read', async () => {
    respond(() => [200, 'x'.repeat(1024)]);
    expect((await http(1024).post(base, '{}', { timeoutMs: 5_000 })).text).toHaveLength(1024);
    respond(() => [200, 'x'.repeat(5000)]);
    await expect(http(1024).post(base, '{}', { timeoutMs: 5_000 })).rejects.toMatchObject({ kind: 'too-large', message: 'response larger than 1024 bytes' });
  });

  it('a refused connection is kind network, naming the cause', async () => {
    const port = await refusedPort();
    await expect(http().post(`http://127.0.0.1:${port}/`, '{}', { timeoutMs: 5_000 })).rejects.toMatchObject({
      kind: 'network',
      message: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it('a dropped connection is tried once more only when asked; dropped twice is kind network', async () => {
    respond((attempt) => (attempt === 1 ? 'drop' : [200, '{"ok":1}']));
    expect(await http().post(base, '{}', { timeoutMs: 5_000, retryDroppedConnection: true })).toEqual({ status: 200, text: '{"ok":1}' });
    expect(seen).toHaveLength(2);

    respond((attempt) => (attempt === 1 ? 'drop' : [200, '{"ok":1}']));
    await expect(http().post(base, '{}', { timeoutMs: 5_000 })).rejects.toMatchObject({ kind: 'network' });
    expect(seen).toHaveLength(1);

    respond(() => 'drop');
    await expect(http().post(base, '{}', { timeoutMs: 5_000, retryDroppedConnection: true })).rejects.toMatchObject({ kind: 'network' });
    expect(seen).toHaveLength(2);
  });
});

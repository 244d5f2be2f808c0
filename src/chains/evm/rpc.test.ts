/** The EVM JSON-RPC client against a fake node over real HTTP: answers, error classification, timeout, retry. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection, type ScriptedAnswer, type ScriptedServer, startScriptedServer } from '../../../test/support/scripted-http.ts';
import { redactUrl } from '../../domain/node-urls.ts';
import { createEvmRpcClient, EvmRpcError } from './rpc.ts';

interface Seen {
  method: string;
  params: unknown[];
  authorization?: string;
}

let server: ScriptedServer;
let url: string;
const seen: Seen[] = [];
/** The fake's answer to one request; an object body is the JSON-RPC envelope's members (result or error). */
let answer: (method: string, params: unknown[], attempt: number) => ScriptedAnswer = () => [200, {}];

beforeAll(async () => {
  server = await startScriptedServer((req, body) => {
    const { id, method, params } = JSON.parse(body) as { id: number; method: string; params: unknown[] };
    seen.push({ method, params, authorization: req.headers.authorization });
    const a = answer(method, params, seen.filter((s) => s.method === method).length);
    return Array.isArray(a) && typeof a[1] !== 'string' ? [a[0], { jsonrpc: '2.0', id, ...(a[1] as object) }] : a;
  }, 'text/html');
  url = `${server.base}/`;
});

afterAll(() => server.close());

function respond(fn: typeof answer): void {
  seen.length = 0;
  answer = fn;
}

const failure = (promise: Promise<unknown>) => rejection(promise, EvmRpcError);

describe('redactUrl', () => {
  it('drops credentials, query and fragment; masks key-like path segments', () => {
    expect(redactUrl('https://user:pw@node.example:8545/rpc?key=abc#x')).toBe('https://node.example:8545/rpc');
    expect(redactUrl('https://mainnet.infura.io/v3/0123456789abcdef0123456789abcdef')).toBe('https://mainnet.infura.io/v3/***');
    expect(redactUrl('not a url')).toBe('<invalid node URL>');
  });
});

describe('createEvmRpcClient', () => {
  it('raw requests, typed actions, and basic auth from the URL sent as a header but never shown', async () => {
    respond((method) => {
      if (method === 'eth_blockNumber') return [200, { result: '0x10' }];
      if (method === 'eth_getBalance') return [200, { result: '0x2a' }];
      if (method === 'eth_call') return [200, { result: '0x' }];
      return [200, { result: { number: '0x1' } }];
    });
    const rpc = createEvmRpcClient({ url: url.replace('http://', 'http://alice:s3cret@') });
    expect(rpc.url).toBe(url);
    expect(await rpc.request('eth_getBlockByNumber', ['0x1', true])).toEqual({ number: '0x1' });
    expect(await rpc.blockNumber()).toBe(16);
    expect(await rpc.balance(`0x${'ab'.repeat(20)}`, 255)).toBe(42n);
    expect(await rpc.call({ to: `0x${'cd'.repeat(20)}`, data: '0x06fdde03', height: 7, gas: 100_000n })).toBe('0x');
    expect(seen.map((s) => [s.method, s.params])).toEqual([
      ['eth_getBlockByNumber', ['0x1', true]],
      ['eth_blockNumber', undefined],
      ['eth_getBalance', [`0x${'ab'.repeat(20)}`, '0xff']],
      ['eth_call', [{ to: `0x${'cd'.repeat(20)}`, data: '0x06fdde03', gas: '0x186a0' }, '0x7']],
    ]);
    expect(seen[0]?.authorization).toBe(`Basic ${Buffer.from('alice:s3cret').toString('base64')}`);
  });

  it('"method not found" answers are kind unsupported; the message names method, node and answer', async () => {
    const rpc = createEvmRpcClient({ url });
    for (const error of [
      { code: -32601, message: 'the method eth_getBlockReceipts does not exist/is not available' },
      { code: -32004, message: 'Method not supported' },
      { code: -32000, message: 'Method eth_getBlockReceipts is not supported' },
      { code: -32603, message: 'unsupported method: eth_getBlockReceipts' },
    ]) {
      respond(() => [200, { error }]);
      const e = await failure(rpc.request('eth_getBlockReceipts', ['0x1']));
      expect(e.kind).toBe('unsupported');
      expect(e.message).toBe(`eth_getBlockReceipts failed at ${url}: unsupported ${error.code}: ${error.message}`);
    }
  });

  it('other node answers are kind rpc, even when they say "not available" about state', async () => {
    const rpc = createEvmRpcClient({ url });
    respond(() => [200, { error: { code: -32000, message: 'historical state 0x1234 is not available' } }]);
    expect(await failure(rpc.request('debug_traceBlockByNumber', ['0x1', {}]))).toMatchObject({ kind: 'rpc', code: -32000 });
    respond(() => [200, { error: { code: -32005, message: 'rate limited' } }]);
    expect(await failure(rpc.request('eth_getBlockReceipts', ['0x1']))).toMatchObject({ kind: 'rpc', code: -32005 });
    expect(seen).toHaveLength(1);
  });

  it('eth_call reverts are kind reverted; other eth_call errors are not', async () => {
    const rpc = createEvmRpcClient({ url });
    const to = `0x${'cd'.repeat(20)}`;
    for (const error of [
      { code: 3, message: 'execution reverted: nope', data: '0x08c379a0' },
      { code: -32000, message: 'execution reverted' },
      { code: -32000, message: 'invalid opcode: INVALID' },
      { code: -32015, message: 'VM Exception while processing transaction: revert' },
      // The revert reason is the contract's text: it cannot make the call look unsupported.
      { code: -32000, message: 'execution reverted: method not found' },
      { code: -32000, message: 'execution aborted (timeout = 5s)' },
    ]) {
      respond(() => [200, { error }]);
      expect(await failure(rpc.call({ to, data: '0x313ce567' }))).toMatchObject({ method: 'eth_call', kind: 'reverted' });
    }
    respond(() => [200, { error: { code: -32000, message: 'header not found' } }]);
    expect(await failure(rpc.call({ to, data: '0x313ce567', height: 5 }))).toMatchObject({ kind: 'rpc' });
  });

  it('HTTP errors are kind http with the status; a 5xx is never unsupported', async () => {
    const rpc = createEvmRpcClient({ url });
    respond(() => [503, '<html>Service Unavailable</html>']);
    const e = await failure(rpc.request('eth_getBlockReceipts', ['0x1']));
    expect(e).toMatchObject({ kind: 'http', status: 503 });
    expect(e.message).toContain('Service Unavailable');
    respond(() => [500, { error: { code: -32601, message: 'method not found' } }]);
    expect(await failure(rpc.request('eth_getBlockReceipts', ['0x1']))).toMatchObject({ kind: 'rpc', code: -32601, status: 500 });
    // A 4xx with a JSON-RPC body is the node's answer (some gateways say "not found" that way).
    respond(() => [400, { error: { code: -32601, message: 'method not found' } }]);
    expect(await failure(rpc.request('eth_getBlockReceipts', ['0x1']))).toMatchObject({ kind: 'unsupported', status: 400 });
    // Not retried: the caller backs off.
    expect(seen).toHaveLength(1);
  });

  it('a request without an answer is kind timeout after timeoutMs, not retried', async () => {
    const rpc = createEvmRpcClient({ url, timeoutMs: 150 });
    respond(() => 'hang');
    const started = Date.now();
    const e = await failure(rpc.request('debug_traceBlockByNumber', ['0x1', {}]));
    expect(e).toMatchObject({ kind: 'timeout', nodeMessage: 'no answer within 150 ms' });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(seen).toHaveLength(1);
  });

  it('a dropped connection is retried once; twice is kind network', async () => {
    const rpc = createEvmRpcClient({ url });
    respond((_m, _p, attempt) => (attempt === 1 ? 'drop' : [200, { result: '0x5' }]));
    expect(await rpc.blockNumber()).toBe(5);
    expect(seen).toHaveLength(2);
    respond(() => 'drop');
    expect(await failure(rpc.request('eth_getBlockByNumber', ['0x1', true]))).toMatchObject({ kind: 'network' });
    expect(seen).toHaveLength(2);
  });

  it('a body that is not JSON is kind http', async () => {
    const rpc = createEvmRpcClient({ url });
    respond(() => [200, 'this is not json']);
    expect(await failure(rpc.request('eth_getBlockByNumber', ['0x1', true]))).toMatchObject({ kind: 'http' });
  });
});

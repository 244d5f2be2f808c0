/**
 * The rippled JSON-RPC client against a scripted server over real HTTP: the request rippled expects, its
 * answers and error answers (recorded ones re-wrapped the HTTP way), plain-text faults, timeout, retry.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedPort, rejection, type ScriptedAnswer, type ScriptedServer, startScriptedServer } from '../../../test/support/scripted-http.ts';
import { createRippledClient, isRippledError, XrpRpcError } from './rpc.ts';

type Json = Record<string, unknown>;

/** A recorded file (WebSocket envelope) as rippled's HTTP JSON-RPC sends it: `{result: {..., status}}`. */
function recordedOverHttp(rel: string): Json {
  const ws = JSON.parse(readFileSync(resolve(process.cwd(), 'test/fixtures/xrp', rel), 'utf8')) as Json;
  if (ws.status === 'error') {
    const { id: _id, type: _type, ...rest } = ws;
    return { result: rest };
  }
  return { result: { ...(ws.result as Json), status: 'success' } };
}

interface Seen {
  body: Json;
  authorization?: string;
}

let server: ScriptedServer;
let url: string;
const seen: Seen[] = [];
let answer: (body: Json, attempt: number) => ScriptedAnswer = () => [200, { result: { status: 'success' } }];

beforeAll(async () => {
  server = await startScriptedServer((req, body) => {
    const parsed = JSON.parse(body) as Json;
    seen.push({ body: parsed, authorization: req.headers.authorization });
    return answer(parsed, seen.length);
  });
  url = `${server.base}/`;
});

afterAll(() => server.close());

function respond(fn: typeof answer): void {
  seen.length = 0;
  answer = fn;
}

const failure = (promise: Promise<unknown>) => rejection(promise, XrpRpcError);

describe('createRippledClient', () => {
  it('sends {method, params: [object]} and returns the result; credentials in the URL go as Basic auth and are never shown', async () => {
    const recorded = recordedOverHttp('xrpl.js/serverInfo.json');
    respond(() => [200, recorded]);
    const rpc = createRippledClient({ url: url.replace('http://', 'http://alice:s3cret@') });
    expect(rpc.url).toBe(url);
    const result = await rpc.request<{ info: { validated_ledger: { seq: number } } }>('server_info');
    expect(result.info.validated_ledger.seq).toBe(6595042);
    await rpc.request('ledger', { ledger_index: 'validated' });
    expect(seen.map((s) => [s.body.method, s.body.params])).toEqual([
      ['server_info', [{}]],
      ['ledger', [{ ledger_index: 'validated' }]],
    ]);
    expect(seen[0]?.authorization).toBe(`Basic ${Buffer.from('alice:s3cret').toString('base64')}`);
    await rpc.close();
  });

  it("rippled's error answers (HTTP 200, status error) are kind rippled with the token, the message and the answer", async () => {
    const rpc = createRippledClient({ url });
    respond(() => [200, recordedOverHttp('xrpl.js-historical/ledgerNotFound.json')]);
    const e = await failure(rpc.request('ledger', { ledger_index: 34 }));
    expect(e).toMatchObject({ kind: 'rippled', code: 'lgrNotFound', method: 'ledger', url });
    expect(e.message).toBe(`ledger failed at ${url}: rippled lgrNotFound: rippled error lgrNotFound (20): ledgerNotFound`);
    expect(isRippledError(e, 'lgrNotFound')).toBe(true);
    expect(isRippledError(e, 'txnNotFound')).toBe(false);

    respond(() => [200, recordedOverHttp('xrpl.js-historical/tx_notFound.json')]);
    expect(await failure(rpc.request('tx', { transaction: 'E0'.repeat(32) }))).toMatchObject({ kind: 'rippled', code: 'txnNotFound' });

    // actNotFound as rippled sends it: the answer says which ledger and whether it is validated.
    const actNotFound = {
      result: {
        account: 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh',
        error: 'actNotFound',
        error_code: 19,
        error_message: 'Account not found.',
        ledger_hash: 'AB'.repeat(32),
        ledger_index: 7,
        request: { account: 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh', command: 'account_info', ledger_index: 7 },
        status: 'error',
        validated: true,
      },
    };
    respond(() => [200, actNotFound]);
    const act = await failure(rpc.request('account_info', { account: 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh', ledger_index: 7 }));
    expect(act).toMatchObject({ kind: 'rippled', code: 'actNotFound' });
    expect(act.answer).toMatchObject({ validated: true, ledger_index: 7 });
  });

  it("rippled's plain-text faults (503 overloaded, 403, 400) are kind http with the status and the text", async () => {
    const rpc = createRippledClient({ url });
    for (const [status, text] of [
      [503, 'Server is overloaded'],
      [403, 'Forbidden'],
      [400, 'Unable to parse request: '],
      [500, '<html>Internal Server Error</html>'],
    ] as const) {
      respond(() => [status, text]);
      const e = await failure(rpc.request('ledger', { ledger_index: 'validated' }));
      expect(e).toMatchObject({ kind: 'http', status });
      expect(e.nodeMessage).toBe(text.trim());
    }
    // A 5xx with a rippled error body is the node's answer, with the status.
    respond(() => [502, { result: { error: 'tooBusy', error_code: 9, error_message: 'The server is too busy to help you now.', status: 'error' } }]);
    expect(await failure(rpc.request('ledger', { ledger_index: 5 }))).toMatchObject({ kind: 'rippled', code: 'tooBusy', status: 502 });
    // A success body with an error status is still a fault.
    respond(() => [500, { result: { status: 'success' } }]);
    expect(await failure(rpc.request('ledger', { ledger_index: 5 }))).toMatchObject({ kind: 'http', status: 500 });
    expect(seen).toHaveLength(1);
  });

  it('bodies that are not rippled answers are kind http: not JSON, no result, a result that is not an object', async () => {
    const rpc = createRippledClient({ url });
    for (const body of ['{"result": {"ledger": [tru', { hello: 'world' }, { result: 'nope' }, [1, 2]]) {
      respond(() => [200, body]);
      expect(await failure(rpc.request('ledger', { ledger_index: 5 }))).toMatchObject({ kind: 'http' });
    }
  });

  it('a request without an answer is kind timeout after timeoutMs, not retried', async () => {
    const rpc = createRippledClient({ url, timeoutMs: 150 });
    respond(() => 'hang');
    const e = await failure(rpc.request('ledger', { ledger_index: 5, transactions: true, expand: true }));
    expect(e).toMatchObject({ kind: 'timeout', nodeMessage: 'no answer within 150 ms' });
    expect(seen).toHaveLength(1);
  });

  it('a dropped connection is retried once; twice is kind network; a refused one too', async () => {
    const rpc = createRippledClient({ url });
    respond((_body, attempt) => (attempt === 1 ? 'drop' : [200, { result: { ledger_current_index: 9, status: 'success' } }]));
    expect(await rpc.request('ledger_current')).toEqual({ ledger_current_index: 9, status: 'success' });
    expect(seen).toHaveLength(2);
    respond(() => 'drop');
    expect(await failure(rpc.request('ledger_current'))).toMatchObject({ kind: 'network' });
    expect(seen).toHaveLength(2);

    const port = await refusedPort();
    const refused = await failure(createRippledClient({ url: `http://127.0.0.1:${port}/` }).request('ledger_current'));
    expect(refused).toMatchObject({ kind: 'network' });
    expect(refused.nodeMessage).toContain('ECONNREFUSED');
  });
});

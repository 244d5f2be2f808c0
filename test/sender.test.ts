/**
 * The guarded sender's request itself (src/delivery/sender.ts, on undici's dispatcher API): what an answer
 * is made of, the response body bound, and the deadline over the answer's body, against a real HTTPS
 * receiver on loopback.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CallbackSender } from '../src/delivery/sender.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';

let receiver: Receiver;
let sender: CallbackSender;
const LIMIT = 64;

beforeAll(async () => {
  receiver = await startReceiver();
  sender = new CallbackSender({
    timeoutMs: 600,
    perDestination: 2,
    allowNetworks: ['127.0.0.0/8', '::1/128'],
    ca: [receiver.caPem],
    responseBodyLimit: LIMIT,
    userAgent: 'herald-test',
  });
});
afterAll(async () => {
  await sender?.close();
  await receiver?.close();
});

const post = (path: string, body = '{"a":1}') =>
  sender.send('POST', `${receiver.url}${path}?q=1`, receiver.url, Buffer.from(body), { 'content-type': 'application/json', 'x-extra': 'yes' });

it('sends the method, path with its query, headers and exact body; the answer brings its status, headers and body', async () => {
  receiver.byPath('/plain', { kind: 'status', status: 429, headers: { 'retry-after': '120', 'content-type': 'text/plain' }, body: 'slow down' });
  const result = await post('/plain', '{"exact":"bytes é"}');
  expect(result).toMatchObject({ httpStatus: 429, errorClass: 'bad_status', errorMessage: 'the receiver answered 429', responseBody: 'slow down' });
  expect(result.headers['retry-after']).toBe('120');
  const got = receiver.received.at(-1);
  expect(got?.method).toBe('POST');
  expect(got?.path).toBe('/plain?q=1');
  expect(got?.headers['user-agent']).toBe('herald-test');
  expect(got?.headers['x-extra']).toBe('yes');
  expect(got?.rawBody.toString('utf8')).toBe('{"exact":"bytes é"}');
});

it('keeps only the first responseBodyLimit bytes of a large answer, and the next request goes through', async () => {
  receiver.byPath('/large', { kind: 'status', status: 200, body: 'x'.repeat(200_000) });
  const result = await post('/large');
  expect(result).toMatchObject({ httpStatus: 200, errorClass: null, errorMessage: null });
  expect(result.responseBody).toBe('x'.repeat(LIMIT));
  receiver.byPath('/after', { kind: 'status', status: 204 });
  expect(await post('/after')).toMatchObject({ httpStatus: 204, errorClass: null });
});

it('the deadline covers the body: headers at once and a body dribbled past it is a timeout', async () => {
  receiver.byPath('/dribble', { kind: 'slow-body', status: 200, chunkDelayMs: 200, chunks: 10 });
  const result = await post('/dribble');
  expect(result).toMatchObject({ httpStatus: null, errorClass: 'timeout', errorMessage: 'no complete answer within 600 ms' });
  expect(result.durationMs).toBeGreaterThanOrEqual(550);
  expect(result.durationMs).toBeLessThan(1500);
});

it('a receiver that never answers is a timeout; one that resets the connection is connection_reset', async () => {
  receiver.byPath('/hang', { kind: 'timeout' });
  receiver.byPath('/reset', { kind: 'reset' });
  const [hang, reset] = await Promise.all([post('/hang'), post('/reset')]);
  expect(hang).toMatchObject({ httpStatus: null, errorClass: 'timeout' });
  expect(reset).toMatchObject({ httpStatus: null, errorClass: 'connection_reset', responseBody: null });
});

it('refuses what it may not send: plain http, and an IP literal outside the allowed networks, without connecting', async () => {
  const before = receiver.received.length;
  const plain = await sender.send('POST', receiver.url.replace('https:', 'http:'), receiver.url, Buffer.from('{}'), {});
  expect(plain).toMatchObject({ errorClass: 'refused_destination', errorMessage: 'only https callback URLs are sent, not http:' });
  const privateIp = await sender.send('POST', 'https://10.1.2.3/hook', 'https://10.1.2.3', Buffer.from('{}'), {});
  expect(privateIp).toMatchObject({ errorClass: 'refused_destination', errorMessage: 'the host resolves to an address callbacks may not reach' });
  expect(receiver.received.length).toBe(before);
});

it('never throws: a malformed URL comes back as a failed attempt', async () => {
  const result = await sender.send('POST', 'https://exa mple.test:99999/x', 'https://exa mple.test', Buffer.from('{}'), {});
  expect(result.httpStatus).toBeNull();
  expect(result.errorClass).not.toBeNull();
  expect(result.errorDetail).toMatch(/Invalid URL/i);
});

it('headers given as a function are made once the request has its connection slot, not while it waits for one', async () => {
  // perDestination is 2: two requests that take 300 ms hold both slots; the third waits for one of them.
  receiver.byPath('/held', { kind: 'slow-body', status: 200, chunkDelayMs: 300, chunks: 1 });
  receiver.byPath('/signed', { kind: 'status', status: 200 });
  const url = (path: string) => `${receiver.url}${path}`;
  const holding = [1, 2].map(() => sender.send('POST', url('/held'), receiver.url, Buffer.from('{}'), {}));
  const started = performance.now();
  let madeAfterMs: number | undefined;
  const third = sender.send('POST', url('/signed'), receiver.url, Buffer.from('{}'), () => {
    madeAfterMs = performance.now() - started;
    return { 'x-made-at': 'grant' };
  });
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(madeAfterMs).toBeUndefined(); // still waiting for a slot
  expect(await third).toMatchObject({ httpStatus: 200 });
  expect(madeAfterMs).toBeGreaterThanOrEqual(250);
  expect(receiver.received.find((r) => r.path === '/signed')?.headers['x-made-at']).toBe('grant');
  await Promise.all(holding);
});

/**
 * Property-based fuzzing of every API endpoint over real HTTP. For each endpoint, fast-check generates
 * RUNS requests (300 unless FUZZ_RUNS says otherwise) from a fixed seed: about a fifth fully valid, the rest hostile in one or more of the
 * path parameters, the query string, the API key, the x-api-version header, the content type and the
 * body (random JSON at every level, wrong types, huge and unicode strings with NUL bytes, deep nesting,
 * __proto__ / constructor keys, extreme number literals, raw non-JSON bytes). They are sent 16 at a
 * time with node:http (which, unlike fetch, sends '..', '%zz' and '%00' as given), and every answer
 * must be the contract's envelope: never 5xx, JSON, apiVersion, requestId = x-request-id, exactly one
 * of data / error, a known error code with its HTTP status, a message, well-formed details. After each
 * endpoint's batch, GET /healthz must still answer 200. A last test writes messages that are not valid
 * HTTP (raw UTF-8 or control bytes in the path, broken framing, over-long headers) with node:net.
 *
 * Set FUZZ_SEED to explore other seeds; a failure prints the seed and reproducers grouped by kind.
 */

import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADDRESS_READ_CHAINS, CALLBACK_DATA_CHAINS } from '../src/api/routes/callback-data.ts';
import { loadConfig } from '../src/config/config.ts';
import { ERROR_STATUS } from '../src/domain/errors.ts';
import { SAMPLE, startTestApp, type TestApp } from './harness.ts';
import { startTestDns, type TestDns } from './support/dns.ts';

const API_VERSION = '2021-03-20';
// 300 requests per endpoint in `npm test` (a fixed seed, so every run sends the same ones); FUZZ_RUNS=2000 or
// more with another FUZZ_SEED for a deeper search.
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const CONCURRENCY = 16;
const BASE_SEED = Number(process.env.FUZZ_SEED ?? 0x5eed);

// ---------------------------------------------------------------------------------------------------
// JSON with control over the exact text: raw number literals, duplicate keys, '__proto__' keys.

class Raw {
  constructor(readonly text: string) {}
}
class Obj {
  constructor(readonly entries: readonly (readonly [string, J])[]) {}
}
type J = null | boolean | number | string | Raw | Obj | J[];
type Entries = (readonly [string, J])[];

function serialize(v: J): string {
  if (v instanceof Raw) return v.text;
  if (v instanceof Obj) return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${serialize(x)}`).join(',')}}`;
  if (Array.isArray(v)) return `[${v.map(serialize).join(',')}]`;
  return JSON.stringify(v) ?? 'null';
}

const body = (item: J, extra: Entries = []): Obj => new Obj([['data', new Obj([['item', item]])], ...extra]);

// ---------------------------------------------------------------------------------------------------
// Encoding helpers: what goes on the wire.

/** Percent-encodes the UTF-8 bytes of s (lone surrogates become U+FFFD), keeping unreserved characters. */
function pct(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * s unencoded in a URL where HTTP allows it: printable ASCII stays as is (so '%zz', '..', '&' and '='
 * reach the server's own decoding), the rest is percent-encoded. Characters in `keep` are never encoded.
 */
function rawPath(s: string, keep = ''): string {
  return s.replace(/[^\u0021-\u007e]|[/?#]/gu, (c) => (keep.includes(c) ? c : pct(c)));
}

/** A header value as UTF-8 bytes, without the control characters that node:http refuses to send. */
function wireHeader(s: string): string {
  const allowed = (c: string) => c === '\t' || (c >= ' ' && c !== '\u007f');
  return [...Buffer.from(s, 'utf8').toString('latin1')].filter(allowed).join('');
}

// ---------------------------------------------------------------------------------------------------
// Generic hostile values.

const WEIRD_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  '😀',
  '\u202e\u0301',
  '\ufeff',
  'null',
  'true',
  '0',
  '-1',
  '__proto__',
  'constructor',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '%00',
  '../../etc/passwd',
  '\r\n\t',
  '\\',
  '"',
  SAMPLE.callbackUrl,
  `${SAMPLE.callbackUrl}\u0000`,
  'http://hooks.example.com/',
  'https://evil.example.net/x',
  'https://127.0.0.1/x',
  'https://[::1]/x',
  'https://hooks.example.com:99999/',
  'https://user:pw@hooks.example.com/',
  'javascript:alert(1)',
  'https://',
  SAMPLE.evmTx,
  SAMPLE.evmAddress,
  SAMPLE.btcTx,
  SAMPLE.tronAddress,
  SAMPLE.btcTestnetAddress,
];

const longString = fc
  .tuple(fc.oneof(fc.string({ minLength: 1, maxLength: 6 }), fc.constantFrom('\u0000', 'é', '😀', 'x')), fc.integer({ min: 90, max: 70_000 }))
  .map(([unit, n]) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n));

const anyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 4, arbitrary: fc.constantFrom(...WEIRD_STRINGS) },
  { weight: 1, arbitrary: longString },
);

const RAW_NUMBERS = ['-0', '18446744073709551616', '9007199254740993', '1e400', '-1e400', '1E2', '1.0', '0.1e1', '1e-400', `1${'0'.repeat(400)}`, '-0.0'];
const anyNumber: fc.Arbitrary<J> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1, 3, 50, 51, 100, 101, 1.5, 1e308, -1e308, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 53, 2 ** 64, 5e-324),
  fc.constantFrom(...RAW_NUMBERS).map((s) => new Raw(s)),
);

const anyKey: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'data',
    'item',
    'context',
    'callbackUrl',
    'transactionId',
    'address',
    'amountHigherThan',
    'walletName',
    'allowDuplicates',
    'receiveCallbackOn',
    'callbackSecretKey',
    '',
    '\u0000',
    'toString',
    'hasOwnProperty',
  ),
);

/** Deeply nested JSON as text (JSON.stringify would recurse), sometimes with a __proto__ key at the bottom. */
const deepJson: fc.Arbitrary<J> = fc
  .tuple(fc.integer({ min: 20, max: 12_000 }), fc.constantFrom('array', 'object', 'proto', 'constructor'))
  .map(([n, kind]) => {
    if (kind === 'array') return new Raw(`${'['.repeat(n)}1${']'.repeat(n)}`);
    const bottom = kind === 'proto' ? '{"__proto__":{"isAdmin":true}}' : kind === 'constructor' ? '{"constructor":{"prototype":{"x":1}}}' : '1';
    const depth = Math.min(n, 9_000);
    return new Raw(`${'{"a":'.repeat(depth)}${bottom}${'}'.repeat(depth)}`);
  });

const anyJson: fc.Arbitrary<J> = fc.letrec<{ value: J }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 4, depthSize: 'small' },
    { weight: 4, arbitrary: fc.constantFrom<J>(null, true, false) },
    { weight: 4, arbitrary: anyNumber },
    { weight: 6, arbitrary: anyString },
    { weight: 2, arbitrary: fc.array(tie('value'), { maxLength: 4 }) },
    { weight: 3, arbitrary: fc.array(fc.tuple(anyKey, tie('value')), { maxLength: 4 }).map((e) => new Obj(e)) },
  ),
})).value;

const hostileValue: fc.Arbitrary<J> = fc.oneof({ weight: 8, arbitrary: anyJson }, { weight: 1, arbitrary: deepJson });

const validContext = fc.string({ maxLength: 100 });

// ---------------------------------------------------------------------------------------------------
// Requests.

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body?: Buffer;
  chunked: boolean;
  valid: boolean;
}

interface BodyPart {
  body?: Buffer;
  contentType?: string;
  chunked: boolean;
}

type Params = Record<string, string>;

interface ValidCase {
  params: Params;
  /** Entries of data.item, for the endpoints that take a body. */
  item?: Entries;
}

interface Endpoint {
  label: string;
  method: 'GET' | 'POST' | 'DELETE';
  template: string;
  query: 'page' | 'context';
  /** A request that the contract accepts (its answer may still be an error, e.g. already_exists). */
  valid: () => fc.Arbitrary<ValidCase>;
  key: () => string;
  /**
   * The deepest answer a valid request can get here, proving the fuzzing reached the service: a 2xx,
   * or, where this fixture cannot make the call succeed (no proof to find, nothing delivered to
   * resend), the service's own refusal.
   */
  deepest?: number;
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json ; foo=bar',
  'application/json; charset="utf-8"; charset=ascii',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/jsonp',
  'application/vnd.api+json',
  'application/*',
  '*/*',
  '',
  ';',
  'application/json, text/plain',
  'application/json\u00ff',
  'application/octet-stream',
];

const contentTypeArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 12, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
  { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
);

const RAW_TEXTS = [
  '',
  ' ',
  'null',
  '0',
  '""',
  '[]',
  '{}',
  'undefined',
  '{"data":',
  '\u0000',
  'NaN',
  '{"data":{"item":{}}}garbage',
  '{"data":{"item":{}}}{"data":{"item":{}}}',
  'data=1&item=2',
  '<xml/>',
  "{'data':{}}",
  '{"data":{"item":{"a":1,}}}',
  '{"data":{"item":{"a":01}}}',
  '{"__proto__":{"polluted":1},"data":{"item":{}}}',
  '{"constructor":{"prototype":{"polluted":1}},"data":{"item":{}}}',
  '\ufeff{"data":{"item":{}}}',
];

const rawBody: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 3000 }).map((a) => Buffer.from(a)),
  fc.string({ unit: 'binary', maxLength: 200 }).map((s) => Buffer.from(s, 'utf8')),
  fc.constantFrom(...RAW_TEXTS).map((s) => Buffer.from(s, 'utf8')),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((a) => Buffer.from(`{"data":{"item":{"walletName":"${Buffer.from(a).toString('latin1')}"}}}`, 'latin1')),
  fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 32 }), fc.integer({ min: 60_000, max: 72_000 })).map(([a, n]) => Buffer.alloc(n, Buffer.from(a))),
);

/** Mutations of a valid item: drop, replace, add or duplicate fields. */
function mutatedItem(item: Entries): fc.Arbitrary<J> {
  const op = fc.record({
    kind: fc.constantFrom('drop', 'replace', 'replace', 'replace', 'extra', 'dup'),
    index: fc.nat(),
    key: anyKey,
    value: fc.oneof({ weight: 6, arbitrary: hostileValue }, { weight: 1, arbitrary: longString }),
  });
  return fc.array(op, { minLength: 1, maxLength: 4 }).map((ops) => {
    const entries: [string, J][] = item.map(([k, v]) => [k, v]);
    for (const o of ops) {
      const i = entries.length ? o.index % entries.length : 0;
      const target = entries[i];
      if (o.kind === 'drop' && target) entries.splice(i, 1);
      else if (o.kind === 'replace' && target) target[1] = o.value;
      else if (o.kind === 'dup' && target) entries.push([target[0], o.value]);
      else entries.push([o.key, o.value]);
    }
    return new Obj(entries);
  });
}

/** Bodies for the endpoints that take { data: { item } }. */
function schemaBody(item: Entries): fc.Arbitrary<BodyPart> {
  const json = (ct: fc.Arbitrary<string | undefined>, value: fc.Arbitrary<J>) =>
    fc.record({ value, contentType: ct, chunked: fc.boolean() }).map(({ value, contentType, chunked }) => ({
      body: Buffer.from(serialize(value), 'utf8'),
      contentType,
      chunked,
    }));
  const jsonType = fc.oneof({ weight: 12, arbitrary: fc.constant<string | undefined>('application/json') }, { weight: 1, arbitrary: contentTypeArb });
  const ctx = fc.oneof(
    fc.constant<Entries>([]),
    validContext.map((c): Entries => [['context', c]]),
    hostileValue.map((c): Entries => [['context', c]]),
  );
  const validItem = new Obj(item);
  const structural: fc.Arbitrary<J> = fc.oneof(
    hostileValue,
    hostileValue.map((v) => new Obj([['data', v]])),
    hostileValue.map((v) => body(v)),
    fc.constant(new Obj([['data', validItem]])),
    fc.constant(new Obj([['item', validItem]])),
    fc.constant<J>(validItem),
    fc.constant<J>([body(validItem)]),
    fc.tuple(anyKey, hostileValue).map(
      ([k, v]) =>
        new Obj([
          [
            'data',
            new Obj([
              ['item', validItem],
              [k, v],
            ]),
          ],
        ]),
    ),
    fc.tuple(anyKey, hostileValue).map(([k, v]) => body(validItem, [[k, v]])),
    fc.constant(
      new Obj([
        ['data', new Obj([['item', validItem]])],
        ['data', null],
      ]),
    ),
    fc.constant(new Obj([['__proto__', new Obj([['data', new Obj([['item', validItem]])]])]])),
    fc.constant(body(validItem, [['__proto__', new Obj([['admin', true]])]])),
    fc.constant(body(validItem, [['constructor', new Obj([['prototype', new Obj([['admin', true]])]])]])),
    fc.constant(body(new Obj([...item, ['__proto__', new Obj([['admin', true]])]]))),
  );
  return fc.oneof(
    {
      weight: 10,
      arbitrary: json(
        jsonType,
        fc.tuple(mutatedItem(item), ctx).map(([i, c]) => body(i, c)),
      ),
    },
    { weight: 6, arbitrary: json(jsonType, structural) },
    {
      weight: 3,
      arbitrary: json(
        contentTypeArb,
        ctx.map((c) => body(validItem, c)),
      ),
    },
    {
      weight: 2,
      arbitrary: json(
        jsonType,
        longString.map((s) => body(new Obj([...item, ['callbackSecretKey', s]]))),
      ),
    },
    { weight: 4, arbitrary: fc.record({ body: rawBody, contentType: jsonType, chunked: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ contentType: jsonType, chunked: fc.constant(false) }) },
  );
}

/** Occasional bodies for the endpoints that take none. */
const strayBody: fc.Arbitrary<BodyPart> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<BodyPart>({ chunked: false }) },
  {
    weight: 1,
    arbitrary: fc.record({ value: hostileValue, contentType: contentTypeArb }).map(({ value, contentType }) => ({
      body: Buffer.from(serialize(value), 'utf8'),
      contentType,
      chunked: false,
    })),
  },
  { weight: 1, arbitrary: fc.record({ body: rawBody, contentType: contentTypeArb, chunked: fc.constant(false) }) },
);

const SEGMENTS = [
  '',
  '.',
  '..',
  '%2e%2e',
  '%2E',
  '%00',
  'a%00b',
  '%',
  '%%',
  '%zz',
  '%E0%A4%A',
  '%C0%AF',
  '%2F',
  '%252F',
  '%FF',
  '%ff%fe',
  ';',
  '~',
  '*',
  '$',
  '@',
  ':',
  '\\',
  "'",
  '"',
  '{}',
  '[]',
  '|',
  '^',
  '`',
  '<>',
  'null',
  'undefined',
  'NaN',
  '-1',
  '0',
  '1e308',
  '__proto__',
  'constructor',
  'prototype',
  'ETHEREUM',
  'Ethereum',
  'ethereum%20',
  'eth%65reum',
  'main%6eet',
  'mainnet;x=1',
  'goerli.',
  '..%2f..%2fetc%2fpasswd',
  '%2e%2e%2f',
  'subscriptions',
  'all-assets',
];

/** A hostile value for a path parameter, as sent on the wire. */
function hostileSegment(valid: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...SEGMENTS) },
    { weight: 2, arbitrary: fc.string({ maxLength: 30 }).map(pct) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }).map(pct) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }).map(pct) },
    { weight: 2, arbitrary: fc.string({ maxLength: 20 }).map((s) => rawPath(s, '/?#')) },
    {
      weight: 3,
      arbitrary: fc
        .tuple(
          fc.constantFrom('a', '%41', '%C3%A9', '%E2%82%AC', '0', '%00', '.'),
          fc.constantFrom(99, 100, 101, 128, 129, 200, 201, 253, 254, 499, 500, 501, 600, 1000, 2500),
        )
        // At most ~6 KB on the wire, so that path, key and version stay within Node's 16 KiB header limit.
        .map(([unit, n]) => unit.repeat(Math.min(n, Math.floor(6000 / unit.length)))),
    },
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom('prefix', 'suffix', 'upper'), fc.string({ maxLength: 3 }))
        .map(([how, s]) => (how === 'upper' ? pct(valid.toUpperCase()) : how === 'prefix' ? `${pct(s)}${pct(valid)}` : `${pct(valid)}${pct(s)}`)),
    },
  );
}

const QUERY_VALUES = [
  '',
  '1',
  '0',
  '-1',
  '50',
  '51',
  '49',
  '1.5',
  '1.0',
  '01',
  '+1',
  ' 1',
  '1 ',
  '1e1',
  '0x10',
  'NaN',
  'Infinity',
  '-Infinity',
  'true',
  'null',
  '[]',
  '9007199254740993',
  '18446744073709551616',
  '1e308',
  '-0',
  '%00',
  '\u0000',
  'abc',
];

/** Integers in the eyes of a JSON schema, but not of a database column. */
const EXTREME_NUMBERS = [
  '1e308',
  '18446744073709551616',
  '9223372036854775808',
  '9223372036854775807',
  '9007199254740993',
  '1e19',
  '1e21',
  '2e0',
  '-0',
  '50.0',
  '1e-7',
];

const queryName = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('limit', 'offset', 'context') },
  {
    weight: 1,
    arbitrary: fc.constantFrom('foo', 'LIMIT', 'limit[]', 'limit[0]', '__proto__', 'constructor', 'toString', '', 'a.b', 'context[]', 'hasOwnProperty'),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
);
const queryValue = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...QUERY_VALUES) },
  { weight: 2, arbitrary: fc.integer().map(String) },
  { weight: 2, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }) },
  { weight: 1, arbitrary: fc.constantFrom(99, 100, 101, 1000, 3000).map((n) => 'c'.repeat(n)) },
);
const hostileQuery: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.array(fc.tuple(queryName, fc.option(queryValue, { freq: 8 }), fc.constantFrom('pct', 'pct', 'raw', 'plus')), { maxLength: 6 }).map((pairs) =>
      pairs
        .map(([name, value, mode]) => {
          const enc = mode === 'raw' ? (s: string) => rawPath(s, '/?') : mode === 'plus' ? (s: string) => pct(s).replace(/%20/g, '+') : pct;
          return value === null ? enc(name) : `${enc(name)}=${enc(value)}`;
        })
        .join('&'),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('&&&', '=', '==', '&limit=1&', '%', '%zz=1', 'limit=%zz', ';', 'limit=1;offset=2', 'limit=1&limit=2', 'context=a&context=b'),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('limit', 'offset'), fc.constantFrom(...EXTREME_NUMBERS)).map(([name, value]) => `${name}=${pct(value)}`),
  },
);

function validQuery(kind: 'page' | 'context'): fc.Arbitrary<string> {
  const context = fc.option(validContext, { freq: 3 });
  if (kind === 'context') return context.map((c) => (c === null ? '' : `context=${pct(c)}`));
  return fc.record({ limit: fc.option(fc.integer({ min: 1, max: 50 })), offset: fc.option(fc.integer({ min: 0, max: 1000 })), context }).map((q) =>
    Object.entries(q)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => `${k}=${pct(String(v))}`)
      .join('&'),
  );
}

const versionArb: fc.Arbitrary<string | string[] | undefined> = fc.oneof(
  { weight: 70, arbitrary: fc.constant(undefined) },
  { weight: 10, arbitrary: fc.constant(API_VERSION) },
  {
    weight: 8,
    arbitrary: fc.constantFrom(
      '',
      '2021-03-21',
      `${API_VERSION} `,
      ` ${API_VERSION}`,
      '2021-3-20',
      'v1',
      'latest',
      '*',
      '2021-03-20\u00ff',
      '20210320',
      '2021-03-20, 2021-03-20',
    ),
  },
  { weight: 4, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 3000 }).map((n) => 'v'.repeat(n)) },
  { weight: 1, arbitrary: fc.constant<string[]>([API_VERSION, API_VERSION]) },
);

interface Keys {
  main: string;
  other: string;
  restricted: string;
  broke: string;
}

function keyArb(valid: string, keys: Keys): fc.Arbitrary<string | string[] | undefined> {
  return fc.oneof(
    { weight: 70, arbitrary: fc.constant(valid) },
    { weight: 5, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: fc.constant('') },
    { weight: 3, arbitrary: fc.string({ maxLength: 64 }) },
    { weight: 4, arbitrary: fc.constantFrom(keys.main, keys.other, keys.restricted, keys.broke) },
    { weight: 2, arbitrary: fc.integer({ min: 150, max: 4000 }).map((n) => 'k'.repeat(n)) },
    { weight: 2, arbitrary: fc.constantFrom(valid.toUpperCase(), ` ${valid} `, `${valid}x`, valid.slice(1), `${valid}\u00ff`, `${valid}😀`) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.constant<string[]>([valid, valid]) },
  );
}

function pathOf(template: string, segments: Params, trailingSlash: boolean, query: string): string {
  const path = template.replace(/:([a-zA-Z]+)/g, (_, name: string) => segments[name] ?? '');
  return `${path}${trailingSlash ? '/' : ''}${query ? `?${query}` : ''}`;
}

function headersOf(key: string | string[] | undefined, version: string | string[] | undefined, contentType: string | undefined) {
  const headers: Record<string, string | string[]> = {};
  const wire = (v: string | string[]) => (Array.isArray(v) ? v.map(wireHeader) : wireHeader(v));
  if (key !== undefined) headers['x-api-key'] = wire(key);
  if (version !== undefined) headers['x-api-version'] = wire(version);
  if (contentType !== undefined) headers['content-type'] = wireHeader(contentType);
  return headers;
}

/** Frames the body: node:http would send a GET, DELETE or OPTIONS body without Content-Length. */
function framed(r: FuzzRequest): FuzzRequest {
  if (!r.body || r.chunked) return r;
  return { ...r, headers: { ...r.headers, 'content-length': String(r.body.length) } };
}

function requestArb(ep: Endpoint, keys: Keys): fc.Arbitrary<FuzzRequest> {
  const paramNames = [...ep.template.matchAll(/:([a-zA-Z]+)/g)].map((m) => m[1] as string);
  const hasBody = ep.method === 'POST' && !ep.template.endsWith('/activate');
  const validKey = ep.key();

  const fullyValid = ep.valid().chain((v) =>
    fc
      .record({
        query: validQuery(ep.query),
        version: fc.option(fc.constant(API_VERSION), { freq: 3 }),
        context: fc.option(validContext, { freq: 3 }),
      })
      .map(({ query, version, context }) => {
        const segments = Object.fromEntries(Object.entries(v.params).map(([k, s]) => [k, pct(s)]));
        const extra: Entries = context === null ? [] : [['context', context]];
        const payload = hasBody ? Buffer.from(serialize(body(new Obj(v.item ?? []), extra)), 'utf8') : undefined;
        return framed({
          method: ep.method,
          path: pathOf(ep.template, segments, false, query),
          headers: headersOf(validKey, version ?? undefined, payload ? 'application/json' : undefined),
          body: payload,
          chunked: false,
          valid: true,
        });
      }),
  );

  const fuzzed = ep.valid().chain((v) =>
    fc
      .record({
        segments: fc.tuple(
          ...paramNames.map((name) =>
            fc.oneof({ weight: 7, arbitrary: fc.constant(pct(v.params[name] ?? '')) }, { weight: 3, arbitrary: hostileSegment(v.params[name] ?? '') }),
          ),
        ),
        trailingSlash: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
        method: fc.oneof(
          { weight: 40, arbitrary: fc.constant<string>(ep.method) },
          { weight: 1, arbitrary: fc.constantFrom('PUT', 'PATCH', 'OPTIONS', 'GET', 'POST', 'DELETE') },
        ),
        query: fc.oneof({ weight: 2, arbitrary: validQuery(ep.query) }, { weight: 1, arbitrary: hostileQuery }),
        key: keyArb(validKey, keys),
        version: versionArb,
        payload: hasBody
          ? fc.oneof({ weight: 1, arbitrary: fc.constant<BodyPart | undefined>(undefined) }, { weight: 5, arbitrary: schemaBody(v.item ?? []) })
          : strayBody,
      })
      .map(({ segments, trailingSlash, method, query, key, version, payload }) => {
        const named = Object.fromEntries(paramNames.map((name, i) => [name, segments[i] ?? '']));
        const part = payload ?? { chunked: false };
        const chunked = part.chunked && ['POST', 'PUT', 'PATCH'].includes(method);
        return framed({
          method,
          path: pathOf(ep.template, named, trailingSlash, query),
          headers: headersOf(key, version, part.contentType),
          body: part.body,
          chunked,
          valid: false,
        });
      }),
  );

  return fc.oneof({ weight: 1, arbitrary: fullyValid }, { weight: 4, arbitrary: fuzzed });
}

// ---------------------------------------------------------------------------------------------------
// Sending and checking.

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

function send(base: URL, r: FuzzRequest, useAgent: boolean): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: base.hostname, port: base.port, method: r.method, path: r.path, headers: r.headers, agent: useAgent ? agent : false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.setTimeout(20_000, () => req.destroy(new Error('no answer within 20 s')));
    req.on('error', reject);
    if (r.body && r.chunked && r.body.length > 1) {
      const middle = r.body.length >> 1;
      req.write(r.body.subarray(0, middle));
      req.end(r.body.subarray(middle));
    } else req.end(r.body);
  });
}

/** One retry on a fresh connection: the server may close a kept-alive socket while we write a big body. */
async function sendWithRetry(base: URL, r: FuzzRequest): Promise<Answer> {
  try {
    return await send(base, r, true);
  } catch {
    return await send(base, r, false);
  }
}

const KNOWN_CODES = new Map<string, number>(Object.entries(ERROR_STATUS));

/** The problems with an answer, empty when it satisfies every property. */
function check(a: Answer): string[] {
  const problems: string[] = [];
  if (a.status >= 500) problems.push(`status ${a.status}`);
  // biome-ignore lint/suspicious/noExplicitAny: the body is arbitrary JSON under test
  let b: any;
  try {
    b = JSON.parse(a.text);
  } catch {
    return [...problems, 'body is not JSON'];
  }
  if (typeof b !== 'object' || b === null || Array.isArray(b)) return [...problems, 'body is not an object'];
  if (b.apiVersion !== API_VERSION) problems.push(`apiVersion ${JSON.stringify(b.apiVersion)}`);
  if (typeof b.requestId !== 'string' || !/^[0-9a-f]{24}$/.test(b.requestId)) problems.push(`requestId ${JSON.stringify(b.requestId)}`);
  if (a.headers['x-request-id'] !== b.requestId) problems.push(`x-request-id header ${JSON.stringify(a.headers['x-request-id'])} differs from requestId`);
  const hasData = 'data' in b;
  const hasError = 'error' in b;
  if (hasData === hasError) problems.push(hasData ? 'both data and error' : 'neither data nor error');
  if (b.context !== undefined && typeof b.context !== 'string') problems.push('context is not a string');
  if (hasData && (a.status < 200 || a.status > 299)) problems.push(`data with status ${a.status}`);
  if (hasError) {
    const e = b.error;
    if (typeof e !== 'object' || e === null) return [...problems, 'error is not an object'];
    const expected = KNOWN_CODES.get(e.code);
    if (expected === undefined) problems.push(`unknown error code ${JSON.stringify(e.code)}`);
    else if (expected !== a.status) problems.push(`error code ${e.code} with status ${a.status} instead of ${expected}`);
    if (typeof e.message !== 'string' || e.message.length === 0) problems.push('error.message is not a non-empty string');
    if (e.details !== undefined) {
      const ok =
        Array.isArray(e.details) &&
        // biome-ignore lint/suspicious/noExplicitAny: arbitrary JSON under test
        e.details.every((d: any) => typeof d === 'object' && d !== null && typeof d.attribute === 'string' && typeof d.message === 'string');
      if (!ok) problems.push('error.details is not an array of { attribute, message }');
    }
  }
  return problems;
}

async function pool<T>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await work(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

const show = (s: string, max = 300) => (s.length > max ? `${s.slice(0, max)}... (${s.length} chars)` : s);

function describeRequest(r: FuzzRequest): string {
  const headers = Object.entries(r.headers)
    .map(([k, v]) => `${k}: ${show(JSON.stringify(v), 120)}`)
    .join('; ');
  const bodyText = r.body ? show(JSON.stringify(r.body.toString('utf8')), 300) : '(none)';
  return `${r.method} ${show(JSON.stringify(r.path).slice(1, -1), 300)}\n    headers: ${headers || '(none)'}${r.chunked ? ' (chunked)' : ''}\n    body: ${bodyText}`;
}

interface Failure {
  /** What went wrong, for grouping: the problems and the answer's status and code. */
  kind: string;
  text: string;
}

/** The error code of an envelope, or Fastify's own code, or the start of whatever came back. */
function errorLabel(text: string): string {
  try {
    const b = JSON.parse(text);
    return String(b?.error?.code ?? b?.code ?? b?.message ?? '?');
  } catch {
    return show(JSON.stringify(text), 40);
  }
}

/** Failures grouped by kind, with two reproducers of each. */
function report(failures: Failure[], total: number, how: string): string {
  const groups = new Map<string, Failure[]>();
  for (const f of failures) groups.set(f.kind, [...(groups.get(f.kind) ?? []), f]);
  const lines = [`${failures.length} of ${total} answers broke the contract (${how}).`];
  for (const [kind, list] of groups) {
    lines.push(`- ${list.length} x ${kind}`);
    for (const f of list.slice(0, 2)) lines.push(`  ${f.text.replace(/\n/g, '\n  ')}`);
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------
// Fixtures and endpoints.

let t: TestApp;
let base: URL;
const fx = {
  keys: { main: '', other: '', restricted: '', broke: '' } as Keys,
  domainKey: '',
  subscriptions: [] as string[],
  otherSubscription: '',
  deletable: [] as string[],
  walletId: '',
  otherWalletId: '',
  watched: [] as { blockchain: string; network: string; address: string }[],
  domains: [] as string[],
  recovery: '',
  otherRecovery: '',
};

const hex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((a) => Buffer.from(a).toString('hex'));
const randomEvmAddress = () => `0x${randomBytes(20).toString('hex')}`;

async function post(path: string, key: string, item: Record<string, unknown>): Promise<string> {
  const r = await t.request('POST', path, { key, body: { data: { item } } });
  if (r.status >= 300) throw new Error(`fixture ${path} failed: ${r.status} ${r.text}`);
  const created = r.body.data.item;
  return created.referenceId ?? created.walletId ?? created.address;
}

const cbUrl = fc.oneof(
  { weight: 6, arbitrary: fc.constant(SAMPLE.callbackUrl) },
  { weight: 3, arbitrary: fc.string({ maxLength: 20 }).map((s) => `https://hooks.example.com/${pct(s)}`) },
  { weight: 2, arbitrary: anyString.filter((s) => s.length < 1000).map((s) => `https://hooks.example.com/cb?${s}`) },
  { weight: 1, arbitrary: fc.constantFrom('https://HOOKS.example.com:8443/x#frag', 'https://hooks.example.com./x', 'https://hooks.example.com/%00') },
);

const optionalFields = fc.record(
  {
    callbackSecretKey: fc.oneof(fc.string({ maxLength: 64 }), fc.string({ unit: 'binary', maxLength: 64 }), fc.constantFrom('', 'a\u0000b', '😀')),
    allowDuplicates: fc.boolean(),
  },
  { requiredKeys: [] },
);

function subscriptionCase(
  combos: readonly (readonly [string, string])[],
  target: (blockchain: string) => fc.Arbitrary<Entries>,
): () => fc.Arbitrary<ValidCase> {
  return () =>
    fc.constantFrom(...combos).chain(([blockchain, network]) =>
      fc.tuple(target(blockchain), cbUrl, optionalFields).map(([entries, callbackUrl, optional]) => ({
        params: { blockchain, network },
        item: [...entries, ['callbackUrl', callbackUrl], ...(Object.entries(optional) as Entries)],
      })),
    );
}

const EVM = ['ethereum', 'binance-smart-chain', 'ethereum-classic'];
const ALL_PAIRS: [string, string][] = [
  ['bitcoin', 'mainnet'],
  ['bitcoin', 'testnet'],
  ['bitcoin-cash', 'testnet'],
  ['litecoin', 'mainnet'],
  ['dogecoin', 'testnet'],
  ['dash', 'mainnet'],
  ['zcash', 'testnet'],
  ['xrp', 'testnet'],
  ['ethereum', 'mainnet'],
  ['ethereum', 'goerli'],
  ['ethereum-classic', 'mordor'],
  ['binance-smart-chain', 'testnet'],
  ['tron', 'nile'],
  ['tron', 'mainnet'],
];

const txTarget = (blockchain: string): fc.Arbitrary<Entries> =>
  fc.oneof(hex(32), fc.constant(SAMPLE.btcTx)).map((h): Entries => {
    const tx = EVM.includes(blockchain) ? `0x${h}` : blockchain === 'xrp' ? h.toUpperCase() : h;
    return [['transactionId', tx]];
  });

const addressTarget = (blockchain: string): fc.Arbitrary<Entries> =>
  fc
    .record({
      address: EVM.includes(blockchain)
        ? fc.oneof(
            fc.constant(SAMPLE.evmAddress),
            hex(20).map((h) => `0x${h}`),
          )
        : fc.constant(blockchain === 'tron' ? SAMPLE.tronAddress : SAMPLE.btcTestnetAddress),
      receiveCallbackOn: fc.option(fc.integer({ min: 1, max: 100 })),
    })
    .map(
      ({ address, receiveCallbackOn }): Entries => [
        ['address', address],
        ...(receiveCallbackOn === null ? [] : [['receiveCallbackOn', receiveCallbackOn] as const]),
      ],
    );

const amountTarget = (): fc.Arbitrary<Entries> =>
  fc.oneof(fc.nat(), fc.maxSafeNat(), fc.constantFrom(0, Number.MAX_SAFE_INTEGER)).map((n): Entries => [['amountHigherThan', n]]);

/** block-mined takes no target; reverted-block requires a secret (docs/reference/api.md#reverted-block). */
const noTarget = (): fc.Arbitrary<Entries> => fc.constant([]);
const secretTarget = (): fc.Arbitrary<Entries> => fc.string({ minLength: 1, maxLength: 64 }).map((secret): Entries => [['callbackSecretKey', secret]]);
const heightTarget = (): fc.Arbitrary<Entries> =>
  fc.oneof(fc.nat(), fc.maxSafeNat(), fc.constantFrom(0, Number.MAX_SAFE_INTEGER)).map((n): Entries => [['blockHeightReached', n]]);
const eachTarget = (blockchain: string): fc.Arbitrary<Entries> =>
  fc
    .tuple(addressTarget(blockchain), fc.option(fc.integer({ min: 1, max: 100 })))
    .map(
      ([entries, count]): Entries => [
        ...entries.filter(([k]) => k !== 'receiveCallbackOn'),
        ...(count === null ? [] : [['confirmationsCount', count] as const]),
      ],
    );
/** The internal-address events require a secret and allowDuplicates (docs/reference/api.md#address-internal-transactions-confirmed and #address-internal-transactions-confirmed-each-confirmation). */
const internalAddressTarget =
  (count: 'receiveCallbackOn' | 'confirmationsCount') =>
  (blockchain: string): fc.Arbitrary<Entries> =>
    fc
      .tuple(addressTarget(blockchain), fc.string({ minLength: 1, maxLength: 64 }), fc.boolean(), fc.option(fc.integer({ min: 1, max: 100 })))
      .map(
        ([entries, secret, allowDuplicates, n]): Entries => [
          ...entries.filter(([k]) => k !== 'receiveCallbackOn'),
          ['callbackSecretKey', secret],
          ['allowDuplicates', allowDuplicates],
          ...(n === null ? [] : [[count, n] as const]),
        ],
      );
const tokenAmountTarget = (blockchain: string): fc.Arbitrary<Entries> =>
  fc
    .tuple(amountTarget(), addressTarget(blockchain))
    .map(([amount, entries]): Entries => [...amount, ['contractAddress', entries.find(([k]) => k === 'address')?.[1] ?? '']]);
const INTERNAL_PAIRS: [string, string][] = [
  ['ethereum', 'goerli'],
  ['binance-smart-chain', 'mainnet'],
  ['ethereum-classic', 'mordor'],
  ['tron', 'nile'],
];
/** The unconfirmed events take an address only (docs/reference/api.md#address-coins-transactions-unconfirmed and #address-tokens-transactions-unconfirmed). */
const unconfirmedTarget = (blockchain: string): fc.Arbitrary<Entries> =>
  addressTarget(blockchain).map((entries): Entries => entries.filter(([k]) => k !== 'receiveCallbackOn'));
const UNCONFIRMED_COIN_PAIRS = ALL_PAIRS.filter(([blockchain]) => blockchain !== 'xrp' && blockchain !== 'tron');
const UNCONFIRMED_TOKEN_PAIRS: [string, string][] = [
  ['bitcoin', 'testnet'],
  ['ethereum', 'goerli'],
  ['ethereum-classic', 'mordor'],
];
const TOKEN_PAIRS: [string, string][] = [
  ['ethereum', 'goerli'],
  ['binance-smart-chain', 'testnet'],
  ['ethereum-classic', 'mordor'],
  ['tron', 'nile'],
  ['bitcoin', 'testnet'],
];

const uuidLike = fc.oneof(
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
);

const ENDPOINTS: Endpoint[] = [
  {
    label: 'POST transaction-mined',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/transaction-mined',
    query: 'context',
    valid: subscriptionCase(ALL_PAIRS, txTarget),
    key: () => fx.keys.main,
  },
  {
    label: 'POST address-tokens-transactions-confirmed',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/address-tokens-transactions-confirmed',
    query: 'context',
    valid: subscriptionCase(
      [
        ['ethereum', 'goerli'],
        ['ethereum', 'mainnet'],
        ['binance-smart-chain', 'testnet'],
        ['ethereum-classic', 'mordor'],
        ['tron', 'nile'],
        ['bitcoin', 'testnet'],
      ],
      addressTarget,
    ),
    key: () => fx.keys.main,
  },
  {
    label: 'POST internal-transactions-for-specific-amount',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/internal-transactions-for-specific-amount',
    query: 'context',
    valid: subscriptionCase(
      [
        ['ethereum', 'goerli'],
        ['ethereum', 'mainnet'],
        ['binance-smart-chain', 'mainnet'],
        ['ethereum-classic', 'mordor'],
        ['tron', 'nile'],
      ],
      amountTarget,
    ),
    key: () => fx.keys.main,
  },
  {
    label: 'POST block-mined',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/block-mined',
    query: 'context',
    valid: subscriptionCase(ALL_PAIRS, noTarget),
    key: () => fx.keys.main,
  },
  {
    label: 'POST block-height-reached',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/block-height-reached',
    query: 'context',
    valid: subscriptionCase(ALL_PAIRS, heightTarget),
    key: () => fx.keys.main,
  },
  {
    label: 'POST reverted-block',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/reverted-block',
    query: 'context',
    valid: subscriptionCase(ALL_PAIRS, secretTarget),
    key: () => fx.keys.main,
  },
  {
    label: 'POST address-tokens-transactions-confirmed-each-confirmation',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/address-tokens-transactions-confirmed-each-confirmation',
    query: 'context',
    valid: subscriptionCase(TOKEN_PAIRS, eachTarget),
    key: () => fx.keys.main,
  },
  {
    label: 'POST address-internal-transactions-confirmed',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/address-internal-transactions-confirmed',
    query: 'context',
    valid: subscriptionCase(INTERNAL_PAIRS, internalAddressTarget('receiveCallbackOn')),
    key: () => fx.keys.main,
  },
  {
    label: 'POST address-internal-transactions-confirmed-each-confirmation',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/address-internal-transactions-confirmed-each-confirmation',
    query: 'context',
    valid: subscriptionCase(INTERNAL_PAIRS, internalAddressTarget('confirmationsCount')),
    key: () => fx.keys.main,
  },
  {
    label: 'POST tokens-transfers-for-specific-amount',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/tokens-transfers-for-specific-amount',
    query: 'context',
    valid: subscriptionCase(INTERNAL_PAIRS, tokenAmountTarget),
    key: () => fx.keys.main,
  },
  {
    label: 'POST address-coins-transactions-confirmed-each-confirmation',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/address-coins-transactions-confirmed-each-confirmation',
    query: 'context',
    valid: subscriptionCase(ALL_PAIRS, eachTarget),
    key: () => fx.keys.main,
  },
  {
    label: 'POST address-coins-transactions-unconfirmed',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/address-coins-transactions-unconfirmed',
    query: 'context',
    valid: subscriptionCase(UNCONFIRMED_COIN_PAIRS, unconfirmedTarget),
    key: () => fx.keys.main,
  },
  {
    label: 'POST address-tokens-transactions-unconfirmed',
    method: 'POST',
    template: '/blockchain-events/:blockchain/:network/subscriptions/address-tokens-transactions-unconfirmed',
    query: 'context',
    valid: subscriptionCase(UNCONFIRMED_TOKEN_PAIRS, unconfirmedTarget),
    key: () => fx.keys.main,
  },
  {
    label: 'GET all-assets',
    method: 'GET',
    template: '/wallet-as-a-service/wallets/all-assets',
    query: 'page',
    valid: () => fc.constant({ params: {} }),
    key: () => fx.keys.main,
  },
  {
    label: 'GET list subscriptions',
    method: 'GET',
    template: '/blockchain-events/:blockchain/:network/subscriptions',
    query: 'page',
    valid: () => fc.constantFrom(...ALL_PAIRS).map(([blockchain, network]) => ({ params: { blockchain, network } })),
    key: () => fx.keys.main,
  },
  {
    label: 'GET subscription',
    method: 'GET',
    template: '/blockchain-events/subscriptions/:referenceId',
    query: 'context',
    valid: () => fc.oneof(fc.constantFrom(...fx.subscriptions, fx.otherSubscription), uuidLike).map((referenceId) => ({ params: { referenceId } })),
    key: () => fx.keys.main,
  },
  {
    label: 'DELETE subscription',
    method: 'DELETE',
    template: '/blockchain-events/:blockchain/:network/subscriptions/:referenceId',
    query: 'context',
    valid: () =>
      fc
        .oneof(
          { weight: 4, arbitrary: fc.constantFrom(...fx.deletable) },
          { weight: 1, arbitrary: fc.constantFrom(fx.otherSubscription) },
          { weight: 1, arbitrary: uuidLike },
        )
        .map((referenceId) => ({ params: { blockchain: 'ethereum', network: 'goerli', referenceId } })),
    key: () => fx.keys.main,
  },
  {
    label: 'POST activate subscription',
    method: 'POST',
    template: '/blockchain-events/subscriptions/:referenceId/activate',
    query: 'context',
    valid: () => fc.oneof(fc.constantFrom(...fx.subscriptions, fx.otherSubscription), uuidLike).map((referenceId) => ({ params: { referenceId } })),
    key: () => fx.keys.main,
  },
  {
    label: 'POST wallets',
    method: 'POST',
    template: '/wallet-as-a-service/wallets',
    query: 'context',
    valid: () =>
      fc
        .oneof(
          fc.string({ minLength: 1, maxLength: 100 }),
          fc.string({ unit: 'binary', minLength: 1, maxLength: 100 }),
          fc.constantFrom('w', 'a\u0000b', '😀', ' ', 'x'.repeat(100)),
        )
        .map((walletName) => ({ params: {}, item: [['walletName', walletName]] })),
    key: () => fx.keys.main,
  },
  {
    label: 'GET wallet',
    method: 'GET',
    template: '/wallet-as-a-service/wallets/:walletId',
    query: 'context',
    valid: () => fc.oneof(fc.constantFrom(fx.walletId, fx.walletId.toUpperCase(), fx.otherWalletId), uuidLike).map((walletId) => ({ params: { walletId } })),
    key: () => fx.keys.main,
  },
  {
    label: 'POST wallet address',
    method: 'POST',
    template: '/wallet-as-a-service/wallets/:walletId/:blockchain/:network/addresses',
    query: 'context',
    valid: () =>
      fc
        .tuple(
          fc.oneof(
            { weight: 6, arbitrary: fc.constant(fx.walletId) },
            { weight: 1, arbitrary: fc.constantFrom(fx.otherWalletId) },
            { weight: 1, arbitrary: uuidLike },
          ),
          fc.oneof(
            {
              weight: 4,
              arbitrary: fc.tuple(fc.constantFrom(...ALL_PAIRS.filter(([b]) => EVM.includes(b))), hex(20)).map(([[b, n], h]) => [b, n, `0x${h}`] as const),
            },
            { weight: 1, arbitrary: fc.constantFrom(['tron', 'nile', SAMPLE.tronAddress] as const, ['bitcoin', 'testnet', SAMPLE.btcTestnetAddress] as const) },
          ),
        )
        .map(([walletId, [blockchain, network, address]]) => ({ params: { walletId, blockchain, network }, item: [['address', address]] })),
    key: () => fx.keys.main,
  },
  {
    label: 'DELETE wallet address',
    method: 'DELETE',
    template: '/wallet-as-a-service/wallets/:walletId/:blockchain/:network/addresses/:address',
    query: 'context',
    valid: () =>
      fc
        .tuple(
          fc.oneof(
            { weight: 6, arbitrary: fc.constant(fx.walletId) },
            { weight: 1, arbitrary: fc.constantFrom(fx.otherWalletId) },
            { weight: 1, arbitrary: uuidLike },
          ),
          fc.constantFrom(...fx.watched),
        )
        .map(([walletId, w]) => ({ params: { walletId, blockchain: w.blockchain, network: w.network, address: w.address } })),
    key: () => fx.keys.main,
  },
  {
    label: 'GET callback-domains',
    method: 'GET',
    template: '/blockchain-events/callback-domains',
    query: 'page',
    valid: () => fc.constant({ params: {} }),
    key: () => fx.keys.main,
  },
  {
    label: 'GET chain status',
    method: 'GET',
    template: '/blockchain-events/status',
    query: 'context',
    valid: () => fc.constant({ params: {} }),
    key: () => fx.keys.main,
  },
  // The console's reads (issue 13).
  {
    label: 'GET subscriptions on every chain',
    method: 'GET',
    template: '/blockchain-events/subscriptions',
    query: 'page',
    valid: () => fc.constant({ params: {} }),
    key: () => fx.keys.main,
  },
  {
    label: 'GET callback',
    method: 'GET',
    template: '/blockchain-events/callbacks/:callbackId',
    query: 'context',
    valid: () => uuidLike.map((callbackId) => ({ params: { callbackId } })),
    key: () => fx.keys.main,
    deepest: 404,
  },
  {
    label: 'GET account',
    method: 'GET',
    template: '/account',
    query: 'context',
    valid: () => fc.constant({ params: {} }),
    key: () => fx.keys.main,
  },
  {
    label: 'DELETE callback-domain',
    method: 'DELETE',
    template: '/blockchain-events/callback-domains/:domain',
    query: 'context',
    valid: () =>
      fc
        .oneof(
          fc.constantFrom(...fx.domains),
          fc.constantFrom(...fx.domains).map((d) => d.toUpperCase()),
          fc.domain(),
        )
        .map((domain) => ({ params: { domain } })),
    key: () => fx.domainKey,
  },
  {
    label: 'POST register callback-domain',
    method: 'POST',
    template: '/blockchain-events/callback-domains',
    query: 'context',
    valid: () =>
      fc
        .oneof(fc.domain(), fc.constantFrom('hooks.example.com', 'a.b.example.org', 'localhost', '10.0.0.1', 'https://x.example', 'bücher.de'))
        .map((domain) => ({ params: {}, item: [['domain', domain]] })),
    key: () => fx.keys.main,
  },
  {
    label: 'POST verify callback-domain',
    method: 'POST',
    template: '/blockchain-events/callback-domains/:domain/verify',
    query: 'context',
    valid: () => fc.oneof(fc.constantFrom(...fx.domains), fc.domain()).map((domain) => ({ params: { domain } })),
    key: () => fx.domainKey,
    // The fixture's domains are gone by now (the DELETE endpoint above removed them): looked up, not found.
    deepest: 404,
  },
  {
    label: 'GET subscription callbacks',
    method: 'GET',
    template: '/blockchain-events/subscriptions/:referenceId/callbacks',
    query: 'page',
    valid: () => fc.oneof(fc.constantFrom(...fx.subscriptions, fx.otherSubscription), uuidLike).map((referenceId) => ({ params: { referenceId } })),
    key: () => fx.keys.main,
  },
  {
    label: 'POST resend callback',
    method: 'POST',
    template: '/blockchain-events/callbacks/:callbackId/resend',
    query: 'context',
    valid: () => uuidLike.map((callbackId) => ({ params: { callbackId } })),
    key: () => fx.keys.main,
    deepest: 404, // no callback exists to resend: the service looked it up and found none
  },
  // Callback Data reads: no chain is followed here, so a well-formed read gets as far as the 404 that says so.
  ...(['blocks/height/:blockHeight', 'blocks/hash/:blockHash', 'transactions/:transactionId', 'addresses/:address'] as const).map((tail) => ({
    label: `GET callback data ${tail.split('/:')[0]}`,
    method: 'GET' as const,
    template: `/blockchain-events/:blockchain/:network/${tail}`,
    query: 'context' as const,
    valid: () =>
      fc
        .tuple(
          fc.constantFrom(
            ...ALL_PAIRS.filter(([b]) => ((tail.startsWith('addresses') ? ADDRESS_READ_CHAINS : CALLBACK_DATA_CHAINS) as readonly string[]).includes(b)),
          ),
          hex(32),
          fc.nat(10_000_000),
        )
        .map(([[blockchain, network], h, n]) => {
          const evm = EVM.includes(blockchain);
          const value = tail.startsWith('blocks/height')
            ? String(n)
            : tail.startsWith('addresses')
              ? evm
                ? SAMPLE.evmAddress
                : SAMPLE.btcTestnetAddress
              : evm
                ? `0x${h}`
                : h;
          const name = tail.split('/:')[1] as string;
          return { params: { blockchain, network, [name]: value } };
        }),
    key: () => fx.keys.main,
    deepest: 404,
  })),
  {
    label: 'POST test-callback',
    method: 'POST',
    template: '/blockchain-events/subscriptions/:referenceId/test-callback',
    query: 'context',
    valid: () => fc.oneof(fc.constantFrom(...fx.subscriptions, fx.otherSubscription), uuidLike).map((referenceId) => ({ params: { referenceId } })),
    key: () => fx.keys.main,
  },
  // Recovery (issue 14): appended, so the seeds of the endpoints above stay as they were.
  {
    label: 'POST rotate-secret',
    method: 'POST',
    template: '/blockchain-events/subscriptions/:referenceId/rotate-secret',
    query: 'context',
    valid: () =>
      fc
        .record({
          referenceId: fc.oneof(fc.constantFrom(...fx.subscriptions, fx.otherSubscription), uuidLike),
          secret: fc.string({ minLength: 1, maxLength: 512 }),
          overlap: fc.option(fc.nat(7 * 24 * 3600)),
        })
        .map(({ referenceId, secret, overlap }) => ({
          params: { referenceId },
          item: [['callbackSecretKey', secret] as const, ...(overlap === null ? [] : [['overlapSeconds', overlap] as const])],
        })),
    key: () => fx.keys.main,
  },
  {
    label: 'POST recover subscription',
    method: 'POST',
    template: '/blockchain-events/subscriptions/:referenceId/recover',
    query: 'context',
    valid: () =>
      fc
        .record({
          referenceId: fc.oneof(fc.constantFrom(...fx.subscriptions, fx.otherSubscription), uuidLike),
          since: fc.integer({ min: 0, max: Math.floor(Date.now() / 1000) }),
          span: fc.option(fc.integer({ min: 1, max: 10 ** 9 })),
          includeCancelled: fc.option(fc.boolean()),
        })
        .map(({ referenceId, since, span, includeCancelled }) => ({
          params: { referenceId },
          item: [
            ['since', since] as const,
            ...(span === null ? [] : [['until', since + span] as const]),
            ...(includeCancelled === null ? [] : [['includeCancelled', includeCancelled] as const]),
          ],
        })),
    key: () => fx.keys.main,
  },
  {
    label: 'POST recover callbacks by URL',
    method: 'POST',
    template: '/blockchain-events/callbacks/recover',
    query: 'context',
    valid: () =>
      fc
        .record({
          callbackUrl: cbUrl,
          eventType: fc.option(fc.constantFrom('TRANSACTION_MINED', 'BLOCK_MINED', 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED')),
          since: fc.integer({ min: 0, max: Math.floor(Date.now() / 1000) }),
        })
        .map(({ callbackUrl, eventType, since }) => ({
          params: {},
          item: [['callbackUrl', callbackUrl] as const, ['since', since] as const, ...(eventType === null ? [] : [['eventType', eventType] as const])],
        })),
    key: () => fx.keys.main,
  },
  {
    label: 'GET recovery',
    method: 'GET',
    template: '/blockchain-events/recoveries/:recoveryId',
    query: 'context',
    valid: () => fc.oneof(fc.constantFrom(fx.recovery, fx.otherRecovery), uuidLike).map((recoveryId) => ({ params: { recoveryId } })),
    key: () => fx.keys.main,
  },
];

let dns: TestDns;

beforeAll(async () => {
  // Callback hosts and verification names resolve through a loopback DNS server that knows none of
  // them: outbound requests (test callbacks, domain proofs) fail at once instead of waiting on a network.
  dns = await startTestDns();
  t = await startTestApp({ delivery: { ...loadConfig({}, {}).delivery, dnsServers: [dns.address], timeoutMs: 1000 } });
  base = new URL(t.url);
  const main = await t.customer({ name: 'fuzz-main' });
  const other = await t.customer({ name: 'fuzz-other' });
  const restricted = await t.customer({ name: 'fuzz-restricted', allowedEndpoints: ['wallets'] });
  const broke = await t.customer({ name: 'fuzz-broke', credits: 0n });
  fx.domains = Array.from({ length: 40 }, (_, i) => `d${i}.example.com`);
  const domainOwner = await t.customer({ name: 'fuzz-domains', domains: ['hooks.example.com', ...fx.domains] });
  fx.keys = { main: main.key, other: other.key, restricted: restricted.key, broke: broke.key };
  fx.domainKey = domainOwner.key;

  const txMined = '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined';
  fx.subscriptions = [
    await post(txMined, main.key, { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl }),
    await post('/blockchain-events/tron/nile/subscriptions/address-tokens-transactions-confirmed', main.key, {
      address: SAMPLE.tronAddress,
      callbackUrl: SAMPLE.callbackUrl,
    }),
    await post('/blockchain-events/ethereum/goerli/subscriptions/internal-transactions-for-specific-amount', main.key, {
      amountHigherThan: 1,
      callbackUrl: SAMPLE.callbackUrl,
    }),
  ];
  fx.otherSubscription = await post(txMined, other.key, { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl });
  fx.deletable = await Promise.all(
    Array.from({ length: 40 }, () => post(txMined, main.key, { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl, allowDuplicates: true })),
  );

  const since = Math.floor(Date.now() / 1000) - 3600;
  const recover = async (key: string, referenceId: string) => {
    const r = await t.request('POST', `/blockchain-events/subscriptions/${referenceId}/recover`, { key, body: { data: { item: { since } } } });
    if (r.status !== 202) throw new Error(`fixture recovery failed: ${r.status} ${r.text}`);
    return r.body.data.item.recoveryId as string;
  };
  fx.recovery = await recover(main.key, fx.subscriptions[0] as string);
  fx.otherRecovery = await recover(other.key, fx.otherSubscription);

  fx.walletId = await post('/wallet-as-a-service/wallets', main.key, { walletName: 'fuzz wallet' });
  fx.otherWalletId = await post('/wallet-as-a-service/wallets', other.key, { walletName: 'other wallet' });
  const watched = [
    { blockchain: 'tron', network: 'nile', address: SAMPLE.tronAddress },
    { blockchain: 'bitcoin', network: 'testnet', address: SAMPLE.btcTestnetAddress },
    ...Array.from({ length: 30 }, (_, i) => {
      const [blockchain, network] = ALL_PAIRS.filter(([b]) => EVM.includes(b))[i % 4] as [string, string];
      return { blockchain, network, address: randomEvmAddress() };
    }),
  ];
  for (const w of watched) await post(`/wallet-as-a-service/wallets/${fx.walletId}/${w.blockchain}/${w.network}/addresses`, main.key, { address: w.address });
  fx.watched = watched;
});

afterAll(async () => {
  agent.destroy();
  await t?.close();
  await dns?.close();
});

describe('fuzz: every answer is the contract envelope, never a 5xx', () => {
  ENDPOINTS.forEach((ep, index) => {
    it(`${ep.label} (${RUNS} generated requests)`, { timeout: 60_000 }, async () => {
      const seed = BASE_SEED + index;
      const generating = performance.now();
      const requests = fc.sample(requestArb(ep, fx.keys), { numRuns: RUNS, seed });
      const generated = Math.round(performance.now() - generating);
      const failures: Failure[] = [];
      const statuses = new Map<number, number>();
      let validSent = 0;
      const started = performance.now();
      await pool(requests, CONCURRENCY, async (r, i) => {
        if (r.valid) validSent++;
        let problems: string[];
        let answer: Answer | undefined;
        try {
          answer = await sendWithRetry(base, r);
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          problems = check(answer);
        } catch (error) {
          problems = [`no answer: ${(error as Error).message}`];
        }
        if (problems.length > 0) {
          failures.push({
            kind: `${problems.join(', ')}${answer ? ` (${answer.status} ${errorLabel(answer.text)})` : ''}`,
            text: `#${i}: ${problems.join(', ')}\n  request: ${describeRequest(r)}\n  answer: ${answer ? `${answer.status} ${show(answer.text, 400)}` : '(none)'}`,
          });
        }
      });
      const ms = Math.round(performance.now() - started);
      const summary = [...statuses.entries()]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}:${n}`)
        .join(' ');
      console.log(
        `${ep.label}: seed ${seed}, ${requests.length} requests (${validSent} valid) generated in ${generated} ms, sent in ${ms} ms; statuses ${summary}`,
      );

      const health = await sendWithRetry(base, { method: 'GET', path: '/healthz', headers: {}, chunked: false, valid: true });
      expect(health.status, 'GET /healthz after the run').toBe(200);

      if (failures.length > 0) expect.fail(report(failures, requests.length, `seed ${seed}; rerun this file with FUZZ_SEED=${BASE_SEED}`));
      expect(requests.length).toBe(RUNS);
      // The valid fifth must get through to the service at least sometimes, or the fuzzing stays shallow.
      const reached = (s: number) => (ep.deepest === undefined ? s >= 200 && s < 300 : s === ep.deepest || (s >= 200 && s < 300));
      expect([...statuses.keys()].some(reached), `some ${ep.deepest ?? '2xx'} among ${summary}`).toBe(true);
    });
  });

  it('malformed HTTP messages (raw bytes in the path, bad framing, huge headers) get an envelope, never a 5xx', { timeout: 30_000 }, async () => {
    const messages: string[] = [];
    const head = (method: string, target: string, extra = '') =>
      `${method} ${target} HTTP/1.1\r\nHost: x\r\nx-api-key: ${fx.keys.main}\r\n${extra}Connection: close\r\n\r\n`;
    // Bytes that HTTP does not allow unencoded in a request target, in each endpoint's parameter positions.
    const RAW_BYTES = ['é', '€'.repeat(300), '\u0000', ' ', '\u0001', '\u007f', 'a\tb', '\u00ff'];
    ENDPOINTS.forEach((ep, i) => {
      const sample = fc.sample(ep.valid(), { numRuns: 1, seed: BASE_SEED + i })[0] as ValidCase;
      const names = Object.keys(sample.params);
      for (const raw of RAW_BYTES) {
        const wire = Buffer.from(raw, 'utf8').toString('latin1');
        const target = names.length
          ? ep.template.replace(/:([a-zA-Z]+)/g, (_, name: string) => (name === names[names.length - 1] ? wire : pct(sample.params[name] ?? '')))
          : `${ep.template}?context=${wire}`;
        messages.push(head(ep.method, target));
      }
    });
    const wallets = '/wallet-as-a-service/wallets';
    messages.push(
      head('GET', '/wallet-as-a-service/wallets/all-assets', `x-junk: ${'k'.repeat(20_000)}\r\n`),
      head('POST', wallets, 'Content-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n').replace('\r\n\r\n', '\r\n\r\n0\r\n\r\n'),
      `${head('POST', wallets, 'Content-Type: application/json\r\nContent-Length: abc\r\n')}{}`,
      `${head('POST', wallets, 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n')}zz\r\n{}\r\n0\r\n\r\n`,
      head('GET', '/blockchain-events/callback-domains', 'bad header\r\n'),
      head('GET', '/blockchain-events/callback-domains', 'x-api-version: 2021\u000003-20\r\n'),
      'GET /blockchain-events/callback-domains HTTP/9.9\r\nHost: x\r\n\r\n',
      'BREW /blockchain-events/callback-domains HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /blockchain-events/callback-domains\r\n\r\n',
      '\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003',
    );

    const failures: Failure[] = [];
    await pool(messages, CONCURRENCY, async (message, i) => {
      const reply = await new Promise<string>((resolve) => {
        // No half-close: the server would end its side too and might not get to write its answer.
        const socket = net.connect(Number(base.port), base.hostname, () => socket.write(Buffer.from(message, 'latin1')));
        const chunks: Buffer[] = [];
        const done = () => resolve(Buffer.concat(chunks).toString('utf8'));
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('error', done);
        socket.on('close', done);
        socket.setTimeout(2_000, () => socket.destroy());
      });
      const [statusAndHeaders = '', ...rest] = reply.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = statusAndHeaders.split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
      const headers: http.IncomingHttpHeaders = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      // A connection closed without any answer is acceptable for bytes that are not HTTP at all.
      const problems = reply === '' ? [] : check({ status, headers, text: rest.join('\r\n\r\n') });
      if (problems.length > 0) {
        failures.push({
          kind: `${problems.join(', ')} (${status} ${errorLabel(rest.join(''))})`,
          text: `#${i}: ${problems.join(', ')}\n  request: ${show(JSON.stringify(message), 300)}\n  answer: ${show(JSON.stringify(reply), 400)}`,
        });
      }
    });
    const health = await sendWithRetry(base, { method: 'GET', path: '/healthz', headers: {}, chunked: false, valid: true });
    expect(health.status, 'GET /healthz after the run').toBe(200);
    if (failures.length > 0) expect.fail(report(failures, messages.length, 'fixed messages, no seed'));
  });
});

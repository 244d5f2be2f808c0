import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signCallback, signStandardWebhook, standardWebhookKey } from './signing.ts';

const key = 'a'.repeat(64);
const timestamp = 1_700_000_000;

// Computed here independently of signing.ts: the receiver's side of the contract.
function hmac(secret: string, message: Buffer, encoding: 'hex' | 'base64'): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(message).digest(encoding);
}

describe('signCallback', () => {
  it('matches a known vector', () => {
    const body = Buffer.from('{"apiVersion":"2021-03-20","referenceId":"r1"}');
    const headers = signCallback('s3cret', body, key, timestamp);
    expect(headers).toEqual({
      'x-signature': hmac('s3cret', body, 'hex'),
      'webhook-id': key,
      'webhook-timestamp': '1700000000',
      'webhook-signature': `v1,${hmac('s3cret', Buffer.from(`${key}.1700000000.${body.toString()}`), 'base64')}`,
    });
    expect(headers['x-signature']).toMatch(/^[0-9a-f]{64}$/);
  });

  it('matches the RFC 4231 HMAC-SHA256 test case 2', () => {
    // Fixed outside both implementations: key "Jefe", data "what do ya want for nothing?".
    const headers = signCallback('Jefe', Buffer.from('what do ya want for nothing?'), key, timestamp);
    expect(headers['x-signature']).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });

  it('signs the exact UTF-8 bytes of a non-ASCII body, and a non-ASCII secret as UTF-8', () => {
    const body = Buffer.from('{"token":{"name":"Tëst €","symbol":"日本"}}', 'utf8');
    const secret = 'clé-ü-🔑';
    const headers = signCallback(secret, body, key, timestamp);
    expect(headers['x-signature']).toBe(hmac(secret, body, 'hex'));
    const message = Buffer.concat([Buffer.from(`${key}.${timestamp}.`), body]);
    expect(headers['webhook-signature']).toBe(`v1,${hmac(secret, message, 'base64')}`);
    // Signing the latin1 reading of the same bytes would give something else: bytes are what counts.
    expect(headers['x-signature']).not.toBe(hmac(secret, Buffer.from(body.toString('latin1'), 'utf8'), 'hex'));
  });

  it('gives different signatures for different secrets', () => {
    const body = Buffer.from('{}');
    const a = signCallback('secret-a', body, key, timestamp);
    const b = signCallback('secret-b', body, key, timestamp);
    expect(a['x-signature']).not.toBe(b['x-signature']);
    expect(a['webhook-signature']).not.toBe(b['webhook-signature']);
  });

  it('binds the Standard Webhooks signature to id and timestamp, but not x-signature', () => {
    const body = Buffer.from('{}');
    const base = signCallback('s', body, key, timestamp);
    const later = signCallback('s', body, key, timestamp + 1);
    const otherId = signCallback('s', body, 'b'.repeat(64), timestamp);
    expect(later['x-signature']).toBe(base['x-signature']);
    expect(later['webhook-signature']).not.toBe(base['webhook-signature']);
    expect(otherId['webhook-signature']).not.toBe(base['webhook-signature']);
  });

  it('during a rotation: two v1 entries (new first) and x-signature-previous with the old secret', () => {
    const body = Buffer.from('{"n":1}');
    const headers = signCallback('new-secret', body, key, timestamp, 'old-secret');
    const message = Buffer.from(`${key}.${timestamp}.${body.toString()}`);
    expect(headers['x-signature']).toBe(hmac('new-secret', body, 'hex'));
    expect(headers['x-signature-previous']).toBe(hmac('old-secret', body, 'hex'));
    expect(headers['webhook-signature']).toBe(`v1,${hmac('new-secret', message, 'base64')} v1,${hmac('old-secret', message, 'base64')}`);
    // No previous secret (overlap over, or none), or the same one again: the single-secret headers.
    for (const previous of [null, undefined, '', 'new-secret']) {
      expect(signCallback('new-secret', body, key, timestamp, previous)).toEqual(signCallback('new-secret', body, key, timestamp));
    }
  });

  it.each([1.5, -1, Number.NaN])('refuses timestamp %s', (value) => {
    expect(() => signCallback('s', Buffer.from('{}'), key, value)).toThrow(RangeError);
  });
});

describe('signStandardWebhook', () => {
  it('takes a whsec_ secret as its base64-decoded bytes, any other as UTF-8 (the Standard Webhooks test vector)', () => {
    // The example of the Standard Webhooks specification (github.com/standard-webhooks, spec/standard-webhooks.md).
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = Buffer.from('{"test": 2432232314}');
    const headers = signStandardWebhook(standardWebhookKey(secret), body, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330);
    expect(headers['webhook-signature']).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    const plain = signStandardWebhook(standardWebhookKey('s3cret'), body, 'id', 1);
    expect(plain['webhook-signature']).toBe(`v1,${hmac('s3cret', Buffer.from(`id.1.${body.toString()}`), 'base64')}`);
  });
});

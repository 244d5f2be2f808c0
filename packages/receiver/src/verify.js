// verifyCallback: is this request a herald callback signed with one of your secrets? (docs/guides/verify-signatures.md)
// Plain JavaScript with nothing but node:crypto, so that the example receivers (examples/receivers/node) run it
// as it is, with no build; the types are in verify.d.ts.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Five minutes: a webhook-timestamp further from now than this is refused (a replayed request). */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

/** Why a request is not a genuine callback. `code` is stable; `message` is for people. */
export class VerificationError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'VerificationError';
    this.code = code;
  }
}

// Constant time: how long the comparison takes must not tell an attacker how many characters were right.
function same(expected, received) {
  const a = Buffer.from(expected);
  const b = Buffer.from(received ?? '');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A header of a Node request (lower-case keys), a fetch Headers object, or a plain object in any case. */
function headerOf(headers, name) {
  if (typeof headers?.get === 'function') return headers.get(name) ?? undefined;
  const direct = headers?.[name];
  if (direct !== undefined) return Array.isArray(direct) ? direct[0] : direct;
  const key = Object.keys(headers ?? {}).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value[0] : value;
}

const hmac = (secret, ...parts) => parts.reduce((mac, part) => mac.update(part), createHmac('sha256', secret));

/**
 * Why `rawBody` with `headers` is not a callback signed with one of `secrets`, as a VerificationError, or
 * null when it is one. Both signatures are checked: x-signature (hex HMAC-SHA256 of the raw body; during a
 * rotation herald also sends x-signature-previous, the old secret's) and the Standard Webhooks
 * webhook-signature (base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}", space-separated
 * "v1,..." entries), whose webhook-timestamp must be within `toleranceSeconds` of `now`.
 */
export function refusal({ rawBody, headers, secrets, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS, now = Date.now() }) {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody) : rawBody;
  const signature = headerOf(headers, 'x-signature');
  const previous = headerOf(headers, 'x-signature-previous');
  if (!signature) return new VerificationError('missing_signature', 'x-signature missing');
  const id = headerOf(headers, 'webhook-id');
  const timestamp = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) return new VerificationError('missing_signature', 'webhook-id, webhook-timestamp or webhook-signature missing');
  if (!/^\d+$/.test(timestamp) || Math.abs(now / 1000 - Number(timestamp)) > toleranceSeconds) {
    return new VerificationError('stale_timestamp', 'webhook-timestamp too far from now');
  }
  // Several secrets: the current one and, while you rotate, the one before (either may sign).
  let hexMatched = false;
  let webhookMatched = false;
  for (const secret of secrets) {
    const hex = hmac(secret, body).digest('hex');
    if (same(hex, signature) || same(hex, previous)) hexMatched = true;
    const expected = `v1,${hmac(secret, `${id}.${timestamp}.`, body).digest('base64')}`;
    if (signatures.split(' ').some((s) => same(expected, s))) webhookMatched = true;
  }
  if (!hexMatched) return new VerificationError('bad_signature', 'x-signature wrong');
  if (!webhookMatched) return new VerificationError('bad_signature', 'webhook-signature wrong');
  return null;
}

/**
 * The callback, parsed, when `rawBody` (the bytes as received: never a re-serialised object) and `headers`
 * are a callback signed with `secret` (or one of `secrets`); otherwise throws a VerificationError.
 */
export function verifyCallback({ rawBody, headers, secret, secrets, toleranceSeconds, now }) {
  const all = secrets ?? (secret === undefined ? [] : [secret]);
  if (all.length === 0) throw new TypeError('verifyCallback needs secret or secrets (the subscription callbackSecretKey)');
  const why = refusal({ rawBody, headers, secrets: all, toleranceSeconds, now });
  if (why) throw why;
  try {
    return JSON.parse(typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8'));
  } catch {
    throw new VerificationError('bad_body', 'the signed body is not JSON');
  }
}

/**
 * Callback signatures (contract section 4, "Signing"). Two schemes over the same key: `x-signature`, which
 * clients of the established hosted API check, and the Standard Webhooks headers, whose signed timestamp lets
 * receivers refuse replays.
 */
import { createHmac } from 'node:crypto';

export interface SignatureHeaders {
  'x-signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * x-signature = lowercase hex HMAC-SHA256(key = secret (utf8), message = body bytes). Standard Webhooks:
 * webhook-id = idempotencyKey, webhook-timestamp = unix seconds, webhook-signature = 'v1,' + base64
 * HMAC-SHA256(key = secret utf8, message = `${id}.${timestamp}.` + body).
 */
export function signCallback(secret: string, body: Buffer, idempotencyKey: string, timestampSeconds: number): SignatureHeaders {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    // A fractional or millisecond value would be signed as sent and then fail every receiver's tolerance check.
    throw new RangeError(`timestampSeconds must be whole Unix seconds, got ${timestampSeconds}`);
  }
  const timestamp = String(timestampSeconds);
  // The body is signed as the bytes that go on the wire, never re-serialised, so what the receiver hashes matches.
  const hex = createHmac('sha256', secret).update(body).digest('hex');
  // Standard Webhooks takes the key as the base64-decoded part after "whsec_"; the contract says "the same
  // key" as x-signature, i.e. the callbackSecretKey's UTF-8 bytes, so receivers configure one secret for both.
  const standard = createHmac('sha256', secret).update(`${idempotencyKey}.${timestamp}.`).update(body).digest('base64');
  return {
    'x-signature': hex,
    'webhook-id': idempotencyKey,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${standard}`,
  };
}

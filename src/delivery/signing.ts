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
  // The body is signed as the bytes that go on the wire, never re-serialised, so what the receiver hashes matches.
  const hex = createHmac('sha256', secret).update(body).digest('hex');
  // Standard Webhooks takes the key as the base64-decoded part after "whsec_"; the contract says "the same
  // key" as x-signature, i.e. the callbackSecretKey's UTF-8 bytes, so receivers configure one secret for both.
  return { 'x-signature': hex, ...signStandardWebhook(Buffer.from(secret, 'utf8'), body, idempotencyKey, timestampSeconds) };
}

export type StandardWebhookHeaders = Pick<SignatureHeaders, 'webhook-id' | 'webhook-timestamp' | 'webhook-signature'>;

/**
 * The Standard Webhooks headers alone: webhook-signature = 'v1,' + base64 HMAC-SHA256(key, `${id}.${timestamp}.` + body).
 */
export function signStandardWebhook(key: Buffer, body: Buffer, id: string, timestampSeconds: number): StandardWebhookHeaders {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    // A fractional or millisecond value would be signed as sent and then fail every receiver's tolerance check.
    throw new RangeError(`timestampSeconds must be whole Unix seconds, got ${timestampSeconds}`);
  }
  const timestamp = String(timestampSeconds);
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}

/**
 * The HMAC key of a Standard Webhooks secret: "whsec_<base64>" is the base64-decoded bytes (the form the
 * Standard Webhooks libraries generate and verify with); any other string is its UTF-8 bytes.
 */
export function standardWebhookKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

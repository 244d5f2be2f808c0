/**
 * Callback signatures (docs/reference/events/README.md#signatures). Two schemes over the same key: `x-signature`, which
 * clients of the established hosted API check, and the Standard Webhooks headers, whose signed timestamp lets
 * receivers refuse replays.
 */
import { createHmac } from 'node:crypto';

export interface SignatureHeaders {
  'x-signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  /** During a secret rotation's overlap: x-signature computed with the secret being replaced. */
  'x-signature-previous'?: string;
}

/**
 * x-signature = lowercase hex HMAC-SHA256(key = secret (utf8), message = body bytes). Standard Webhooks:
 * webhook-id = idempotencyKey, webhook-timestamp = unix seconds, webhook-signature = 'v1,' + base64
 * HMAC-SHA256(key = secret utf8, message = `${id}.${timestamp}.` + body).
 *
 * With `previousSecret` (a rotation's overlap), both secrets sign: webhook-signature lists two
 * space-separated `v1,` entries, the new one first (Standard Webhooks receivers accept any entry that
 * verifies), and x-signature-previous carries the old key's x-signature beside the new one's.
 */
export function signCallback(secret: string, body: Buffer, idempotencyKey: string, timestampSeconds: number, previousSecret?: string | null): SignatureHeaders {
  // The body is signed as the bytes that go on the wire, never re-serialised, so what the receiver hashes matches.
  const hex = (key: string) => createHmac('sha256', key).update(body).digest('hex');
  // Standard Webhooks takes the key as the base64-decoded part after "whsec_"; the contract says "the same
  // key" as x-signature, i.e. the callbackSecretKey's UTF-8 bytes, so receivers configure one secret for both.
  const headers: SignatureHeaders = { 'x-signature': hex(secret), ...signStandardWebhook(Buffer.from(secret, 'utf8'), body, idempotencyKey, timestampSeconds) };
  if (previousSecret && previousSecret !== secret) {
    const previous = signStandardWebhook(Buffer.from(previousSecret, 'utf8'), body, idempotencyKey, timestampSeconds);
    headers['webhook-signature'] = `${headers['webhook-signature']} ${previous['webhook-signature']}`;
    headers['x-signature-previous'] = hex(previousSecret);
  }
  return headers;
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

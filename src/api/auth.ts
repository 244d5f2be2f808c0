/**
 * Who is calling: the x-api-key header resolved to its customer and plan, the per-key rate limit, and
 * the key's endpoint restriction. Runs before the body is read, so an unauthorised caller costs little.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import type { AccessCache } from '../services/access.ts';
import type { KeyOwner } from '../store/customers.ts';

/**
 * Token bucket per API key, in this process: `requestsPerSecond` tokens refill each second and the
 * bucket holds at most one second's worth, so a burst of that size passes. With several API processes
 * behind a balancer, each enforces the limit on its own share of the traffic.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Takes one token; returns 0 when allowed, else the seconds to wait (for Retry-After). */
  take(keyId: string, perSecond: number): number {
    const now = this.now();
    const bucket = this.buckets.get(keyId) ?? { tokens: perSecond, at: now };
    bucket.tokens = Math.min(perSecond, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    this.buckets.set(keyId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond));
  }
}

/**
 * The caller of a request. options.billing false (billing.enabled, docs/operations/single-tenant.md): the
 * plan's limits on mainnets and active subscriptions do not apply; the request rate does.
 */
export async function authenticate(
  access: AccessCache,
  limiter: RateLimiter,
  request: FastifyRequest,
  endpoint: string,
  options: { billing: boolean } = { billing: true },
): Promise<KeyOwner> {
  const header = request.headers['x-api-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (!key) throw new ApiError('missing_api_key', 'Send your API key in the x-api-key header.');
  // Keys we issue are short; a long value cannot be one and is not worth hashing.
  const owner = key.length <= 200 ? await access.keyOwner(key) : undefined;
  if (!owner)
    throw new ApiError('invalid_api_key', 'The API key is unknown or has been revoked. Check the x-api-key header, or ask the operator for a new key.');
  const wait = limiter.take(owner.keyId, owner.requestsPerSecond);
  if (wait > 0) {
    throw new ApiError(
      'request_limit_reached',
      `This API key may make ${owner.requestsPerSecond} requests per second. Retry after ${wait} second${wait > 1 ? 's' : ''}.`,
      undefined,
      { 'retry-after': String(wait) },
    );
  }
  if (owner.allowedEndpoints && !owner.allowedEndpoints.includes(endpoint)) {
    throw new ApiError(
      'endpoint_not_allowed_for_api_key',
      `This API key is restricted to: ${owner.allowedEndpoints.join(', ')}. The '${endpoint}' endpoint needs another key.`,
    );
  }
  return options.billing ? owner : { ...owner, mainnetAllowed: true, maxActiveSubscriptions: null };
}

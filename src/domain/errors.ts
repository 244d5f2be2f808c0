/**
 * The closed set of API error codes (docs/reference/errors.md) and the one table that maps each to its HTTP
 * status. Services throw ApiError; the API layer turns it into the error envelope. Anything that is not
 * an ApiError becomes a bare 500 `unexpected_server_error`, logged with the requestId.
 */

export const ERROR_STATUS = {
  uri_not_found: 400,
  invalid_pagination: 400,
  limit_greater_than_allowed: 400,
  invalid_api_version: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  invalid_operator_token: 401,
  insufficient_credits: 402,
  feature_mainnets_not_allowed_for_plan: 403,
  blockchain_events_callbacks_limit_reached: 403,
  endpoint_not_allowed_for_api_key: 403,
  resource_not_found: 404,
  blockchain_data_address_event_subscription_not_found: 404,
  blockchain_data_block_not_found: 404,
  already_exists: 409,
  callback_url_not_verified: 409,
  pull_only_subscription: 409,
  domain_verification_failed: 409,
  missing_required_attributes: 409,
  invalid_data: 409,
  extra_body_attributes: 409,
  extra_query_attributes: 409,
  bad_json: 409,
  missing_request_body: 409,
  request_entity_too_large: 413,
  unsupported_media_type: 415,
  cursor_expired: 410,
  invalid_request_body_structure: 422,
  request_limit_reached: 429,
  unexpected_server_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  attribute: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    /** Extra response headers, e.g. Retry-After on 429. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
  }
}

export function notFound(what: string, id: string): ApiError {
  return new ApiError('resource_not_found', `No ${what} with id '${truncate(id)}' exists for this API key's customer.`);
}

export function invalidData(details: ErrorDetail[]): ApiError {
  const first = details[0]?.message ?? 'The request data is invalid.';
  const more = details.length > 1 ? ` (${details.length - 1} more problem${details.length > 2 ? 's' : ''} in details)` : '';
  return new ApiError('invalid_data', `${first}${more}`, details);
}

/** 409 callback_url_not_verified: `message` says which host and what to do; its detail names callbackUrl. */
export function callbackUrlNotVerified(message: string): ApiError {
  return new ApiError('callback_url_not_verified', message, [{ attribute: 'callbackUrl', message }]);
}

/**
 * 409 pull_only_subscription: `action` (a test callback, a resend, a recovery, a replay, a secret rotation)
 * needs a callbackUrl, and this subscription has none: its events are read from the event stream
 * (docs/concepts/event-stream.md#pull-only-subscriptions).
 */
export function pullOnlySubscription(id: string, action: string): ApiError {
  const message = `Subscription '${truncate(id)}' is pull-only (created with pullOnly: true, no callbackUrl): ${action} does not apply to it, no callback is ever sent. Read its events from the event stream (GET /blockchain-events/events?referenceId=${truncate(id)}) from your last cursor.`;
  return new ApiError('pull_only_subscription', message, [{ attribute: 'referenceId', message }]);
}

/** Shorten user input before putting it in a message, so a 64 KiB value never comes back whole. */
export function truncate(value: string, max = 60): string {
  return value.length > max ? `${value.slice(0, max)}...` : value;
}

/**
 * The error answers of the OpenAPI document. A route's schema gives its success answer; this adds every
 * error status the operation can answer with, each with the error envelope whose `code` is limited to
 * the codes of that status (statuses from ERROR_STATUS, the table the server answers with).
 *
 * The codes come from what the route has, which is what the request life cycle in server.ts checks
 * (an API key, path parameters, a query string, a body), plus `config.errors`: the codes the route's
 * service throws. A route that gains a check its service makes must name the code there; the
 * response-validation test (test/openapi.test.ts) fails on any answer the document does not list.
 */
import type { SwaggerOptions } from '@fastify/swagger';
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifySchema, RouteOptions } from 'fastify';
import { ERROR_STATUS, type ErrorCode } from '../domain/errors.ts';
import { webhooks } from './callback-schemas.ts';
import { API_VERSION, errorEnvelope } from './schemas.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Error codes the route's service can answer with, beyond those its schema and API key imply. */
    errors?: readonly ErrorCode[];
  }
}

/** Any request can meet these: a pinned version we do not serve, a bug, a server shutting down. */
const EVERY_ROUTE: readonly ErrorCode[] = ['invalid_api_version', 'unexpected_server_error', 'service_unavailable'];
/** onRequest: authentication, rate limit, key restriction. */
const WITH_API_KEY: readonly ErrorCode[] = ['missing_api_key', 'invalid_api_key', 'request_limit_reached', 'endpoint_not_allowed_for_api_key'];
/** The /operator/* routes: an operator token instead of an API key. */
const WITH_OPERATOR_TOKEN: readonly ErrorCode[] = ['invalid_operator_token'];
/** A path parameter that names nothing here: an unsupported chain or pair, a malformed id, a NUL, an overlong segment. */
const WITH_PATH_PARAMS: readonly ErrorCode[] = ['uri_not_found'];
/** An unknown query parameter, or a context over 100 characters. */
const WITH_QUERY: readonly ErrorCode[] = ['extra_query_attributes', 'invalid_data'];
const WITH_PAGINATION: readonly ErrorCode[] = ['invalid_pagination', 'limit_greater_than_allowed'];
/**
 * A method that may carry a body: whatever body is sent is parsed (JSON only, 64 KiB at most, nested no
 * deeper than the route's schema allows: invalid_request_body_structure), even where none is needed.
 */
const WITH_PARSED_BODY: readonly ErrorCode[] = ['bad_json', 'unsupported_media_type', 'request_entity_too_large', 'invalid_request_body_structure'];
/** Validating the body `{ context?, data: { item } }` of a route that needs one. */
const WITH_BODY: readonly ErrorCode[] = [
  'missing_request_body',
  'invalid_request_body_structure',
  'missing_required_attributes',
  'extra_body_attributes',
  'invalid_data',
];

interface RouteSchema {
  hide?: boolean;
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  response?: Record<string, TSchema>;
}

/** Every error code the route can answer with. */
function errorCodesOf(method: string, schema: RouteSchema, config: RouteOptions['config']): ErrorCode[] {
  const codes = new Set<ErrorCode>(EVERY_ROUTE);
  const add = (list: readonly ErrorCode[]) => {
    for (const code of list) codes.add(code);
  };
  if (config?.endpoint) add(WITH_API_KEY);
  if (config?.operator) add(WITH_OPERATOR_TOKEN);
  if (schema.params) add(WITH_PATH_PARAMS);
  if (schema.querystring) add(WITH_QUERY);
  if (schema.querystring?.properties?.limit) add(WITH_PAGINATION);
  if (method !== 'GET' && method !== 'HEAD') add(WITH_PARSED_BODY);
  if (schema.body) add(WITH_BODY);
  add(config?.errors ?? []);
  return [...codes];
}

/** The codes grouped by status, in the order of ERROR_STATUS. */
function byStatus(codes: readonly ErrorCode[]): Map<number, ErrorCode[]> {
  const groups = new Map<number, ErrorCode[]>();
  for (const code of Object.keys(ERROR_STATUS) as ErrorCode[]) {
    if (!codes.includes(code)) continue;
    const status = ERROR_STATUS[code];
    groups.set(status, [...(groups.get(status) ?? []), code]);
  }
  return new Map([...groups].sort(([a], [b]) => a - b));
}

function errorResponse(codes: readonly ErrorCode[]): TSchema {
  const description = `Error envelope; error.code is one of: ${codes.join(', ')}.`;
  const schema: TSchema & { headers?: Record<string, TSchema> } = errorEnvelope(codes, { description });
  if (codes.includes('request_limit_reached')) {
    schema.headers = { 'retry-after': Type.Integer({ description: 'Seconds to wait before the next request.' }) };
  }
  return schema;
}

/**
 * @fastify/swagger's `transform`: the route's schema with its error answers added to `response`. The
 * route's own schema object is left as it is (Fastify serialises the success answer with it).
 */
export function withErrorResponses({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }): {
  schema: FastifySchema;
  url: string;
} {
  const routeSchema = schema as RouteSchema | undefined;
  if (!routeSchema || routeSchema.hide) return { schema, url };
  const errors: Record<string, TSchema> = {};
  for (const [status, codes] of byStatus(errorCodesOf(String(route.method), routeSchema, route.config))) errors[String(status)] = errorResponse(codes);
  const security = route.config?.operator ? { security: [{ operatorToken: [] }] } : {};
  return { schema: { ...routeSchema, ...security, response: { ...routeSchema.response, ...errors } }, url };
}

/**
 * The document served at /openapi.json: OpenAPI 3.1 (JSON Schema 2020-12, so `webhooks` can describe the
 * callbacks), every route's schema with its error answers, and one webhook per callback event.
 */
export const swaggerOptions: SwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'herald: blockchain event callbacks and wallet assets',
      version: API_VERSION,
      description:
        "Every response is an envelope { apiVersion, requestId, context?, data | error }. Authenticate with the x-api-key header. The callbacks herald POSTs to a subscription's callbackUrl are the webhooks. Reference: docs/reference/api.md and docs/reference/events/ in herald's repository.",
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        operatorToken: { type: 'http', scheme: 'bearer', description: 'An operator token (herald operator-tokens create), for the /operator/* routes.' },
      },
    },
    security: [{ apiKey: [] }],
    webhooks: webhooks(),
  },
  transform: withErrorResponses,
};

/** herald's mark for the rendered document (/docs), in place of the framework's logo. */
const HERALD_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="150" height="40" viewBox="0 0 150 40" role="img" aria-label="herald">
<circle cx="20" cy="20" r="6" fill="#ffffff"/><path d="M8 8a17 17 0 0 0 0 24M32 8a17 17 0 0 1 0 24" stroke="#ffffff" stroke-width="3" fill="none" stroke-linecap="round"/>
<text x="44" y="28" font-family="system-ui, sans-serif" font-size="24" font-weight="600" fill="#ffffff">herald</text></svg>`;

export const swaggerUiOptions: FastifySwaggerUiOptions = {
  routePrefix: '/docs',
  logo: { type: 'image/svg+xml', content: HERALD_LOGO, href: '/docs', target: '_self' },
  theme: {
    title: 'herald API reference',
    favicon: [{ filename: 'herald.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: HERALD_LOGO.replaceAll('#ffffff', '#1f2937') }],
  },
};

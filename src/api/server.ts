/**
 * The HTTP server: Fastify with the contract's envelope on every answer. Request life cycle:
 *   onRequest     request id, draining (503), API version, authentication, rate limit, key restriction
 *   (parse)       JSON only, 64 KiB at most (bulk: 16 MiB), nested no deeper than the route's schema allows
 *   preValidation blockchain/network pair of the endpoint, body present
 *   (validate)    TypeBox schemas; failures mapped to the contract's codes
 *   handler       a service call, then the envelope with the x-credits-* headers
 */
import type { Duplex } from 'node:stream';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Logger } from 'pino';
import { type Blockchain, CHAINS, isBlockchain, isNetwork, NETWORKS, supportsNetwork } from '../domain/chains.ts';
import { ApiError, type ErrorDetail, truncate } from '../domain/errors.ts';
import type { Metrics } from '../metrics.ts';
import type { Caller, Common } from '../services/context.ts';
import { authenticate, RateLimiter } from './auth.ts';
import { bodyDepthLimit, nestsDeeperThan } from './body-depth.ts';
import { consoleRoutes } from './console-assets.ts';
import { handleError, newRequestId, sendError } from './envelope.ts';
import { swaggerOptions, swaggerUiOptions } from './openapi.ts';
import { authenticateOperator } from './operator-auth.ts';
import { accountRoutes } from './routes/account.ts';
import { bulkSubscriptionRoutes } from './routes/bulk-subscriptions.ts';
import { callbackDataRoutes } from './routes/callback-data.ts';
import { callbackRoutes } from './routes/callbacks.ts';
import { domainRoutes } from './routes/domains.ts';
import { eventTypeRoutes } from './routes/event-types.ts';
import { eventStreamRoutes } from './routes/events.ts';
import { operationsRoutes } from './routes/operations.ts';
import { operatorRoutes } from './routes/operator.ts';
import { recoveryRoutes } from './routes/recoveries.ts';
import { replayRoutes } from './routes/replays.ts';
import { statusRoutes } from './routes/status.ts';
import { rotateSecretRoutes, subscriptionRoutes } from './routes/subscriptions.ts';
import { walletRoutes } from './routes/wallets.ts';
import { xpubRoutes } from './routes/xpub.ts';
import { API_VERSION, ErrorEnvelope } from './schemas.ts';
import { validatorCompiler } from './validation.ts';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
    /** The operator token's name, on the /operator/* routes. */
    operator: string;
  }
  interface FastifyContextConfig {
    /** Endpoint name for key restrictions; routes without one need no API key. */
    endpoint?: string;
    /** Blockchains the route's :blockchain accepts (with their networks). */
    chains?: readonly Blockchain[];
    /** An operator route: needs an operator token (Authorization: Bearer), not an API key. */
    operator?: boolean;
  }
}

/** 400 uri_not_found naming the attribute, for a blockchain or network the endpoint does not take. */
function checkChainPair(params: Record<string, string>, chains: readonly Blockchain[]): ApiError | undefined {
  const { blockchain = '', network = '' } = params;
  const details: ErrorDetail[] = [];
  const knownChain = isBlockchain(blockchain) && chains.includes(blockchain);
  if (!knownChain) details.push({ attribute: 'blockchain', message: `'${truncate(blockchain)}' is not supported here; use one of: ${chains.join(', ')}.` });
  if (!isNetwork(network)) {
    const use = knownChain
      ? `use one of: ${CHAINS[blockchain].networks.join(', ')}`
      : `use mainnet or one of the chain's test networks (${NETWORKS.slice(1).join(', ')})`;
    details.push({ attribute: 'network', message: `'${truncate(network)}' is not a network; ${use}.` });
  } else if (knownChain && !supportsNetwork(blockchain, network)) {
    details.push({ attribute: 'network', message: `${blockchain} has no network '${network}'; use one of: ${CHAINS[blockchain].networks.join(', ')}.` });
  }
  return details.length ? new ApiError('uri_not_found', details.map((d) => d.message).join(' '), details) : undefined;
}

/** Parsed JSON bodies whose text had no \u0000 escape: no NUL anywhere in them (see the JSON parser below). */
const bodiesWithoutNul = new WeakSet<object>();

/**
 * PostgreSQL text cannot hold U+0000, and no identifier, address, URL or name needs it: refuse it at
 * the edge with the attribute named, instead of letting the database fail.
 */
function rejectNulCharacters(params: Record<string, string> | undefined, body: unknown): void {
  for (const [name, value] of Object.entries(params ?? {})) {
    if (value.includes('\0')) throw new ApiError('uri_not_found', `The path parameter '${name}' contains a NUL character.`);
  }
  if (body !== null && typeof body === 'object' && bodiesWithoutNul.has(body)) return;
  // Iterative, not recursive: a hostile body may nest thousands of levels deep. An attribute is named
  // by its path down to the item's own field (`data.item.x.y.z` is reported as `x`).
  const details: ErrorDetail[] = [];
  const stack: { value: unknown; attribute: string; depth: number }[] = [{ value: body, attribute: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, attribute, depth } = stack.pop() as (typeof stack)[number];
    if (typeof value === 'string') {
      if (value.includes('\0') && !details.some((d) => d.attribute === (attribute || '(body)'))) {
        details.push({ attribute: attribute || '(body)', message: 'must not contain NUL (U+0000) characters' });
      }
    } else if (value && typeof value === 'object') {
      const inItem = attribute === 'data.item';
      for (const [key, inner] of Object.entries(value)) {
        const named = depth < 2 && !inItem ? (attribute ? `${attribute}.${key}` : key) : inItem ? key : attribute;
        stack.push({ value: inner, attribute: named, depth: depth + 1 });
      }
    }
  }
  if (details.length > 0) {
    throw new ApiError(
      'invalid_data',
      `The attribute '${details[0]?.attribute}' contains a NUL (U+0000) character, which is not accepted.`,
      details.map((d) => ({ attribute: d.attribute, message: `The attribute '${d.attribute}' ${d.message}.` })),
    );
  }
}

/** Bytes that are not HTTP at all (bad request line, header overflow, broken chunking) still get an envelope. */
function answerMalformedHttp(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) return;
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const requestId = newRequestId();
  const body = JSON.stringify({
    apiVersion: API_VERSION,
    requestId,
    error: tooLarge
      ? { code: 'request_entity_too_large', message: 'The request headers are larger than 16 KiB.' }
      : { code: 'uri_not_found', message: 'The request is not valid HTTP/1.1; check the request line, headers and body framing.' },
  });
  const status = tooLarge ? '413 Payload Too Large' : '400 Bad Request';
  socket.end(
    `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${requestId}\r\nx-api-version: ${API_VERSION}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * A request that reaches a draining server (on a connection kept alive, or pipelined): the probes keep
 * their own shape and say unavailable; everything else gets 503 service_unavailable in the envelope, with
 * Retry-After, and the connection is closed so the client's next try goes to a live instance.
 */
function answerWhileClosing(request: FastifyRequest, reply: FastifyReply) {
  reply.header('connection', 'close');
  if (PROBES.has(request.routeOptions.url ?? '')) return reply.code(503).send({ status: 'unavailable', reason: 'The server is shutting down.' });
  throw new ApiError('service_unavailable', 'The server is shutting down. Retry in a moment; another instance or the restarted one will answer.', undefined, {
    'retry-after': '1',
  });
}

const PROBES = new Set(['/healthz', '/readyz']);

export async function buildServer(common: Common, options: { logger: Logger; metrics: Metrics }): Promise<FastifyInstance> {
  const { config } = common;
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    // Per-request lines are ours (onResponse below, when logRequests is on): at thousands of requests a
    // second Fastify's two lines per request would dominate the CPU.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: newRequestId,
    bodyLimit: config.bodyLimit,
    // Requests that arrive while the server drains are answered in the envelope (onRequest below).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // A path that is not valid percent-encoding, or a path segment over 500 characters, names no
    // endpoint: answer in the envelope like any other unknown path.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      reply.header('x-api-version', API_VERSION);
      const reason = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'has a path segment longer than 500 characters' : 'is not a valid URL path';
      return sendError(request, reply, new ApiError('uri_not_found', `The request path ${reason}. See /openapi.json for the endpoints.`));
    },
    clientErrorHandler: answerMalformedHttp,
  });
  // JSON only: Fastify would otherwise accept text/plain bodies as strings.
  app.removeContentTypeParser('text/plain');
  // Clients send 'Content-Type: application/json' on every request, also on POSTs and DELETEs that take
  // no body (delete, activate, verify, resend, test): an empty body is no body. Endpoints that need one
  // still answer missing_request_body (preValidation below).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body.length === 0) return done(null, undefined);
    // Before JSON.parse: a body nested deeper than the route's schema allows is refused from its first
    // characters (body-depth.ts), instead of being parsed into millions of nested arrays.
    const depth = bodyDepthLimit(request.routeOptions.schema?.body);
    if (nestsDeeperThan(body as string, depth)) {
      return done(
        new ApiError(
          'invalid_request_body_structure',
          `The request body nests objects or arrays more than ${depth} levels deep, deeper than this endpoint's body can be; send { "data": { "item": { ... } } } with the attributes the endpoint documents.`,
        ),
        undefined,
      );
    }
    return parseJson(request, body as string, (error, parsed) => {
      // JSON text holds a NUL only as the escape \u0000 (a raw one is invalid JSON): a text without that
      // escape needs no walk of its parsed values (a bulk body's walk held the event loop for tens of ms).
      if (!error && parsed !== null && typeof parsed === 'object' && !(body as string).includes('\\u0000')) bodiesWithoutNul.add(parsed);
      done(error, parsed);
    });
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler(handleError(config.bodyLimit));
  app.addSchema(ErrorEnvelope);
  app.setNotFoundHandler((request, reply) =>
    sendError(
      request,
      reply,
      new ApiError(
        'uri_not_found',
        `There is no endpoint ${request.method} ${truncate(request.url.split('?')[0] ?? '', 120)}. See /openapi.json for the list.`,
      ),
    ),
  );

  await app.register(swagger, swaggerOptions);
  await app.register(swaggerUi, swaggerUiOptions);

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  const limiter = new RateLimiter();
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-api-version', API_VERSION);
    if (closing) return answerWhileClosing(request, reply);
    const pinned = request.headers['x-api-version'];
    if (pinned !== undefined && pinned !== API_VERSION) {
      throw new ApiError('invalid_api_version', `API version '${truncate(String(pinned))}' is not served here; the only version is ${API_VERSION}.`);
    }
    if (request.is404) return;
    if (request.routeOptions.config?.operator) {
      request.operator = await authenticateOperator(common, request);
      return;
    }
    const endpoint = request.routeOptions.config?.endpoint;
    if (!endpoint) return;
    const owner = await authenticate(common.access, limiter, request, endpoint, { billing: config.billing.enabled });
    request.caller = { owner, endpoint, apiVersion: API_VERSION, requestId: request.id };
  });

  if (!config.billing.enabled) {
    // Single-tenant (docs/operations/single-tenant.md): calls are free, so no answer reports credits.
    app.addHook('onSend', async (_request, reply) => {
      reply.removeHeader('x-credits-consumed');
      reply.removeHeader('x-credits-available');
    });
  }

  app.addHook('preValidation', async (request) => {
    const chains = request.routeOptions.config?.chains;
    if (chains) {
      const error = checkChainPair(request.params as Record<string, string>, chains);
      if (error) throw error;
    }
    if (request.routeOptions.schema?.body && (request.body === undefined || request.body === null)) {
      throw new ApiError('missing_request_body', 'This endpoint needs a JSON body: { "data": { "item": { ... } } }.');
    }
    rejectNulCharacters(request.params as Record<string, string>, request.body);
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    options.metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    options.metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    if (config.logRequests) {
      request.log.info(
        { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
        'request completed',
      );
    }
  });

  subscriptionRoutes(app, common);
  xpubRoutes(app, common);
  bulkSubscriptionRoutes(app, common);
  rotateSecretRoutes(app, common);
  recoveryRoutes(app, common);
  replayRoutes(app, common);
  walletRoutes(app, common);
  domainRoutes(app, common);
  callbackRoutes(app, common);
  eventTypeRoutes(app, common);
  eventStreamRoutes(app, common);
  callbackDataRoutes(app, common);
  statusRoutes(app, common);
  accountRoutes(app, common);
  operatorRoutes(app, common);
  operationsRoutes(app, common, options.metrics);
  consoleRoutes(app);
  return app;
}

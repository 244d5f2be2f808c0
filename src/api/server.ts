/**
 * The HTTP server: Fastify with the contract's envelope on every answer. Request life cycle:
 *   onRequest     request id, API version, authentication, rate limit, key restriction
 *   (parse)       JSON only, 64 KiB at most
 *   preValidation blockchain/network pair of the endpoint, body present
 *   (validate)    TypeBox schemas; failures mapped to the contract's codes
 *   handler       a service call, then the envelope with the x-credits-* headers
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Logger } from 'pino';
import { type Blockchain, CHAINS, isBlockchain, isNetwork, supportsNetwork } from '../domain/chains.ts';
import { ApiError, type ErrorDetail, truncate } from '../domain/errors.ts';
import type { Metrics } from '../metrics.ts';
import type { Caller, Common } from '../services/context.ts';
import { authenticate, RateLimiter } from './auth.ts';
import { handleError, newRequestId, sendError } from './envelope.ts';
import { domainRoutes } from './routes/domains.ts';
import { operationsRoutes } from './routes/operations.ts';
import { subscriptionRoutes } from './routes/subscriptions.ts';
import { walletRoutes } from './routes/wallets.ts';
import { API_VERSION, ErrorEnvelope } from './schemas.ts';
import { validatorCompiler } from './validation.ts';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
  interface FastifyContextConfig {
    /** Endpoint name for key restrictions; routes without one need no API key. */
    endpoint?: string;
    /** Blockchains the route's :blockchain accepts (with their networks). */
    chains?: readonly Blockchain[];
  }
}

/** 400 uri_not_found naming the attribute, for a blockchain or network the endpoint does not take. */
function checkChainPair(params: Record<string, string>, chains: readonly Blockchain[]): ApiError | undefined {
  const { blockchain = '', network = '' } = params;
  const details: ErrorDetail[] = [];
  const knownChain = isBlockchain(blockchain) && chains.includes(blockchain);
  if (!knownChain) details.push({ attribute: 'blockchain', message: `'${truncate(blockchain)}' is not supported here; use one of: ${chains.join(', ')}.` });
  if (!isNetwork(network)) details.push({ attribute: 'network', message: `'${truncate(network)}' is not a network; use mainnet or the chain's test network.` });
  else if (knownChain && !supportsNetwork(blockchain, network)) {
    details.push({ attribute: 'network', message: `${blockchain} has no network '${network}'; use one of: ${CHAINS[blockchain].networks.join(', ')}.` });
  }
  return details.length ? new ApiError('uri_not_found', details.map((d) => d.message).join(' '), details) : undefined;
}

export async function buildServer(common: Common, options: { logger: Logger; metrics: Metrics }): Promise<FastifyInstance> {
  const { config, db } = common;
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    // Per-request lines are ours (onResponse below, when logRequests is on): at thousands of requests a
    // second Fastify's two lines per request would dominate the CPU.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: newRequestId,
    bodyLimit: config.bodyLimit,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
  });
  // JSON only: Fastify would otherwise accept text/plain bodies as strings.
  app.removeContentTypeParser('text/plain');
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

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'herald: blockchain event callbacks and wallet assets',
        version: API_VERSION,
        description: 'Every response is an envelope { apiVersion, requestId, context?, data | error }. Authenticate with the x-api-key header.',
      },
      components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } } },
      security: [{ apiKey: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const limiter = new RateLimiter();
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-api-version', API_VERSION);
    const pinned = request.headers['x-api-version'];
    if (pinned !== undefined && pinned !== API_VERSION) {
      throw new ApiError('invalid_api_version', `API version '${truncate(String(pinned))}' is not served here; the only version is ${API_VERSION}.`);
    }
    const endpoint = request.routeOptions.config?.endpoint;
    if (!endpoint || request.is404) return;
    request.caller = { owner: await authenticate(db, limiter, request, endpoint), apiVersion: API_VERSION };
  });

  app.addHook('preValidation', async (request) => {
    const chains = request.routeOptions.config?.chains;
    if (chains) {
      const error = checkChainPair(request.params as Record<string, string>, chains);
      if (error) throw error;
    }
    if (request.routeOptions.schema?.body && (request.body === undefined || request.body === null)) {
      throw new ApiError('missing_request_body', 'This endpoint needs a JSON body: { "data": { "item": { ... } } }.');
    }
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
  walletRoutes(app, common);
  domainRoutes(app, common);
  operationsRoutes(app, common, options.metrics);
  return app;
}

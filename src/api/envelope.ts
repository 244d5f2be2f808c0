/**
 * The response envelope of every answer, success or error: apiVersion, requestId, context, and data or
 * error. Also the mapping of every failure (ours, Fastify's, unknown) to the contract's error codes.
 */
import { randomFillSync } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, truncate } from '../domain/errors.ts';
import type { DbError } from '../store/db.ts';
import { MAX_BODY_DEPTH, nestsDeeperThan } from './body-depth.ts';
import { API_VERSION } from './schemas.ts';
import { validationFailure } from './validation.ts';

/**
 * Random bytes for request ids, drawn 256 ids at a time: one getrandom call per id was about 4 % of
 * the server's CPU under the subscribe load (profiled 2026-11-25).
 */
const ID_BYTES = 12;
const idPool = Buffer.alloc(ID_BYTES * 256);
let idPoolUsed = idPool.length;

export function newRequestId(): string {
  if (idPoolUsed === idPool.length) {
    randomFillSync(idPool);
    idPoolUsed = 0;
  }
  idPoolUsed += ID_BYTES;
  return idPool.toString('hex', idPoolUsed - ID_BYTES, idPoolUsed);
}

/** The client's context: the query value wins over the body's; only a valid one is echoed. */
export function contextOf(request: FastifyRequest): string | undefined {
  const fromQuery = (request.query as Record<string, unknown> | undefined)?.context;
  if (typeof fromQuery === 'string') return fromQuery.length <= 100 ? fromQuery : undefined;
  const body = (request.body ?? unparsedBodies.get(request)) as Record<string, unknown> | undefined;
  const fromBody = body && typeof body === 'object' ? body.context : undefined;
  return typeof fromBody === 'string' && fromBody.length <= 100 ? fromBody : undefined;
}

/** Bodies read only to answer an error with their context (see readUnparsedBody). */
const unparsedBodies = new WeakMap<FastifyRequest, unknown>();

/**
 * Errors raised before the body is read (API version, key, rate limit, key restriction, media type,
 * draining) still echo the body's context: the body is read here, up to the body limit, and parsed
 * leniently. A body that is larger, cut short or not JSON simply has no context.
 */
async function readUnparsedBody(request: FastifyRequest, bodyLimit: number): Promise<void> {
  const raw = request.raw;
  if (request.body !== undefined || raw.readableFlowing !== null || raw.readableEnded) return;
  const length = Number(raw.headers['content-length']);
  if (!(length > 0 && length <= bodyLimit) && raw.headers['transfer-encoding'] === undefined) return;
  const text = await new Promise<string | undefined>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (value: string | undefined) => {
      // Past the limit the rest keeps flowing and is dropped, so the answer can still be sent.
      raw.off('data', onData);
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > bodyLimit) finish(undefined);
      else chunks.push(chunk);
    };
    raw.on('data', onData);
    raw.once('end', () => finish(Buffer.concat(chunks).toString('utf8')));
    raw.once('error', () => finish(undefined));
    raw.once('close', () => finish(undefined));
  });
  if (text === undefined || nestsDeeperThan(text, MAX_BODY_DEPTH)) return;
  try {
    unparsedBodies.set(request, JSON.parse(text));
  } catch {
    // not JSON: no context to echo
  }
}

export interface Credits {
  consumed: bigint;
  available: bigint;
}

function creditHeaders(reply: FastifyReply, credits: Credits): void {
  reply.header('x-credits-consumed', String(credits.consumed));
  reply.header('x-credits-available', String(credits.available));
}

export function sendData(request: FastifyRequest, reply: FastifyReply, status: number, data: unknown, credits: Credits) {
  creditHeaders(reply, credits);
  const context = contextOf(request);
  return reply.code(status).send({ apiVersion: API_VERSION, requestId: request.id, context, data });
}

/**
 * Like sendData, for data that is already JSON text (built by the database, or spliced from stored
 * bodies): spliced into the envelope instead of parsed and serialised again. `dataJson` may come in
 * pieces (an event stream page: two a entry), written one after the other.
 */
export function sendJsonText(request: FastifyRequest, reply: FastifyReply, status: number, dataJson: string | readonly string[], credits: Credits) {
  creditHeaders(reply, credits);
  reply.header('content-type', 'application/json; charset=utf-8');
  const context = contextOf(request);
  const head = `{"apiVersion":"${API_VERSION}","requestId":"${request.id}",${context === undefined ? '' : `"context":${JSON.stringify(context)},`}"data":`;
  if (typeof dataJson === 'string') {
    const text = `${head}${dataJson}}`;
    // A large answer goes out as bytes encoded once: sent as a string, it was measured for its
    // Content-Length and then encoded again by the socket's write.
    return reply.code(status).send(text.length > LARGE_TEXT ? Buffer.from(text) : text);
  }
  return reply.code(status).send(utf8Of([head, ...dataJson, '}']));
}

/**
 * The UTF-8 bytes of the pieces, one after the other, written straight into one buffer: no joined
 * string to build (half a megabyte for a page of the event stream), flatten and encode again. Sized for
 * one byte a character (JSON here is mostly ASCII), a piece's exact length measured only when it might
 * not fit.
 */
export function utf8Of(pieces: readonly string[]): Buffer {
  let chars = 0;
  for (const piece of pieces) chars += piece.length;
  let buffer = Buffer.allocUnsafe(Math.ceil(chars * 1.05) + 64);
  let at = 0;
  for (const piece of pieces) {
    if (buffer.length - at < piece.length * 3) {
      const need = Buffer.byteLength(piece);
      if (buffer.length - at < need) {
        const larger = Buffer.allocUnsafe(Math.max(buffer.length * 2, at + need));
        buffer.copy(larger, 0, 0, at);
        buffer = larger;
      }
    }
    at += buffer.write(piece, at);
  }
  return buffer.subarray(0, at);
}

const LARGE_TEXT = 16 * 1024;

/**
 * Like sendJsonText, for data given as pieces of JSON text (a bulk answer: megabytes), made and written
 * one piece at a time as the connection takes them: written whole, a 4 MB answer held the event loop
 * for 4 to 70 ms in one write (other requests waiting behind it).
 */
export function sendJsonPieces(request: FastifyRequest, reply: FastifyReply, status: number, pieces: AsyncIterable<string>, credits: Credits) {
  creditHeaders(reply, credits);
  reply.header('content-type', 'application/json; charset=utf-8');
  const context = contextOf(request);
  const head = `{"apiVersion":"${API_VERSION}","requestId":"${request.id}",${context === undefined ? '' : `"context":${JSON.stringify(context)},`}"data":`;
  async function* body() {
    yield head;
    yield* pieces;
    yield '}';
  }
  return reply.code(status).send(Readable.from(body(), { objectMode: false }));
}

/** 16777216 -> '16 MiB (16,777,216 bytes)', 65536 -> '64 KiB (65,536 bytes)'. */
export function byteSize(bytes: number): string {
  const exact = `${bytes.toLocaleString('en-US')} bytes`;
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB (${exact})`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB (${exact})`;
  return exact;
}

/** Fastify's own failures, by error code, as contract errors. */
function fromFastify(error: FastifyError, bodyLimit: number): ApiError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', "The request body must be sent with 'Content-Type: application/json'.");
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('missing_request_body', 'The request body is empty; send { "data": { "item": { ... } } }.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('request_entity_too_large', `The request body is larger than this endpoint takes: at most ${byteSize(bodyLimit)}.`);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('bad_json', 'The Content-Length header does not match the body sent.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('bad_json', 'The request body is not valid JSON.');
  }
  if (error instanceof SyntaxError || error.statusCode === 400) {
    // JSON.parse failures and the parser's refusal of __proto__ / constructor.prototype keys.
    return new ApiError('bad_json', `The request body is not valid JSON: ${truncate(error.message, 120)}.`);
  }
  return undefined;
}

export function toApiError(error: unknown, bodyLimit: number): ApiError | undefined {
  if (error instanceof ApiError) return error;
  const e = error as FastifyError & { validationContext?: string };
  if (Array.isArray(e.validation)) return validationFailure(e.validation as never, e.validationContext);
  if ((typeof e.code === 'string' && e.code.startsWith('FST_')) || error instanceof SyntaxError) return fromFastify(e, bodyLimit);
  return undefined;
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError) {
  const context = contextOf(request);
  if (error.headers) reply.headers(error.headers);
  return reply.code(error.status).send({
    apiVersion: API_VERSION,
    requestId: request.id,
    ...(context !== undefined && { context }),
    error: { code: error.code, message: error.message, ...(error.details && { details: error.details }) },
  });
}

/** The client hung up before its request was complete: nothing for the operator to act on. */
function clientWentAway(error: unknown, request: FastifyRequest): boolean {
  return (error as { code?: unknown }).code === 'ECONNRESET' && !request.raw.complete;
}

/**
 * A store failure that is worth trying again (lost or refused connection, server shutting down,
 * serialization failure): recognised by name, since the API does not depend on the store's classes.
 */
function databaseUnavailable(error: unknown): boolean {
  return error instanceof Error && error.name === 'DbError' && (error as DbError).retryable;
}

export function handleError(defaultBodyLimit: number) {
  return async (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // A route may take larger bodies than the server's default (the bulk creates: 16 MiB); its 413 names its own limit.
    const bodyLimit = request.routeOptions?.bodyLimit ?? defaultBodyLimit;
    const known = toApiError(error, bodyLimit);
    if (known) {
      // Read for its context up to the server's default only: an error before authentication must not read 16 MiB.
      await readUnparsedBody(request, defaultBodyLimit);
      return sendError(request, reply, known);
    }
    if (clientWentAway(error, request)) {
      request.log.debug({ requestId: request.id }, 'the client closed the connection before the request was complete');
      // Nobody is left to read it; answered only so that the request's life cycle ends as usual.
      return sendError(request, reply, new ApiError('bad_json', 'The request body ended early: the connection was closed while it was being sent.'));
    }
    if (databaseUnavailable(error)) {
      // PostgreSQL restarting or failing over, the pooler reconnecting, connections exhausted: nothing is
      // wrong with the request, and the same request succeeds in a moment. Not an error of ours either.
      request.log.warn({ err: error, requestId: request.id }, 'database unavailable while answering a request; answered 503');
      return sendError(
        request,
        reply,
        new ApiError('service_unavailable', 'The database is unavailable for a moment. Retry shortly.', undefined, { 'retry-after': '1' }),
      );
    }
    request.log.error({ err: error, requestId: request.id }, 'unexpected error while answering a request');
    return sendError(
      request,
      reply,
      new ApiError(
        'unexpected_server_error',
        `An unexpected error occurred. It has been logged with requestId ${request.id}; quote it when you report the problem.`,
      ),
    );
  };
}

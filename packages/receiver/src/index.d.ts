// The receiver kit's types (the code is plain JavaScript: src/*.js). The callback bodies' types are
// generated from herald's OpenAPI document into events.d.ts.
import type { HeraldCallback } from './events.js';

export * from './events.js';

/** An entry of the event stream: a callback body plus its place in the stream, or a retraction. */
export type StreamEvent = HeraldCallback & { sequence: number | null; createdAt: number; blockHash?: string; reinstated?: true; retracted?: undefined };
export interface StreamRetraction {
  apiVersion: string;
  referenceId: string;
  idempotencyKey: string;
  retracted: true;
  event: HeraldCallback['data']['event'];
  sequence: number | null;
  createdAt: number;
  blockHash?: string;
  blockHeight?: number;
}
export type StreamEntry = StreamEvent | StreamRetraction;

export type VerificationCode = 'missing_signature' | 'stale_timestamp' | 'bad_signature' | 'bad_body';
export class VerificationError extends Error {
  readonly code: VerificationCode;
}
export const DEFAULT_TOLERANCE_SECONDS: number;
type HeadersLike = Headers | Record<string, string | string[] | undefined>;
export interface VerifyOptions {
  /** The request body's bytes as received (never a re-serialised object). */
  rawBody: Buffer | Uint8Array | string;
  headers: HeadersLike;
  /** The subscription's callbackSecretKey; or `secrets` while you rotate it (any one may sign). */
  secret?: string;
  secrets?: string[];
  /** Default 300: a webhook-timestamp further from now is refused. */
  toleranceSeconds?: number;
  /** Milliseconds since the epoch; default Date.now(). */
  now?: number;
}
export function verifyCallback(options: VerifyOptions): HeraldCallback;
export function refusal(options: Omit<VerifyOptions, 'secret'> & { secrets: string[] }): VerificationError | null;

/** The part of a `pg` client the inbox uses: one connection (a Client, or a Pool's checked-out client). */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}
export type HandleOutcome = 'applied' | 'duplicate' | 'retracted' | 'ignored' | 'test';
export function inboxSchema(table?: string): string;
export function createInbox(client: Queryable, options?: { table?: string }): Promise<void>;
export function handleOnce<C extends Queryable>(
  client: C,
  event: HeraldCallback | StreamEntry,
  fn: (client: C, event: HeraldCallback | StreamEvent) => unknown,
  options?: { onRetract?: (client: C, retraction: StreamRetraction) => unknown; table?: string },
): Promise<HandleOutcome>;

export interface CursorStore {
  load(): Promise<string | undefined>;
  save(cursor: string): Promise<void>;
}
export function pgCursorStore(client: Queryable, options?: { name?: string; table?: string }): CursorStore;
export class CursorExpiredError extends Error {
  readonly code: 'cursor_expired';
  /** Where to read on from, after reconciling what may have been missed. */
  readonly oldestCursor: string;
}
export class StreamError extends Error {
  readonly status: number;
  readonly code: string | undefined;
}
export function catchUp(options: {
  baseUrl: string;
  apiKey: string;
  cursorStore: CursorStore;
  handle: (entry: StreamEntry) => Promise<unknown> | unknown;
  /** Entries per read, 1 to 1,000 (default 1,000). */
  limit?: number;
  /** Go on at the end of the stream, long-polling `waitSeconds` (default 25), until `signal` aborts. */
  follow?: boolean;
  waitSeconds?: number;
  signal?: AbortSignal;
  filters?: { referenceId?: string; eventType?: string; blockchain?: string; network?: string };
  fetch?: typeof fetch;
}): Promise<{ entries: number; cursor: string | undefined }>;

/**
 * The event stream (docs/concepts/event-stream.md): a customer's events in order from a cursor, with
 * the retractions of reorganised ones, long-polled on the database's announcements, priced per entry like
 * the callback log.
 */
import type { EventType } from '../domain/chains.ts';
import { ApiError, invalidData } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import { decodeCursor, encodeCursor, STREAM_START, type StreamCursor, type StreamPosition } from '../domain/stream-cursor.ts';
import { sleep } from '../lib/loop.ts';
import { hasUnsettledEntries, readStreamPage, rowPosition, type StreamFilters, type StreamRow, streamHorizon } from '../store/event-stream.ts';
import type { Caller, Common } from './context.ts';
import { insufficient } from './credits.ts';

/** Without a connected change listener, a long-poll reads again this often. */
export const POLL_WITHOUT_LISTENER_MS = 250;
/**
 * A read that found nothing while entries of the customer's still sit behind a running transaction (see
 * migration 050) reads again this soon: their announcement may have come before they could be read.
 */
export const UNSETTLED_RETRY_MS = 5;

export interface StreamRequest {
  cursor?: string;
  limit: number;
  waitSeconds: number;
  filters: StreamFilters;
}

export interface StreamPage {
  /**
   * The JSON text inside the items array (`{...},{...}`, nothing for none), in pieces to write one after
   * the other: each entry's callback body spliced in as stored (entryPieces).
   */
  items: string[];
  nextCursor: string;
  hasMore: boolean;
}

/** A cursor older than retention: 410 with the oldest cursor still complete (message, details and the x-oldest-cursor header). */
export function cursorExpired(oldest: string): ApiError {
  const message = `This cursor is older than the event retention: events after it were deleted. Read on from the oldest cursor still complete, '${oldest}' (also in the x-oldest-cursor header), and reconcile what may have been missed.`;
  return new ApiError('cursor_expired', message, [{ attribute: 'cursor', message: oldest }], { 'x-oldest-cursor': oldest });
}

export async function readEvents(common: Common, caller: Caller, request: StreamRequest, signal?: AbortSignal) {
  const customerId = caller.owner.customerId;
  let cursor: StreamCursor | undefined;
  if (request.cursor !== undefined) {
    cursor = decodeCursor(request.cursor);
    if (!cursor) {
      throw invalidData([
        {
          attribute: 'cursor',
          message: "The cursor is not one herald gave: pass a response's nextCursor unchanged, or leave cursor out to start at the oldest event.",
        },
      ]);
    }
  }
  if (request.filters.referenceId !== undefined && !isUuid(request.filters.referenceId)) {
    throw invalidData([
      { attribute: 'referenceId', message: `The referenceId '${request.filters.referenceId.slice(0, 60)}' is not a subscription id (a UUID).` },
    ]);
  }
  // The cursor's own read checks it against the horizon (the newest entry retention deleted) in its
  // statement; a read without a cursor starts at the horizon, so it is looked up first.
  const from: StreamPosition = cursor ?? (await streamHorizon(common.db, customerId)) ?? STREAM_START;
  const charge = { pricePerEntry: BigInt(common.config.costs.streamPerEvent), endpoint: caller.endpoint };
  const read = async () => {
    // One more than asked: whether there is more is known without a second read.
    const page = await readStreamPage(common.db, customerId, from, request.limit + 1, request.filters, charge);
    if (page.expiredAt) throw cursorExpired(encodeCursor(page.expiredAt));
    if (!page.paid) throw insufficient(page.cost, page.available);
    return page;
  };

  const wake = common.streamWake;
  const deadline = Date.now() + request.waitSeconds * 1000;
  let page: Awaited<ReturnType<typeof read>>;
  for (;;) {
    const left = deadline - Date.now();
    // Armed before the read: an announcement during it wakes the wait below at once.
    const woken = left > 0 && wake && !wake.isClosed ? wake.next(Math.min(left, wake.live ? left : POLL_WITHOUT_LISTENER_MS), signal) : undefined;
    // An empty read costs nothing: only the read that returns entries is charged.
    page = await read();
    if (page.rows.length > 0 || !woken || signal?.aborted) break;
    if (await hasUnsettledEntries(common.db, customerId)) await Promise.race([woken, sleep(UNSETTLED_RETRY_MS, signal)]);
    else if (wake) await woken;
    if (Date.now() >= deadline || signal?.aborted) {
      page = await read();
      break;
    }
  }
  const rows = page.rows;
  const count = Math.min(rows.length, request.limit);
  const hasMore = rows.length > request.limit;
  // One pass, no object per entry: each entry's block is read from its body once (for its blockHash and
  // the cursor's), its text given as two pieces (the body but its closing brace, then the stream's
  // fields), written straight into the answer's bytes (docs/benchmarks.md, the event stream).
  let block = cursor?.block;
  const pieces: string[] = [];
  for (let i = 0; i < count; i++) {
    const row = rows[i] as StreamRow;
    const mark = row.mark === null ? undefined : (JSON.parse(row.mark) as MarkFields);
    const b = entryBlock(row, mark);
    if (b) block = b;
    entryPieces(pieces, row, b, mark, i === count - 1 ? '' : ',');
  }
  const last = count > 0 ? rowPosition(rows[count - 1] as StreamRow) : from;
  const nextCursor = encodeCursor({ ...last, ...(block && { block }) });
  const value: StreamPage = { items: pieces, nextCursor, hasMore };
  return { value, consumed: page.cost, available: page.available, ...(page.usageDay && { usageDay: page.usageDay }) };
}

const BLOCK_EVENTS: ReadonlySet<EventType> = new Set(['BLOCK_MINED', 'BLOCK_REVERTED', 'BLOCK_HEIGHT_REACHED']);
// The body is JSON.stringify's text (domain/callbacks.ts): no spaces, keys in the item's order. A block
// event's item holds no object; every other event of a block names it in minedInBlock. Read with indexOf,
// not a regular expression: this runs for every entry of a page (docs/benchmarks.md, the event stream).
const ITEM = '"item":{';
const MINED_IN_BLOCK = '"minedInBlock":{"height":';
const HEIGHT = '"height":';
const HASH = ',"hash":"';

/** At `at`: digits, then ,"hash":" and a string: the block; else undefined. */
function heightAndHash(body: string, at: number): { height: number; hash: string } | undefined {
  let end = at;
  while (end < body.length && body.charCodeAt(end) >= 48 && body.charCodeAt(end) <= 57) end++;
  if (end === at || !body.startsWith(HASH, end)) return undefined;
  const close = body.indexOf('"', end + HASH.length);
  return close < 0 ? undefined : { height: Number(body.slice(at, end)), hash: body.slice(end + HASH.length, close) };
}

/** The first "height":N,"hash":"H" of an "item":{ before any nested brace. */
function blockItem(body: string): { height: number; hash: string } | undefined {
  for (let item = body.indexOf(ITEM); item >= 0; item = body.indexOf(ITEM, item + 1)) {
    const start = item + ITEM.length;
    const open = body.indexOf('{', start);
    const close = body.indexOf('}', start);
    const brace = Math.min(open < 0 ? body.length : open, close < 0 ? body.length : close);
    for (let h = body.indexOf(HEIGHT, start); h >= 0 && h < brace; h = body.indexOf(HEIGHT, h + 1)) {
      const found = heightAndHash(body, h + HEIGHT.length);
      if (found) return found;
    }
  }
  return undefined;
}

function minedInBlock(body: string): { height: number; hash: string } | undefined {
  for (let m = body.indexOf(MINED_IN_BLOCK); m >= 0; m = body.indexOf(MINED_IN_BLOCK, m + 1)) {
    const found = heightAndHash(body, m + MINED_IN_BLOCK.length);
    if (found) return found;
  }
  return undefined;
}

/** A mark's fields (StreamRow.mark). */
type MarkFields = ['retracted' | 'reinstated', string, string, number | null, string | null];

/** The block of an entry: a mark's, else the one its body names (none for a mempool event). */
export function entryBlock(row: StreamRow, mark?: MarkFields): { height: number; hash: string } | undefined {
  if (mark && mark[4] !== null) return { height: Number(mark[3]), hash: mark[4] };
  return BLOCK_EVENTS.has(row.event_type) ? blockItem(row.body) : minedInBlock(row.body);
}

/**
 * An entry as JSON text, in pieces appended to `out`, then `after`. An event: its callback body byte for
 * byte, plus sequence, createdAt and (for events of a block) blockHash; a reinstated one (its block is
 * back) the same with reinstated: true. A retraction: the event's apiVersion, referenceId,
 * idempotencyKey and type, retracted: true, and the block that left the chain.
 */
export function entryPieces(
  out: string[],
  row: StreamRow,
  block: { height: number; hash: string } | undefined,
  mark: MarkFields | undefined,
  after: string,
): void {
  const extra = block ? `${row.x},"blockHash":${JSON.stringify(block.hash)}` : row.x;
  if (!mark) {
    out.push(row.body.slice(0, -1), `${extra}}${after}`);
    return;
  }
  if (mark[0] === 'reinstated') {
    out.push(row.body.slice(0, -1), `${extra},"reinstated":true}${after}`);
    return;
  }
  const { apiVersion } = JSON.parse(row.body) as { apiVersion: string };
  const retraction = {
    apiVersion,
    referenceId: mark[1],
    idempotencyKey: mark[2],
    retracted: true,
    event: row.event_type,
  };
  const json = JSON.stringify(retraction);
  out.push(json.slice(0, -1), `${extra}${block ? `,"blockHeight":${block.height}` : ''}}${after}`);
}

/**
 * When to try a failed callback again (docs/reference/events/README.md#delivery). Pure: no clock, no randomness of its
 * own, so the schedule can be tested exactly and the worker decides what "now" is.
 */

export interface RetryPolicy {
  /** Delay before retry n (1-based) is scheduleSeconds[n - 1]; its length is the number of retries. */
  scheduleSeconds: number[];
  /** Fraction of each scheduled delay to spread by, both ways (0.2 = +-20 %). */
  jitter: number;
  /** Upper bound for a receiver's Retry-After, so that one answer cannot park a callback for ever. */
  maxRetryAfterSeconds: number;
}

// 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 12 h: about 28 h in all, as the contract promises.
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  scheduleSeconds: [30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200],
  jitter: 0.2,
  maxRetryAfterSeconds: 43200,
};

/**
 * attemptsMade: attempts done so far including the one that just failed (>=1). Returns the delay in ms before
 * the next attempt, or null when no retry is left (attemptsMade > schedule length). retryAfterSeconds: the
 * receiver's Retry-After (seconds), honoured instead of the schedule's delay when present, capped at
 * maxRetryAfterSeconds, never below 1 s, no jitter applied to it. random: () => number in [0,1) (injectable
 * for tests). Jitter: delay * (1 + jitter * (2*random() - 1)).
 */
export function nextRetryDelayMs(
  attemptsMade: number,
  policy: RetryPolicy,
  options: { retryAfterSeconds?: number; random?: () => number } = {},
): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 1) {
    // A caller bug (e.g. counting from 0) would silently shift the whole schedule; fail loudly instead.
    throw new RangeError(`attemptsMade must be a whole number >= 1, got ${attemptsMade}`);
  }
  const scheduled = policy.scheduleSeconds[attemptsMade - 1];
  // Retry-After only moves the next attempt; it never buys attempts beyond the schedule.
  if (scheduled === undefined) return null;

  const { retryAfterSeconds } = options;
  if (retryAfterSeconds !== undefined && !Number.isNaN(retryAfterSeconds)) {
    // The receiver asked for this exact time, so no jitter; at least 1 s so that "0" cannot make a hot loop.
    return Math.round(Math.min(Math.max(retryAfterSeconds, 1), policy.maxRetryAfterSeconds) * 1000);
  }

  // Jitter spreads the retries of many callbacks that failed together (receiver outage) over time.
  const random = options.random ?? Math.random;
  return Math.round(scheduled * 1000 * (1 + policy.jitter * (2 * random() - 1)));
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = MONTHS.join('|');
const SHORT_DAY = 'Mon|Tue|Wed|Thu|Fri|Sat|Sun';
const LONG_DAY = 'Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';

// The three HTTP-date forms a recipient must accept (RFC 9110 section 5.6.7). Date.parse is not used: it
// accepts almost anything and reads the asctime form as local time, while all three are GMT.
const IMF_FIXDATE = new RegExp(`^(?:${SHORT_DAY}), (\\d{2}) (${MONTH}) (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:${LONG_DAY}), (\\d{2})-(${MONTH})-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:${SHORT_DAY}) (${MONTH}) ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

/** Parses a Retry-After header value: delta-seconds or an HTTP-date (relative to nowMs); undefined when absent/invalid; negative -> 0. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  // A repeated header is a receiver bug; take the first rather than guess which one it meant.
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^-?\d+$/.test(text)) return Math.max(Number(text), 0);
  const dateMs = parseHttpDate(text, nowMs);
  if (dateMs === undefined) return undefined;
  // Rounded up: retrying a moment before the time the receiver named would be too early.
  return Math.max(Math.ceil((dateMs - nowMs) / 1000), 0);
}

function parseHttpDate(text: string, nowMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), m[2], Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = ASCTIME_DATE.exec(text);
  if (m) return utc(Number(m[6]), m[1], Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
  m = RFC850_DATE.exec(text);
  if (!m) return undefined;
  // Two-digit year: RFC 9110 says a year more than 50 years ahead is the latest past year with those digits.
  const nowYear = new Date(nowMs).getUTCFullYear();
  let year = Math.floor(nowYear / 100) * 100 + Number(m[3]);
  if (year > nowYear + 50) year -= 100;
  return utc(year, m[2], Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
}

function utc(year: number, monthName: string | undefined, day: number, hour: number, minute: number, second: number): number | undefined {
  const month = MONTHS.indexOf(monthName ?? '');
  if (month < 0 || hour > 23 || minute > 59 || second > 60) return undefined;
  // A leap second (:60) is kept as :59 rather than rolled into the next minute.
  const ms = Date.UTC(year, month, day, hour, minute, Math.min(second, 59));
  // Date.UTC rolls 31 Feb over into March; a date that does not exist is garbage, not a nearby day.
  return new Date(ms).getUTCDate() === day ? ms : undefined;
}

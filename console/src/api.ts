/**
 * The JSON API as the console calls it: the same endpoints and envelope as any client, authenticated by
 * the session's API key (x-api-key) or operator token (Authorization: Bearer). A 401 means the key or
 * token no longer works (revoked): the console signs out and says so, instead of failing page by page.
 */
import { type Session, session, signOut } from './session.ts';

export interface ErrorDetail {
  attribute: string;
  message: string;
}

/** An answer in the error envelope (or no answer at all: status 0). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
    readonly requestId: string | null = null,
  ) {
    super(message);
  }
}

export interface Page<T> {
  limit: number;
  offset: number;
  total: number;
  items: T[];
}

function authHeaders(s: Session | null): Record<string, string> {
  if (!s) return {};
  return s.kind === 'customer' ? { 'x-api-key': s.key } : { authorization: `Bearer ${s.token}` };
}

const REVOKED = {
  customer: 'You have been signed out: the API key was not accepted (it has been revoked, or it is unknown). Ask the operator for a new key.',
  operator:
    'You have been signed out: the operator token was not accepted (it has been revoked, or it is unknown). Make a new one with herald operator-tokens create.',
};

/**
 * Calls the API and returns the envelope's `data`. `as` overrides the session (sign-in checks a
 * credential before keeping it).
 */
export async function api<T>(method: string, path: string, options: { body?: unknown; as?: Session } = {}): Promise<T> {
  const current = options.as ?? session.get();
  const headers: Record<string, string> = { accept: 'application/json', ...authHeaders(current) };
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body });
  } catch {
    throw new ApiFailure(0, 'network_error', 'herald did not answer. Check that the service is running, then try again.');
  }
  const text = await response.text();
  let parsed: { data?: T; error?: { code: string; message: string; details?: ErrorDetail[] }; requestId?: string } | undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (response.ok && parsed && 'data' in parsed) return parsed.data as T;
  const error = parsed?.error;
  const failure = new ApiFailure(
    response.status,
    error?.code ?? 'unexpected_answer',
    error?.message ?? `herald answered ${response.status} without the usual error envelope.`,
    error?.details ?? [],
    parsed?.requestId ?? null,
  );
  // Only a credential that was in use is signed out; a wrong one typed at sign-in is just an error.
  if (response.status === 401 && !options.as && current) signOut(REVOKED[current.kind]);
  throw failure;
}

/** A query string from the defined, non-empty values. */
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/**
 * An API failure's messages by the attribute they name, for the fields in `names` (shown beside them);
 * `rest` when the failure has something no field shows (no details, or another attribute's), to show
 * above the form.
 */
export function fieldErrors(error: unknown, names: readonly string[]): { fields: Record<string, string>; rest: boolean } {
  const fields: Record<string, string> = {};
  if (!(error instanceof ApiFailure)) return { fields, rest: Boolean(error) };
  const known = new Set(names);
  let rest = error.details.length === 0;
  for (const d of error.details) {
    const name = d.attribute.replace(/^data\.item\./, '');
    if (known.has(name)) fields[name] = fields[name] ? `${fields[name]} ${d.message}` : d.message;
    else rest = true;
  }
  return { fields, rest };
}

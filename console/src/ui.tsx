/** Small building blocks shared by the pages: links, times, fields with their errors, empty states, loading. */
import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from './api.ts';
import { BASE, navigate } from './router.ts';

/** A link inside the console: a real <a href> (open in a new tab works), navigated without a reload. */
export function Link(props: { to: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page'; 'aria-label'?: string }) {
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.to);
  };
  return (
    <a href={BASE + props.to} onClick={onClick} class={props.class} aria-current={props['aria-current']} aria-label={props['aria-label']}>
      {props.children}
    </a>
  );
}

const LOCAL = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const LOCAL_SHORT = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', second: '2-digit' });

/**
 * A Unix time in the browser's zone; the UTC value on hover (title) and in the datetime attribute.
 * `short` leaves the year out (dense lists).
 */
export function Time({ s, short }: { s: number | null | undefined; short?: boolean }) {
  if (s === null || s === undefined) return <span>never</span>;
  const date = new Date(s * 1000);
  const utc = date.toISOString().replace('.000Z', 'Z');
  return (
    <time dateTime={utc} title={`UTC: ${utc.replace('T', ' ')}`}>
      {(short ? LOCAL_SHORT : LOCAL).format(date)}
    </time>
  );
}

/** The page's title in the tab and its <h1>, focused on arrival so a screen reader announces the new page. */
export function PageTitle({ children }: { children: string }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${children} · herald console`;
    ref.current?.focus();
  }, [children]);
  return (
    <h1 tabIndex={-1} ref={ref}>
      {children}
    </h1>
  );
}

/** A labelled control with its hint and the API's message for it, tied together for assistive technology. */
export function Field(props: { id: string; label: string; hint?: string; error?: string; children: (aria: FieldAria) => JSX.Element }) {
  const hintId = props.hint ? `${props.id}-hint` : undefined;
  const errorId = props.error ? `${props.id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  return (
    <div class={props.error ? 'field invalid' : 'field'}>
      <label for={props.id}>{props.label}</label>
      {props.children({ id: props.id, 'aria-describedby': describedBy, 'aria-invalid': props.error ? 'true' : undefined })}
      {props.hint && (
        <small id={hintId} class="hint">
          {props.hint}
        </small>
      )}
      {props.error && (
        <span id={errorId} class="field-error">
          {props.error}
        </span>
      )}
    </div>
  );
}
export interface FieldAria {
  id: string;
  'aria-describedby': string | undefined;
  'aria-invalid': 'true' | undefined;
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** An API failure as a sentence, with the request id to quote. */
export function Failure({ error }: { error: unknown }) {
  if (!error) return null;
  const failure = error instanceof ApiFailure ? error : new ApiFailure(0, 'unexpected', String(error));
  return (
    <div class="failure" role="alert">
      <p>
        {failure.message}
        {failure.code !== 'network_error' && <span class="code"> ({failure.code})</span>}
      </p>
      {failure.details.length > 0 && (
        <ul>
          {failure.details.map((d) => (
            <li key={d.attribute + d.message}>{d.message}</li>
          ))}
        </ul>
      )}
      {failure.requestId && <p class="hint">Request id: {failure.requestId}</p>}
    </div>
  );
}

/** A status line announced politely (results of actions: "Queued again", "Copied"). */
export function Notice({ children, tone = 'ok' }: { children: ComponentChildren; tone?: 'ok' | 'warn' }) {
  return (
    <p class={`notice ${tone}`} role="status">
      {children}
    </p>
  );
}

/** Two overlapping sheets, drawn (no icon font: the console loads nothing from elsewhere). */
function CopyIcon() {
  return (
    <svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" focusable="false">
      <rect x="3.5" y="0.5" width="8" height="8" rx="1" fill="none" stroke="currentColor" />
      <rect class="front" x="0.5" y="3.5" width="8" height="8" rx="1" stroke="currentColor" />
    </svg>
  );
}

export function CopyButton({ text, label, compact }: { text: string; label: string; compact?: boolean }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Clipboard refused (insecure context): fall back to a selection the user can copy.
      const area = document.createElement('textarea');
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 2000);
  };
  return (
    <button type="button" class={compact ? 'secondary small copy' : 'secondary small'} onClick={copy} aria-label={label} title={compact ? 'Copy' : undefined}>
      {compact ? copied ? '✓' : <CopyIcon /> : copied ? 'Copied' : 'Copy'}
      <span class="visually-hidden" aria-live="polite">
        {copied ? ' copied to the clipboard' : ''}
      </span>
    </button>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => Promise<void>;
  /** When the data shown was read (Date.now()), for "updated N s ago"; undefined before the first read. */
  updatedAt: number | undefined;
}

/**
 * Loads with `loader` when `key` changes; reload() loads again, keeping the shown data meanwhile (no
 * flicker when a page refreshes itself). With `everyMs`, reloads on that period while the page is shown:
 * not while the browser tab is hidden, and at once when it is shown again.
 */
export function useLoad<T>(loader: () => Promise<T>, key: string, everyMs?: number): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean; key: string; updatedAt?: number }>({
    data: undefined,
    error: undefined,
    loading: true,
    key,
  });
  const latest = useRef(loader);
  latest.current = loader;
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await latest.current();
      if (mine === generation.current) setState({ data, error: undefined, loading: false, key, updatedAt: Date.now() });
    } catch (error) {
      if (mine === generation.current) setState((s) => ({ data: s.key === key ? s.data : undefined, error, loading: false, key }));
    }
  }, [key]);
  useEffect(() => {
    setState((s) => (s.key === key ? s : { data: undefined, error: undefined, loading: true, key }));
    reload();
    if (!everyMs) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') reload();
    }, everyMs);
    const shown = () => {
      if (document.visibilityState === 'visible') reload();
    };
    document.addEventListener('visibilitychange', shown);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', shown);
    };
  }, [key, everyMs, reload]);
  const stale = state.key !== key;
  return {
    data: stale ? undefined : state.data,
    error: stale ? undefined : state.error,
    loading: stale || state.loading,
    reload,
    updatedAt: stale ? undefined : state.updatedAt,
  };
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

/** Previous / next for an API page (limit, offset, total). */
export function Pager(props: { offset: number; limit: number; total: number; onOffset: (offset: number) => void; what: string }) {
  const { offset, limit, total } = props;
  if (total <= limit && offset === 0) return null;
  const last = Math.min(offset + limit, total);
  return (
    <nav class="pager" aria-label={`Pages of ${props.what}`}>
      <button type="button" class="secondary" disabled={offset === 0} onClick={() => props.onOffset(Math.max(0, offset - limit))}>
        Previous
      </button>
      <span>
        {total === 0 ? 0 : offset + 1}–{last} of {total}
      </span>
      <button type="button" class="secondary" disabled={last >= total} onClick={() => props.onOffset(offset + limit)}>
        Next
      </button>
    </nav>
  );
}

/** Runs an action with a busy flag and its error, for buttons. */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<void>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = async (...args: A) => {
    setBusy(true);
    setError(undefined);
    try {
      await action(...args);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, setError };
}

/**
 * A box that scrolls (a wide table, a long payload). Keyboard users scroll it once it has focus, so it
 * takes focus (WCAG 2.1.1; axe's scrollable-region-focusable).
 */
export function Scroll({ children }: { children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard to be scrolled
    <div class="scroll" tabIndex={0}>
      {children}
    </div>
  );
}

/** Preformatted text (a payload, a response excerpt) in a box that scrolls; focusable for the same reason as Scroll. */
export function Pre({ children, class: className }: { children: ComponentChildren; class: string }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard to be scrolled
    <pre class={className} tabIndex={0}>
      {children}
    </pre>
  );
}

/**
 * Follows a background job (a recovery, a replay): reads it with `loader` every `everyMs` until
 * `settled` says it has nothing more to show, then stops (each read may cost credits). `key` null
 * means no job yet. A failed read is shown and tried again on the next tick. A change of `resumeOn`
 * follows a settled job again (a recovery's pending callbacks go once the subscription is active).
 */
export function useJob<T>(
  loader: () => Promise<T>,
  key: string | null,
  settled: (job: T) => boolean,
  options: { everyMs?: number; resumeOn?: unknown } = {},
): { data: T | undefined; error: unknown } {
  const everyMs = options.everyMs ?? 1000;
  const [state, setState] = useState<{ data: T | undefined; error: unknown; key: string | null }>({ data: undefined, error: undefined, key });
  const latest = useRef({ loader, settled });
  latest.current = { loader, settled };
  useEffect(() => {
    if (key === null) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      let done = false;
      if (document.visibilityState === 'visible') {
        try {
          const data = await latest.current.loader();
          done = latest.current.settled(data);
          if (!stopped) setState({ data, error: undefined, key });
        } catch (error) {
          if (!stopped) setState((s) => ({ data: s.key === key ? s.data : undefined, error, key }));
        }
      }
      if (!stopped && !done) timer = setTimeout(tick, everyMs);
    };
    tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [key, everyMs, options.resumeOn]);
  const stale = state.key !== key;
  return { data: stale ? undefined : state.data, error: stale ? undefined : state.error };
}

/** A long value (a UUID, a hash, an address) shortened in the middle: its head, an ellipsis, its tail. */
export function shorten(value: string, keep = 6): string {
  return value.length <= keep * 2 + 3 ? value : `${value.slice(0, keep + (value.startsWith('0x') ? 2 : 0))}…${value.slice(-keep)}`;
}

/**
 * An id or hash in a dense list: shortened in the middle, the full value on hover (title) and for
 * assistive technology (aria-label of the link), with a copy button. `to` makes it a console link.
 */
export function ShortId({ value, what, to }: { value: string; what: string; to?: string }) {
  const short = shorten(value);
  return (
    <span class="short-id" title={value}>
      {to ? (
        <Link to={to} class="mono">
          {short}
        </Link>
      ) : (
        <span class="mono">{short}</span>
      )}
      {short !== value && <CopyButton text={value} label={`Copy the ${what} ${value}`} compact />}
    </span>
  );
}

/** The one-word delivery status of a subscription (health.status), as a coloured badge with its words. */
export const STATUS_LABELS: Record<string, string> = {
  delivering: 'Delivering',
  retrying: 'Retrying',
  failing: 'Failing',
  idle: 'Idle',
  paused: 'Paused',
};
export function StatusBadge({ status }: { status: string | undefined }) {
  if (!status) return null;
  return <span class={`badge ${status}`}>{STATUS_LABELS[status] ?? status}</span>;
}

/** Calls `apply` once typing pauses (filters that apply as you type). */
export function useDebounced<A extends unknown[]>(apply: (...args: A) => void, ms = 250): (...args: A) => void {
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const latest = useRef(apply);
  latest.current = apply;
  useEffect(() => () => clearTimeout(timer.current), []);
  return (...args: A) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => latest.current(...args), ms);
  };
}

/**
 * Client-side routing under /console with the History API: real paths, so a deep link or a reload
 * lands on the same page (herald answers every /console/... path with the program, see
 * src/api/console-assets.ts).
 */
import { observable } from './state.ts';

export const BASE = '/console';

export interface Location {
  /** The path inside the console, e.g. '/subscriptions/abc' ('' -> '/'). */
  path: string;
  search: URLSearchParams;
}

function current(): Location {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) || '/' : '/';
  return { path, search: new URLSearchParams(window.location.search) };
}

export const location = observable<Location>(current());

window.addEventListener('popstate', () => location.set(current()));

/** Goes to a console path ('/subscriptions?active=true'). */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = BASE + to;
  if (options.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  location.set(current());
}

/** Matches '/subscriptions/:id' against a path; gives the decoded parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string;
    const g = got[i] as string;
    if (w.startsWith(':')) {
      if (!g) return null;
      try {
        params[w.slice(1)] = decodeURIComponent(g);
      } catch {
        return null;
      }
    } else if (w !== g) return null;
  }
  return params;
}

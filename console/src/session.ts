/**
 * Who is signed in: a customer (API key) or the operator (operator token). Kept in sessionStorage, so
 * it lasts for the browser tab's session only and is gone when the tab is closed; never in localStorage
 * or a cookie.
 */
import { observable } from './state.ts';

export type Session = { kind: 'customer'; key: string } | { kind: 'operator'; token: string; name: string };

const STORAGE_KEY = 'herald-console-session';

function read(): Session | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    const parsed = raw ? (JSON.parse(raw) as Session) : null;
    return parsed && (parsed.kind === 'customer' || parsed.kind === 'operator') ? parsed : null;
  } catch {
    return null;
  }
}

export const session = observable<Session | null>(read());
/** Why the console signed out on its own (a revoked key): shown on the sign-in page. */
export const signOutReason = observable<string | null>(null);

export function signIn(next: Session): void {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
  signOutReason.set(null);
  session.set(next);
}

export function signOut(reason: string | null = null): void {
  sessionStorage.removeItem(STORAGE_KEY);
  signOutReason.set(reason);
  session.set(null);
}

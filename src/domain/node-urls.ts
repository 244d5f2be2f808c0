/** Node URLs as they may be logged and shown. No I/O. */

/**
 * Drops user, password, query and fragment, and masks path segments that look like API keys (Infura,
 * Alchemy and friends put the key in the path), so a URL can be logged and shown in errors.
 */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    url.pathname = url.pathname
      .split('/')
      .map((segment) => (/^[A-Za-z0-9_-]{16,}$/.test(segment) ? '***' : segment))
      .join('/');
    return url.toString();
  } catch {
    return '<invalid node URL>';
  }
}

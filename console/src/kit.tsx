/**
 * The console's shared pieces of its visual system (docs/getting-started/console.md, "Look"): the light
 * and dark themes with their toggle, the "updated N s ago" line of a page that refreshes itself, the
 * typed confirmation in front of destructive actions, and the figure tiles. The tokens (spacing, type
 * scale, colours, series colours) are CSS custom properties at the top of styles.css.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { observable, useValue } from './state.ts';

export type Theme = 'light' | 'dark';
const THEME_KEY = 'herald-console-theme';

function storedTheme(): Theme | null {
  try {
    const t = localStorage.getItem(THEME_KEY);
    return t === 'light' || t === 'dark' ? t : null;
  } catch {
    return null;
  }
}

const systemDark = typeof matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : undefined;

/** The theme shown: the one chosen with the toggle (remembered in localStorage), else the system's. */
export const theme = observable<Theme>(storedTheme() ?? (systemDark?.matches ? 'dark' : 'light'));

function apply(t: Theme): void {
  document.documentElement.dataset.theme = t;
  document.documentElement.style.colorScheme = t;
}
apply(theme.get());
theme.subscribe(apply);
// Following the system while nothing was chosen.
systemDark?.addEventListener('change', (e) => {
  if (!storedTheme()) theme.set(e.matches ? 'dark' : 'light');
});

export function setTheme(t: Theme): void {
  try {
    localStorage.setItem(THEME_KEY, t);
  } catch {
    // Storage refused (private mode): the choice lasts for this page only.
  }
  theme.set(t);
}

/** A toggle button: pressed is dark. */
export function ThemeToggle() {
  const t = useValue(theme);
  return (
    <button type="button" class="secondary small theme-toggle" aria-pressed={t === 'dark'} onClick={() => setTheme(t === 'dark' ? 'light' : 'dark')}>
      Dark theme
    </button>
  );
}

/** Seconds since `at`, ticking every second. */
function useAge(at: number | undefined): number | undefined {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return at === undefined ? undefined : Math.max(0, Math.floor((now - at) / 1000));
}

function useHidden(): boolean {
  const [hidden, setHidden] = useState(document.visibilityState === 'hidden');
  useEffect(() => {
    const changed = () => setHidden(document.visibilityState === 'hidden');
    document.addEventListener('visibilitychange', changed);
    return () => document.removeEventListener('visibilitychange', changed);
  }, []);
  return hidden;
}

/**
 * "Updated 4 s ago · refreshes every 5 s" for a page that reads itself again (useLoad's everyMs): paused
 * while the tab is hidden, read again when it is shown. Not a live region: it changes every second.
 */
export function Freshness({ updatedAt, everyMs, loading }: { updatedAt: number | undefined; everyMs: number; loading?: boolean }) {
  const age = useAge(updatedAt);
  const hidden = useHidden();
  const every = `refreshes every ${Math.round(everyMs / 1000)} s`;
  return (
    <p class="freshness" data-testid="freshness">
      <span class={loading ? 'dot busy' : 'dot'} aria-hidden="true" />
      {age === undefined ? 'Not read yet' : `Updated ${age} s ago`} · {hidden ? 'paused while the tab is hidden' : every}
    </p>
  );
}

/**
 * A destructive action behind a typed confirmation: its button is enabled once `word` is typed. Shown
 * folded (a <details> marked as a danger zone) unless `open`.
 */
export function TypedConfirm(props: {
  id: string;
  summary: string;
  word: string;
  action: string;
  busy?: boolean;
  open?: boolean;
  onConfirm: () => void;
  children?: ComponentChildren;
}) {
  const [typed, setTyped] = useState('');
  const ready = typed.trim() === props.word;
  return (
    <details class="danger-zone" open={props.open}>
      <summary>{props.summary}</summary>
      {props.children}
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          if (!ready) return;
          setTyped('');
          props.onConfirm();
        }}
      >
        <div class="field">
          <label for={`${props.id}-confirm`}>
            Type <code>{props.word}</code> to confirm
          </label>
          <input
            id={`${props.id}-confirm`}
            value={typed}
            autoComplete="off"
            spellcheck={false}
            onInput={(e) => setTyped((e.currentTarget as HTMLInputElement).value)}
          />
        </div>
        <button type="submit" class="danger" disabled={props.busy || !ready}>
          {props.action}
        </button>
      </form>
    </details>
  );
}

/** Figures as tiles: a label and a big value each; `tone` bad marks one that needs attention. */
export function Tiles({ items, small }: { items: { label: string; value: ComponentChildren; tone?: 'bad' | 'good'; hint?: string }[]; small?: boolean }) {
  return (
    <dl class={small ? 'tiles small' : 'tiles'}>
      {items.map((i) => (
        <div key={i.label} class={i.tone ? `tile-${i.tone}` : undefined}>
          <dt>{i.label}</dt>
          <dd>{i.value}</dd>
          {i.hint && <dd class="hint">{i.hint}</dd>}
        </div>
      ))}
    </dl>
  );
}

/**
 * Deliveries: one log of the callbacks of every subscription, newest first (GET /blockchain-events/callbacks),
 * filtered by state, event type, chain, subscription and creation time (applied as you type, kept in the
 * address), each opening the callback log's attempt view; the failed callbacks shown can be resent at
 * once (POST .../resend each, charged as one resend each, at most one page), and the whole filtered set of
 * failures recovered as one job (POST /blockchain-events/callbacks/recover with the same filters: a dry
 * run's count in one confirmation, then the job followed live). Refreshes itself every 5 s.
 */
import { useState } from 'preact/hooks';
import { BLOCKCHAINS, EVENT_TYPES, NETWORKS } from '../../../../src/domain/chains.ts';
import { api, type Page, query } from '../../api.ts';
import { useBillingEnabled } from '../../billing.ts';
import { eventTitle } from '../../events.ts';
import { location, navigate } from '../../router.ts';
import { useValue } from '../../state.ts';
import type { Delivery, Recovery } from '../../types.ts';
import { Empty, Failure, Loading, Notice, Pager, PageTitle, ShortId, shorten, Time, useAction, useDebounced, useLoad } from '../../ui.tsx';
import { CallbackDetails } from './callback-log.tsx';
import { PRICE_PER_CALLBACK, RecoveryJob } from './recover-panel.tsx';

const LIMIT = 50;
const FILTERS = ['status', 'eventType', 'blockchain', 'network', 'referenceId', 'since', 'until'] as const;
type Filters = Record<(typeof FILTERS)[number], string>;

/** A datetime-local value (the browser's zone) as Unix seconds; undefined when empty or invalid. */
function seconds(local: string): number | undefined {
  if (!local) return undefined;
  const ms = new Date(local).getTime();
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/** The callback's state as the filter names it: a pending callback already tried is retrying. */
export function deliveryState(c: Delivery): string {
  return c.status === 'pending' && c.attempts.length > 0 ? 'retrying' : c.status;
}
const BADGE: Record<string, string> = { delivered: 'delivering', retrying: 'retrying', failed: 'failing', pending: 'idle', cancelled: 'paused' };
/** The delivery log's default window (DELIVERIES_DEFAULT_WINDOW_S): a recovery needs its since spelled out. */
const DEFAULT_WINDOW_S = 7 * 86_400;
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function DeliveriesPage() {
  const { search } = useValue(location);
  const filters = Object.fromEntries(FILTERS.map((f) => [f, search.get(f) ?? ''])) as Filters;
  const offset = Number(search.get('offset') ?? 0) || 0;
  const [form, setForm] = useState(filters);
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [bulkDone, setBulkDone] = useState<string | null>(null);
  const key = search.toString();
  const params = { ...filters, since: seconds(filters.since), until: seconds(filters.until), limit: LIMIT, offset };
  const log = useLoad(() => api<Page<Delivery>>('GET', `/blockchain-events/callbacks${query(params)}`), key, 5000);
  const apply = useDebounced((next: Filters) => navigate(`/deliveries${query(next)}`, { replace: true }));
  const set = (name: (typeof FILTERS)[number]) => (e: Event) => {
    const next = { ...form, [name]: (e.currentTarget as HTMLInputElement).value };
    setForm(next);
    setBulkDone(null);
    setRecoveryId(null);
    apply(next);
  };
  const filtered = FILTERS.some((f) => filters[f]);
  const failedShown = (log.data?.items ?? []).filter((c) => c.status === 'failed');
  const [progress, setProgress] = useState<string | null>(null);
  const [recoveryId, setRecoveryId] = useState<string | null>(null);
  const billing = useBillingEnabled();
  // The whole filtered set (not only the page shown): the log's filters as the recovery takes them.
  const recoverFiltered = useAction(async () => {
    setBulkDone(null);
    const until = seconds(filters.until);
    const item = {
      since: seconds(filters.since) ?? Math.floor(Date.now() / 1000) - DEFAULT_WINDOW_S,
      ...(until !== undefined && { until }),
      ...(filters.eventType && { eventType: filters.eventType }),
      ...(filters.blockchain && { blockchain: filters.blockchain }),
      ...(filters.network && { network: filters.network }),
      ...(filters.referenceId && { referenceId: filters.referenceId }),
    };
    const count = (
      await api<{ item: { found: number; inactive: number; inactiveSubscriptions: number } }>('POST', '/blockchain-events/callbacks/recover', {
        body: { data: { item: { ...item, dryRun: true } } },
      })
    ).item;
    const left =
      count.inactive > 0
        ? ` ${plural(count.inactive, 'more failed callback')} of ${plural(count.inactiveSubscriptions, 'inactive subscription')} ${count.inactive === 1 ? 'is' : 'are'} left: activate ${count.inactiveSubscriptions === 1 ? 'it' : 'them'} with Recover on ${count.inactiveSubscriptions === 1 ? 'its' : 'their'} page.`
        : '';
    if (count.found === 0) {
      setBulkDone(`No failed callback of an active subscription matches these filters.${left}`);
      return;
    }
    const price = billing ? ` It costs ${PRICE_PER_CALLBACK} credits per callback queued (${count.found * PRICE_PER_CALLBACK} in all).` : '';
    if (
      !window.confirm(`Recover ${plural(count.found, 'failed callback')} matching these filters? Each is queued again with its body and key.${price}${left}`)
    ) {
      return;
    }
    const started = await api<{ item: Recovery }>('POST', '/blockchain-events/callbacks/recover', { body: { data: { item } } });
    setRecoveryId(started.item.recoveryId);
    if (left) setBulkDone(left.trim());
  });
  const bulk = useAction(async () => {
    const ids = failedShown.map((c) => c.callbackId);
    if (!window.confirm(`Resend the ${ids.length} failed callbacks shown? Each resend is charged as a single resend.`)) return;
    let done = 0;
    for (const id of ids) {
      setProgress(`Resending ${done + 1} of ${ids.length}…`);
      await api('POST', `/blockchain-events/callbacks/${encodeURIComponent(id)}/resend`);
      done++;
    }
    setProgress(null);
    setBulkDone(`${done} failed callback${done === 1 ? '' : 's'} queued again.`);
    await log.reload();
  });
  const toggle = (id: string, isOpen: boolean) => {
    const next = new Set(open);
    if (isOpen) next.add(id);
    else next.delete(id);
    setOpen(next);
  };

  return (
    <>
      <PageTitle>Deliveries</PageTitle>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter deliveries">
        <div class="field">
          <label for="d-status">Status</label>
          <select id="d-status" value={form.status} onChange={set('status')}>
            <option value="">All</option>
            <option value="delivered">Delivered</option>
            <option value="retrying">Retrying</option>
            <option value="failed">Failed</option>
            <option value="pending">Pending</option>
          </select>
        </div>
        <div class="field">
          <label for="d-event">Event type</label>
          <select id="d-event" value={form.eventType} onChange={set('eventType')}>
            <option value="">All</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {eventTitle(t)}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="d-blockchain">Blockchain</label>
          <select id="d-blockchain" value={form.blockchain} onChange={set('blockchain')}>
            <option value="">All</option>
            {BLOCKCHAINS.map((b) => (
              <option key={b}>{b}</option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="d-network">Network</label>
          <select id="d-network" value={form.network} onChange={set('network')}>
            <option value="">All</option>
            {NETWORKS.map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="d-subscription">Subscription</label>
          <input id="d-subscription" value={form.referenceId} onInput={set('referenceId')} placeholder="reference id" size={20} />
        </div>
        <div class="field">
          <label for="d-since">Since</label>
          <input id="d-since" type="datetime-local" step={1} value={form.since} onInput={set('since')} />
        </div>
        <div class="field">
          <label for="d-until">Until</label>
          <input id="d-until" type="datetime-local" step={1} value={form.until} onInput={set('until')} />
        </div>
        <div class="field actions">
          {filtered && (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setForm(Object.fromEntries(FILTERS.map((f) => [f, ''])) as Filters);
                navigate('/deliveries');
              }}
            >
              Clear
            </button>
          )}
        </div>
      </form>
      <p class="hint">The last 7 days unless Since says otherwise; times in your browser's zone.</p>
      {(failedShown.length > 0 || (log.data && log.data.total > 0 && (filters.status === '' || filters.status === 'failed'))) && (
        <div class="buttons">
          {failedShown.length > 0 && (
            <button type="button" class="secondary" onClick={() => bulk.run()} disabled={bulk.busy}>
              Resend the {failedShown.length} failed callback{failedShown.length === 1 ? '' : 's'} shown
            </button>
          )}
          {(filters.status === '' || filters.status === 'failed') && (
            <button type="button" class="secondary" onClick={() => recoverFiltered.run()} disabled={recoverFiltered.busy}>
              {recoverFiltered.busy ? 'Counting…' : 'Recover every failed callback matching the filters'}
            </button>
          )}
        </div>
      )}
      {progress && <p role="status">{progress}</p>}
      <Failure error={bulk.error} />
      <Failure error={recoverFiltered.error} />
      {recoveryId && <RecoveryJob id={recoveryId} active />}
      {bulkDone && <Notice>{bulkDone}</Notice>}
      <Failure error={log.error} />
      {log.data === undefined ? (
        log.loading && <Loading what="the deliveries" />
      ) : log.data.items.length === 0 ? (
        <Empty>{filtered ? 'No callback matches these filters.' : 'No callbacks in the last 7 days.'}</Empty>
      ) : (
        <>
          <ul class="log deliveries">
            {log.data.items.map((c) => {
              const state = deliveryState(c);
              const last = c.attempts[c.attempts.length - 1];
              return (
                <li key={c.callbackId} class={`callback ${state}`}>
                  <details open={open.has(c.callbackId)} onToggle={(e) => toggle(c.callbackId, (e.currentTarget as HTMLDetailsElement).open)}>
                    <summary>
                      <span class={`badge ${BADGE[state] ?? 'idle'}`}>{state}</span> <Time s={c.createdTimestamp} short /> · {eventTitle(c.event)} ·{' '}
                      {c.blockchain} / {c.network} ·{' '}
                      <span class="mono" title={c.referenceId}>
                        {shorten(c.referenceId)}
                      </span>{' '}
                      · {c.attempts.length} attempt{c.attempts.length === 1 ? '' : 's'}
                      {last && <> · last {last.httpStatus ?? last.error?.class ?? '—'}</>}
                    </summary>
                    {open.has(c.callbackId) && (
                      <div class="callback-detail">
                        {/* Links and buttons stay out of the summary (no interactive control inside another). */}
                        <p>
                          Subscription <ShortId value={c.referenceId} what="subscription" to={`/subscriptions/${encodeURIComponent(c.referenceId)}`} />
                        </p>
                        <CallbackDetails callback={c} onResent={() => log.reload()} />
                      </div>
                    )}
                  </details>
                </li>
              );
            })}
          </ul>
          <Pager
            offset={offset}
            limit={LIMIT}
            total={log.data.total}
            what="deliveries"
            onOffset={(o) => navigate(`/deliveries${query({ ...filters, offset: o || undefined })}`)}
          />
        </>
      )}
    </>
  );
}

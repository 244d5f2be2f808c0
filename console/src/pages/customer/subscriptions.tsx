/** The customer's subscriptions on every chain, with filters and search (GET /blockchain-events/subscriptions). */
import { useState } from 'preact/hooks';
import { BLOCKCHAINS, EVENT_TYPES, NETWORKS } from '../../../../src/domain/chains.ts';
import { api, type Page, query } from '../../api.ts';
import { eventTitle } from '../../events.ts';
import { location, navigate } from '../../router.ts';
import { useValue } from '../../state.ts';
import type { Subscription } from '../../types.ts';
import { Empty, Failure, Link, Loading, Pager, PageTitle, Scroll, ShortId, StatusBadge, Time, useDebounced, useLoad } from '../../ui.tsx';

const LIMIT = 50;
const FILTERS = ['blockchain', 'network', 'eventType', 'active', 'q'] as const;

export function rate(h: Subscription['health']): string {
  if (!h || h.successRate === null) return 'no callbacks yet';
  return `${(h.successRate * 100).toFixed(1)} %`;
}

/** What a subscription watches, its long values shortened (the full ones on hover and to copy). */
export function Target({ s }: { s: Subscription }) {
  if (s.transactionId) return <ShortId value={s.transactionId} what="transaction id" />;
  if (s.contractAddress)
    return (
      <span class="nowrap">
        <ShortId value={s.contractAddress} what="token contract" /> ≥ {s.amountHigherThan}
      </span>
    );
  if (s.address) return <ShortId value={s.address} what="address" />;
  if (s.amountHigherThan !== undefined) return <span class="nowrap">≥ {s.amountHigherThan}</span>;
  if (s.blockHeightReached !== undefined) return <span class="nowrap">height {s.blockHeightReached}</span>;
  return <span class="nowrap">every block</span>;
}

export function SubscriptionsPage() {
  const { search } = useValue(location);
  const filters = Object.fromEntries(FILTERS.map((f) => [f, search.get(f) ?? ''])) as Record<(typeof FILTERS)[number], string>;
  const offset = Number(search.get('offset') ?? 0) || 0;
  const [form, setForm] = useState(filters);
  const key = search.toString();
  const list = useLoad(() => api<Page<Subscription>>('GET', `/blockchain-events/subscriptions${query({ ...filters, limit: LIMIT, offset })}`), key);

  // Filters apply as you type (a pause in typing), replacing the history entry rather than adding one per key.
  const apply = useDebounced((next: typeof form) => navigate(`/subscriptions${query(next)}`, { replace: true }));
  const set = (name: (typeof FILTERS)[number]) => (e: Event) => {
    const next = { ...form, [name]: (e.currentTarget as HTMLInputElement).value };
    setForm(next);
    apply(next);
  };
  const filtered = FILTERS.some((f) => filters[f]);

  return (
    <>
      <PageTitle>Subscriptions</PageTitle>
      <p>
        <Link to="/subscriptions/new" class="button">
          New subscription
        </Link>
      </p>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter subscriptions">
        <div class="field">
          <label for="f-q">Search</label>
          <input id="f-q" type="search" value={form.q} onInput={set('q')} placeholder="reference id, address or transaction id" />
        </div>
        <div class="field">
          <label for="f-blockchain">Blockchain</label>
          <select id="f-blockchain" value={form.blockchain} onChange={set('blockchain')}>
            <option value="">All</option>
            {BLOCKCHAINS.map((b) => (
              <option key={b}>{b}</option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="f-network">Network</label>
          <select id="f-network" value={form.network} onChange={set('network')}>
            <option value="">All</option>
            {NETWORKS.map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="f-event">Event type</label>
          <select id="f-event" value={form.eventType} onChange={set('eventType')}>
            <option value="">All</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {eventTitle(t)}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="f-active">State</label>
          <select id="f-active" value={form.active} onChange={set('active')}>
            <option value="">Active and inactive</option>
            <option value="true">Active</option>
            <option value="false">Inactive</option>
          </select>
        </div>
        <div class="field actions">
          {filtered && (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setForm({ blockchain: '', network: '', eventType: '', active: '', q: '' });
                navigate('/subscriptions');
              }}
            >
              Clear
            </button>
          )}
        </div>
      </form>
      <Failure error={list.error} />
      {list.data === undefined ? (
        list.loading && <Loading what="subscriptions" />
      ) : list.data.items.length === 0 ? (
        <Empty>
          {filtered ? 'No subscription matches these filters.' : 'No subscriptions yet. Create one to be called back when something happens on a chain.'}
        </Empty>
      ) : (
        <>
          <Scroll>
            <table class="dense">
              <caption class="visually-hidden">Subscriptions</caption>
              <thead>
                <tr>
                  <th scope="col">Status</th>
                  <th scope="col">Reference id</th>
                  <th scope="col">Event</th>
                  <th scope="col">Chain</th>
                  <th scope="col">Watches</th>
                  <th scope="col">Success rate</th>
                  <th scope="col">Last delivered</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((s) => (
                  <tr key={s.referenceId}>
                    <td>
                      <StatusBadge status={s.health?.status} />
                    </td>
                    <td>
                      <ShortId value={s.referenceId} what="subscription" to={`/subscriptions/${encodeURIComponent(s.referenceId)}`} />
                    </td>
                    <td class="event" title={`${eventTitle(s.eventType)} (${s.eventType})`}>
                      <span class="line">{eventTitle(s.eventType)}</span>
                      <span class="line raw">{s.eventType}</span>
                    </td>
                    <td class="nowrap">
                      {s.blockchain} / {s.network}
                    </td>
                    <td>
                      <Target s={s} />
                    </td>
                    <td class="num">{s.health?.successRate == null ? <span title="no callbacks yet">—</span> : rate(s.health)}</td>
                    <td class="nowrap">
                      <Time s={s.health?.lastDeliveredTimestamp} short />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
          <Pager
            offset={offset}
            limit={LIMIT}
            total={list.data.total}
            what="subscriptions"
            onOffset={(o) => navigate(`/subscriptions${query({ ...filters, offset: o || undefined })}`)}
          />
        </>
      )}
    </>
  );
}

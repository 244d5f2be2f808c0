/** The customer's subscriptions on every chain, with filters and search (GET /blockchain-events/subscriptions). */
import { useState } from 'preact/hooks';
import { BLOCKCHAINS, EVENT_TYPES, NETWORKS } from '../../../../src/domain/chains.ts';
import { api, type Page, query } from '../../api.ts';
import { targetOf } from '../../events.ts';
import { location, navigate } from '../../router.ts';
import { useValue } from '../../state.ts';
import type { Subscription } from '../../types.ts';
import { Empty, Failure, Link, Loading, Pager, PageTitle, Scroll, Time, useLoad } from '../../ui.tsx';

const LIMIT = 50;
const FILTERS = ['blockchain', 'network', 'eventType', 'active', 'q'] as const;

export function rate(h: Subscription['health']): string {
  if (!h || h.successRate === null) return 'no callbacks yet';
  return `${(h.successRate * 100).toFixed(1)} %`;
}

export function SubscriptionsPage() {
  const { search } = useValue(location);
  const filters = Object.fromEntries(FILTERS.map((f) => [f, search.get(f) ?? ''])) as Record<(typeof FILTERS)[number], string>;
  const offset = Number(search.get('offset') ?? 0) || 0;
  const [form, setForm] = useState(filters);
  const key = search.toString();
  const list = useLoad(() => api<Page<Subscription>>('GET', `/blockchain-events/subscriptions${query({ ...filters, limit: LIMIT, offset })}`), key);

  const apply = (event: Event) => {
    event.preventDefault();
    navigate(`/subscriptions${query(form)}`);
  };
  const set = (name: (typeof FILTERS)[number]) => (e: Event) => setForm({ ...form, [name]: (e.currentTarget as HTMLInputElement).value });
  const filtered = FILTERS.some((f) => filters[f]);

  return (
    <>
      <PageTitle>Subscriptions</PageTitle>
      <p>
        <Link to="/subscriptions/new" class="button">
          New subscription
        </Link>
      </p>
      <form class="filters" onSubmit={apply} aria-label="Filter subscriptions">
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
              <option key={t}>{t}</option>
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
          <button type="submit">Apply</button>
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
            <table>
              <caption class="visually-hidden">Subscriptions</caption>
              <thead>
                <tr>
                  <th scope="col">Reference id</th>
                  <th scope="col">Event</th>
                  <th scope="col">Chain</th>
                  <th scope="col">Watches</th>
                  <th scope="col">State</th>
                  <th scope="col">Success rate</th>
                  <th scope="col">Last delivered</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((s) => (
                  <tr key={s.referenceId}>
                    <td>
                      <Link to={`/subscriptions/${encodeURIComponent(s.referenceId)}`} class="mono">
                        {s.referenceId}
                      </Link>
                    </td>
                    <td>{s.eventType}</td>
                    <td>
                      {s.blockchain} / {s.network}
                    </td>
                    <td class="mono wrap">{targetOf(s as unknown as Record<string, unknown>)}</td>
                    <td>{s.isActive ? 'active' : <span class="bad">inactive</span>}</td>
                    <td>{rate(s.health)}</td>
                    <td>
                      <Time s={s.health?.lastDeliveredTimestamp} />
                    </td>
                    <td>
                      <Time s={s.createdTimestamp} />
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

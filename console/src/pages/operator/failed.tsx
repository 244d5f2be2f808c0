/**
 * Operator: the failed (or cancelled) callbacks of every customer, newest finished first, with their last
 * attempt (GET /operator/callbacks): filtered by customer and status (applied as you type, kept in the
 * address), read again every 10 s while the tab is shown.
 */
import { useState } from 'preact/hooks';
import { ApiFailure, api, type Page, query } from '../../api.ts';
import { eventTitle } from '../../events.ts';
import { Freshness } from '../../kit.tsx';
import { location, navigate } from '../../router.ts';
import { useValue } from '../../state.ts';
import { Empty, Failure, Link, Loading, Pager, PageTitle, Scroll, ShortId, Time, useDebounced, useLoad } from '../../ui.tsx';

export interface FailedCallback {
  callbackId: string;
  customer: string;
  referenceId: string;
  blockchain: string | null;
  network: string | null;
  eventType: string;
  status: string;
  outcome: string | null;
  destination: string;
  attempts: number;
  createdTimestamp: number;
  finishedTimestamp: number;
  lastAttempt: { startedTimestamp: number; httpStatus: number | null; errorClass: string | null; errorMessage: string | null } | null;
}

const LIMIT = 50;
const REFRESH_MS = 10_000;

export function FailedCallbacksPage() {
  const { search } = useValue(location);
  const filters = { customer: search.get('customer') ?? '', status: search.get('status') ?? 'failed' };
  const offset = Number(search.get('offset') ?? 0) || 0;
  const [form, setForm] = useState(filters);
  const key = search.toString();
  const list = useLoad(
    async () => {
      try {
        return await api<Page<FailedCallback>>(
          'GET',
          `/operator/callbacks${query({ customer: filters.customer.trim(), status: filters.status, limit: LIMIT, offset })}`,
        );
      } catch (e) {
        // A name still being typed names no customer: nothing to show, not an error.
        if (e instanceof ApiFailure && e.code === 'resource_not_found') return { limit: LIMIT, offset, total: 0, items: [], unknownCustomer: true };
        throw e;
      }
    },
    key,
    REFRESH_MS,
  );
  const apply = useDebounced((next: typeof filters) => navigate(`/operator/failed${query(next)}`, { replace: true }));
  const set = (name: keyof typeof filters) => (e: Event) => {
    const next = { ...form, [name]: (e.currentTarget as HTMLInputElement).value };
    setForm(next);
    apply(next);
  };
  return (
    <>
      <PageTitle>Failed callbacks</PageTitle>
      <Freshness updatedAt={list.updatedAt} everyMs={REFRESH_MS} loading={list.loading} />
      <p class="hint">Every customer's callbacks that ended without a 2xx answer in the last 7 days, newest first.</p>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter failed callbacks">
        <div class="field">
          <label for="f-customer">Customer</label>
          <input id="f-customer" value={form.customer} autoComplete="off" spellcheck={false} onInput={set('customer')} />
        </div>
        <div class="field">
          <label for="f-status">Status</label>
          <select id="f-status" value={form.status} onChange={set('status')}>
            <option value="failed">Failed</option>
            <option value="cancelled">Cancelled</option>
          </select>
        </div>
      </form>
      <Failure error={list.error} />
      {!list.data ? (
        list.loading && <Loading what="the failed callbacks" />
      ) : list.data.items.length === 0 ? (
        <Empty>
          {'unknownCustomer' in list.data
            ? `There is no customer named ${filters.customer.trim()}.`
            : `${filters.status === 'cancelled' ? 'No cancelled callbacks' : 'No failed callbacks'} in the last 7 days.`}
        </Empty>
      ) : (
        <>
          <Scroll>
            <table class="dense">
              <caption class="visually-hidden">Failed callbacks across customers</caption>
              <thead>
                <tr>
                  <th scope="col">Finished</th>
                  <th scope="col">Customer</th>
                  <th scope="col">Event</th>
                  <th scope="col">Subscription</th>
                  <th scope="col">Destination</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                  <th scope="col">Last answer</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((f) => (
                  <tr key={f.callbackId}>
                    <td>
                      <Time s={f.finishedTimestamp} short />
                    </td>
                    <td>
                      <Link to={`/operator/customers/${encodeURIComponent(f.customer)}`}>{f.customer}</Link>
                    </td>
                    <td>
                      {eventTitle(f.eventType)}
                      {f.blockchain && (
                        <span class="raw block">
                          {f.blockchain}/{f.network}
                        </span>
                      )}
                    </td>
                    <td>
                      <ShortId value={f.referenceId} what="subscription" />
                    </td>
                    <td class="mono">{f.destination}</td>
                    <td class="num">{f.attempts}</td>
                    <td title={f.lastAttempt?.errorMessage ?? undefined}>
                      <span class="bad">
                        {f.lastAttempt
                          ? f.lastAttempt.httpStatus !== null
                            ? `HTTP ${f.lastAttempt.httpStatus}`
                            : (f.lastAttempt.errorClass ?? 'no answer')
                          : '—'}
                      </span>
                      {f.outcome && <span class="raw block">{f.outcome}</span>}
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
            what="failed callbacks"
            onOffset={(o) => navigate(`/operator/failed${query({ ...filters, offset: o })}`)}
          />
        </>
      )}
    </>
  );
}

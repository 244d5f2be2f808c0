/**
 * Operator: the landing page. Delivery over the last hour (attempts per minute delivered, success rate),
 * callbacks due and the oldest due, failed callbacks of the last 24 h across customers, every chain with
 * its lag and state (held, stopped), and the chains customers subscribe to that no node of this
 * installation follows. Read every 5 s while the tab is shown (GET /operator/delivery, /operator/chains,
 * /operator/callbacks).
 */
import { api, type Page } from '../../api.ts';
import { Freshness, Tiles } from '../../kit.tsx';
import type { Delivery, OperatorChain } from '../../types.ts';
import { Empty, Failure, Link, Loading, PageTitle, Scroll, useLoad } from '../../ui.tsx';
import { age } from './delivery.tsx';
import type { FailedCallback } from './failed.tsx';

const REFRESH_MS = 5_000;

interface OverviewData {
  delivery: Delivery;
  chains: OperatorChain[];
  failed: Page<FailedCallback>;
}

function rate(d: Delivery): { perMinute: number; successRate: number | null } {
  let delivered = 0;
  let attempts = 0;
  for (const m of d.attemptsPerMinute) {
    delivered += m.delivered;
    attempts += m.delivered + m.failed + m.retried;
  }
  return { perMinute: d.attemptsPerMinute.length ? delivered / d.attemptsPerMinute.length : 0, successRate: attempts ? delivered / attempts : null };
}

function percent(r: number | null): string {
  return r === null ? 'no attempts' : `${(Math.floor(r * 1000) / 10).toFixed(1)} %`;
}

function chainProblem(c: OperatorChain): string {
  if (c.hold) return `held: ${c.hold.heldCallbacks} confirmed callbacks wait for a release`;
  if (c.state === 'stopped') return `stopped: ${c.stoppedReason ?? 'see the chain'}`;
  if (c.state === 'catching-up') return 'catching up';
  if (c.state === 'starting') return 'no block processed yet';
  return '';
}

export function OperatorOverviewPage() {
  const data = useLoad<OverviewData>(
    async () => {
      const since = Math.floor(Date.now() / 1000) - 24 * 3600;
      const [delivery, chains, failed] = await Promise.all([
        api<{ item: Delivery }>('GET', '/operator/delivery?minutes=60'),
        api<{ items: OperatorChain[] }>('GET', '/operator/chains'),
        api<Page<FailedCallback>>('GET', `/operator/callbacks?status=failed&since=${since}&limit=5`),
      ]);
      return { delivery: delivery.item, chains: chains.items, failed };
    },
    'operator-overview',
    REFRESH_MS,
  );
  const d = data.data;
  const followed = d?.chains.filter((c) => c.state !== 'no-node' && c.state !== 'not-configured') ?? [];
  const unfollowed = d?.chains.filter((c) => c.state === 'no-node') ?? [];
  const r = d && rate(d.delivery);
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <Freshness updatedAt={data.updatedAt} everyMs={REFRESH_MS} loading={data.loading} />
      <Failure error={data.error} />
      {!d || !r ? (
        data.loading && <Loading what="the overview" />
      ) : (
        <>
          <section aria-labelledby="delivery-heading">
            <h2 id="delivery-heading">Delivery, last hour</h2>
            <Tiles
              items={[
                { label: 'Delivered per minute', value: r.perMinute < 10 ? r.perMinute.toFixed(1) : Math.round(r.perMinute) },
                { label: 'Attempts delivered', value: percent(r.successRate), tone: r.successRate !== null && r.successRate < 0.9 ? 'bad' : undefined },
                { label: 'Callbacks due', value: d.delivery.due },
                {
                  label: 'Oldest due for',
                  value: d.delivery.due === 0 ? 'nothing due' : age(d.delivery.oldestDueAgeSeconds),
                  tone: (d.delivery.oldestDueAgeSeconds ?? 0) > 300 ? 'bad' : undefined,
                },
                { label: 'Failed callbacks, 24 h', value: d.failed.total, tone: d.failed.total > 0 ? 'bad' : undefined },
              ]}
            />
            <p>
              <Link to="/operator/delivery">Delivery details</Link> · <Link to="/operator/failed">Failed callbacks across customers</Link>
            </p>
          </section>

          <section aria-labelledby="chains-heading">
            <h2 id="chains-heading">Chains followed</h2>
            {followed.length === 0 ? (
              <Empty>No chains are followed. Add them to the configuration (chains) and restart the ingest role.</Empty>
            ) : (
              <Scroll>
                <table class="dense">
                  <caption class="visually-hidden">Chains followed, with their lag and state</caption>
                  <thead>
                    <tr>
                      <th scope="col">Chain</th>
                      <th scope="col">State</th>
                      <th scope="col" class="num">
                        Lag (blocks)
                      </th>
                      <th scope="col" class="num">
                        Lag (s)
                      </th>
                      <th scope="col">Needs attention</th>
                    </tr>
                  </thead>
                  <tbody>
                    {followed.map((c) => (
                      <tr key={c.blockchain + c.network}>
                        <td>
                          <Link to="/operator/chains">
                            {c.blockchain} / {c.network}
                          </Link>
                        </td>
                        <td>
                          <span class={`state ${c.state}`}>{c.state}</span>
                        </td>
                        <td class="num">{c.lagBlocks ?? '—'}</td>
                        <td class="num">{c.lagSeconds ?? '—'}</td>
                        <td class={c.hold || c.state === 'stopped' ? 'bad' : undefined}>{chainProblem(c) || '—'}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </Scroll>
            )}
          </section>

          <section aria-labelledby="unfollowed-heading">
            <h2 id="unfollowed-heading">Subscribed but not followed</h2>
            {unfollowed.length === 0 ? (
              <Empty>Every chain customers subscribe to is followed.</Empty>
            ) : (
              <ul class="attention">
                {unfollowed.map((c) => (
                  <li key={c.blockchain + c.network}>
                    <span class="state no-node">no node</span>{' '}
                    <strong>
                      {c.blockchain} / {c.network}
                    </strong>
                    {c.stoppedReason && <>: {c.stoppedReason}</>}
                  </li>
                ))}
              </ul>
            )}
          </section>

          <section aria-labelledby="failed-heading">
            <h2 id="failed-heading">Latest failed callbacks</h2>
            {d.failed.items.length === 0 ? (
              <Empty>No callback failed in the last 24 hours.</Empty>
            ) : (
              <ul class="attention">
                {d.failed.items.map((f) => (
                  <li key={f.callbackId}>
                    <span class="badge failing">Failed</span> <Link to={`/operator/customers/${encodeURIComponent(f.customer)}`}>{f.customer}</Link>:{' '}
                    <span class="mono">{f.destination}</span> {f.lastAttempt ? lastError(f.lastAttempt) : 'never tried'}
                  </li>
                ))}
              </ul>
            )}
          </section>
        </>
      )}
    </>
  );
}

export function lastError(a: NonNullable<FailedCallback['lastAttempt']>): string {
  if (a.httpStatus !== null) return `HTTP ${a.httpStatus}`;
  return a.errorClass ?? 'no answer';
}

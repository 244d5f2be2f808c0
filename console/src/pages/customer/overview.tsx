/**
 * The customer's landing page: the last 24 h of callbacks (GET /account/overview), the chains herald
 * follows with their lag (GET /blockchain-events/status), what needs attention (failing subscriptions,
 * unverified domains, subscriptions on chains not followed, low credits), and the first-run checklist
 * until it is done. Refreshes itself every 5 s, so a failing receiver shows up within seconds.
 */
import { api, type Page } from '../../api.ts';
import { eventTitle } from '../../events.ts';
import { Freshness } from '../../kit.tsx';
import type { Account, ChainStatus, Overview, UsageRow } from '../../types.ts';
import { Failure, Link, Loading, PageTitle, Scroll, ShortId, Time, useLoad } from '../../ui.tsx';

const REFRESH_MS = 5000;

/** Low: the balance covers less than the credits spent over the last 7 days (at least 100). */
export function lowCredits(credits: number, usage: UsageRow[]): boolean {
  const week = usage.reduce((sum, r) => sum + Number(r.credits), 0);
  return credits < Math.max(100, week);
}

function percent(rate: number | null): string {
  return rate === null ? '—' : `${(rate * 100).toFixed(1)} %`;
}

function lag(c: ChainStatus): string {
  if (c.lagBlocks === null) return '—';
  const seconds = c.lagSeconds ? `, ${c.lagSeconds} s` : '';
  return `${c.lagBlocks} block${c.lagBlocks === 1 ? '' : 's'}${seconds}`;
}

function Step({ done, children }: { done: boolean; children: preact.ComponentChildren }) {
  return (
    <li class={done ? 'step done' : 'step'}>
      <span class={`badge ${done ? 'delivering' : 'idle'}`}>{done ? 'Done' : 'To do'}</span> {children}
    </li>
  );
}

export function OverviewPage() {
  const overview = useLoad(() => api<{ item: Overview }>('GET', '/account/overview'), 'overview', REFRESH_MS);
  const status = useLoad(() => api<{ items: ChainStatus[] }>('GET', '/blockchain-events/status'), 'status', REFRESH_MS);
  const account = useLoad(() => api<{ item: Account }>('GET', '/account'), 'account', 30_000);
  const usage = useLoad(() => api<Page<UsageRow>>('GET', '/account/usage?days=7'), 'usage-7', 60_000);
  const o = overview.data?.item;
  const chains = status.data?.items ?? [];
  const followed = chains.filter((c) => c.state !== 'no-node' && c.state !== 'not-configured');
  const notFollowed = chains.filter((c) => c.state === 'no-node');
  const a = account.data?.item;
  const low = a?.billingEnabled && usage.data ? lowCredits(Number(a.credits), usage.data.items) : false;
  const attention = o ? o.failingSubscriptions.total + o.unverifiedDomains.length + notFollowed.length + (low ? 1 : 0) : 0;
  const firstRunDone = o ? o.firstRun.domainVerified && o.firstRun.subscriptionCreated && o.firstRun.testCallbackDelivered : true;
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <Freshness updatedAt={overview.updatedAt} everyMs={REFRESH_MS} loading={overview.loading} />
      <Failure error={overview.error ?? status.error} />
      {!o ? (
        overview.loading && <Loading what="the overview" />
      ) : (
        <>
          {!firstRunDone && (
            <section aria-labelledby="first-run-heading" class="card first-run">
              <h2 id="first-run-heading">Get started</h2>
              <ol class="steps">
                <Step done={o.firstRun.domainVerified}>
                  <Link to="/domains">Verify a callback domain</Link>: prove you own the host your callbacks go to.
                </Step>
                <Step done={o.firstRun.subscriptionCreated}>
                  <Link to="/subscriptions/new">Create a subscription</Link>: what to be called back about, on which chain.
                </Step>
                <Step done={o.firstRun.testCallbackDelivered}>
                  Send a test callback from <Link to="/subscriptions">a subscription's page</Link> and check your receiver answers 2xx.
                </Step>
              </ol>
            </section>
          )}
          <section aria-labelledby="last-day-heading">
            <h2 id="last-day-heading">Callbacks in the last 24 h</h2>
            <dl class="tiles">
              <div>
                <dt>Delivered</dt>
                <dd data-testid="delivered-24h">{o.callbacks.delivered}</dd>
              </div>
              <div class={o.callbacks.failed > 0 ? 'tile-bad' : undefined}>
                <dt>Failed</dt>
                <dd data-testid="failed-24h">{o.callbacks.failed}</dd>
              </div>
              <div>
                <dt>Pending</dt>
                <dd data-testid="pending-24h">
                  {o.callbacks.pending}
                  {o.callbacks.retrying > 0 && <small class="hint"> ({o.callbacks.retrying} retrying)</small>}
                </dd>
              </div>
              <div>
                <dt>Success rate</dt>
                <dd>{percent(o.callbacks.successRate)}</dd>
              </div>
            </dl>
            <p>
              <Link to="/deliveries">All deliveries</Link>
            </p>
          </section>
          <section aria-labelledby="attention-heading">
            <h2 id="attention-heading">Needs attention{attention > 0 ? ` (${attention})` : ''}</h2>
            {attention === 0 ? (
              <p class="empty">Nothing needs attention.</p>
            ) : (
              <ul class="attention">
                {o.failingSubscriptions.items.map((f) => (
                  <li key={f.referenceId}>
                    <span class="badge failing">Failing</span> <ShortId value={f.referenceId} what="subscription" to={`/subscriptions/${f.referenceId}`} />{' '}
                    {eventTitle(f.eventType)} on {f.blockchain} / {f.network}:{' '}
                    {f.isActive ? `${f.failed} callback${f.failed === 1 ? '' : 's'} failed` : 'deactivated by herald'}
                    {f.lastFailedTimestamp !== null && (
                      <>
                        {', last '}
                        <Time s={f.lastFailedTimestamp} short />
                      </>
                    )}
                  </li>
                ))}
                {o.failingSubscriptions.total > o.failingSubscriptions.items.length && (
                  <li>… and {o.failingSubscriptions.total - o.failingSubscriptions.items.length} more failing subscriptions.</li>
                )}
                {o.unverifiedDomains.map((d) => (
                  <li key={d}>
                    <span class="badge retrying">Unverified</span> The callback domain <strong>{d}</strong> is not verified:{' '}
                    <Link to="/domains">verify it</Link>.
                  </li>
                ))}
                {notFollowed.map((c) => (
                  <li key={`${c.blockchain}/${c.network}`}>
                    <span class="badge failing">Not followed</span> Subscriptions on {c.blockchain} / {c.network}, which this installation does not follow: they
                    send no callbacks. {c.stopReason}
                  </li>
                ))}
                {low && a && (
                  <li>
                    <span class="badge retrying">Low credits</span> {String(a.credits)} credits left, less than the last 7 days used:{' '}
                    <Link to="/account">credits and usage</Link>.
                  </li>
                )}
              </ul>
            )}
          </section>
        </>
      )}
      <section aria-labelledby="chains-heading">
        <h2 id="chains-heading">Chains this installation follows</h2>
        {status.data === undefined ? (
          status.loading && <Loading what="the chains" />
        ) : followed.length === 0 ? (
          <p class="empty">This installation follows no chain yet.</p>
        ) : (
          <Scroll>
            <table class="dense">
              <caption class="visually-hidden">Chains followed, with their lag</caption>
              <thead>
                <tr>
                  <th scope="col">Chain</th>
                  <th scope="col">State</th>
                  <th scope="col" class="num">
                    Processed block
                  </th>
                  <th scope="col">Lag</th>
                </tr>
              </thead>
              <tbody>
                {followed.map((c) => (
                  <tr key={`${c.blockchain}/${c.network}`}>
                    <td>
                      {c.blockchain} / {c.network}
                    </td>
                    <td>
                      <span class={`state ${c.state}`}>{c.state}</span>
                    </td>
                    <td class="num">{c.processedHeight ?? '—'}</td>
                    <td>{lag(c)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
        )}
      </section>
    </>
  );
}

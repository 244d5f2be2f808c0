/** Credits and usage: the balance as the API gives it, and credits spent per endpoint per UTC day (a chart and its table). */
import { Fragment } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import { api, type Page } from '../../api.ts';
import { COLORS, type Series, TimeChart } from '../../chart.tsx';
import { planFacts } from '../../plan.ts';
import type { Account, UsageRow } from '../../types.ts';
import { Empty, Failure, Loading, PageTitle, useLoad } from '../../ui.tsx';
import { ConfirmationPolicies } from './confirmation-policies.tsx';

/** Rows (newest day first, one per day and endpoint) -> one series per endpoint over consecutive days. */
export function usageSeries(rows: UsageRow[], days: number, today = new Date()): { x: number[]; series: Series[] } {
  const end = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate()) / 1000;
  const x = Array.from({ length: days }, (_, i) => end - (days - 1 - i) * 86_400);
  const index = new Map(x.map((s, i) => [new Date(s * 1000).toISOString().slice(0, 10), i]));
  const endpoints = [...new Set(rows.map((r) => r.endpoint))].sort();
  const series = endpoints.map((endpoint, n) => {
    const values: (number | null)[] = x.map(() => 0);
    for (const r of rows) {
      const i = index.get(r.day);
      if (r.endpoint === endpoint && i !== undefined) values[i] = Number(r.credits);
    }
    return { label: endpoint, values, color: COLORS[n % COLORS.length] as string };
  });
  return { x, series };
}

const dayLabel = (s: number) => new Date(s * 1000).toISOString().slice(0, 10);

export function AccountPage() {
  const [days, setDays] = useState(30);
  const account = useLoad(() => api<{ item: Account }>('GET', '/account'), 'account', 10_000);
  const usage = useLoad(() => api<Page<UsageRow>>('GET', `/account/usage?days=${days}`), String(days));
  const chart = useMemo(() => (usage.data ? usageSeries(usage.data.items, days) : undefined), [usage.data, days]);
  const a = account.data?.item;
  const billing = a?.billingEnabled !== false;
  return (
    <>
      <PageTitle>{billing ? 'Credits and usage' : 'Account'}</PageTitle>
      <Failure error={account.error} />
      {!a ? (
        account.loading && <Loading what="the account" />
      ) : (
        <dl class="facts">
          <dt>Customer</dt>
          <dd>{a.customerName}</dd>
          {billing ? (
            <>
              <dt>Credits available</dt>
              <dd class="big">{String(a.credits)}</dd>
            </>
          ) : (
            <>
              <dt>Billing</dt>
              <dd>Off on this installation: every call is free.</dd>
            </>
          )}
          <dt>Active subscriptions</dt>
          <dd>{a.activeSubscriptions}</dd>
          {planFacts(a.plan)
            .filter((f) => billing || f.key === 'requestsPerSecond')
            .map((f) => (
              <Fragment key={f.key}>
                <dt>{f.label}</dt>
                <dd>{f.value}</dd>
              </Fragment>
            ))}
        </dl>
      )}
      {billing && (
        <section aria-labelledby="usage-heading">
          <h2 id="usage-heading">Credits spent per endpoint and day (UTC)</h2>
          <div class="field inline">
            <label for="usage-days">Days</label>
            <select id="usage-days" value={days} onChange={(e) => setDays(Number(e.currentTarget.value))}>
              {[7, 30, 90].map((d) => (
                <option key={d} value={d}>
                  {d}
                </option>
              ))}
            </select>
          </div>
          <Failure error={usage.error} />
          {!usage.data ? (
            usage.loading && <Loading what="the usage" />
          ) : usage.data.items.length === 0 ? (
            <Empty>No credits spent in the last {days} days.</Empty>
          ) : (
            chart && <TimeChart title={`Credits per day, last ${days} days`} x={chart.x} series={chart.series} unit="credits" bars xLabel={dayLabel} />
          )}
        </section>
      )}
      <ConfirmationPolicies />
    </>
  );
}

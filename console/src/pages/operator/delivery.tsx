/** Operator: the delivery queue: callbacks due, the oldest due age, attempts per minute by outcome (chart), the slowest destinations. */
import { useMemo } from 'preact/hooks';
import { api } from '../../api.ts';
import { COLORS, TimeChart } from '../../chart.tsx';
import { Freshness } from '../../kit.tsx';
import type { Delivery } from '../../types.ts';
import { Empty, Failure, Loading, PageTitle, Scroll, useLoad } from '../../ui.tsx';

/** Latencies as whole milliseconds, or one decimal below 10 ms. */
function ms(n: number): string {
  return `${n < 10 ? Math.round(n * 10) / 10 : Math.round(n)} ms`;
}

export function age(seconds: number | null): string {
  if (seconds === null) return 'nothing due';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

const REFRESH_MS = 10_000;

export function DeliveryPage() {
  const delivery = useLoad(() => api<{ item: Delivery }>('GET', '/operator/delivery?minutes=60'), 'delivery', REFRESH_MS);
  const d = delivery.data?.item;
  const chart = useMemo(() => {
    const rows = [...(d?.attemptsPerMinute ?? [])].sort((a, b) => a.timestamp - b.timestamp);
    return {
      x: rows.map((r) => r.timestamp),
      series: [
        { label: 'delivered', values: rows.map((r) => r.delivered), color: COLORS[2] as string },
        { label: 'failed', values: rows.map((r) => r.failed), color: COLORS[1] as string },
        { label: 'retried', values: rows.map((r) => r.retried), color: COLORS[4] as string },
      ],
    };
  }, [d]);
  return (
    <>
      <PageTitle>Delivery</PageTitle>
      <Freshness updatedAt={delivery.updatedAt} everyMs={REFRESH_MS} loading={delivery.loading} />
      <Failure error={delivery.error} />
      {!d ? (
        delivery.loading && <Loading what="the delivery figures" />
      ) : (
        <>
          <dl class="tiles">
            <div>
              <dt>Callbacks due</dt>
              <dd>{d.due}</dd>
            </div>
            <div>
              <dt>Oldest due for</dt>
              <dd>{d.due === 0 ? 'nothing due' : age(d.oldestDueAgeSeconds)}</dd>
            </div>
          </dl>
          <section aria-labelledby="apm-heading">
            <h2 id="apm-heading">Attempts per minute, last hour</h2>
            {chart.x.length === 0 ? (
              <Empty>No attempts in the last hour.</Empty>
            ) : (
              <TimeChart title="Attempts per minute by outcome" x={chart.x} series={chart.series} unit="attempts" />
            )}
          </section>
          <section aria-labelledby="slow-heading">
            <h2 id="slow-heading">Slowest destinations, last hour</h2>
            {d.slowestDestinations.length === 0 ? (
              <Empty>No attempts in the last hour.</Empty>
            ) : (
              <Scroll>
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Host</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">Failures</th>
                      <th scope="col">Median</th>
                      <th scope="col">95th percentile</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.slowestDestinations.map((s) => (
                      <tr key={s.host}>
                        <td class="mono">{s.host}</td>
                        <td class="num">{s.attempts}</td>
                        <td class="num">{s.failures}</td>
                        <td class="num">{ms(s.p50Ms)}</td>
                        <td class="num">{ms(s.p95Ms)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </Scroll>
            )}
          </section>
        </>
      )}
    </>
  );
}

/**
 * A subscription's callback log, newest first: every callback with each attempt (time, HTTP status,
 * duration, error class, response excerpt), the payload as sent, and resend. Details of a callback
 * (payload, response excerpts) are read when it is opened (GET /blockchain-events/callbacks/{id}).
 */
import { useState } from 'preact/hooks';
import { api, type Page, query } from '../../api.ts';
import type { Callback, CallbackDetail } from '../../types.ts';
import { Empty, Failure, Loading, Notice, Pager, Pre, Scroll, Time, useAction, useLoad } from '../../ui.tsx';

const LIMIT = 20;

function lastOf(c: Callback) {
  return c.attempts[c.attempts.length - 1];
}

/** One callback's attempt view (attempts, response excerpts, payload, resend); `active` undefined: the subscription's state is not known here. */
export function CallbackDetails({ callback, active, onResent }: { callback: Callback; active?: boolean; onResent: () => void }) {
  const detail = useLoad(
    () => api<{ item: CallbackDetail }>('GET', `/blockchain-events/callbacks/${encodeURIComponent(callback.callbackId)}`),
    callback.callbackId + callback.attempts.length,
  );
  const [resent, setResent] = useState<string | null>(null);
  const resend = useAction(async () => {
    const r = await api<{ item: { callbackId: string; status: string } }>(
      'POST',
      `/blockchain-events/callbacks/${encodeURIComponent(callback.callbackId)}/resend`,
    );
    setResent(
      active !== false
        ? `Queued again (${r.item.status}).`
        : `Queued again (${r.item.status}); the subscription is inactive, so it is sent once you activate the subscription.`,
    );
    onResent();
  });
  const excerpts = new Map((detail.data?.item.attempts ?? []).map((a) => [a.attempt, a.responseExcerpt ?? null]));
  const canResend = callback.status === 'delivered' || callback.status === 'failed';
  return (
    <div class="callback-detail">
      <p>
        Idempotency key <span class="mono">{callback.idempotencyKey}</span>
        {callback.nextAttemptTimestamp !== null && (
          <>
            {' '}
            · next attempt <Time s={callback.nextAttemptTimestamp} />
          </>
        )}
        {callback.outcome && <> · outcome {callback.outcome}</>}
      </p>
      {callback.attempts.length === 0 ? (
        <Empty>Not attempted yet.</Empty>
      ) : (
        <Scroll>
          <table>
            <caption>Attempts</caption>
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Time</th>
                <th scope="col">HTTP status</th>
                <th scope="col">Duration</th>
                <th scope="col">Error class</th>
                <th scope="col">Response excerpt</th>
              </tr>
            </thead>
            <tbody>
              {callback.attempts.map((a) => (
                <tr key={a.attempt}>
                  <th scope="row">{a.attempt}</th>
                  <td>
                    <Time s={a.timestamp} />
                  </td>
                  <td>{a.httpStatus ?? '—'}</td>
                  <td>{a.durationMs} ms</td>
                  <td>{a.error ? <span title={a.error.message}>{a.error.class}</span> : '—'}</td>
                  <td>{detail.data ? excerpts.get(a.attempt) ? <Pre class="excerpt">{excerpts.get(a.attempt)}</Pre> : <span>(empty)</span> : '…'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      {callback.attempts.some((a) => a.error) && (
        <ul class="errors">
          {callback.attempts
            .filter((a) => a.error)
            .map((a) => (
              <li key={a.attempt}>
                Attempt {a.attempt}: {a.error?.class}: {a.error?.message}
              </li>
            ))}
        </ul>
      )}
      <h4>Payload as sent</h4>
      <Failure error={detail.error} />
      {detail.data ? <Pre class="payload">{JSON.stringify(detail.data.item.payload, null, 2)}</Pre> : !detail.error && <Loading what="the payload" />}
      {canResend && (
        <p>
          <button type="button" class="secondary" onClick={() => resend.run()} disabled={resend.busy}>
            Resend this callback
          </button>
        </p>
      )}
      <Failure error={resend.error} />
      {resent && <Notice>{resent}</Notice>}
    </div>
  );
}

export function CallbackLog({ referenceId, active }: { referenceId: string; active: boolean }) {
  // The API lists oldest first: the newest page is read from the end (offset total - limit).
  const [fromNewest, setFromNewest] = useState(0);
  const [open, setOpen] = useState<Set<string>>(new Set());
  const log = useLoad(
    async () => {
      const base = `/blockchain-events/subscriptions/${encodeURIComponent(referenceId)}/callbacks`;
      const first = await api<Page<Callback>>('GET', base + query({ limit: 1, offset: 0 }));
      const offset = Math.max(0, first.total - LIMIT - fromNewest);
      const limit = Math.min(LIMIT, first.total - fromNewest) || 1;
      const page = await api<Page<Callback>>('GET', base + query({ limit, offset }));
      return { total: page.total, items: [...page.items].reverse() };
    },
    `${referenceId}:${fromNewest}`,
    4000,
  );
  const toggle = (id: string, isOpen: boolean) => {
    const next = new Set(open);
    if (isOpen) next.add(id);
    else next.delete(id);
    setOpen(next);
  };
  return (
    <section aria-labelledby="log-heading">
      <h2 id="log-heading">Callback log</h2>
      <Failure error={log.error} />
      {log.data === undefined ? (
        log.loading && <Loading what="the callback log" />
      ) : log.data.items.length === 0 ? (
        <Empty>No callbacks yet. They appear here as the subscription's events happen (the log refreshes itself).</Empty>
      ) : (
        <>
          <ul class="log">
            {log.data.items.map((c) => {
              const last = lastOf(c);
              return (
                <li key={c.callbackId} class={`callback ${c.status}`}>
                  <details open={open.has(c.callbackId)} onToggle={(e) => toggle(c.callbackId, (e.currentTarget as HTMLDetailsElement).open)}>
                    <summary>
                      <span class="seq">#{c.sequence ?? '—'}</span> <span class={`status ${c.status}`}>{c.status}</span> <Time s={c.createdTimestamp} />
                      {' · '}
                      {c.attempts.length} attempt{c.attempts.length === 1 ? '' : 's'}
                      {last && (
                        <>
                          {' · last: '}
                          {last.httpStatus ?? last.error?.class ?? '—'}, {last.durationMs} ms
                        </>
                      )}
                    </summary>
                    {open.has(c.callbackId) && <CallbackDetails callback={c} active={active} onResent={() => log.reload()} />}
                  </details>
                </li>
              );
            })}
          </ul>
          <Pager offset={fromNewest} limit={LIMIT} total={log.data.total} what="callbacks (newest first)" onOffset={setFromNewest} />
        </>
      )}
    </section>
  );
}

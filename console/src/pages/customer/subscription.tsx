/**
 * One subscription: what it watches, its delivery health, test callback, activate, delete, recover its
 * failed callbacks, replay a block range, and its callback log.
 */
import { useState } from 'preact/hooks';
import { api, fieldErrors, type Page, query } from '../../api.ts';
import { eventTitle, targetOf } from '../../events.ts';
import { location } from '../../router.ts';
import { useValue } from '../../state.ts';
import type { Subscription } from '../../types.ts';
import { CopyButton, Failure, Field, Link, Loading, Notice, PageTitle, Pre, StatusBadge, Time, useAction, useLoad } from '../../ui.tsx';
import { CallbackLog } from './callback-log.tsx';
import { RecoverPanel } from './recover-panel.tsx';
import { ReplayPanel } from './replay-panel.tsx';
import { rate } from './subscriptions.tsx';

interface TestResult {
  idempotencyKey: string;
  delivered: boolean;
  httpStatus: number | null;
  durationMs: number;
  errorClass: string | null;
  errorMessage: string | null;
  responseBody: string | null;
}

export function SubscriptionPage({ id }: { id: string }) {
  const { search } = useValue(location);
  const path = `/blockchain-events/subscriptions/${encodeURIComponent(id)}`;
  // Refreshed with the log: a subscription deactivates itself when its callbacks exhaust their retries.
  const sub = useLoad(() => api<{ item: Subscription }>('GET', path), id, 4000);
  // Delivery health comes with the cross-chain list; the search by reference id finds exactly this one.
  const health = useLoad(
    async () => (await api<Page<Subscription>>('GET', `/blockchain-events/subscriptions${query({ q: id, limit: 1 })}`)).items[0]?.health,
    id,
    4000,
  );
  const [test, setTest] = useState<TestResult | null>(null);
  const [done, setDone] = useState<string | null>(null);

  const sendTest = useAction(async () => {
    setTest(null);
    setTest((await api<{ item: TestResult }>('POST', `${path}/test-callback`)).item);
  });
  const activate = useAction(async () => {
    await api('POST', `${path}/activate`);
    setDone('The subscription is active again.');
    await Promise.all([sub.reload(), health.reload()]);
  });
  const pause = useAction(async () => {
    await api('POST', `${path}/pause`);
    setDone('The subscription is paused: its callbacks wait until you activate it again.');
    await Promise.all([sub.reload(), health.reload()]);
  });
  const remove = useAction(async (s: Subscription) => {
    if (!window.confirm(`Delete subscription ${s.referenceId}? Its pending callbacks are cancelled.`)) return;
    await api('DELETE', `/blockchain-events/${s.blockchain}/${s.network}/subscriptions/${encodeURIComponent(s.referenceId)}`);
    setDone('The subscription is deleted (inactive); its pending callbacks are cancelled.');
    await Promise.all([sub.reload(), health.reload()]);
  });

  const s = sub.data?.item;
  const h = health.data;
  return (
    <>
      <PageTitle>Subscription</PageTitle>
      <p>
        <Link to="/subscriptions">Back to the subscriptions</Link>
      </p>
      {search.get('created') && <Notice>The subscription is created.</Notice>}
      <Failure error={sub.error} />
      {!s ? (
        sub.loading && <Loading what="the subscription" />
      ) : (
        <>
          <dl class="facts">
            <dt>Reference id</dt>
            <dd class="mono">{s.referenceId}</dd>
            <dt>Event</dt>
            <dd>
              {eventTitle(s.eventType)} <span class="raw">{s.eventType}</span>
            </dd>
            <dt>Chain</dt>
            <dd>
              {s.blockchain} / {s.network}
            </dd>
            <dt>Watches</dt>
            <dd class="mono wrap">{targetOf(s as unknown as Record<string, unknown>)}</dd>
            <dt>Callback URL</dt>
            <dd class="mono wrap">{s.callbackUrl}</dd>
            <dt>State</dt>
            <dd>
              <StatusBadge status={h?.status} /> {s.isActive ? 'active' : 'inactive'}
              {s.deactivationReasons?.map((r) => (
                <span key={r.timestamp}>
                  {' '}
                  · {r.reason} (<Time s={r.timestamp} />)
                </span>
              ))}
            </dd>
            <dt>Created</dt>
            <dd>
              <Time s={s.createdTimestamp} />
            </dd>
          </dl>
          <section aria-labelledby="health-heading">
            <h2 id="health-heading">Delivery health</h2>
            {h ? (
              <dl class="facts">
                <dt>Success rate</dt>
                <dd>{rate(h)}</dd>
                <dt>Delivered</dt>
                <dd>{h.delivered}</dd>
                <dt>Failed</dt>
                <dd>{h.failed}</dd>
                <dt>Pending</dt>
                <dd>{h.pending}</dd>
                <dt>Last delivered</dt>
                <dd>
                  <Time s={h.lastDeliveredTimestamp} />
                </dd>
              </dl>
            ) : (
              <Failure error={health.error} />
            )}
          </section>
          <section aria-labelledby="actions-heading">
            <h2 id="actions-heading">Actions</h2>
            <div class="buttons">
              <button type="button" onClick={() => sendTest.run()} disabled={sendTest.busy}>
                {sendTest.busy ? 'Sending…' : 'Send a test callback'}
              </button>
              {!s.isActive && (
                <button type="button" class="secondary" onClick={() => activate.run()} disabled={activate.busy}>
                  Activate
                </button>
              )}
              {s.isActive && (
                <button type="button" class="secondary" onClick={() => pause.run()} disabled={pause.busy}>
                  Pause
                </button>
              )}
              {s.isActive && (
                <button type="button" class="danger" onClick={() => remove.run(s)} disabled={remove.busy}>
                  Delete
                </button>
              )}
            </div>
            <Failure error={sendTest.error ?? activate.error ?? pause.error ?? remove.error} />
            {done && <Notice>{done}</Notice>}
            {test && (
              <div role="status" class={`notice ${test.delivered ? 'ok' : 'warn'}`}>
                <p>
                  Test callback {test.delivered ? 'delivered' : 'not delivered'}: HTTP {test.httpStatus ?? '—'} in {test.durationMs} ms
                  {test.errorClass && ` (${test.errorClass}: ${test.errorMessage ?? ''})`}.
                </p>
                {test.responseBody && <Pre class="excerpt">{test.responseBody}</Pre>}
              </div>
            )}
          </section>
          <CallbackLog referenceId={s.referenceId} active={s.isActive} />
          {s.callbackUrl && <UrlPanel path={path} current={s.callbackUrl} onChanged={() => sub.reload()} />}
          {s.callbackUrl && <SecretPanel path={path} secret={s.callbackSecretKey} onRotated={() => sub.reload()} />}
          {/* The power tools after the log: what most visits come for is the log. */}
          <RecoverPanel referenceId={s.referenceId} active={s.isActive} onActivated={() => Promise.all([sub.reload(), health.reload()])} />
          <ReplayPanel referenceId={s.referenceId} blockchain={s.blockchain} network={s.network} active={s.isActive} />
        </>
      )}
    </>
  );
}

/** 32 random bytes as hex: a new secret proposed for a rotation (the customer may type their own). */
function newSecret(): string {
  return [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The callback secret: hidden until revealed, and rotated (POST .../rotate-secret; the replaced secret
 * keeps signing during the overlap, 24 h by default: docs/guides/verify-signatures.md).
 */
function SecretPanel({ path, secret, onRotated }: { path: string; secret: string | undefined; onRotated: () => Promise<void> }) {
  const [shown, setShown] = useState(false);
  const [next, setNext] = useState(newSecret);
  const [rotated, setRotated] = useState<number | null | undefined>(undefined);
  const rotate = useAction(async () => {
    const r = await api<{ item: { previousSecretValidUntil: number | null } }>('POST', `${path}/rotate-secret`, {
      body: { data: { item: { callbackSecretKey: next } } },
    });
    setRotated(r.item.previousSecretValidUntil);
    setShown(false);
    setNext(newSecret());
    await onRotated();
  });
  const { fields } = fieldErrors(rotate.error, ['callbackSecretKey']);
  return (
    <section aria-labelledby="secret-heading">
      <h2 id="secret-heading">Callback secret</h2>
      <p class="proof">
        <span class="proof-label">Secret</span>
        {secret ? (
          <>
            <code data-testid="secret">{shown ? secret : '•'.repeat(12)}</code>
            <button type="button" class="secondary small" aria-pressed={shown} onClick={() => setShown(!shown)}>
              {shown ? 'Hide' : 'Reveal'}
            </button>
            {shown && <CopyButton text={secret} label="Copy the callback secret" />}
          </>
        ) : (
          <span>none: callbacks are not signed</span>
        )}
      </p>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          rotate.run();
        }}
      >
        <Field id="secret-new" label="New secret" hint="Proposed at random; the replaced one keeps signing for 24 h." error={fields.callbackSecretKey}>
          {(aria) => <input {...aria} class="mono" size={40} value={next} onInput={(e) => setNext((e.currentTarget as HTMLInputElement).value)} />}
        </Field>
        <button type="submit" disabled={rotate.busy}>
          Rotate the secret
        </button>
      </form>
      {!fields.callbackSecretKey && <Failure error={rotate.error} />}
      {rotated !== undefined && (
        <Notice>
          The secret is rotated.{' '}
          {rotated !== null && (
            <>
              The previous one keeps signing until <Time s={rotated} />.
            </>
          )}
        </Notice>
      )}
    </section>
  );
}

/** Changes the callback URL (POST .../callback-url): the pending callbacks follow it; the API's message beside the field. */
function UrlPanel({ path, current, onChanged }: { path: string; current: string; onChanged: () => Promise<void> }) {
  const [url, setUrl] = useState(current);
  const [done, setDone] = useState(false);
  const change = useAction(async () => {
    setDone(false);
    await api('POST', `${path}/callback-url`, { body: { data: { item: { callbackUrl: url } } } });
    setDone(true);
    await onChanged();
  });
  const { fields, rest } = fieldErrors(change.error, ['callbackUrl']);
  return (
    <section aria-labelledby="url-heading">
      <h2 id="url-heading">Callback URL</h2>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          change.run();
        }}
      >
        <Field id="url-new" label="Callback URL" hint="https, on a verified callback domain; pending callbacks follow it." error={fields.callbackUrl}>
          {(aria) => <input {...aria} type="url" class="mono" size={50} value={url} onInput={(e) => setUrl((e.currentTarget as HTMLInputElement).value)} />}
        </Field>
        <button type="submit" disabled={change.busy || url === current}>
          Change the callback URL
        </button>
      </form>
      {rest && <Failure error={change.error} />}
      {done && <Notice>The callback URL is changed; pending callbacks go there from their next attempt.</Notice>}
    </section>
  );
}

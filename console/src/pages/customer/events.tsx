/**
 * Events: the catalogue of every callback event type (GET /blockchain-events/event-types: the subscriptions'
 * events and the DROPPED ones), each with the chains it is sent on and a sample body as herald POSTs it
 * (marked as a test), on the chain chosen; and "send a sample to my URL" (POST .../send-sample: a URL on a
 * verified domain, signed with the secret given, charged as a test callback). docs/reference/events/README.md#samples.
 */
import { useState } from 'preact/hooks';
import { BLOCKCHAINS } from '../../../../src/domain/chains.ts';
import { api, fieldErrors, query } from '../../api.ts';
import { useBillingEnabled } from '../../billing.ts';
import { eventSpec, eventTitle } from '../../events.ts';
import { location, navigate } from '../../router.ts';
import { useValue } from '../../state.ts';
import { CopyButton, Failure, Field, Loading, Notice, PageTitle, Pre, useLoad } from '../../ui.tsx';

interface EventType {
  event: string;
  subscriptionEvent: string;
  blockchains: string[];
  safety: boolean;
  blockchain: string;
  network: string;
  sample: Record<string, unknown>;
}

interface SentSample {
  event: string;
  blockchain: string;
  network: string;
  callbackUrl: string;
  idempotencyKey: string;
  delivered: boolean;
  httpStatus: number | null;
  durationMs: number;
  errorClass: string | null;
  errorMessage: string | null;
  responseBody: string | null;
}

/** An event in words: the create form's title; a DROPPED event after the unconfirmed event it retracts. */
export function catalogueTitle(e: Pick<EventType, 'event' | 'subscriptionEvent'>): string {
  return e.event === e.subscriptionEvent ? eventTitle(e.event) : `${eventTitle(e.subscriptionEvent)}: dropped`;
}

const slug = (event: string) => event.toLowerCase().replaceAll('_', '-');

function SampleResult({ sent }: { sent: SentSample }) {
  const answer = sent.httpStatus !== null ? `HTTP ${sent.httpStatus}` : (sent.errorMessage ?? sent.errorClass ?? 'no answer');
  return (
    <div class="sample-result">
      <Notice tone={sent.delivered ? 'ok' : 'warn'}>
        {sent.delivered ? 'Delivered' : 'Not delivered'}: {answer} in {sent.durationMs} ms from {sent.callbackUrl} (idempotency key {sent.idempotencyKey}).
      </Notice>
      {sent.responseBody && <Pre class="excerpt">{sent.responseBody}</Pre>}
    </div>
  );
}

export function EventsPage() {
  const { search } = useValue(location);
  const blockchain = search.get('blockchain') ?? '';
  const catalogue = useLoad(() => api<{ items: EventType[] }>('GET', `/blockchain-events/event-types${query({ blockchain })}`), blockchain);
  const [callbackUrl, setCallbackUrl] = useState('');
  const [secret, setSecret] = useState('');
  const [sending, setSending] = useState<string | null>(null);
  const [sent, setSent] = useState<Record<string, SentSample>>({});
  const [error, setError] = useState<{ event: string; error: unknown } | null>(null);
  const billing = useBillingEnabled();
  const { fields } = fieldErrors(error?.error, ['callbackUrl', 'callbackSecretKey']);

  const send = async (e: EventType) => {
    setSending(e.event);
    setError(null);
    try {
      const item = { callbackUrl, ...(secret && { callbackSecretKey: secret }), blockchain: e.blockchain, network: e.network };
      const result = (await api<{ item: SentSample }>('POST', `/blockchain-events/event-types/${e.event}/send-sample`, { body: { data: { item } } })).item;
      setSent((s) => ({ ...s, [e.event]: result }));
    } catch (failure) {
      setError({ event: e.event, error: failure });
    } finally {
      setSending(null);
    }
  };

  return (
    <>
      <PageTitle>Events</PageTitle>
      <p>
        Every event herald calls back, with a sample of its body exactly as it is POSTed (marked as a test: <code>data.isTest</code> is true, zero ids and
        amounts). Send one to your receiver to try it before subscribing.
      </p>
      <form class="card form sample-target" onSubmit={(ev) => ev.preventDefault()} aria-label="Where samples go" noValidate>
        <div class="row">
          <Field id="sample-url" label="Your callback URL" hint="https, on one of your verified callback domains." error={fields.callbackUrl}>
            {(aria) => <input {...aria} type="url" size={40} value={callbackUrl} onInput={(ev) => setCallbackUrl(ev.currentTarget.value)} />}
          </Field>
          <Field id="sample-secret" label="Secret key (optional)" hint="Signs the samples as a subscription with it would." error={fields.callbackSecretKey}>
            {(aria) => <input {...aria} type="password" autoComplete="off" value={secret} onInput={(ev) => setSecret(ev.currentTarget.value)} />}
          </Field>
          <div class="field">
            <label for="sample-chain">Samples on</label>
            <select
              id="sample-chain"
              value={blockchain}
              onChange={(ev) => navigate(`/events${query({ blockchain: ev.currentTarget.value })}`, { replace: true })}
            >
              <option value="">each event's first chain</option>
              {BLOCKCHAINS.map((b) => (
                <option key={b}>{b}</option>
              ))}
            </select>
          </div>
        </div>
        {billing && <p class="hint">Each sample sent costs 1 credit, as a test callback.</p>}
      </form>
      <Failure error={catalogue.error} />
      {!catalogue.data ? (
        catalogue.loading && <Loading what="the events" />
      ) : (
        <ul class="catalogue">
          {catalogue.data.items.map((e) => {
            const spec = eventSpec(e.subscriptionEvent);
            const body = JSON.stringify(e.sample, null, 2);
            return (
              <li key={e.event} id={slug(e.event)}>
                <details>
                  <summary>
                    <span class="title">{catalogueTitle(e)}</span> <span class="raw">{e.event}</span>
                  </summary>
                  <dl class="facts">
                    <dt>Sent on</dt>
                    <dd>
                      subscriptions of <code>{spec?.path ?? e.subscriptionEvent}</code>
                      {e.event !== e.subscriptionEvent && ' when a transaction they were told about goes away unmined'}
                    </dd>
                    <dt>Chains</dt>
                    <dd>{e.blockchains.join(', ')}</dd>
                    <dt>Safety verdict</dt>
                    <dd>{e.safety ? 'yes (data.item.safety)' : 'no'}</dd>
                  </dl>
                  <p class="sample-head">
                    Sample on {e.blockchain} / {e.network} <CopyButton text={body} label={`Copy the ${e.event} sample`} />
                  </p>
                  <Pre class="payload">{body}</Pre>
                  <div class="buttons">
                    <button type="button" disabled={sending !== null || !callbackUrl} onClick={() => send(e)}>
                      {sending === e.event ? 'Sending…' : 'Send this sample to my URL'}
                    </button>
                    {!callbackUrl && <span class="hint">Give your callback URL above first.</span>}
                  </div>
                  {error?.event === e.event && <Failure error={error.error} />}
                  {sent[e.event] && <SampleResult sent={sent[e.event] as SentSample} />}
                </details>
              </li>
            );
          })}
        </ul>
      )}
    </>
  );
}

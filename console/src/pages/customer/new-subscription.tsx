/**
 * The create form: one event type at a time, its fields as the API takes them. Nothing is checked here
 * beyond what the browser needs to send JSON: the API's validation messages come back per attribute and
 * are shown beside their fields (aria-invalid, aria-describedby), the rest above the form.
 */
import { useState } from 'preact/hooks';
import { type Blockchain, CHAINS, type EventType } from '../../../../src/domain/chains.ts';
import { ApiFailure, api, fieldErrors } from '../../api.ts';
import { chainsFor, EVENTS, type EventSpec, type FieldSpec } from '../../events.ts';
import { navigate } from '../../router.ts';
import { Failure, Field, Link, PageTitle } from '../../ui.tsx';

type Values = Record<string, string | boolean>;

/** The item sent: empty optional fields left out; integers as numbers when they are, as typed otherwise (the API then names the field). */
function itemOf(spec: EventSpec, values: Values): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  for (const f of spec.fields) {
    const v = values[f.name];
    if (f.kind === 'boolean') {
      if (v === true || f.required) item[f.name] = v === true;
      continue;
    }
    const text = typeof v === 'string' ? v.trim() : '';
    if (text === '') continue;
    item[f.name] = f.kind === 'integer' && /^-?\d+$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text;
  }
  return item;
}

/** Which field an error belongs to: its details' attributes, or the callback URL for the domain check. */
function errorsByField(error: unknown, spec: EventSpec): { fields: Record<string, string>; rest: boolean } {
  if (error instanceof ApiFailure && error.details.length === 0 && error.code === 'callback_url_not_verified') {
    return { fields: { callbackUrl: error.message }, rest: false };
  }
  return fieldErrors(
    error,
    spec.fields.map((f) => f.name as string),
  );
}

function Input({ f, value, onValue, aria }: { f: FieldSpec; value: string | boolean | undefined; onValue: (v: string | boolean) => void; aria: object }) {
  if (f.kind === 'boolean') {
    return <input {...aria} type="checkbox" checked={value === true} onChange={(e) => onValue(e.currentTarget.checked)} />;
  }
  return (
    <input
      {...aria}
      type="text"
      inputMode={f.kind === 'integer' ? 'numeric' : f.kind === 'url' ? 'url' : undefined}
      autoComplete="off"
      spellcheck={false}
      value={typeof value === 'string' ? value : ''}
      onInput={(e) => onValue(e.currentTarget.value)}
    />
  );
}

export function NewSubscriptionPage() {
  const [type, setType] = useState<EventType>('TRANSACTION_MINED');
  const spec = EVENTS.find((e) => e.type === type) as EventSpec;
  const chains = chainsFor(type);
  const [blockchain, setBlockchain] = useState<Blockchain>('ethereum');
  const chain = chains.includes(blockchain) ? blockchain : (chains[0] as Blockchain);
  const [network, setNetwork] = useState<string>('mainnet');
  const networks = CHAINS[chain].networks;
  const net = networks.includes(network as never) ? network : (networks[0] as string);
  const [values, setValues] = useState<Values>({});
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const { fields, rest } = errorsByField(error, spec);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const created = await api<{ item: { referenceId: string } }>('POST', `/blockchain-events/${chain}/${net}/subscriptions/${spec.path}`, {
        body: { data: { item: itemOf(spec, values) } },
      });
      navigate(`/subscriptions/${encodeURIComponent(created.item.referenceId)}?created=1`);
    } catch (e) {
      setError(e);
      // Move focus to the first field the API named, so a keyboard user lands on what to fix.
      queueMicrotask(() => (document.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus());
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <PageTitle>New subscription</PageTitle>
      <p>
        <Link to="/subscriptions">Back to the subscriptions</Link>
      </p>
      {rest && <Failure error={error} />}
      {!rest && error !== undefined && (
        <p class="failure" role="alert">
          The subscription was not created: see the messages beside the fields.
        </p>
      )}
      {/* The API is the validator (noValidate): the browser's own checks would hide its messages. */}
      <form class="card form" onSubmit={submit} noValidate>
        <Field id="event-type" label="Event type">
          {(aria) => (
            <select {...aria} value={type} onChange={(e) => setType(e.currentTarget.value as EventType)}>
              {EVENTS.map((e) => (
                <option key={e.type} value={e.type}>
                  {e.title} ({e.type})
                </option>
              ))}
            </select>
          )}
        </Field>
        <div class="row">
          <Field id="blockchain" label="Blockchain">
            {(aria) => (
              <select {...aria} value={chain} onChange={(e) => setBlockchain(e.currentTarget.value as Blockchain)}>
                {chains.map((c) => (
                  <option key={c}>{c}</option>
                ))}
              </select>
            )}
          </Field>
          <Field id="network" label="Network">
            {(aria) => (
              <select {...aria} value={net} onChange={(e) => setNetwork(e.currentTarget.value)}>
                {networks.map((n) => (
                  <option key={n}>{n}</option>
                ))}
              </select>
            )}
          </Field>
        </div>
        {spec.fields.map((f) => (
          <Field key={f.name} id={`field-${f.name}`} label={f.required ? f.label : `${f.label} (optional)`} hint={f.hint} error={fields[f.name]}>
            {(aria) => <Input f={f} aria={aria} value={values[f.name]} onValue={(v) => setValues({ ...values, [f.name]: v })} />}
          </Field>
        ))}
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create the subscription'}
        </button>
      </form>
    </>
  );
}

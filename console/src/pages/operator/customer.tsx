/** Operator: one customer: change its plan, create and revoke API keys (revoke behind a typed confirmation), add credits, mark a callback domain verified. */
import { useState } from 'preact/hooks';
import { ApiFailure, api, fieldErrors } from '../../api.ts';
import { useBillingEnabled } from '../../billing.ts';
import { TypedConfirm } from '../../kit.tsx';
import { planText } from '../../plan.ts';
import { location } from '../../router.ts';
import { useValue } from '../../state.ts';
import type { CustomerDetail } from '../../types.ts';
import { CopyButton, Empty, Failure, Field, Link, Loading, Notice, PageTitle, Scroll, Time, useAction, useLoad } from '../../ui.tsx';
import { PlanFields, type PlanForm, planBody, planForm } from './plan-form.tsx';

function PlanEditor({ base, plan, onChanged }: { base: string; plan: Record<string, unknown>; onChanged: (message: string) => void }) {
  const [form, setForm] = useState<PlanForm>(planForm(plan));
  const save = useAction(async () => {
    const r = await api<{ item: { plan: Record<string, unknown> } }>('POST', `${base}/plan`, {
      body: { data: { item: planBody(form, { blankIsDefault: false }) } },
    });
    setForm(planForm(r.item.plan));
    onChanged(`The plan is changed: ${planText(r.item.plan)}.`);
  });
  const errors = fieldErrors(save.error, ['mainnetAllowed', 'maxActiveSubscriptions', 'requestsPerSecond']);
  return (
    <details class="card">
      <summary>Change the plan</summary>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          save.run();
        }}
      >
        {errors.rest && <Failure error={save.error} />}
        <PlanFields id="plan" plan={form} onChange={setForm} errors={errors.fields} creating={false} />
        <button type="submit" disabled={save.busy}>
          Save the plan
        </button>
      </form>
    </details>
  );
}

export function CustomerPage({ name }: { name: string }) {
  const base = `/operator/customers/${encodeURIComponent(name)}`;
  const customer = useLoad(() => api<{ item: CustomerDetail }>('GET', base), name);
  const again = () => customer.reload();
  const [newKey, setNewKey] = useState<{ keyId: string; apiKey: string } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [amount, setAmount] = useState('');
  const billing = useBillingEnabled();

  const createKey = useAction(async () => {
    setNotice(null);
    setNewKey((await api<{ item: { keyId: string; apiKey: string } }>('POST', `${base}/keys`)).item);
    again();
  });
  const revoke = useAction(async (keyId: string) => {
    await api('POST', `${base}/keys/${encodeURIComponent(keyId)}/revoke`);
    setNotice(`Key ${keyId} is revoked.`);
    again();
  });
  const addCredits = useAction(async () => {
    const text = amount.trim();
    // Sent as a JSON integer when it is one that JSON numbers hold exactly; otherwise as typed, for the API to judge.
    const value = /^-?\d+$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text;
    const r = await api<{ item: { credits: number | string } }>('POST', `${base}/credits`, { body: { data: { item: { amount: value } } } });
    setNotice(`Credits added: the balance is now ${String(r.item.credits)}.`);
    setAmount('');
    again();
  });
  const markVerified = useAction(async (domain: string) => {
    await api('POST', `${base}/domains/${encodeURIComponent(domain)}/verify`);
    setNotice(`${domain} is marked verified.`);
    again();
  });

  const created = useValue(location).search.get('created') === '1';
  const c = customer.data?.item;
  return (
    <>
      <PageTitle>{`Customer ${name}`}</PageTitle>
      <p>
        <Link to="/operator/customers">Back to the customers</Link>
      </p>
      <Failure error={customer.error} />
      {created && !notice && !newKey && <Notice>Customer {name} is created. Create an API key for it below and give it to the customer.</Notice>}
      {notice && <Notice>{notice}</Notice>}
      {!c ? (
        customer.loading && <Loading what="the customer" />
      ) : (
        <>
          <dl class="facts">
            <dt>Plan</dt>
            <dd>{planText(c.plan)}</dd>
            {billing && (
              <>
                <dt>Credits</dt>
                <dd class="big">{String(c.credits)}</dd>
              </>
            )}
            <dt>Active subscriptions</dt>
            <dd>{c.activeSubscriptions}</dd>
          </dl>
          <PlanEditor
            key={JSON.stringify(c.plan)}
            base={base}
            plan={c.plan}
            onChanged={(message) => {
              setNotice(message);
              again();
            }}
          />

          {billing && (
            <section aria-labelledby="credits-heading">
              <h2 id="credits-heading">Add credits</h2>
              <form
                class="inline"
                onSubmit={(e) => {
                  e.preventDefault();
                  addCredits.run();
                }}
              >
                <Field id="credit-amount" label="Credits to add" error={addCredits.error instanceof ApiFailure ? addCredits.error.message : undefined}>
                  {(aria) => (
                    <input {...aria} type="text" inputMode="numeric" autoComplete="off" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
                  )}
                </Field>
                <button type="submit" disabled={addCredits.busy}>
                  Add credits
                </button>
              </form>
            </section>
          )}

          <section aria-labelledby="keys-heading">
            <h2 id="keys-heading">API keys</h2>
            <button type="button" onClick={() => createKey.run()} disabled={createKey.busy}>
              Create a key
            </button>
            <Failure error={createKey.error ?? revoke.error} />
            {newKey && (
              <div class="notice ok" role="status">
                <p>
                  New key <span class="mono">{newKey.keyId}</span>. It is shown only now: give it to the customer.
                </p>
                <p class="proof">
                  <code class="wrap" data-testid="new-api-key">
                    {newKey.apiKey}
                  </code>
                  <CopyButton text={newKey.apiKey} label="Copy the new API key" />
                </p>
              </div>
            )}
            {c.keys.length === 0 ? (
              <Empty>No keys yet.</Empty>
            ) : (
              <Scroll>
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Key id</th>
                      <th scope="col">Prefix</th>
                      <th scope="col">Created</th>
                      <th scope="col">Revoked</th>
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {c.keys.map((k) => (
                      <tr key={k.keyId}>
                        <td class="mono">{k.keyId}</td>
                        <td class="mono">{k.prefix}…</td>
                        <td>
                          <Time s={k.createdTimestamp} />
                        </td>
                        <td>{k.revokedTimestamp === null ? 'no' : <Time s={k.revokedTimestamp} />}</td>
                        <td>
                          {k.revokedTimestamp === null && (
                            <TypedConfirm
                              id={`revoke-${k.keyId}`}
                              summary={`Revoke key ${k.keyId}…`}
                              word={k.keyId}
                              action={`Revoke key ${k.keyId}`}
                              busy={revoke.busy}
                              onConfirm={() => revoke.run(k.keyId)}
                            >
                              <p class="hint">Clients using it are refused from now on.</p>
                            </TypedConfirm>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </Scroll>
            )}
          </section>

          <section aria-labelledby="domains-heading">
            <h2 id="domains-heading">Callback domains</h2>
            <Failure error={markVerified.error} />
            {c.domains.length === 0 ? (
              <Empty>The customer has registered no callback domains.</Empty>
            ) : (
              <Scroll>
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Domain</th>
                      <th scope="col">Verified</th>
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {c.domains.map((d) => (
                      <tr key={d.domain}>
                        <td class="mono">{d.domain}</td>
                        <td>{d.verified ? <Time s={d.verifiedTimestamp} /> : 'no'}</td>
                        <td>
                          {!d.verified && (
                            <button type="button" class="secondary small" onClick={() => markVerified.run(d.domain)} aria-label={`Mark ${d.domain} verified`}>
                              Mark verified
                            </button>
                          )}
                        </td>
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

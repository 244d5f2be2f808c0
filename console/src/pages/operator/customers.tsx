/** Operator: every customer with plan, credits, active subscriptions and number of keys; create a customer (POST /operator/customers). */
import { useState } from 'preact/hooks';
import { api, fieldErrors, type Page, query } from '../../api.ts';
import { useBillingEnabled } from '../../billing.ts';
import { planText } from '../../plan.ts';
import { navigate } from '../../router.ts';
import type { CustomerSummary } from '../../types.ts';
import { Empty, Failure, Field, Link, Loading, Pager, PageTitle, Scroll, useAction, useLoad } from '../../ui.tsx';
import { PlanFields, type PlanForm, planBody, wholeNumber } from './plan-form.tsx';

const LIMIT = 50;

function CreateCustomer({ billing }: { billing: boolean }) {
  const [name, setName] = useState('');
  const [plan, setPlan] = useState<PlanForm>({ mainnetAllowed: true, maxActiveSubscriptions: '', requestsPerSecond: '' });
  const [credits, setCredits] = useState('');
  const create = useAction(async () => {
    const item: Record<string, unknown> = { name: name.trim(), ...planBody(plan, { blankIsDefault: true }) };
    if (billing && credits.trim()) item.credits = wholeNumber(credits);
    const made = await api<{ item: { name: string } }>('POST', '/operator/customers', { body: { data: { item } } });
    navigate(`/operator/customers/${encodeURIComponent(made.item.name)}?created=1`);
  });
  const errors = fieldErrors(create.error, ['name', 'mainnetAllowed', 'maxActiveSubscriptions', 'requestsPerSecond', 'credits']);
  return (
    <details class="card" open={false}>
      <summary>Create a customer</summary>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          create.run();
        }}
      >
        {errors.rest && <Failure error={create.error} />}
        <Field id="new-name" label="Name" hint="Unique; the customer is named so in the API and the command line." error={errors.fields.name}>
          {(aria) => <input {...aria} autoComplete="off" spellcheck={false} value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <PlanFields id="new" plan={plan} onChange={setPlan} errors={errors.fields} creating />
        {billing && (
          <Field id="new-credits" label="Starting credits" hint="blank: the configuration's default" error={errors.fields.credits}>
            {(aria) => <input {...aria} inputMode="numeric" autoComplete="off" value={credits} onInput={(e) => setCredits(e.currentTarget.value)} />}
          </Field>
        )}
        <button type="submit" disabled={create.busy}>
          Create the customer
        </button>
      </form>
    </details>
  );
}

export function CustomersPage() {
  const [offset, setOffset] = useState(0);
  const billing = useBillingEnabled();
  const list = useLoad(() => api<Page<CustomerSummary>>('GET', `/operator/customers${query({ limit: LIMIT, offset })}`), String(offset));
  return (
    <>
      <PageTitle>Customers</PageTitle>
      <p class="hint">Create customers here or with herald customers create; their plan, keys, {billing && 'credits '}and domains are managed on their page.</p>
      <CreateCustomer billing={billing} />
      <Failure error={list.error} />
      {list.data === undefined ? (
        list.loading && <Loading what="the customers" />
      ) : list.data.items.length === 0 ? (
        <Empty>No customers yet. Create one above, or with herald customers create.</Empty>
      ) : (
        <>
          <Scroll>
            <table>
              <caption class="visually-hidden">Customers</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Plan</th>
                  {billing && <th scope="col">Credits</th>}
                  <th scope="col">Active subscriptions</th>
                  <th scope="col">Keys</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((c) => (
                  <tr key={c.name}>
                    <td>
                      <Link to={`/operator/customers/${encodeURIComponent(c.name)}`}>{c.name}</Link>
                    </td>
                    <td>{planText(c.plan)}</td>
                    {billing && <td class="num">{String(c.credits)}</td>}
                    <td class="num">{c.activeSubscriptions}</td>
                    <td class="num">{c.keys}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
          <Pager offset={offset} limit={LIMIT} total={list.data.total} what="customers" onOffset={setOffset} />
        </>
      )}
    </>
  );
}

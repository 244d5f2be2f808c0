/** Operator: every customer with plan, credits, active subscriptions and number of keys. */
import { useState } from 'preact/hooks';
import { api, type Page, query } from '../../api.ts';
import { useBillingEnabled } from '../../billing.ts';
import type { CustomerSummary } from '../../types.ts';
import { Empty, Failure, Link, Loading, Pager, PageTitle, Scroll, useLoad } from '../../ui.tsx';

const LIMIT = 50;

import { planText } from '../../plan.ts';

export function CustomersPage() {
  const [offset, setOffset] = useState(0);
  const billing = useBillingEnabled();
  const list = useLoad(() => api<Page<CustomerSummary>>('GET', `/operator/customers${query({ limit: LIMIT, offset })}`), String(offset));
  return (
    <>
      <PageTitle>Customers</PageTitle>
      <p class="hint">Customers are created with herald customers create; keys, {billing && 'credits '}and domains are managed here.</p>
      <Failure error={list.error} />
      {list.data === undefined ? (
        list.loading && <Loading what="the customers" />
      ) : list.data.items.length === 0 ? (
        <Empty>No customers yet. Create one with herald customers create.</Empty>
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

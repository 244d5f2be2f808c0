/** The console's entry: the shell (skip link, navigation, sign-out), the routes, and mounting. */
import { render } from 'preact';
import { useBillingEnabled } from './billing.ts';
import { AccountPage } from './pages/customer/account.tsx';
import { DeliveriesPage } from './pages/customer/deliveries.tsx';
import { DomainsPage } from './pages/customer/domains.tsx';
import { EventsPage } from './pages/customer/events.tsx';
import { NewSubscriptionPage } from './pages/customer/new-subscription.tsx';
import { OverviewPage } from './pages/customer/overview.tsx';
import { SubscriptionPage } from './pages/customer/subscription.tsx';
import { SubscriptionsPage } from './pages/customer/subscriptions.tsx';
import { WalletsPage } from './pages/customer/wallets.tsx';
import { ChainsPage } from './pages/operator/chains.tsx';
import { CustomerPage } from './pages/operator/customer.tsx';
import { CustomersPage } from './pages/operator/customers.tsx';
import { DeliveryPage } from './pages/operator/delivery.tsx';
import { FailedCallbacksPage } from './pages/operator/failed.tsx';
import { OperatorOverviewPage } from './pages/operator/overview.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { location, match, navigate } from './router.ts';
import { type Session, session, signOut } from './session.ts';
import { useValue } from './state.ts';
import './styles.css';
import { ThemeToggle } from './kit.tsx';
import { Link, PageTitle } from './ui.tsx';

const CUSTOMER_NAV = [
  { to: '/overview', label: 'Overview' },
  { to: '/deliveries', label: 'Deliveries' },
  { to: '/subscriptions', label: 'Subscriptions' },
  { to: '/events', label: 'Events' },
  { to: '/domains', label: 'Callback domains' },
  { to: '/wallets', label: 'Wallets' },
  { to: '/account', label: 'Credits and usage' },
];
/** Billing off (docs/operations/single-tenant.md): the account page shows no credits, so it is named for what it shows. */
const CUSTOMER_NAV_FREE = CUSTOMER_NAV.map((n) => (n.to === '/account' ? { ...n, label: 'Account' } : n));
const OPERATOR_NAV = [
  { to: '/operator/overview', label: 'Overview' },
  { to: '/operator/customers', label: 'Customers' },
  { to: '/operator/chains', label: 'Chains' },
  { to: '/operator/delivery', label: 'Delivery' },
  { to: '/operator/failed', label: 'Failed callbacks' },
];

function customerPage(path: string) {
  if (path === '/overview') return <OverviewPage />;
  if (path === '/deliveries') return <DeliveriesPage />;
  if (path === '/subscriptions') return <SubscriptionsPage />;
  if (path === '/subscriptions/new') return <NewSubscriptionPage />;
  const subscription = match('/subscriptions/:id', path);
  if (subscription) return <SubscriptionPage id={subscription.id as string} />;
  if (path === '/domains') return <DomainsPage />;
  if (path === '/events') return <EventsPage />;
  if (path === '/wallets') return <WalletsPage />;
  if (path === '/account') return <AccountPage />;
  return undefined;
}

function operatorPage(path: string) {
  if (path === '/operator/overview') return <OperatorOverviewPage />;
  if (path === '/operator/failed') return <FailedCallbacksPage />;
  if (path === '/operator/customers') return <CustomersPage />;
  const customer = match('/operator/customers/:name', path);
  if (customer) return <CustomerPage name={customer.name as string} />;
  if (path === '/operator/chains') return <ChainsPage />;
  if (path === '/operator/delivery') return <DeliveryPage />;
  return undefined;
}

function home(s: Session): string {
  return s.kind === 'customer' ? '/overview' : '/operator/overview';
}

function NotFound() {
  return (
    <>
      <PageTitle>Page not found</PageTitle>
      <p>There is no console page at this address.</p>
    </>
  );
}

function App() {
  const s = useValue(session);
  const { path } = useValue(location);
  const billing = useBillingEnabled();
  if (!s) return <SignInPage />;
  if (path === '/' || path === '/sign-in') {
    queueMicrotask(() => navigate(home(s), { replace: true }));
    return null;
  }
  const nav = s.kind === 'operator' ? OPERATOR_NAV : billing ? CUSTOMER_NAV : CUSTOMER_NAV_FREE;
  const page = s.kind === 'customer' ? customerPage(path) : operatorPage(path);
  const otherSide = s.kind === 'customer' ? operatorPage(path) : customerPage(path);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">herald</span>
        <span class="who">{s.kind === 'customer' ? 'Customer console' : `Operator console (${s.name})`}</span>
        <nav aria-label="Main">
          <ul>
            {nav.map((n) => (
              <li key={n.to}>
                <Link to={n.to} aria-current={path === n.to || path.startsWith(`${n.to}/`) ? 'page' : undefined}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span class="header-actions">
          <ThemeToggle />
          <button type="button" class="secondary" onClick={() => signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <main id="main" tabIndex={-1}>
        {page ??
          (otherSide ? (
            <>
              <PageTitle>Not available</PageTitle>
              <p>
                This page is for {s.kind === 'customer' ? 'the operator' : 'customers'}. Sign out and sign in with{' '}
                {s.kind === 'customer' ? 'an operator token' : 'an API key'} to see it.
              </p>
            </>
          ) : (
            <NotFound />
          ))}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);

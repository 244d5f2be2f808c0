/**
 * Sign in with a customer API key or an operator token. The credential is checked with one call before
 * it is kept (GET /blockchain-events/status for a key, GET /operator/whoami for a token), and is kept in
 * sessionStorage only (see session.ts).
 */
import { useState } from 'preact/hooks';
import { ApiFailure, api } from '../api.ts';
import { ThemeToggle } from '../kit.tsx';
import { navigate } from '../router.ts';
import { signIn, signOutReason } from '../session.ts';
import { useValue } from '../state.ts';
import { Field, PageTitle } from '../ui.tsx';

function CredentialForm(props: { kind: 'customer' | 'operator' }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const customer = props.kind === 'customer';
  const id = customer ? 'api-key' : 'operator-token';
  const submit = async (event: Event) => {
    event.preventDefault();
    const credential = value.trim();
    if (!credential) {
      setError(customer ? 'Enter your API key.' : 'Enter an operator token.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      if (customer) {
        await api('GET', '/blockchain-events/status', { as: { kind: 'customer', key: credential } });
        signIn({ kind: 'customer', key: credential });
        navigate('/overview', { replace: true });
      } else {
        const who = await api<{ item: { name: string } }>('GET', '/operator/whoami', { as: { kind: 'operator', token: credential, name: '' } });
        signIn({ kind: 'operator', token: credential, name: who.item.name });
        navigate('/operator/overview', { replace: true });
      }
    } catch (e) {
      setError(e instanceof ApiFailure ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} class="card" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>{customer ? 'Customer' : 'Operator'}</h2>
      <Field
        id={id}
        label={customer ? 'API key' : 'Operator token'}
        hint={customer ? 'Kept in this browser tab only, until you sign out or close it.' : 'Made by herald operator-tokens create; kept in this tab only.'}
        error={error}
      >
        {(aria) => <input {...aria} type="password" autoComplete="off" spellcheck={false} value={value} onInput={(e) => setValue(e.currentTarget.value)} />}
      </Field>
      <button type="submit" disabled={busy}>
        {busy ? 'Signing in…' : customer ? 'Sign in with the API key' : 'Sign in as operator'}
      </button>
    </form>
  );
}

export function SignInPage() {
  const reason = useValue(signOutReason);
  return (
    <main id="main" class="sign-in">
      <div class="sign-in-top">
        <PageTitle>Sign in to herald</PageTitle>
        <ThemeToggle />
      </div>
      {reason && (
        <p class="notice warn" role="alert">
          {reason}
        </p>
      )}
      <div class="columns">
        <CredentialForm kind="customer" />
        <CredentialForm kind="operator" />
      </div>
    </main>
  );
}

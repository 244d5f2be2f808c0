/**
 * Callback domains: register one, prove control of it (an HTTPS file or a DNS TXT record, with copy
 * buttons), verify, and see what the verification found when it fails.
 */
import { useState } from 'preact/hooks';
import { ApiFailure, api, type Page } from '../../api.ts';
import type { Domain } from '../../types.ts';
import { CopyButton, Empty, Failure, Field, Loading, Notice, PageTitle, Time, useAction, useLoad } from '../../ui.tsx';

// As the API's register answer gives them (src/services/domains.ts): the same for every domain.
const FILE_PATH = '/.well-known/blockchain-events-verification.txt';
const TXT_PREFIX = '_blockchain-events.';

function Proof({ label, value, copyLabel }: { label: string; value: string; copyLabel: string }) {
  return (
    <div class="proof">
      <span class="proof-label">{label}</span>
      <code class="wrap">{value}</code>
      <CopyButton text={value} label={copyLabel} />
    </div>
  );
}

function DomainCard({ d, onChange }: { d: Domain; onChange: () => void }) {
  const [result, setResult] = useState<{ ok: boolean; text: string; found: string[] } | null>(null);
  const verify = useAction(async () => {
    setResult(null);
    try {
      await api('POST', `/blockchain-events/callback-domains/${encodeURIComponent(d.domain)}/verify`);
      setResult({ ok: true, text: `${d.domain} is verified.`, found: [] });
      onChange();
    } catch (e) {
      if (e instanceof ApiFailure && e.code === 'domain_verification_failed') {
        setResult({ ok: false, text: e.message, found: e.details.map((x) => `${x.attribute === 'dnsTxt' ? 'DNS TXT' : 'File'}: ${x.message}`) });
      } else throw e;
    }
  });
  const remove = useAction(async () => {
    if (!window.confirm(`Remove the callback domain ${d.domain}?`)) return;
    await api('DELETE', `/blockchain-events/callback-domains/${encodeURIComponent(d.domain)}`);
    onChange();
  });
  const slug = d.domain.replace(/[^a-z0-9]/gi, '-');
  return (
    <li class="card" aria-labelledby={`d-${slug}`}>
      <h2 id={`d-${slug}`} class="mono">
        {d.domain}
      </h2>
      {d.isVerified ? (
        <p>
          <span class="good">Verified</span> <Time s={d.verifiedTimestamp} />
        </p>
      ) : (
        <>
          <p>
            <span class="bad">Not verified yet.</span> Prove that you control it in one of two ways, then press Verify.
          </p>
          <h3>1. A file over HTTPS</h3>
          <p>Serve this token (the whole file, or one line of it) with status 200 and no redirect at:</p>
          <Proof label="URL" value={`https://${d.domain}${FILE_PATH}`} copyLabel={`Copy the verification file URL of ${d.domain}`} />
          <Proof label="Content" value={d.verificationToken} copyLabel={`Copy the verification token of ${d.domain}`} />
          <h3>2. A DNS TXT record</h3>
          <Proof label="Name" value={`${TXT_PREFIX}${d.domain}`} copyLabel={`Copy the TXT record name of ${d.domain}`} />
          <Proof label="Value" value={d.verificationToken} copyLabel={`Copy the TXT record value of ${d.domain}`} />
        </>
      )}
      <div class="buttons">
        {!d.isVerified && (
          <button type="button" onClick={() => verify.run()} disabled={verify.busy}>
            {verify.busy ? 'Verifying…' : `Verify ${d.domain}`}
          </button>
        )}
        <button type="button" class="secondary" onClick={() => remove.run()} disabled={remove.busy}>
          Remove
        </button>
      </div>
      <Failure error={verify.error ?? remove.error} />
      {result && (
        <div class={`notice ${result.ok ? 'ok' : 'warn'}`} role="status">
          <p>{result.text}</p>
          {result.found.length > 0 && (
            <ul>
              {result.found.map((f) => (
                <li key={f}>{f}</li>
              ))}
            </ul>
          )}
        </div>
      )}
    </li>
  );
}

export function DomainsPage() {
  const list = useLoad(() => api<Page<Domain>>('GET', '/blockchain-events/callback-domains?limit=50'), 'domains');
  const [domain, setDomain] = useState('');
  const [added, setAdded] = useState<string | null>(null);
  const register = useAction(async () => {
    const r = await api<{ item: Domain }>('POST', '/blockchain-events/callback-domains', { body: { data: { item: { domain: domain.trim() } } } });
    setAdded(r.item.domain);
    setDomain('');
    await list.reload();
  });
  const fieldError = register.error instanceof ApiFailure ? register.error.message : undefined;
  return (
    <>
      <PageTitle>Callback domains</PageTitle>
      <p>Callbacks go only to https URLs on domains you have verified.</p>
      <form
        class="card inline"
        onSubmit={(e) => {
          e.preventDefault();
          register.run();
        }}
      >
        <Field id="new-domain" label="Domain" hint="An exact host name, e.g. hooks.example.com." error={fieldError}>
          {(aria) => <input {...aria} type="text" autoComplete="off" spellcheck={false} value={domain} onInput={(e) => setDomain(e.currentTarget.value)} />}
        </Field>
        <button type="submit" disabled={register.busy}>
          Add the domain
        </button>
      </form>
      {added && <Notice>{added} is registered: prove control of it below.</Notice>}
      {!fieldError && <Failure error={register.error} />}
      <Failure error={list.error} />
      {list.data === undefined ? (
        list.loading && <Loading what="the domains" />
      ) : list.data.items.length === 0 ? (
        <Empty>No callback domains yet. Add the domain your callback URLs will use.</Empty>
      ) : (
        <ul class="cards">
          {list.data.items.map((d) => (
            <DomainCard key={d.domain} d={d} onChange={() => list.reload()} />
          ))}
        </ul>
      )}
    </>
  );
}

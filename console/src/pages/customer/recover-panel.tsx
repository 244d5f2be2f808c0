/**
 * A subscription's Recover panel (docs/guides/recover-and-replay.md "Recovering callbacks"): queue again, as one background job,
 * the failed callbacks created in a time window, then follow the job live (found, queued, delivered,
 * failed again). An inactive subscription is activated and recovered in one step (activate with
 * recoverSince): a recovery alone would queue callbacks that an inactive subscription does not send.
 */
import { useState } from 'preact/hooks';
import { ApiFailure, api, fieldErrors, query } from '../../api.ts';
import { useBillingEnabled } from '../../billing.ts';
import type { Recovery } from '../../types.ts';
import { Failure, Field, useJob } from '../../ui.tsx';

/** herald's default price per callback of a recovery or a replay (costs.*PerCallback); a job shows what it charged. */
export const PRICE_PER_CALLBACK = 5;

const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** A datetime-local value, in the browser's zone, as Unix seconds; undefined when empty (or not a date). */
function unixOf(value: string): number | undefined {
  if (!value) return undefined;
  // A date and time without an offset is read as local time.
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

const finished = (r: Recovery) => r.state === 'done' || r.state === 'out_of_credits';

function sentence(r: Recovery, active: boolean): string {
  const counts = `${r.delivered} delivered, ${r.failed} failed again, ${r.pending} pending`;
  const waiting = !active && r.pending > 0 ? ' The subscription is inactive: the pending ones are sent once it is active.' : '';
  if (r.state === 'queued') return `Recovery queued: ${r.found} failed callback${r.found === 1 ? '' : 's'} found; it starts within a few seconds.`;
  if (r.state === 'running') return `Recovery running: ${r.queued} of ${r.found} queued again; ${counts}.`;
  if (r.state === 'out_of_credits') {
    return `Recovery stopped, out of credits: ${r.queued} of ${r.found} queued again (${counts}); add credits and recover again for the rest.${waiting}`;
  }
  if (r.found === 0) return 'Recovery done: no failed callback was created in this window, nothing to queue.';
  if (r.pending > 0) return `Every callback found is queued again; sending: ${counts}.${waiting}`;
  return `Recovery done: ${r.delivered} of ${r.found} delivered, ${r.failed} failed again.`;
}

/** A recovery job, read every second until it is finished and nothing it queued is pending. */
export function RecoveryJob({ id, active }: { id: string; active: boolean }) {
  const job = useJob(
    async () => (await api<{ item: Recovery }>('GET', `/blockchain-events/recoveries/${encodeURIComponent(id)}`)).item,
    id,
    // Pending callbacks of an inactive subscription wait for its activation: following them would only cost reads.
    (r) => finished(r) && (r.pending === 0 || !active),
    { resumeOn: active },
  );
  const r = job.data;
  const billing = useBillingEnabled();
  return (
    <div class="job">
      <p role="status" aria-live="polite" class="job-state">
        {r ? sentence(r, active) : 'Recovery started; reading its progress…'}
      </p>
      {r && r.found > 0 && (
        <progress max={r.found} value={r.delivered + r.failed} aria-label="Recovered callbacks: delivered or failed again, of those found" />
      )}
      {r && (
        <dl class="tiles small">
          <div>
            <dt>Found</dt>
            <dd>{r.found}</dd>
          </div>
          <div>
            <dt>Queued again</dt>
            <dd>{r.queued}</dd>
          </div>
          <div>
            <dt>Delivered</dt>
            <dd>{r.delivered}</dd>
          </div>
          <div>
            <dt>Failed again</dt>
            <dd>{r.failed}</dd>
          </div>
          {billing && (
            <div>
              <dt>Credits consumed</dt>
              <dd>{r.creditsConsumed}</dd>
            </div>
          )}
        </dl>
      )}
      <Failure error={job.error} />
    </div>
  );
}

export function RecoverPanel({ referenceId, active, onActivated }: { referenceId: string; active: boolean; onActivated: () => void }) {
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const [includeCancelled, setIncludeCancelled] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const [recoveryId, setRecoveryId] = useState<string | null>(null);
  const { fields, rest } = fieldErrors(error, ['since', 'until', 'includeCancelled', 'recoverSince']);
  const path = `/blockchain-events/subscriptions/${encodeURIComponent(referenceId)}`;
  const billing = useBillingEnabled();

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      if (active) {
        const item = { since: unixOf(since), until: unixOf(until), includeCancelled };
        setRecoveryId((await api<{ item: Recovery }>('POST', `${path}/recover`, { body: { data: { item } } })).item.recoveryId);
      } else {
        const recoverSince = unixOf(since);
        // Without recoverSince, activate would only activate: the one check made here.
        if (recoverSince === undefined) {
          throw new ApiFailure(0, 'invalid_data', 'Give the time to recover from.', [
            { attribute: 'since', message: 'Give the date and time from which to recover the failed callbacks.' },
          ]);
        }
        const activated = await api<{ recoveryId?: string }>('POST', `${path}/activate${query({ recoverSince })}`);
        if (activated.recoveryId) setRecoveryId(activated.recoveryId);
        onActivated();
      }
    } catch (e) {
      setError(e);
      queueMicrotask(() => (document.querySelector('#recover-form [aria-invalid="true"]') as HTMLElement | null)?.focus());
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="recover-heading">
      <h2 id="recover-heading">Recover failed callbacks</h2>
      <p>
        Queues again the callbacks of this subscription that failed (after their last retry) and were created in a time window: same body, idempotency key and
        sequence number.{billing && ` Costs ${PRICE_PER_CALLBACK} credits per callback queued again, charged as the job queues them.`}
      </p>
      {!active && (
        <p class="notice warn">The subscription is inactive: recovering activates it too (callbacks queued again are sent only while it is active).</p>
      )}
      {rest && <Failure error={error} />}
      {!rest && error !== undefined && (
        <p class="failure" role="alert">
          The recovery was not started: see the messages beside the fields.
        </p>
      )}
      <form id="recover-form" class="card form" onSubmit={submit} noValidate>
        <div class="row">
          <Field id="recover-since" label="Since" hint={`Your time zone (${ZONE}).`} error={fields.since ?? fields.recoverSince}>
            {(aria) => <input {...aria} type="datetime-local" step={1} value={since} onInput={(e) => setSince(e.currentTarget.value)} />}
          </Field>
          {active && (
            <Field id="recover-until" label="Until (optional)" hint="Default: now." error={fields.until}>
              {(aria) => <input {...aria} type="datetime-local" step={1} value={until} onInput={(e) => setUntil(e.currentTarget.value)} />}
            </Field>
          )}
        </div>
        {active && (
          <Field id="recover-cancelled" label="Also the cancelled callbacks (not those of a reorganisation)" error={fields.includeCancelled}>
            {(aria) => <input {...aria} type="checkbox" checked={includeCancelled} onChange={(e) => setIncludeCancelled(e.currentTarget.checked)} />}
          </Field>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Starting…' : active ? 'Recover' : 'Activate and recover'}
        </button>
      </form>
      {recoveryId && <RecoveryJob id={recoveryId} active={active} />}
    </section>
  );
}

/**
 * A subscription's Replay panel (docs/guides/recover-and-replay.md "Backfill and replay"): evaluate a block range again and send
 * what matches, with the idempotency keys live following gave. The dry run lists what a replay would
 * send (free); the replay is a background job, followed live (blocks evaluated, callbacks queued).
 */
import { useState } from 'preact/hooks';
import { api, fieldErrors } from '../../api.ts';
import { useBillingEnabled } from '../../billing.ts';
import type { DryRun, Replay } from '../../types.ts';
import { Empty, Failure, Field, Pre, Scroll, useJob, useLoad } from '../../ui.tsx';
import { PRICE_PER_CALLBACK } from './recover-panel.tsx';

/** The default costs.replayPerBlock: every block a replay reads, dry run or not. */
const PRICE_PER_BLOCK = 1;

/** A height as the API takes it: a number when it is one, as typed otherwise (the API then names the field), left out when empty. */
function heightOf(value: string): number | string | undefined {
  const text = value.trim();
  if (text === '') return undefined;
  return /^\d+$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text;
}

function sentence(j: Replay): string {
  const blocks = j.toBlockHeight - j.fromBlockHeight + 1;
  const evaluated = j.processedHeight - j.fromBlockHeight + 1;
  const queued = `${j.queued} callback${j.queued === 1 ? '' : 's'} queued`;
  if (j.state === 'running') return `Replay running: ${evaluated} of ${blocks} blocks evaluated, ${queued}.`;
  if (j.state === 'out_of_credits') return `Replay stopped, out of credits at block ${j.processedHeight}: ${queued}. Add credits and replay the rest.`;
  return `Replay done: ${blocks} block${blocks === 1 ? '' : 's'} evaluated, ${queued} (their deliveries appear in the callback log).`;
}

/** A replay job, read every second while it runs. */
function ReplayJob({ id }: { id: string }) {
  const job = useJob(
    async () => (await api<{ item: Replay }>('GET', `/blockchain-events/replays/${encodeURIComponent(id)}`)).item,
    id,
    (j) => j.state !== 'running',
  );
  const j = job.data;
  const billing = useBillingEnabled();
  return (
    <div class="job">
      <p role="status" aria-live="polite" class="job-state">
        {j ? sentence(j) : 'Replay started; reading its progress…'}
      </p>
      {j && (
        <progress
          max={j.toBlockHeight - j.fromBlockHeight + 1}
          value={j.processedHeight - j.fromBlockHeight + 1}
          aria-label={`Blocks ${j.fromBlockHeight} to ${j.toBlockHeight} evaluated`}
        />
      )}
      {j && (
        <dl class="tiles small">
          <div>
            <dt>Last block evaluated</dt>
            <dd>{j.processedHeight < j.fromBlockHeight ? '—' : j.processedHeight}</dd>
          </div>
          <div>
            <dt>Callbacks queued</dt>
            <dd>{j.queued}</dd>
          </div>
          {billing && (
            <div>
              <dt>Credits consumed</dt>
              <dd>{j.creditsConsumed}</dd>
            </div>
          )}
        </dl>
      )}
      <Failure error={job.error} />
    </div>
  );
}

function DryRunList({ dry }: { dry: DryRun }) {
  const n = dry.callbacks.length;
  const billing = useBillingEnabled();
  if (n === 0) return <Empty>Nothing matches in blocks {`${dry.fromBlockHeight}–${dry.toBlockHeight}`}: a replay of them would send nothing.</Empty>;
  return (
    <>
      <p>
        A replay of blocks {dry.fromBlockHeight}–{dry.toBlockHeight} would send {n} callback{n === 1 ? '' : 's'}
        {billing
          ? `, for ${n * PRICE_PER_CALLBACK} credits, plus ${(dry.toBlockHeight - dry.fromBlockHeight + 1) * PRICE_PER_BLOCK} for the blocks it reads`
          : ''}
        . Receivers that already have one discard it by its idempotency key.
      </p>
      <Scroll>
        <table class="dry-run">
          <caption>What the replay would send, in order</caption>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Block</th>
              <th scope="col">Transaction</th>
              <th scope="col">Idempotency key</th>
              <th scope="col">Body</th>
            </tr>
          </thead>
          <tbody>
            {dry.callbacks.map((c) => (
              <tr key={c.idempotencyKey}>
                <td>{c.event}</td>
                <td class="num">{c.blockHeight}</td>
                <td class="mono wrap">{c.transactionId ?? '—'}</td>
                <td class="mono wrap">{c.idempotencyKey}</td>
                <td>
                  <details>
                    <summary>Show</summary>
                    <Pre class="payload">{JSON.stringify(c.body, null, 2)}</Pre>
                  </details>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Scroll>
    </>
  );
}

export function ReplayPanel(props: { referenceId: string; blockchain: string; network: string; active: boolean }) {
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState<'dry' | 'replay' | null>(null);
  const [dry, setDry] = useState<DryRun | null>(null);
  const [replayId, setReplayId] = useState<string | null>(null);
  // Free to read: says how far a range may go.
  const status = useLoad(
    () => api<{ items: { blockchain: string; network: string; processedHeight: number | null }[] }>('GET', '/blockchain-events/status'),
    'status',
  );
  const processed = status.data?.items.find((c) => c.blockchain === props.blockchain && c.network === props.network)?.processedHeight;
  const { fields, rest } = fieldErrors(error, ['fromBlockHeight', 'toBlockHeight']);
  const billing = useBillingEnabled();

  const send = async (dryRun: boolean) => {
    setBusy(dryRun ? 'dry' : 'replay');
    setError(undefined);
    try {
      const item = { fromBlockHeight: heightOf(from), toBlockHeight: heightOf(to), ...(dryRun && { dryRun: true }) };
      const answer = await api<{ item: DryRun | Replay }>('POST', `/blockchain-events/subscriptions/${encodeURIComponent(props.referenceId)}/replay`, {
        body: { data: { item } },
      });
      if (dryRun) setDry(answer.item as DryRun);
      else setReplayId((answer.item as Replay).replayId);
    } catch (e) {
      setError(e);
      queueMicrotask(() => (document.querySelector('#replay-form [aria-invalid="true"]') as HTMLElement | null)?.focus());
    } finally {
      setBusy(null);
      status.reload();
    }
  };
  const onRange = (set: (v: string) => void) => (e: Event) => {
    set((e.currentTarget as HTMLInputElement).value);
    setDry(null);
  };

  return (
    <section aria-labelledby="replay-heading">
      <h2 id="replay-heading">Replay a block range</h2>
      <p>
        Evaluates blocks again for this subscription and sends what matches, with the idempotency keys and bodies live following gave them. At most 10,000
        blocks (1,000 for a dry run).
        {billing &&
          ` Costs ${PRICE_PER_BLOCK} credit per block read (a dry run too, though it sends nothing) and ${PRICE_PER_CALLBACK} credits per callback sent.`}
      </p>
      {!props.active && <p class="notice warn">The subscription is inactive: activate it to replay.</p>}
      {rest && <Failure error={error} />}
      {!rest && error !== undefined && (
        <p class="failure" role="alert">
          Nothing was replayed: see the messages beside the fields.
        </p>
      )}
      {/* Enter runs the dry run: the free one. */}
      <form
        id="replay-form"
        class="card form"
        onSubmit={(e) => {
          e.preventDefault();
          send(true);
        }}
        noValidate
      >
        <div class="row">
          <Field id="replay-from" label="From block" error={fields.fromBlockHeight}>
            {(aria) => <input {...aria} type="text" inputMode="numeric" autoComplete="off" value={from} onInput={onRange(setFrom)} />}
          </Field>
          <Field
            id="replay-to"
            label="To block"
            hint={processed != null ? `herald has processed ${props.blockchain} ${props.network} up to block ${processed}.` : undefined}
            error={fields.toBlockHeight}
          >
            {(aria) => <input {...aria} type="text" inputMode="numeric" autoComplete="off" value={to} onInput={onRange(setTo)} />}
          </Field>
        </div>
        <div class="buttons">
          <button type="submit" class="secondary" disabled={busy !== null}>
            {busy === 'dry' ? 'Evaluating…' : 'Dry run'}
          </button>
          <button type="button" disabled={busy !== null} onClick={() => send(false)}>
            {busy === 'replay' ? 'Starting…' : 'Replay'}
          </button>
        </div>
      </form>
      {dry && <DryRunList dry={dry} />}
      {replayId && <ReplayJob id={replayId} />}
    </section>
  );
}

/** Operator: every followed chain: state, lag over the last hour (chart), nodes, reorganisations, stop reason and reset; a held chain's hold and its release. */
import { useMemo, useState } from 'preact/hooks';
import { api, type Page } from '../../api.ts';
import { COLORS, TimeChart } from '../../chart.tsx';
import { Freshness, TypedConfirm } from '../../kit.tsx';
import type { ChainHold, OperatorChain } from '../../types.ts';
import { Empty, Failure, Loading, Notice, PageTitle, Scroll, useAction, useLoad } from '../../ui.tsx';

function LagChart({ chain }: { chain: OperatorChain }) {
  const lag = useLoad(
    () =>
      api<Page<{ timestamp: number; lagBlocks: number | null; lagSeconds: number | null }>>(
        'GET',
        `/operator/chains/${chain.blockchain}/${chain.network}/lag?minutes=60`,
      ),
    chain.blockchain + chain.network,
    30_000,
  );
  const data = useMemo(() => {
    const items = [...(lag.data?.items ?? [])].sort((a, b) => a.timestamp - b.timestamp);
    return {
      x: items.map((i) => i.timestamp),
      series: [
        { label: 'lag (blocks)', values: items.map((i) => i.lagBlocks), color: COLORS[0] as string },
        { label: 'lag (seconds)', values: items.map((i) => i.lagSeconds), color: COLORS[1] as string },
      ],
    };
  }, [lag.data]);
  if (lag.error) return <Failure error={lag.error} />;
  if (!lag.data) return <Loading what="the lag history" />;
  if (data.x.length === 0) return <Empty>No lag history recorded yet (one point per minute).</Empty>;
  const now = Math.floor(Date.now() / 1000);
  return (
    <TimeChart
      title={`${chain.blockchain} / ${chain.network}: lag over the last hour`}
      x={data.x}
      series={data.series}
      unit="blocks / seconds"
      span={[now - 3600, now]}
    />
  );
}

/**
 * A chain held by the deep-reorganisation breaker (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker):
 * the reorganisation's depth and blocks, and the Release button (as herald chains release).
 */
function HoldPanel({ chain, hold, onReleased }: { chain: OperatorChain; hold: ChainHold; onReleased: (message: string) => void }) {
  const name = `${chain.blockchain} / ${chain.network}`;
  const release = useAction(async () => {
    const r = await api<{ item: { released: boolean; callbacksReleased: number } }>('POST', `/operator/chains/${chain.blockchain}/${chain.network}/release`);
    // Said by the chain's card: this panel goes away with the hold when the list is read again.
    onReleased(r.item.released ? `${name} is released: ${r.item.callbacksReleased} held callbacks are being sent.` : `${name} was not held any more.`);
  });
  const id = `hold-${chain.blockchain}-${chain.network}`;
  return (
    <section class="hold" aria-labelledby={id}>
      <h3 id={id}>Held by the deep-reorganisation breaker</h3>
      <p class="bad">{hold.description}</p>
      <dl class="facts">
        <dt>Held since</dt>
        <dd>{new Date(hold.heldSince).toLocaleString()}</dd>
        <dt>Depth</dt>
        <dd>
          {hold.depth} blocks ({hold.reason === 'disagreement' ? 'nodes disagree' : 'reorganisation'}; breaker {hold.breakerDepth})
        </dd>
        <dt>Common ancestor</dt>
        <dd class="mono wrap">
          {hold.ancestorHeight} {hold.ancestorHash ?? ''}
        </dd>
        <dt>Callbacks held</dt>
        <dd>{hold.heldCallbacks}</dd>
      </dl>
      <Scroll>
        <table>
          <caption>Blocks involved</caption>
          <thead>
            <tr>
              <th scope="col">Height</th>
              <th scope="col">Orphaned (herald's)</th>
              <th scope="col">New (the node's)</th>
            </tr>
          </thead>
          <tbody>
            {hold.blocks.map((b) => (
              <tr key={b.height}>
                <td>{b.height}</td>
                <td class="mono wrap">{b.orphanedHash}</td>
                <td class="mono wrap">{b.newHash ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Scroll>
      <TypedConfirm
        id={`${id}-release`}
        summary={`Release ${name}…`}
        word={`${chain.blockchain}/${chain.network}`}
        action={`Release ${name}`}
        busy={release.busy}
        open
        onConfirm={() => release.run()}
      >
        <p>Its {hold.heldCallbacks} held confirmed callbacks are sent at once. Check the new blocks against a source you trust first.</p>
      </TypedConfirm>
      <Failure error={release.error} />
    </section>
  );
}

function ChainCard({ chain, onReset }: { chain: OperatorChain; onReset: () => void }) {
  const [done, setDone] = useState<string | null>(null);
  const name = `${chain.blockchain} / ${chain.network}`;
  // A destructive action behind a typed confirmation: the chain's name, typed, enables the button.
  const confirmWord = `${chain.blockchain}/${chain.network}`;
  const reset = useAction(async () => {
    const r = await api<{ item: { forgottenHeight: number | null; pendingEventsDeleted: number; callbacksCancelled: number } }>(
      'POST',
      `/operator/chains/${chain.blockchain}/${chain.network}/reset`,
    );
    const { forgottenHeight, pendingEventsDeleted, callbacksCancelled } = r.item;
    setDone(
      `${name} is reset: ${forgottenHeight === null ? 'it had no following state' : `height ${forgottenHeight} forgotten`}, ${pendingEventsDeleted} pending events deleted, ${callbacksCancelled} callbacks cancelled.`,
    );
    onReset();
  });
  const id = `chain-${chain.blockchain}-${chain.network}`;
  return (
    <li class="card" aria-labelledby={id}>
      <h2 id={id}>
        {name} <span class={`state ${chain.state}`}>{chain.state}</span>
      </h2>
      <dl class="facts">
        <dt>Node head</dt>
        <dd>{chain.headHeight ?? '—'}</dd>
        <dt>Processed</dt>
        <dd>{chain.processedHeight ?? '—'}</dd>
        <dt>Lag</dt>
        <dd>
          {chain.lagBlocks ?? '—'} blocks, {chain.lagSeconds ?? '—'} s
        </dd>
        <dt>Reorganisations (24 h)</dt>
        <dd>{chain.reorganisations}</dd>
        {chain.stoppedReason && (
          <>
            <dt>{chain.state === 'no-node' ? 'Not followed' : 'Stopped because'}</dt>
            <dd class="bad">{chain.stoppedReason}</dd>
          </>
        )}
      </dl>
      {chain.hold && (
        <HoldPanel
          chain={chain}
          hold={chain.hold}
          onReleased={(message) => {
            setDone(message);
            onReset();
          }}
        />
      )}
      <TypedConfirm
        id={id}
        summary={`Reset ${name}…`}
        word={confirmWord}
        action={`Reset ${name}`}
        busy={reset.busy}
        open={chain.state === 'stopped'}
        onConfirm={() => reset.run()}
      >
        <p>
          The follower forgets this chain's position and starts again from the node's current head (as <code>herald chains reset</code>): its pending events are
          deleted and their callbacks cancelled.
        </p>
      </TypedConfirm>
      <Failure error={reset.error} />
      {done && <Notice>{done}</Notice>}
      <LagChart chain={chain} />
      <h3>Nodes</h3>
      {chain.nodes.length === 0 ? (
        <Empty>No node checks recorded yet.</Empty>
      ) : (
        <Scroll>
          <table>
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col">Eligible</th>
                <th scope="col">Head</th>
                <th scope="col">Behind</th>
                <th scope="col">Error rate</th>
                <th scope="col">Latency</th>
              </tr>
            </thead>
            <tbody>
              {chain.nodes.map((n) => (
                <tr key={n.url}>
                  <td class="mono wrap">{n.url}</td>
                  <td>{n.eligible ? 'yes' : <span class="bad">no: {n.reason}</span>}</td>
                  <td>{n.headHeight ?? '—'}</td>
                  <td>{n.lagBlocks ?? '—'}</td>
                  <td>{n.errorRate === null ? '—' : `${(n.errorRate * 100).toFixed(1)} %`}</td>
                  <td>{n.latencyMs === null ? '—' : `${Math.round(n.latencyMs)} ms`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
    </li>
  );
}

const REFRESH_MS = 10_000;

export function ChainsPage() {
  const chains = useLoad(() => api<{ items: OperatorChain[] }>('GET', '/operator/chains'), 'chains', REFRESH_MS);
  return (
    <>
      <PageTitle>Chains</PageTitle>
      <Freshness updatedAt={chains.updatedAt} everyMs={REFRESH_MS} loading={chains.loading} />
      <Failure error={chains.error} />
      {!chains.data ? (
        chains.loading && <Loading what="the chains" />
      ) : chains.data.items.length === 0 ? (
        <Empty>No chains are followed. Add them to the configuration (chains) and restart the ingest role.</Empty>
      ) : (
        <ul class="cards">
          {chains.data.items.map((c) => (
            <ChainCard key={c.blockchain + c.network} chain={c} onReset={() => chains.reload()} />
          ))}
        </ul>
      )}
    </>
  );
}

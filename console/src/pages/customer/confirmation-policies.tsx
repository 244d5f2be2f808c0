/**
 * The customer's default confirmation policy per chain (docs/concepts/confirmations-and-reorganisations.md#a-default-policy-per-chain):
 * the policies set, a form to set one (tiers by amount, or finality where the chain has it), and Remove.
 */
import { useState } from 'preact/hooks';
import { BLOCKCHAINS, type Blockchain, CHAINS } from '../../../../src/domain/chains.ts';
import { FINALITY_CHAINS } from '../../../../src/domain/confirmations.ts';
import { ApiFailure, api, type Page } from '../../api.ts';
import { Empty, Failure, Field, Loading, Scroll, useAction, useLoad } from '../../ui.tsx';

interface Tier {
  upTo?: string;
  confirmations: number;
}
interface Policy {
  blockchain: string;
  network: string;
  confirmationTiers?: Tier[];
  finality?: 'finalized';
  updatedTimestamp: number;
}

const EXAMPLE = '[{"upTo": "1", "confirmations": 1}, {"upTo": "10", "confirmations": 3}, {"confirmations": 6}]';

const describe = (p: Policy) =>
  p.finality
    ? 'When the block is final'
    : (p.confirmationTiers ?? []).map((t) => `${t.upTo === undefined ? 'above' : `up to ${t.upTo}`}: ${t.confirmations}`).join(' · ');

export function ConfirmationPolicies() {
  const list = useLoad(() => api<Page<Policy>>('GET', '/account/confirmation-policies'), 'confirmation-policies');
  const [chain, setChain] = useState<Blockchain>('bitcoin');
  const [network, setNetwork] = useState<string>(CHAINS.bitcoin.networks[0] as string);
  const [mode, setMode] = useState<'tiers' | 'finality'>('tiers');
  const [tiers, setTiers] = useState(EXAMPLE);
  const [parseError, setParseError] = useState<string | undefined>();
  const save = useAction(async () => {
    setParseError(undefined);
    let item: Record<string, unknown>;
    if (mode === 'finality') item = { finality: 'finalized' };
    else {
      try {
        item = { confirmationTiers: JSON.parse(tiers) };
      } catch {
        setParseError(`Not JSON: give a list such as ${EXAMPLE}`);
        return;
      }
    }
    await api('PUT', `/account/confirmation-policies/${chain}/${network}`, { body: { data: { item } } });
    await list.reload();
  });
  const remove = useAction(async (p: Policy) => {
    await api('DELETE', `/account/confirmation-policies/${p.blockchain}/${p.network}`);
    await list.reload();
  });
  const fieldError = parseError ?? (save.error instanceof ApiFailure ? save.error.message : undefined);
  return (
    <section aria-labelledby="policies-heading">
      <h2 id="policies-heading">Confirmation policies</h2>
      <p>
        When an address subscription created without receiveCallbackOn, confirmationTiers or finality is called back on each chain. Copied into the subscription
        when it is created: a change here changes no existing subscription.
      </p>
      <Failure error={list.error ?? remove.error} />
      {!list.data ? (
        list.loading && <Loading what="the confirmation policies" />
      ) : list.data.items.length === 0 ? (
        <Empty>No policy: subscriptions default to receiveCallbackOn 3.</Empty>
      ) : (
        <Scroll>
          <table>
            <thead>
              <tr>
                <th>Chain</th>
                <th>Policy</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.data.items.map((p) => (
                <tr key={`${p.blockchain}/${p.network}`}>
                  <td>
                    {p.blockchain} {p.network}
                  </td>
                  <td>{describe(p)}</td>
                  <td>
                    <button type="button" class="secondary" onClick={() => remove.run(p)} disabled={remove.busy}>
                      Remove the policy of {p.blockchain} {p.network}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          save.run();
        }}
      >
        <div class="field inline">
          <label for="policy-chain">Blockchain</label>
          <select
            id="policy-chain"
            value={chain}
            onChange={(e) => {
              const next = e.currentTarget.value as Blockchain;
              setChain(next);
              setNetwork(CHAINS[next].networks[0] as string);
              if (!FINALITY_CHAINS.includes(next)) setMode('tiers');
            }}
          >
            {BLOCKCHAINS.map((b) => (
              <option key={b} value={b}>
                {b}
              </option>
            ))}
          </select>
          <label for="policy-network">Network</label>
          <select id="policy-network" value={network} onChange={(e) => setNetwork(e.currentTarget.value)}>
            {CHAINS[chain].networks.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
          <label for="policy-mode">Policy</label>
          <select id="policy-mode" value={mode} onChange={(e) => setMode(e.currentTarget.value as 'tiers' | 'finality')}>
            <option value="tiers">Confirmations by amount</option>
            {FINALITY_CHAINS.includes(chain) && <option value="finality">When the block is final</option>}
          </select>
        </div>
        {mode === 'tiers' && (
          <Field id="policy-tiers" label="Tiers" hint="upTo in the unit of the callback, ascending; the last tier without upTo." error={fieldError}>
            {(aria) => <textarea {...aria} rows={3} spellcheck={false} value={tiers} onInput={(e) => setTiers(e.currentTarget.value)} />}
          </Field>
        )}
        {mode === 'finality' && fieldError && <p class="bad">{fieldError}</p>}
        <button type="submit" disabled={save.busy}>
          Set the policy of {chain} {network}
        </button>
      </form>
    </section>
  );
}

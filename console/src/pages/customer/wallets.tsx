/** Watch-only wallets: every wallet's assets (coins, tokens, NFTs per chain) and its watched addresses. */
import { useState } from 'preact/hooks';
import { BLOCKCHAINS, type Blockchain, CHAINS } from '../../../../src/domain/chains.ts';
import { ApiFailure, api, type Page, query } from '../../api.ts';
import type { WalletAssets, WatchedAddress } from '../../types.ts';
import { Empty, Failure, Field, Loading, Pager, PageTitle, Scroll, Time, useAction, useLoad } from '../../ui.tsx';

const LIMIT = 20;

function Addresses({ walletId, onChange }: { walletId: string; onChange: () => void }) {
  const base = `/wallet-as-a-service/wallets/${encodeURIComponent(walletId)}`;
  const wallet = useLoad(() => api<{ item: { addresses: WatchedAddress[] } }>('GET', base), walletId);
  const [blockchain, setBlockchain] = useState<Blockchain>('ethereum');
  const [network, setNetwork] = useState('mainnet');
  const networks = CHAINS[blockchain].networks;
  const net = networks.includes(network as never) ? network : (networks[0] as string);
  const [address, setAddress] = useState('');
  const changed = () => {
    wallet.reload();
    onChange();
  };
  const add = useAction(async () => {
    await api('POST', `${base}/${blockchain}/${net}/addresses`, { body: { data: { item: { address: address.trim() } } } });
    setAddress('');
    changed();
  });
  const remove = useAction(async (a: WatchedAddress) => {
    if (!window.confirm(`Stop watching ${a.address} on ${a.blockchain} / ${a.network}?`)) return;
    await api('DELETE', `${base}/${a.blockchain}/${a.network}/addresses/${encodeURIComponent(a.address)}`);
    changed();
  });
  const id = `w-${walletId}`;
  const addressError = add.error instanceof ApiFailure && add.error.details.some((d) => d.attribute === 'address') ? add.error.message : undefined;
  return (
    <section aria-label="Watched addresses">
      <h3>Watched addresses</h3>
      <Failure error={wallet.error ?? remove.error} />
      {wallet.data === undefined ? (
        wallet.loading && <Loading what="the addresses" />
      ) : wallet.data.item.addresses.length === 0 ? (
        <Empty>No addresses watched in this wallet yet.</Empty>
      ) : (
        <Scroll>
          <table>
            <thead>
              <tr>
                <th scope="col">Chain</th>
                <th scope="col">Address</th>
                <th scope="col">Counted from block</th>
                <th scope="col">Added</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {wallet.data.item.addresses.map((a) => (
                <tr key={a.blockchain + a.network + a.address}>
                  <td>
                    {a.blockchain} / {a.network}
                  </td>
                  <td class="mono wrap">{a.address}</td>
                  <td>{a.watchedFromBlock ?? 'not followed yet'}</td>
                  <td>
                    <Time s={a.createdTimestamp} />
                  </td>
                  <td>
                    <button type="button" class="secondary small" onClick={() => remove.run(a)} aria-label={`Remove ${a.address}`}>
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          add.run();
        }}
      >
        <Field id={`${id}-chain`} label="Blockchain">
          {(aria) => (
            <select {...aria} value={blockchain} onChange={(e) => setBlockchain(e.currentTarget.value as Blockchain)}>
              {BLOCKCHAINS.map((b) => (
                <option key={b}>{b}</option>
              ))}
            </select>
          )}
        </Field>
        <Field id={`${id}-network`} label="Network">
          {(aria) => (
            <select {...aria} value={net} onChange={(e) => setNetwork(e.currentTarget.value)}>
              {networks.map((n) => (
                <option key={n}>{n}</option>
              ))}
            </select>
          )}
        </Field>
        <Field id={`${id}-address`} label="Address to watch" error={addressError}>
          {(aria) => <input {...aria} type="text" autoComplete="off" spellcheck={false} value={address} onInput={(e) => setAddress(e.currentTarget.value)} />}
        </Field>
        <button type="submit" disabled={add.busy}>
          Watch the address
        </button>
      </form>
      {!addressError && <Failure error={add.error} />}
    </section>
  );
}

function Assets({ w }: { w: WalletAssets }) {
  if (w.coins.length === 0 && w.fungibleTokens.length === 0 && w.nonFungibleTokens.length === 0) return <Empty>No assets yet.</Empty>;
  return (
    <>
      {w.coins.length > 0 && (
        <Scroll>
          <table>
            <caption>Coins</caption>
            <thead>
              <tr>
                <th scope="col">Chain</th>
                <th scope="col">Unit</th>
                <th scope="col">Confirmed balance</th>
                <th scope="col">Received</th>
                <th scope="col">Spent</th>
                <th scope="col">Opening balance</th>
              </tr>
            </thead>
            <tbody>
              {w.coins.map((c) => (
                <tr key={c.blockchain + c.network}>
                  <td>
                    {c.blockchain} / {c.network}
                  </td>
                  <td>{c.unit}</td>
                  <td class="num">{c.confirmedBalance}</td>
                  <td class="num">{c.totalReceived}</td>
                  <td class="num">{c.totalSpent}</td>
                  <td>{c.openingBalance}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      {w.fungibleTokens.length > 0 && (
        <Scroll>
          <table>
            <caption>Tokens</caption>
            <thead>
              <tr>
                <th scope="col">Chain</th>
                <th scope="col">Symbol</th>
                <th scope="col">Type</th>
                <th scope="col">Contract</th>
                <th scope="col">Amount</th>
              </tr>
            </thead>
            <tbody>
              {w.fungibleTokens.map((t) => (
                <tr key={t.blockchain + t.network + t.identifier}>
                  <td>
                    {t.blockchain} / {t.network}
                  </td>
                  <td>{t.symbol}</td>
                  <td>{t.type}</td>
                  <td class="mono wrap">{t.identifier}</td>
                  <td class="num">{t.amount}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      {w.nonFungibleTokens.length > 0 && (
        <Scroll>
          <table>
            <caption>NFTs</caption>
            <thead>
              <tr>
                <th scope="col">Chain</th>
                <th scope="col">Symbol</th>
                <th scope="col">Type</th>
                <th scope="col">Contract</th>
                <th scope="col">Token id</th>
              </tr>
            </thead>
            <tbody>
              {w.nonFungibleTokens.map((t) => (
                <tr key={t.blockchain + t.network + t.identifier + t.tokenId}>
                  <td>
                    {t.blockchain} / {t.network}
                  </td>
                  <td>{t.symbol}</td>
                  <td>{t.type}</td>
                  <td class="mono wrap">{t.identifier}</td>
                  <td class="mono">{t.tokenId}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
    </>
  );
}

export function WalletsPage() {
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<Page<WalletAssets>>('GET', `/wallet-as-a-service/wallets/all-assets${query({ limit: LIMIT, offset })}`), String(offset));
  const [name, setName] = useState('');
  const create = useAction(async () => {
    await api('POST', '/wallet-as-a-service/wallets', { body: { data: { item: { walletName: name.trim() } } } });
    setName('');
    await list.reload();
  });
  return (
    <>
      <PageTitle>Wallets</PageTitle>
      <form
        class="card inline"
        onSubmit={(e) => {
          e.preventDefault();
          create.run();
        }}
      >
        <Field id="wallet-name" label="New wallet name" error={create.error instanceof ApiFailure ? create.error.message : undefined}>
          {(aria) => <input {...aria} type="text" autoComplete="off" value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <button type="submit" disabled={create.busy}>
          Create the wallet
        </button>
      </form>
      <Failure error={list.error} />
      {list.data === undefined ? (
        list.loading && <Loading what="the wallets" />
      ) : list.data.items.length === 0 ? (
        <Empty>No wallets yet. Create one, then add the addresses it watches.</Empty>
      ) : (
        <>
          <ul class="cards">
            {list.data.items.map((w) => (
              <li class="card" key={w.walletId} aria-labelledby={`wallet-${w.walletId}`}>
                <h2 id={`wallet-${w.walletId}`}>
                  {w.walletName} <span class="mono hint">{w.walletId}</span>
                </h2>
                <Assets w={w} />
                <Addresses walletId={w.walletId} onChange={() => list.reload()} />
              </li>
            ))}
          </ul>
          <Pager offset={offset} limit={LIMIT} total={list.data.total} what="wallets" onOffset={setOffset} />
        </>
      )}
    </>
  );
}

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  BLOCKCHAINS,
  CHAINS,
  DEFAULT_REORG_BREAKER_DEPTH,
  EVENT_TYPES,
  HELD_EVENTS,
  NETWORKS,
  networkChain,
  supportsNetwork,
  UNCONFIRMED_EVENTS,
} from './chains.ts';

describe('the chain each network label names', () => {
  it('ethereum takes sepolia and hoodi beside goerli, each with its EIP-155 chain id', () => {
    expect(CHAINS.ethereum.networks).toEqual(['mainnet', 'sepolia', 'hoodi', 'goerli']);
    expect(networkChain('ethereum', 'mainnet')?.chainId).toBe(1);
    expect(networkChain('ethereum', 'sepolia')?.chainId).toBe(11155111);
    expect(networkChain('ethereum', 'hoodi')?.chainId).toBe(560048);
    expect(networkChain('ethereum', 'goerli')).toMatchObject({ chainId: 5, shutDown: expect.stringContaining('2024') });
    expect(networkChain('ethereum-classic', 'mordor')?.chainId).toBe(63);
    expect(networkChain('binance-smart-chain', 'testnet')?.chainId).toBe(97);
    expect(supportsNetwork('bitcoin', 'sepolia')).toBe(false);
    expect(networkChain('bitcoin', 'sepolia')).toBeUndefined();
  });

  it('every label of every blockchain names a chain the node can be checked against', () => {
    for (const blockchain of BLOCKCHAINS) {
      const { family, networks, networkChains } = CHAINS[blockchain];
      expect(networks[0], blockchain).toBe('mainnet');
      expect(Object.keys(networkChains), blockchain).toEqual(networks);
      for (const network of networks) {
        expect(NETWORKS, `${blockchain} ${network}`).toContain(network);
        const chain = networkChains[network];
        const label = `${blockchain} ${network}`;
        expect(chain?.name, label).toBeTruthy();
        if (family === 'evm') expect(Number.isSafeInteger(chain?.chainId), label).toBe(true);
        if (family === 'utxo') {
          expect(chain?.nodeChain, label).toBe(network === 'mainnet' ? 'main' : 'test');
          expect(chain?.genesisHash, label).toMatch(/^[0-9a-f]{64}$/);
        }
        if (family === 'xrp') expect(chain?.networkId, label).toBe(network === 'mainnet' ? 0 : 1);
        if (family === 'tron') {
          // Tron's chain id is the last four bytes of its genesis block id.
          expect(chain?.genesisHash, label).toMatch(/^[0-9a-f]{64}$/);
          expect(chain?.chainId, label).toBe(Number.parseInt(chain?.genesisHash?.slice(-8) ?? '', 16));
        }
      }
    }
  });

  it('the networks table of docs/reference/chains.md documents every label with its chain, chain id and node identity, as chains.ts has them', () => {
    const readme = readFileSync(new URL('../../docs/reference/chains.md', import.meta.url), 'utf8');
    const start = readme.indexOf('| blockchain | network | chain | chain id | node identity |');
    expect(start, 'the networks table').toBeGreaterThan(0);
    const rows = readme
      .slice(start)
      .split('\n')
      .slice(2)
      .filter((line, i, all) => line.startsWith('|') && all.slice(0, i).every((l) => l.startsWith('|')))
      .map((line) =>
        line
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
    const documented = rows.map(([blockchain, network]) => `${blockchain} ${network}`);
    const labels = BLOCKCHAINS.flatMap((b) => CHAINS[b].networks.map((n) => `${b} ${n}`));
    expect([...documented].sort()).toEqual([...labels].sort());
    for (const [blockchain, network, name, chainId, identity] of rows) {
      const chain = networkChain(blockchain as never, network as never);
      const label = `${blockchain} ${network}`;
      expect(name, label).toBe(chain?.shutDown ? `${chain.name} (${chain.shutDown})` : chain?.name);
      expect(chainId, label).toEqual(chain?.chainId === undefined ? '-' : expect.stringMatching(new RegExp(`^${chain.chainId}\\b`)));
      if (chain?.nodeChain) expect(identity, label).toContain(`chain \`${chain.nodeChain}\``);
      if (chain?.networkId !== undefined) expect(identity, label).toContain(`network id ${chain.networkId}`);
      if (chain?.genesisHash) {
        const [head = '', tail = ''] = /`([0-9a-f]+)…([0-9a-f]+)`/.exec(identity ?? '')?.slice(1) ?? [];
        expect(head.length, label).toBeGreaterThanOrEqual(16);
        expect(chain.genesisHash.startsWith(head) && chain.genesisHash.endsWith(tail), `${label}: ${identity}`).toBe(true);
      }
    }
  });
});

describe('the events the deep-reorganisation breaker holds (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker)', () => {
  it('are exactly the confirmed ones: a new event type is classified by its name until it says otherwise here', () => {
    const confirmed = EVENT_TYPES.filter((t) => /CONFIRMED/.test(t) && !/UNCONFIRMED/.test(t));
    expect([...HELD_EVENTS].sort()).toEqual([...confirmed].sort());
    for (const t of ['TRANSACTION_MINED', 'BLOCK_MINED', 'BLOCK_HEIGHT_REACHED', 'BLOCK_REVERTED', ...UNCONFIRMED_EVENTS] as const)
      expect(HELD_EVENTS.has(t)).toBe(false);
  });

  it('have a default breaker depth on every blockchain, 1 or more', () => {
    for (const b of BLOCKCHAINS) expect(DEFAULT_REORG_BREAKER_DEPTH[b]).toBeGreaterThanOrEqual(1);
  });
});

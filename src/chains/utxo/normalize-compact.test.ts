import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { withoutAddresses } from '../../../test/support/utxo-blocks.ts';
import type { NormalizedBlock } from '../types.ts';
import { type CompactUtxoBlock, decodeCompactBlock } from './compact-block.ts';
import { normalizeUtxoBlock, type UtxoBlockchain, UtxoNormalizeError } from './normalize.ts';
import { normalizeUtxoBlockCompact } from './normalize-compact.ts';
import { quoteAmounts } from './rpc.ts';
import type { RpcBlock, RpcInput, RpcTransaction } from './rpc-types.ts';

const FIXTURES = new URL('../../../test/fixtures/', import.meta.url);

/** Every recorded getblock with transaction objects, as [path, chain, text]. */
function recordedBlocks(): [string, UtxoBlockchain, string][] {
  const found: [string, UtxoBlockchain, string][] = [];
  for (const chain of ['bitcoin', 'bitcoin-cash', 'litecoin', 'dogecoin', 'dash', 'zcash'] as const) {
    for (const entry of readdirSync(new URL(`${chain}/`, FIXTURES), { recursive: true, encoding: 'utf8' })) {
      if (!/(^|\/)getblock_2_[^/]*\.json$/.test(entry)) continue;
      found.push([`${chain}/${entry}`, chain, readFileSync(new URL(`${chain}/${entry}`, FIXTURES), 'utf8')]);
    }
  }
  return found;
}

/** The decoded block without its address list, once that list is checked. */
const decoded = (compact: CompactUtxoBlock): NormalizedBlock => withoutAddresses(decodeCompactBlock(compact));

const blockOf = (text: string): RpcBlock => {
  const json = JSON.parse(text) as RpcBlock & { result?: RpcBlock };
  return json.result ?? json;
};

/** Both paths on the same input: the fused one decoded must equal the normaliser's answer; returns whether the fast path took it. */
function same(block: RpcBlock, blockchain: UtxoBlockchain): boolean {
  const chain = { blockchain, network: 'mainnet' } as const;
  const { compact, transfer } = normalizeUtxoBlockCompact({ block }, chain);
  expect(decoded(compact)).toEqual(normalizeUtxoBlock({ block }, chain));
  expect(transfer.length).toBeGreaterThan(0);
  return compact.movementDelta instanceof Float64Array;
}

/** Verbosity 3 made from verbosity 2: every spending input given a prevout paying one of the block's addresses (some without one, some zero). */
function withPrevouts(block: RpcBlock): RpcBlock {
  const copy = structuredClone(block);
  const addresses = (copy.tx as RpcTransaction[]).flatMap((tx) => (tx.vout ?? []).map((o) => o.scriptPubKey?.address ?? o.scriptPubKey?.addresses?.[0]));
  let k = 0;
  for (const tx of copy.tx as RpcTransaction[]) {
    for (const vin of (tx.vin ?? []) as RpcInput[]) {
      if (vin.coinbase !== undefined) continue;
      k++;
      const address = addresses[k % addresses.length];
      vin.prevout = {
        generated: false,
        height: 1,
        value: k % 17 === 0 ? 0 : ((k % 1000) * 100_000 + (k % 7)) / 1e8,
        scriptPubKey: k % 13 === 0 || address === undefined ? { type: 'nulldata', hex: '6a' } : { address, type: 'x' },
      };
    }
  }
  return copy;
}

describe('normalizeUtxoBlockCompact', () => {
  const recorded = recordedBlocks();

  it('reads every recorded block as normalizeUtxoBlock does, on the fast path', () => {
    expect(recorded.length).toBeGreaterThanOrEqual(10);
    for (const [path, chain, text] of recorded) {
      expect(same(blockOf(text), chain), path).toBe(true);
      // Amounts as the exact-amount client passes them (decimal text).
      expect(same(blockOf(quoteAmounts(text)), chain), `${path} (amounts as text)`).toBe(true);
    }
  });

  it('resolves verbosity-3 prevouts (nets per address, zero nets and addressless outputs left out)', () => {
    for (const [path, chain, text] of recorded) expect(same(withPrevouts(blockOf(text)), chain), path).toBe(true);
  });

  it('nets an address paid and spent in one transaction, and leaves out a net of zero', () => {
    const [, , text] = recorded.find(([path]) => path.includes('766391')) as [string, UtxoBlockchain, string];
    const block = blockOf(text);
    const tx = (block.tx as RpcTransaction[])[5] as RpcTransaction;
    const out = (tx.vout ?? [])[0];
    const address = out?.scriptPubKey?.address as string;
    (tx.vin as RpcInput[])[0] = { txid: 'ab'.repeat(32), vout: 3, prevout: { value: out?.value, scriptPubKey: { address } } };
    expect(same(block, 'bitcoin')).toBe(true);
    const moved = normalizeUtxoBlock({ block }, { blockchain: 'bitcoin', network: 'mainnet' }).coinMovements;
    expect(moved.some((m) => m.transactionId === tx.txid && m.address === address)).toBe(false);
  });

  it('leaves what it does not handle to the normaliser: verbosity 1, huge amounts, malformed blocks', () => {
    const chain = { blockchain: 'dogecoin', network: 'mainnet' } as const;
    const [, , text] = recorded.find(([path]) => path.includes('766391')) as [string, UtxoBlockchain, string];
    const huge = blockOf(text);
    // 2^60 koinu: beyond a double's exact integers; the general path keeps it as a bigint.
    ((huge.tx as RpcTransaction[])[1]?.vout ?? [])[0] = {
      value: '11529215046.06846976',
      n: 0,
      scriptPubKey: { address: 'DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L' },
    };
    const { compact } = normalizeUtxoBlockCompact({ block: huge }, chain);
    expect(compact.movementDelta instanceof Float64Array).toBe(false);
    expect(decoded(compact)).toEqual(normalizeUtxoBlock({ block: huge }, chain));
    expect(decodeCompactBlock(compact).utxo?.outputs.some((o) => o.value === 2n ** 60n)).toBe(true);

    const broken = blockOf(text);
    ((broken.tx as RpcTransaction[])[2]?.vout ?? [])[1] = { value: -1, n: 1, scriptPubKey: { address: 'bc1qxyz' } };
    expect(() => normalizeUtxoBlockCompact({ block: broken }, chain)).toThrow(UtxoNormalizeError);
    expect(() => normalizeUtxoBlockCompact({ block: broken }, chain)).toThrow(/negative value/);
    const noTxid = blockOf(text);
    ((noTxid.tx as RpcTransaction[])[3]?.vin as RpcInput[])[0] = { txid: 'nothex', vout: 0 };
    expect(() => normalizeUtxoBlockCompact({ block: noTxid }, chain)).toThrow(/neither coinbase nor a txid:vout reference/);

    const ids = blockOf(text);
    const transactions = ids.tx as RpcTransaction[];
    ids.tx = transactions.map((t) => t.txid as string);
    const viaTransactions = normalizeUtxoBlockCompact({ block: ids, transactions }, { blockchain: 'bitcoin', network: 'mainnet' });
    expect(decoded(viaTransactions.compact)).toEqual(normalizeUtxoBlock({ block: ids, transactions }, { blockchain: 'bitcoin', network: 'mainnet' }));
  });
});

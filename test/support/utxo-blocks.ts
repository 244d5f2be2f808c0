/**
 * Helpers of the UTXO tests. A UTXO block read through a block worker carries the list of the addresses it touches
 * (NormalizedBlock.addresses, for the follower's watched-address lookup); one normalised on the calling thread does not.
 */
import { createHash } from 'node:crypto';
import { bech32 } from '@scure/base';
import { expect } from 'vitest';
import type { NormalizedBlock } from '../../src/chains/types.ts';

/** A valid bitcoin testnet P2WPKH address made from `seed` (the same seed, the same address). */
export function testnetAddress(seed: string): string {
  const program = createHash('sha256').update(seed).digest().subarray(0, 20);
  return bech32.encode('tb', [0, ...bech32.toWords(program)]);
}

/** `block` without its address list, once that list is checked: each address once, all those of its movements and outputs among them. */
export function withoutAddresses({ addresses, ...block }: NormalizedBlock): NormalizedBlock {
  if (addresses === undefined) return block;
  expect(new Set(addresses).size).toBe(addresses.length);
  const listed = new Set(addresses);
  for (const a of [...block.coinMovements.map((m) => m.address), ...(block.utxo?.outputs ?? []).map((o) => o.address)]) expect(listed.has(a)).toBe(true);
  return block;
}

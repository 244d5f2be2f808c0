/**
 * How far a followed chain is behind its node, in blocks and in seconds: the status endpoint shows it
 * and the operator alerts compare it with alerts.lagSeconds, so both say the same thing.
 */

export interface ChainLag {
  lagBlocks: number | null;
  lagSeconds: number | null;
}

/**
 * lagBlocks: node head minus the last processed height (null before a head was seen). lagSeconds: while
 * behind, the age of the last processed block (how old the newest event herald has seen is); 0 when
 * caught up, however long ago the chain's last block was mined.
 */
export function chainLag(chain: { height: number; nodeHead: number | null; blockTimestamp: number | null }, now: Date): ChainLag {
  const lagBlocks = chain.nodeHead === null ? null : Math.max(0, chain.nodeHead - chain.height);
  const behind = lagBlocks !== null && lagBlocks > 0;
  const lagSeconds =
    chain.blockTimestamp === null || lagBlocks === null ? null : behind ? Math.max(0, Math.round(now.getTime() / 1000 - chain.blockTimestamp)) : 0;
  return { lagBlocks, lagSeconds };
}

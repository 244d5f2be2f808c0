/**
 * A consistency check failed: the node answered, but not about what was asked (another block, a block that
 * left the main chain, a transaction of another block), or cannot serve it as configured. Thrown, so the
 * follower retries with backoff rather than normalising a mix of two chains.
 */
export class UtxoAdapterError extends Error {
  override name = 'UtxoAdapterError';
}

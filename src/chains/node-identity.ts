/**
 * Whether a node is the chain its label names (docs/reference/chains.md "Chain identity"): its own word (ChainAdapter.getNodeIdentity)
 * against the identity expected of the chain (src/domain/chain-identity.ts). The pool (pool.ts) asks at a node's
 * first answer and after every failure, and reads nothing from a node that is on another chain.
 */
import { BITCOIN_CASH_SPLIT, type ExpectedIdentity } from '../domain/chain-identity.ts';
import type { ChainAdapter } from './types.ts';

/** How every reason for a node on another chain begins (the alert monitor tells them from other reasons by it). */
export const WRONG_CHAIN = 'wrong chain:';

export interface IdentityCheck {
  blockchain: string;
  network: string;
  expected: ExpectedIdentity;
}

/** What each family's chain id is, in the reasons. */
const CHAIN_ID_NAME = { evm: 'eth_chainId', utxo: 'getblockchaininfo.chain', tron: 'its genesis block', xrp: 'server_info network_id' } as const;

/**
 * Why the node is not the chain `check` expects (a reason for the status, the log and the operator alert,
 * beginning with WRONG_CHAIN), or undefined when it is. `headHeight`: the node's head, so that the block at
 * the Bitcoin Cash split is asked only of a node that has it. Throws when the node does not answer (the
 * caller counts that as a failure and asks again later).
 */
export async function identityMismatch(adapter: ChainAdapter, check: IdentityCheck, headHeight: number | undefined): Promise<string | undefined> {
  if (!adapter.getNodeIdentity) return undefined;
  const { expected } = check;
  const label = `${check.blockchain} ${check.network}`;
  const hint = expected.declared
    ? ` (the chainId this installation declared for ${label})`
    : ` (${label}'s; a development or test node is declared with the chain's chainId setting)`;
  const said = await adapter.getNodeIdentity();
  const name = CHAIN_ID_NAME[expected.family];
  if (said.chainId !== expected.chainId) return `${WRONG_CHAIN} ${name} is ${quote(said.chainId)}, not ${quote(expected.chainId)}${hint}`;
  if (expected.genesisHash !== undefined && said.genesisHash !== undefined && said.genesisHash !== expected.genesisHash)
    return `${WRONG_CHAIN} its genesis block is ${said.genesisHash}, not ${expected.genesisHash}${hint}`;
  if (expected.split !== undefined && headHeight !== undefined && headHeight >= BITCOIN_CASH_SPLIT.height && adapter.getBlockHash) {
    const atSplit = await adapter.getBlockHash(BITCOIN_CASH_SPLIT.height);
    const isCash = atSplit === BITCOIN_CASH_SPLIT.hash;
    if (expected.split === 'bitcoin-cash' && !isCash)
      return `${WRONG_CHAIN} its block ${BITCOIN_CASH_SPLIT.height} is ${atSplit}, not Bitcoin Cash's ${BITCOIN_CASH_SPLIT.hash}: the node follows bitcoin${hint}`;
    if (expected.split === 'bitcoin' && isCash)
      return `${WRONG_CHAIN} its block ${BITCOIN_CASH_SPLIT.height} is Bitcoin Cash's (${atSplit}): the node follows bitcoin-cash${hint}`;
  }
  return undefined;
}

function quote(value: string): string {
  return /^[0-9]+$/.test(value) ? value : `'${value.slice(0, 80)}'`;
}

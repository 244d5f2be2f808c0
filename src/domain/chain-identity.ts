/**
 * Which chain a node must say it is for each (blockchain, network) label (docs/reference/chains.md "Chain identity"), from the
 * labels' chains (chains.ts networkChains): herald asks every node at start and at every reconnection
 * (src/chains/node-identity.ts) and refuses to follow one that disagrees, so that a test network's node
 * behind a mainnet label never sends mainnet callbacks. No I/O.
 *
 * What each family's node is asked:
 * - EVM: `eth_chainId`, compared as a decimal number (EIP-155 chain id).
 * - Bitcoin family: `getblockchaininfo.chain` ('main', 'test', 'regtest', ...) and, where the chain name has
 *   a known genesis block, `getblockhash 0`; bitcoin and bitcoin-cash mainnet share their history up to the
 *   August 2017 split, so there the block at the split height tells them apart.
 * - Tron: the id of its genesis block (`wallet/getblockbynum` num 0, `blockID`).
 * - XRP: `server_info.info.network_id` (rippled's `[network_id]`: 0 main, 1 testnet, 2 devnet); a server
 *   configured with none prints none, and is on the main network, so none counts as 0.
 *
 * A chain's `chainId` setting (config `chains[].chainId`, HERALD_CHAIN_ID_<BLOCKCHAIN>_<NETWORK>) replaces
 * the label's expected chain id for development and test nodes (an EVM node on 31337, a regtest node); the
 * node must then say exactly that, and nothing more is checked.
 */
import { type Blockchain, type ChainFamily, isNetwork, type NetworkChain, networkChain } from './chains.ts';

/** Bitcoin Cash's first block of its own (UAHF, 1 August 2017): Bitcoin's block at that height is another. */
export const BITCOIN_CASH_SPLIT = { height: 478_559, hash: '000000000000000000651ef99cb9fcbe0dadde1d424bd9f15ff20136191a5eec' } as const;

/** What a node of a chain must say (node-identity.ts compares it). */
export interface ExpectedIdentity {
  family: ChainFamily;
  /** EVM: decimal chain id; Bitcoin family: getblockchaininfo.chain; Tron: genesis block id; XRP: network id. */
  chainId: string;
  /** True when the chain's configuration declared it (a development or test node), false when it is the label's. */
  declared: boolean;
  /** Bitcoin family, the label's own identity only: the hash of block 0. */
  genesisHash?: string;
  /** Bitcoin family mainnet: the block at the Bitcoin Cash split height must be (or must not be) BITCOIN_CASH_SPLIT's. */
  split?: 'bitcoin-cash' | 'bitcoin';
}

/**
 * The identity a node of `blockchain` `network` must have: `declared` (the chain's chainId setting) when
 * given, else the label's. Undefined when the label has no known identity and none was declared (nothing
 * to check against: the node is trusted, as before identities were checked).
 */
export function expectedIdentity(blockchain: Blockchain, network: string, family: ChainFamily, declared?: string | number): ExpectedIdentity | undefined {
  if (declared !== undefined) return { family, chainId: normaliseChainId(family, String(declared)), declared: true };
  const label = isNetwork(network) ? networkChain(blockchain, network) : undefined;
  const chainId = label && labelChainId(family, label);
  if (label === undefined || chainId === undefined) return undefined;
  const identity: ExpectedIdentity = { family, chainId, declared: false };
  if (family === 'utxo' && label.genesisHash !== undefined) identity.genesisHash = label.genesisHash;
  if (chainId === 'main' && (blockchain === 'bitcoin' || blockchain === 'bitcoin-cash')) identity.split = blockchain;
  return identity;
}

/** What a node of `label`'s chain says of itself, in the family's terms (NodeIdentity.chainId). */
function labelChainId(family: ChainFamily, label: NetworkChain): string | undefined {
  switch (family) {
    case 'evm':
      return label.chainId === undefined ? undefined : String(label.chainId);
    case 'utxo':
      return label.nodeChain;
    case 'tron':
      return label.genesisHash;
    case 'xrp':
      return label.networkId === undefined ? undefined : String(label.networkId);
  }
}

/**
 * One spelling per chain id, whoever wrote it: EVM ids in decimal (a declared `0x7a69` is 31337), Tron block
 * ids in lower case; other values as given (chain names are case-sensitive in the nodes' answers).
 */
export function normaliseChainId(family: ChainFamily, value: string): string {
  const trimmed = value.trim();
  if (family === 'evm' && /^0x[0-9a-f]+$/i.test(trimmed)) return BigInt(trimmed).toString();
  if (family === 'evm' && /^[0-9]+$/.test(trimmed)) return BigInt(trimmed).toString();
  if (family === 'tron') return trimmed.toLowerCase();
  return trimmed;
}

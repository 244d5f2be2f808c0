/**
 * Which chain a node must say it is for each (blockchain, network) label (README "Chain identity"): herald
 * asks every node at start and at every reconnection (src/chains/node-identity.ts) and refuses to follow one
 * that disagrees, so that a test network's node behind a mainnet label never sends mainnet callbacks. No I/O.
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
import type { Blockchain, ChainFamily } from './chains.ts';

/**
 * The chain id each label stands for, by blockchain and network. Networks are keyed by name (not the
 * Network type) so that a label added to chains.ts finds its entry here or none (then only a declared
 * chainId can be checked, see expectedIdentity).
 * Sources: EIP-155 chain ids (chainlist.org); Bitcoin-family chain names and genesis hashes from each
 * node's chainparams; Tron genesis block ids from the mainnet and Nile nodes; rippled's [network_id] ids.
 */
export const LABEL_CHAIN_IDS: Readonly<Record<Blockchain, Readonly<Record<string, string>>>> = {
  ethereum: { mainnet: '1', goerli: '5', sepolia: '11155111', hoodi: '560048' },
  'ethereum-classic': { mainnet: '61', mordor: '63' },
  'binance-smart-chain': { mainnet: '56', testnet: '97' },
  bitcoin: { mainnet: 'main', testnet: 'test' },
  'bitcoin-cash': { mainnet: 'main', testnet: 'test' },
  litecoin: { mainnet: 'main', testnet: 'test' },
  dogecoin: { mainnet: 'main', testnet: 'test' },
  dash: { mainnet: 'main', testnet: 'test' },
  zcash: { mainnet: 'main', testnet: 'test' },
  tron: {
    mainnet: '00000000000000001ebf88508a03865c71d452e25f4d51194196a1d22b6653dc',
    nile: '0000000000000000d698d4192c56cb6be724a558448e2684802de4d6cd8690dc',
  },
  xrp: { mainnet: '0', testnet: '1' },
};

const BITCOIN_MAIN_GENESIS = '000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f';
const BITCOIN_TESTNET3_GENESIS = '000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943';

/** Bitcoin family: the genesis block hash of the chain names whose genesis is one (regtest's differ by fork and are not checked). */
export const GENESIS_HASHES: Readonly<Partial<Record<Blockchain, Readonly<Record<string, string>>>>> = {
  bitcoin: {
    main: BITCOIN_MAIN_GENESIS,
    test: BITCOIN_TESTNET3_GENESIS,
    testnet4: '00000000da84f2bafbbc53dee25a72ae507ff4914b867c565be350b0da8bf043',
  },
  // Bitcoin Cash kept Bitcoin's genesis blocks (main and testnet3); its testnet4 is its own.
  'bitcoin-cash': { main: BITCOIN_MAIN_GENESIS, test: BITCOIN_TESTNET3_GENESIS, test4: '000000001dd410c49a788668ce26751718cc797474d3152a5fc073dd44fd9f7b' },
  litecoin: {
    main: '12a765e31ffd4059bada1e25190f6e98c99d9714d334efa41a195a7e7e04bfe2',
    test: '4966625a4b2851d9fdee139e56211a0d88575f59ed816ff5e6a63deb4e3e29a0',
  },
  dogecoin: {
    main: '1a91e3dace36e2be3bf030a65679fe821aa1d6ef92e7c9902eb318182c355691',
    test: 'bb0a78264637406b6360aad926284d544d7049f45189db5664f3c4d07350559e',
  },
  dash: {
    main: '00000ffd590b1485b3caadc19b22e6379c733355108f107a430458cdf3407ab6',
    test: '00000bafbc94add76cb75e2ec92894837288a481e5c005f6563d91623bf8bc2c',
  },
  zcash: {
    main: '00040fe8ec8471911baa1db1266ea15dd06b4a8a5c453883c000b031973dce08',
    test: '05a60a92d99d85997cce3b87616c089f6124d7342af37106edc76126334a2c38',
  },
};

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
  const chainId = LABEL_CHAIN_IDS[blockchain][network];
  if (chainId === undefined) return undefined;
  const identity: ExpectedIdentity = { family, chainId, declared: false };
  const genesisHash = GENESIS_HASHES[blockchain]?.[chainId];
  if (genesisHash !== undefined) identity.genesisHash = genesisHash;
  if (chainId === 'main' && (blockchain === 'bitcoin' || blockchain === 'bitcoin-cash')) identity.split = blockchain;
  return identity;
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

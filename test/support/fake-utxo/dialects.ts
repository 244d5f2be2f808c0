/**
 * What differs between the Bitcoin-family nodes the fake imitates: address parameters per network, the
 * coinbase reward and fee rate, and the output profile of each node as it runs today.
 *
 * Profiles (checked against the node sources and the recorded fixtures, see fake-utxo-node.test.ts):
 * - core: Bitcoin Core 30. `scriptPubKey.address` + `desc`, `fee` at getblock verbosity 2, `prevout` at 3,
 *   `target`/`coinbase_tx` in blocks, JSON-RPC 2.0 answered as 2.0, scantxoutset.
 * - core020: Omni Core 0.12, which is built on Bitcoin Core 0.20: `addresses[]` + `reqSigs`, no `desc`
 *   nor `fee`, getblock verbosity >= 2 gives the transactions (no prevouts), scantxoutset.
 * - bchn: Bitcoin Cash Node 29: cashaddr `addresses[]`, `fee` at verbosity 2, `prevout` at 3 (its
 *   scriptPubKey with a single `address`), `ablastate`, scantxoutset.
 * - doge: Dogecoin Core 1.14: `getblock <hash> <verbose:boolean>` only, getrawtransaction takes no blockhash,
 *   no scantxoutset.
 * - dash: Dash Core: `valueSat`, `type` and `extraPayload` (the coinbase is a special transaction with
 *   `cbTx`), `chainlock`/`instantlock`, verbosity >= 2 gives the transactions, scantxoutset.
 * - zcash: zcashd: `valueZat`, transparent parts plus vjoinsplit/vShieldedSpend/vShieldedOutput/
 *   valueBalance, verbosity above 2 is an error, no scantxoutset.
 */
import type { UtxoBlockchain } from '../../../src/chains/utxo/normalize.ts';

export const UTXO_DIALECTS = ['bitcoin', 'bitcoin-cash', 'dogecoin', 'dash', 'zcash', 'omni'] as const;
export type UtxoDialect = (typeof UTXO_DIALECTS)[number];

export type Profile = 'core' | 'core020' | 'bchn' | 'doge' | 'dash' | 'zcash';
export type FakeNetwork = 'mainnet' | 'testnet';

interface AddressParams {
  p2pkh: number;
  p2sh: number;
  /** Segwit human-readable part (Bitcoin only). */
  hrp?: string;
  /** Cashaddr prefix (Bitcoin Cash only): addresses are printed in cashaddr form. */
  cashPrefix?: string;
}

export interface DialectParams extends AddressParams {
  dialect: UtxoDialect;
  blockchain: UtxoBlockchain;
  network: FakeNetwork;
  profile: Profile;
  /** getblockchaininfo.chain */
  chainName: 'main' | 'test';
  versionBytes: 1 | 2;
  /** Address type of newAddress() and of the node's own wallet. */
  defaultAddressType: 'p2wpkh' | 'p2pkh';
  /** Coinbase reward per block (base units), before fees. */
  subsidy: bigint;
  /** Fee rate of the fake's wallet, base units per (virtual) byte. */
  feeRate: bigint;
  /** Sighash byte of the fake's signatures (Bitcoin Cash signs with SIGHASH_FORKID). */
  sighash: number;
  /** getnetworkinfo */
  version: number;
  subversion: string;
  hasScantxoutset: boolean;
}

const ADDRESSES: Record<UtxoBlockchain, Record<FakeNetwork, AddressParams & { versionBytes?: 2 }>> = {
  bitcoin: { mainnet: { p2pkh: 0x00, p2sh: 0x05, hrp: 'bc' }, testnet: { p2pkh: 0x6f, p2sh: 0xc4, hrp: 'tb' } },
  'bitcoin-cash': {
    mainnet: { p2pkh: 0x00, p2sh: 0x05, cashPrefix: 'bitcoincash' },
    testnet: { p2pkh: 0x6f, p2sh: 0xc4, cashPrefix: 'bchtest' },
  },
  litecoin: { mainnet: { p2pkh: 0x30, p2sh: 0x32, hrp: 'ltc' }, testnet: { p2pkh: 0x6f, p2sh: 0x3a, hrp: 'tltc' } },
  dogecoin: { mainnet: { p2pkh: 0x1e, p2sh: 0x16 }, testnet: { p2pkh: 0x71, p2sh: 0xc4 } },
  dash: { mainnet: { p2pkh: 0x4c, p2sh: 0x10 }, testnet: { p2pkh: 0x8c, p2sh: 0x13 } },
  zcash: { mainnet: { p2pkh: 0x1cb8, p2sh: 0x1cbd, versionBytes: 2 }, testnet: { p2pkh: 0x1d25, p2sh: 0x1cba, versionBytes: 2 } },
};

const COIN = 100_000_000n;

type DialectRow = Omit<DialectParams, keyof AddressParams | 'network' | 'chainName' | 'versionBytes' | 'dialect'>;

const ROWS: Record<UtxoDialect, DialectRow> = {
  bitcoin: {
    blockchain: 'bitcoin',
    profile: 'core',
    defaultAddressType: 'p2wpkh',
    subsidy: 50n * COIN,
    feeRate: 2n,
    sighash: 0x01,
    version: 300000,
    subversion: '/Satoshi:30.0.0/',
    hasScantxoutset: true,
  },
  omni: {
    blockchain: 'bitcoin',
    profile: 'core020',
    defaultAddressType: 'p2wpkh',
    subsidy: 50n * COIN,
    feeRate: 2n,
    sighash: 0x01,
    version: 200100,
    subversion: '/Satoshi:0.20.1(Omni:0.12.0)/',
    hasScantxoutset: true,
  },
  'bitcoin-cash': {
    blockchain: 'bitcoin-cash',
    profile: 'bchn',
    defaultAddressType: 'p2pkh',
    subsidy: 50n * COIN,
    feeRate: 1n,
    sighash: 0x41,
    version: 29020000,
    subversion: '/Bitcoin Cash Node:29.2.0/',
    hasScantxoutset: true,
  },
  dogecoin: {
    blockchain: 'dogecoin',
    profile: 'doge',
    defaultAddressType: 'p2pkh',
    subsidy: 10_000n * COIN,
    feeRate: 1_000n,
    sighash: 0x01,
    version: 1140700,
    subversion: '/Shibetoshi:1.14.7/',
    hasScantxoutset: false,
  },
  dash: {
    blockchain: 'dash',
    profile: 'dash',
    defaultAddressType: 'p2pkh',
    subsidy: 2n * COIN,
    feeRate: 1n,
    sighash: 0x01,
    version: 220000,
    subversion: '/Dash Core:22.0.0/',
    hasScantxoutset: true,
  },
  zcash: {
    blockchain: 'zcash',
    profile: 'zcash',
    defaultAddressType: 'p2pkh',
    subsidy: 3n * COIN,
    feeRate: 50n,
    sighash: 0x01,
    version: 6000050,
    subversion: '/MagicBean:6.0.0/',
    hasScantxoutset: false,
  },
};

export function dialectParams(dialect: UtxoDialect, network: FakeNetwork = 'testnet'): DialectParams {
  const row = ROWS[dialect];
  const { versionBytes = 1, ...addresses } = ADDRESSES[row.blockchain][network];
  return { ...row, ...addresses, dialect, network, chainName: network === 'mainnet' ? 'main' : 'test', versionBytes };
}

/** Profiles whose scriptPubKey carries `addresses[]` + `reqSigs` (pre-22 Core and the forks). */
export const printsAddressList = (p: Profile): boolean => p !== 'core';

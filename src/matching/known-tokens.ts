/**
 * The well-known token contracts herald ships, per chain (docs/concepts/deposit-safety.md#lookalike-token): a transfer
 * of a token whose symbol or name equals one of these while its contract is none of them is flagged
 * `lookalike-token`. Mainnet contracts only; the operator adds others per chain (`knownTokens` of a chain
 * entry, docs/reference/configuration.md), e.g. the contracts of a test network.
 *
 * Sources (checked 2026-12; each entry names its own):
 * - `uniswap` (ethereum): the Uniswap default token list, npm package @uniswap/default-token-list 22.21.0
 *   (chainId 1): contract and symbol; the name is the contract's own name() where the list spells it
 *   otherwise (USD Coin, not USDCoin), since that is what a copy shows.
 * - `pancakeswap` (binance-smart-chain): the PancakeSwap Default token list, github.com/pancakeswap/token-list
 *   `lists/pancakeswap-default.json` version 2.16.11 (2024-07-11), chainId 56: contract and symbol.
 * - `trustwallet` (binance-smart-chain, tron): the token's entry in Trust Wallet's curated asset repository,
 *   github.com/trustwallet/assets `blockchains/smartchain/assets/<contract>/info.json` and
 *   `blockchains/tron/assets/<contract>/info.json` (the directory is the contract; name and symbol there).
 * - `issuer`: the issuer's own list of its contracts (Tether: tether.to "Supported protocols"; Circle:
 *   developers.circle.com "USDC contract addresses"). Tron's USDT: no page of Tether's was at hand in 2026-12;
 *   its contract is corroborated by Dune's `tether_tron` data catalog, Trust Wallet's asset id
 *   `c195_tTR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t` and TronWeb's examples (the stored Trust Wallet info.json of it
 *   was a defaced version, so it is not cited).
 * - bitcoin (Omni Layer): property 31 is Tether's USDT on Omni (omniexplorer.info, issuer Tether).
 * Entries checked against none of these were removed (2026-12: none on binance-smart-chain and tron).
 * Which tokens: USDT and USDC everywhere they are issued, then the largest tokens of each chain by market
 * capitalisation. A wrong name or symbol only adds `review`s; a wrong contract would let that contract's
 * transfers pass unflagged, which is why every contract has a source.
 */
import type { Blockchain } from '../domain/chains.ts';

export interface KnownToken {
  /** EVM: 0x address (any case); Tron: base58 address; Omni: the property id, decimal. */
  contract: string;
  symbol?: string;
  name?: string;
  source?: 'uniswap' | 'pancakeswap' | 'trustwallet' | 'issuer' | 'operator';
}

const t = (contract: string, symbol: string, name: string, source: KnownToken['source']): KnownToken => ({ contract, symbol, name, source });

/** The shipped list, mainnet only. */
export const KNOWN_TOKENS: Readonly<Partial<Record<Blockchain, readonly KnownToken[]>>> = {
  ethereum: [
    t('0xdAC17F958D2ee523a2206206994597C13D831ec7', 'USDT', 'Tether USD', 'uniswap'),
    t('0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', 'USDC', 'USD Coin', 'uniswap'),
    t('0x6B175474E89094C44Da98b954EedeAC495271d0F', 'DAI', 'Dai Stablecoin', 'uniswap'),
    t('0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599', 'WBTC', 'Wrapped BTC', 'uniswap'),
    t('0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2', 'WETH', 'Wrapped Ether', 'uniswap'),
    t('0x514910771AF9Ca656af840dff83E8264EcF986CA', 'LINK', 'ChainLink Token', 'uniswap'),
    t('0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984', 'UNI', 'Uniswap', 'uniswap'),
    t('0x95aD61b0a150d79219dCF64E1E6Cc01f0B64C4cE', 'SHIB', 'Shiba Inu', 'uniswap'),
    t('0x6982508145454Ce325dDbE47a25d4ec3d2311933', 'PEPE', 'Pepe', 'uniswap'),
    t('0x455e53CBB86018Ac2B8092FdCd39d8444aFFC3F6', 'POL', 'Polygon Ecosystem Token', 'uniswap'),
    t('0x7D1AfA7B718fb893dB30A3aBc0Cfc608AaCfeBB0', 'MATIC', 'Matic Token', 'uniswap'),
    t('0x7Fc66500c84A76Ad7e9c93437bFc5Ac33E2DDaE9', 'AAVE', 'Aave Token', 'uniswap'),
    t('0x5A98FcBEA516Cf06857215779Fd812CA3beF1B32', 'LDO', 'Lido DAO Token', 'uniswap'),
    t('0x6c3ea9036406852006290770BEdFcAbA0e23A0e8', 'PYUSD', 'PayPal USD', 'uniswap'),
    t('0x57e114B691Db790C35207b2e685D4A43181e6061', 'ENA', 'Ethena', 'uniswap'),
    t('0xfAbA6f8e4a5E8Ab82F62fe7C39859FA577269BE3', 'ONDO', 'Ondo Finance', 'uniswap'),
    t('0x9f8F72aA9304c8B593d555F12eF6589cC3A579A2', 'MKR', 'Maker', 'uniswap'),
    t('0xcbB7C0000aB88B473b1f5aFd9ef808440eed33Bf', 'cbBTC', 'Coinbase Wrapped BTC', 'uniswap'),
    t('0x1aBaEA1f7C830bD89Acc67eC4af516284b1bC33c', 'EURC', 'Euro Coin', 'uniswap'),
    t('0x853d955aCEf822Db058eb8505911ED77F175b99e', 'FRAX', 'Frax', 'uniswap'),
  ],
  'binance-smart-chain': [
    t('0x55d398326f99059fF775485246999027B3197955', 'USDT', 'Tether USD', 'pancakeswap'),
    t('0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d', 'USDC', 'USD Coin', 'pancakeswap'),
    t('0xe9e7CEA3DedcA5984780Bafc599bD69ADd087D56', 'BUSD', 'BUSD Token', 'pancakeswap'),
    t('0xbb4CdB9CBd36B01bD1cBaEBF2De08d9173bc095c', 'WBNB', 'Wrapped BNB', 'pancakeswap'),
    t('0x2170Ed0880ac9A755fd29B2688956BD959F933F8', 'ETH', 'Ethereum Token', 'pancakeswap'),
    t('0x1AF3F329e8BE154074D8769D1FFa4eE058B1DBc3', 'DAI', 'Dai Token', 'pancakeswap'),
    t('0x7130d2A12B9BCbFAe4f2634d864A1Ee1Ce3Ead9c', 'BTCB', 'BTCB Token', 'pancakeswap'),
    t('0x0E09FaBB73Bd3Ade0a17ECC321fD13a19e81cE82', 'Cake', 'PancakeSwap Token', 'pancakeswap'),
    t('0xF8A0BF9cF54Bb92F17374d9e9A321E6a111a51bD', 'LINK', 'ChainLink Token', 'trustwallet'),
    t('0xBf5140A22578168FD562DCcF235E5D43A02ce9B1', 'UNI', 'Uniswap', 'trustwallet'),
    t('0x1D2F0da169ceB9fC7B3144628dB156f3F6c60dBE', 'XRP', 'XRP Token', 'trustwallet'),
    t('0xbA2aE424d960c26247Dd6c32edC70B295c744C43', 'DOGE', 'Dogecoin', 'trustwallet'),
    t('0x3EE2200Efb3400fAbB9AacF31297cBdD1d435D47', 'ADA', 'Cardano Token', 'trustwallet'),
  ],
  tron: [
    t('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', 'USDT', 'Tether USD', 'issuer'),
    t('TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8', 'USDC', 'USD Coin', 'trustwallet'),
    t('TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR', 'WTRX', 'Wrapped TRX', 'trustwallet'),
    t('TAFjULxiVgT4qWk6UZwjqwZXTSaGaqnVp4', 'BTT', 'BitTorrent', 'trustwallet'),
    t('TCFLL5dx5ZJdKnWuesXxi1VPwjLVmWZZy9', 'JST', 'JUST', 'trustwallet'),
    t('TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7', 'WIN', 'WINkLink', 'trustwallet'),
    t('TSSMHYeV2uE9qYH95DqyoCuNCzEL1NvU3S', 'SUN', 'SUN', 'trustwallet'),
    t('TUpMhErZL2fhh4sVNULAbNKLokS4GjC1F4', 'TUSD', 'TrueUSD', 'trustwallet'),
  ],
  bitcoin: [{ contract: '31', name: 'TetherUS', source: 'issuer' }],
};

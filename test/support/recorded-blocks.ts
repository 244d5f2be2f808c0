/**
 * What recorded blocks of test/fixtures normalise to, for the tests that reach them by two roads: the
 * normaliser given the files, and the adapter given a node that answers with them.
 */
import type { NormalizedBlock } from '../../src/chains/types.ts';

/** Tron mainnet block 100 (tron/mainnet/issues/walletsolidity_getblockbynum_100.json): empty, no `transactions` key. */
export const TRON_BLOCK_100: NormalizedBlock = {
  height: 100,
  hash: '000000000000006459a4898c4ada4282e5004b1744f29d944e581810bb838526',
  parentHash: '0000000000000063aed8fead595dd4ece8c3cc2f5fcd4c580867001b2f219759',
  timestamp: 1552448817,
  transactionIds: [],
  tokenTransfers: [],
  internalTransfers: [],
  coinMovements: [],
};

/** Ethereum block 483920 (0x76250, ethereum-etl's test_export_blocks_job__block_with_logs): its header and transaction ids. */
export const ETHEREUM_BLOCK_483920_HEADER: Pick<NormalizedBlock, 'height' | 'hash' | 'parentHash' | 'timestamp' | 'transactionIds'> = {
  height: 483920,
  hash: '0x246edb4b351d93c27926f4649bcf6c24366e2a7c7c718dc9158eea20c03bc6ae',
  parentHash: '0x2610dc6eb941f4bcbddfd2362b999087ccd956e978f0ece4f8da96851283a2ba',
  timestamp: 0x5638c858,
  transactionIds: [
    '0x04cbcb236043d8fb7839e07bbc7f5eed692fb2ca55d897f1101eac3e3ad4fab8',
    '0xcea6f89720cc1d2f46cc7a935463ae0b99dd5fad9c91bb7357de5421511cee49',
    '0x463d53f0ad57677a3b430a007c1c31d15d62c37fab5eee598551697c297c235c',
    '0x05287a561f218418892ab053adfb3d919860988b19458c570c5c30f51c146f02',
  ],
};

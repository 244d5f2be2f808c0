/**
 * Issue 14's recovery and secret rotation end to end on a REAL litecoind (regtest), through the shared
 * recovery scenarios (test/support/recovery-scenarios.ts). Backfill and replay on this node are in
 * test/backfill-litecoin.test.ts. Without litecoind a local run skips loudly; under CI it fails.
 */
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { describeRecoveryScenarios } from './support/recovery-scenarios.ts';

describeWithRealNode('litecoin/testnet on a real litecoind (regtest)', litecoind, () => {
  describeRecoveryScenarios('recovery and rotation', () => startLitecoinDriver(), { confirmations: 2, amount: 10_000_000n });
});

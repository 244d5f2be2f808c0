/**
 * Issue 14's recovery and secret rotation end to end on the real EVM test node (EDR), through the shared
 * recovery scenarios (test/support/recovery-scenarios.ts). Backfill and replay on this node are in
 * test/backfill-evm.test.ts.
 */
import { GOERLI_TEST_CHAIN, startEvmDriver } from './support/evm-driver.ts';
import { describeRecoveryScenarios } from './support/recovery-scenarios.ts';

describeRecoveryScenarios('recovery and rotation on the EVM test node (ethereum/goerli)', () => startEvmDriver(GOERLI_TEST_CHAIN), {
  confirmations: 2,
  amount: 10n ** 17n,
});

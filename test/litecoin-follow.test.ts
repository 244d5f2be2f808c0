/**
 * Chain following end to end against a REAL Bitcoin-family node: litecoind 0.21 in regtest (Debian's
 * package; .ci/run installs it), started by the harness with cookie authentication. The shared scenarios
 * (mined callbacks, a reorganisation made with invalidateblock, the wallet ledger against real wallet
 * sends with the opening from scantxoutset, a restart) run against it exactly as against the fake nodes.
 * Without litecoind a local run skips loudly; under CI it fails.
 */
import { describeFollowScenarios } from './support/follow-scenarios.ts';
import { litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';

describeWithRealNode('litecoin/testnet followed on a real litecoind (regtest)', litecoind, () => {
  describeFollowScenarios('the shared follow scenarios', () => startLitecoinDriver(), { confirmations: 2, amount: 10_000_000n, opening: 'read' });
});

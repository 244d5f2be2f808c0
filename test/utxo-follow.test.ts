/**
 * Chain following end to end for the Bitcoin-family chains that cannot run here, against the fake nodes
 * of test/support/fake-utxo-node.ts speaking each node's own wire format: Bitcoin Core 30 (verbosity 3
 * prevouts), Bitcoin Cash Node 29 (cashaddr), Dogecoin 1.14 (boolean getblock, transactions one by one),
 * Dash Core (special transactions) and zcashd (shielded parts). The shared scenarios (mined callbacks, a
 * reorganisation, the wallet ledger with the opening balance where the node has scantxoutset, a restart)
 * run against each exactly as against the real litecoind of litecoin-follow.test.ts. Credentials are
 * given in the URL for some and as rpcUser/rpcPassword for others, so both paths are followed. Blocks are
 * read in a block worker thread (the default) on all but zcash, which reads them on the main thread
 * (blockWorkers 0), so both paths pass the same scenarios.
 */
import { describe, expect, it } from 'vitest';
import { type FakeUtxoDriverOptions, type FakeUtxoNode, startFakeUtxoDriver, type UtxoDialect } from './support/fake-utxo-node.ts';
import { DEFAULT_SCENARIOS, describeFollowScenarios } from './support/follow-scenarios.ts';

/** The default scenarios and the coin each-confirmation callbacks (ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION). */
const WITH_EACH = [...DEFAULT_SCENARIOS, 'coins-each'] as const;

/** The nodes the scenarios ran against, to check afterwards which of their RPCs the service used. */
const nodes = new Map<UtxoDialect, FakeUtxoNode>();

function driver(dialect: UtxoDialect, options: FakeUtxoDriverOptions = {}) {
  return async () => {
    const d = await startFakeUtxoDriver(dialect, options);
    nodes.set(dialect, d.node);
    return d;
  };
}

describeFollowScenarios('bitcoin/testnet followed on a fake Bitcoin Core 30', driver('bitcoin'), {
  confirmations: 2,
  amount: 10_000_000n,
  opening: 'read',
  scenarios: WITH_EACH,
});

describeFollowScenarios('bitcoin-cash/testnet followed on a fake Bitcoin Cash Node 29', driver('bitcoin-cash', { credentials: 'config' }), {
  confirmations: 2,
  amount: 10_000_000n,
  opening: 'read',
  scenarios: WITH_EACH,
});

describeFollowScenarios('dogecoin/testnet followed on a fake Dogecoin Core 1.14', driver('dogecoin', { credentials: 'config' }), {
  confirmations: 3,
  amount: 50_000_000_000n,
  opening: 'unavailable',
  scenarios: WITH_EACH,
});

describeFollowScenarios('dash/testnet followed on a fake Dash Core', driver('dash'), {
  confirmations: 2,
  amount: 10_000_000n,
  opening: 'read',
  scenarios: WITH_EACH,
});

describeFollowScenarios('zcash/testnet followed on a fake zcashd, blocks read on the main thread', driver('zcash', { blockWorkers: 0 }), {
  confirmations: 2,
  amount: 10_000_000n,
  opening: 'unavailable',
  scenarios: WITH_EACH,
});

describe("each node was read through its own dialect's RPCs", () => {
  const calls = (dialect: UtxoDialect, method: string) => nodes.get(dialect)?.calls.get(method) ?? 0;

  it('the opening balances came from scantxoutset where the node has it', () => {
    for (const dialect of ['bitcoin', 'bitcoin-cash', 'dash'] as const) expect(calls(dialect, 'scantxoutset'), dialect).toBeGreaterThan(0);
    for (const dialect of ['dogecoin', 'zcash'] as const) expect(calls(dialect, 'scantxoutset'), dialect).toBe(0);
  });

  it("dogecoin's blocks were read as transaction ids plus getrawtransaction (1.14 has no verbosity 2)", () => {
    expect(calls('dogecoin', 'getblock')).toBeGreaterThan(0);
    expect(calls('dogecoin', 'getrawtransaction')).toBeGreaterThan(0);
  });
});

/**
 * The real-node harness itself: the skip/fail policy (test/support/real-node.ts, runs everywhere) and the
 * litecoind regtest node and driver (test/support/litecoin-node.ts) against the real litecoind.
 */
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { validateAddress } from '../src/domain/addresses.ts';
import {
  assertBelowMweb,
  type LitecoinDriver,
  type LitecoinNode,
  type LitecoinPair,
  LitecoinRpcError,
  litecoind,
  MAX_REGTEST_HEIGHT,
  MWEB_ACTIVATION_HEIGHT,
  startLitecoinDriver,
  startLitecoinNode,
  startLitecoinPair,
} from './support/litecoin-node.ts';
import { describeWithRealNode, findBinary, isCi, realNodePolicy, requireRealNode, skipBanner } from './support/real-node.ts';
import { until } from './support/wait.ts';

describe('real-node policy', () => {
  it('runs when the binary is there, fails under CI and skips locally when it is not', () => {
    expect(realNodePolicy(true, { CI: 'true' })).toBe('run');
    expect(realNodePolicy(true, {})).toBe('run');
    expect(realNodePolicy(false, { CI: 'true' })).toBe('fail');
    expect(realNodePolicy(false, { CI: '1' })).toBe('fail');
    expect(realNodePolicy(false, {})).toBe('skip');
    expect(realNodePolicy(false, { CI: 'false' })).toBe('skip');
    expect(realNodePolicy(false, { CI: '' })).toBe('skip');
    expect(isCi({ CI: 'TRUE' })).toBe(true);
    expect(isCi({ CI: '0' })).toBe(false);
  });

  it('finds executables in PATH and reports missing ones', () => {
    const sh = findBinary('sh', 'n/a', '/nonexistent-dir');
    expect(sh.path).toMatch(/\/sh$/); // found in the /usr/bin fallback
    const missing = findBinary('herald-no-such-node-binary', 'install it somehow', process.env.PATH);
    expect(missing).toEqual({ name: 'herald-no-such-node-binary', path: undefined, install: 'install it somehow' });
    expect(findBinary('litecoind').install).toContain('apt-get install -y litecoind');
  });

  it('requireRealNode throws under CI, warns and skips locally, runs when available', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      vi.stubEnv('CI', 'true');
      expect(() => requireRealNode('litecoind', false)).toThrow(/litecoind is not installed: .ci\/run installs it with apt-get install -y litecoind/);
      expect(requireRealNode('litecoind', true)).toBe(true);
      vi.stubEnv('CI', '');
      expect(requireRealNode('litecoind', false)).toBe(false);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]?.[0])).toContain('SKIPPED');
    } finally {
      vi.unstubAllEnvs();
      warn.mockRestore();
    }
  });

  it('the skip banner names the binary, the suite and the number of tests', () => {
    const banner = skipBanner({ name: 'litecoind', install: 'apt-get install -y litecoind' }, 'litecoin follow', 7);
    expect(banner).toContain('litecoind is not installed: apt-get install -y litecoind');
    expect(banner).toContain('SKIPPED "litecoin follow": 7 tests did not run');
  });

  it('the MWEB guard allows reaching height 431 and nothing beyond', () => {
    expect(MAX_REGTEST_HEIGHT).toBe(431);
    expect(() => assertBelowMweb(400, 31)).not.toThrow();
    expect(() => assertBelowMweb(400, 32)).toThrow(/would reach height 432: .*MWEB at height 432/);
    expect(() => assertBelowMweb(0, -1)).toThrow(/cannot mine -1 blocks/);
  });
});

/** getblockcount with these Basic credentials ("user:password"), on a connection closed afterwards (an idle one delays litecoind's shutdown). */
async function post(credentials: string): Promise<{ status: number; body: string }> {
  const response = await request(driver.node.url, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` },
    body: JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'getblockcount', params: [] }),
    reset: true,
  });
  return { status: response.statusCode, body: await response.body.text() };
}

/** The transaction ids of the block at `height`. */
async function txidsOfBlock(height: number): Promise<string[]> {
  const block = await driver.node.rpc<{ tx: string[] }>('getblock', await driver.blockHash(height), 1);
  return block.tx;
}

let driver: LitecoinDriver;

describeWithRealNode('litecoind regtest harness', litecoind, () => {
  beforeAll(async () => {
    driver = await startLitecoinDriver();
  });
  afterAll(async () => {
    const datadir = driver?.node.datadir;
    await driver?.close();
    if (datadir) expect(existsSync(datadir)).toBe(false);
  });

  it('starts a funded regtest node: 101 blocks to the wallet, then the funding block', async () => {
    const info = await driver.node.rpc<{ chain: string; blocks: number }>('getblockchaininfo');
    expect(info.chain).toBe('regtest');
    expect(info.blocks).toBe(102);
    expect(await driver.height()).toBe(102);
    expect(driver.rpcUrl).toBe(`http://127.0.0.1:${driver.node.rpcPort}`);
    expect(driver.chainConfig).toEqual({ chainId: 'regtest', rpcCookieFile: driver.node.cookieFile });
    expect(driver.node.cookieFile).toBe(`${driver.node.datadir}/regtest/.cookie`);
    // 100 coins of 0.49 LTC from the first coinbase, confirmed in block 102.
    expect(driver.fundingLeft).toBe(4_900_000_000n);
    const block = await driver.node.rpc<{ tx: { vout: { value: number }[] }[] }>('getblock', await driver.blockHash(102), 2);
    expect(block.tx[1]?.vout.filter((o) => o.value === 0.49)).toHaveLength(100);
    // No P2P socket: only the RPC port is ours.
    const network = await driver.node.rpc<{ connections: number; localaddresses: unknown[] }>('getnetworkinfo');
    expect(network.connections).toBe(0);
  });

  it('newAddress gives legacy regtest addresses that herald accepts as litecoin testnet', async () => {
    const address = await driver.newAddress();
    expect(address).toMatch(/^[mn][1-9A-HJ-NP-Za-km-z]{25,34}$/);
    expect(validateAddress('litecoin', 'testnet', address)).toEqual({ ok: true, normalized: address });
    // herald's litecoin testnet also takes regtest's bech32 prefix (addressType 'bech32').
    const bech32 = await driver.node.rpc<string>('getnewaddress', '', 'bech32');
    expect(bech32).toMatch(/^rltc1q/);
    expect(validateAddress('litecoin', 'testnet', bech32).ok).toBe(true);
  });

  it('send is pending until mine, then in the mined block with the exact amount', async () => {
    const to = await driver.newAddress();
    const amount = 12_345_678n; // 0.12345678 LTC: every decimal place used
    const txid = await driver.send(to, amount);
    expect(await driver.node.rpc<string[]>('getrawmempool')).toContain(txid);
    expect(await driver.balance(to)).toBe(0n);
    const height = await driver.mine(1);
    expect(await txidsOfBlock(height)).toContain(txid);
    expect(await driver.balance(to)).toBe(amount);
    const tx = await driver.node.rpc<{ vout: { value: number; scriptPubKey: { addresses?: string[] } }[] }>('getrawtransaction', txid, true);
    expect(tx.vout.filter((o) => o.scriptPubKey.addresses?.includes(to)).map((o) => o.value)).toEqual([0.12345678]);
  });

  it('sends more than one funding coin holds by combining coins', async () => {
    const to = await driver.newAddress();
    const before = driver.fundingLeft;
    const txid = await driver.send(to, 150_000_000n); // 1.5 LTC from 0.49 LTC coins
    expect(driver.fundingLeft).toBe(before - 4n * 49_000_000n);
    const tx = await driver.node.rpc<{ vin: unknown[] }>('getrawtransaction', txid, true);
    expect(tx.vin).toHaveLength(4);
    await driver.mine(1);
    expect(await driver.balance(to)).toBe(150_000_000n);
  });

  it('spend pays from an address to another, the change to a new wallet address, and reports the exact fee', async () => {
    const from = await driver.newAddress();
    const to = await driver.newAddress();
    await driver.send(from, 30_000_000n);
    await driver.send(from, 20_000_000n); // two outputs at `from`, one still pending: both are spent
    const { transactionId, fee } = await driver.spend(from, to, 25_000_000n);
    expect(fee).toBeGreaterThan(0n);
    expect(fee).toBeLessThan(100_000n);
    const height = await driver.mine(1);
    expect(await txidsOfBlock(height)).toContain(transactionId);
    expect(await driver.balance(from)).toBe(0n);
    expect(await driver.balance(to)).toBe(25_000_000n);
    const tx = await driver.node.rpc<{ vin: unknown[]; vout: { value: number; scriptPubKey: { addresses?: string[] } }[] }>(
      'getrawtransaction',
      transactionId,
      true,
    );
    expect(tx.vin).toHaveLength(2);
    const change = tx.vout.find((o) => !o.scriptPubKey.addresses?.includes(to));
    const changeAddress = change?.scriptPubKey.addresses?.[0] as string;
    expect(changeAddress).not.toBe(from);
    expect((await driver.node.rpc<{ ismine: boolean }>('getaddressinfo', changeAddress)).ismine).toBe(true);
    expect(await driver.balance(changeAddress)).toBe(50_000_000n - 25_000_000n - fee);
  });

  it('reorg replaces the top blocks and mines the dropped blocks’ transactions again, except those dropped', async () => {
    const keepTo = await driver.newAddress();
    const dropTo = await driver.newAddress();
    const kept = await driver.send(keepTo, 1_000_000n);
    const dropped = await driver.send(dropTo, 2_000_000n);
    const top = await driver.mine(2);
    expect(await txidsOfBlock(top - 1)).toEqual(expect.arrayContaining([kept, dropped]));
    const oldHashes = [await driver.blockHash(top - 1), await driver.blockHash(top)];
    const forkHash = await driver.blockHash(top - 2);

    const newTop = await driver.reorg(2, { drop: [dropped] });
    expect(newTop).toBe(top + 1);
    expect(await driver.blockHash(top - 2)).toBe(forkHash);
    const newHashes = [await driver.blockHash(top - 1), await driver.blockHash(top)];
    expect(newHashes[0]).not.toBe(oldHashes[0]);
    expect(newHashes[1]).not.toBe(oldHashes[1]);
    const newBlocks = [await txidsOfBlock(top - 1), await txidsOfBlock(top), await txidsOfBlock(top + 1)];
    expect(newBlocks[0]).toContain(kept);
    expect(newBlocks.flat()).not.toContain(dropped);
    expect(await driver.balance(keepTo)).toBe(1_000_000n);
    expect(await driver.balance(dropTo)).toBe(0n);

    // The dropped transaction stays pending and later blocks leave it out; other pending ones are mined.
    expect(await driver.node.rpc<string[]>('getrawmempool')).toContain(dropped);
    const later = await driver.send(keepTo, 3_000_000n);
    const next = await driver.mine(1);
    expect(await txidsOfBlock(next)).toContain(later);
    expect(await txidsOfBlock(next)).not.toContain(dropped);
    expect(driver.excluded.has(dropped)).toBe(true);
    expect(await driver.balance(dropTo)).toBe(0n);
  });

  it('reorg refuses to drop a transaction below the reorganised blocks, before touching the chain', async () => {
    const txid = await driver.send(await driver.newAddress(), 1_000_000n);
    await driver.mine(2);
    const tip = await driver.height();
    const tipHash = await driver.blockHash(tip);
    await expect(driver.reorg(1, { drop: [txid] })).rejects.toThrow(/below the reorganisation/);
    expect(await driver.height()).toBe(tip);
    expect(await driver.blockHash(tip)).toBe(tipHash);
  });

  it('mine refuses to pass height 431 (MWEB activation) and mines nothing', async () => {
    const tip = await driver.height();
    await expect(driver.mine(MAX_REGTEST_HEIGHT - tip + 1)).rejects.toThrow(`would reach height ${MWEB_ACTIVATION_HEIGHT}`);
    await expect(driver.node.mine(MAX_REGTEST_HEIGHT - tip + 1)).rejects.toThrow(/MWEB/);
    expect(await driver.height()).toBe(tip);
  });

  it('cookie authentication: the cookie works, wrong credentials get 401', async () => {
    const cookie = readFileSync(driver.node.cookieFile as string, 'utf8').trim();
    expect(cookie).toMatch(/^__cookie__:[0-9a-f]{64}$/);
    const ok = await post(cookie);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ result: await driver.height(), error: null });
    expect((await post('__cookie__:wrong')).status).toBe(401);
  });

  it('an RPC error is a LitecoinRpcError with the node’s code', async () => {
    const error = await driver.node.rpc('getblockhash', 100_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LitecoinRpcError);
    expect(error).toMatchObject({ code: -8, method: 'getblockhash' });
  });

  it('down refuses connections, up brings back the same chain, mempool and wallet on the same port', async () => {
    const pendingTo = await driver.newAddress();
    const pending = await driver.send(pendingTo, 4_000_000n);
    const tip = await driver.height();
    const tipHash = await driver.blockHash(tip);
    const oldCookie = driver.node.credentials;
    await driver.down();
    expect(driver.node.running).toBe(false);
    await expect(driver.height()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await driver.up();
    expect(await driver.height()).toBe(tip);
    expect(await driver.blockHash(tip)).toBe(tipHash);
    expect(driver.node.credentials.password).not.toBe(oldCookie.password); // a new cookie at each start
    expect(await driver.node.rpc<string[]>('getrawmempool')).toContain(pending);
    const height = await driver.mine(1);
    expect(await txidsOfBlock(height)).toContain(pending);
    expect(await driver.balance(pendingTo)).toBe(4_000_000n);
    // The wallet is loaded again: sends still work.
    await driver.send(pendingTo, 1_000_000n);
  });

  it('a litecoind that cannot start is a clear error with its output', async () => {
    await expect(startLitecoinNode({ args: ['-herald-no-such-option'] })).rejects.toThrow(
      /litecoind exited \(code 1\) while starting:\s+Error: Error parsing command line arguments: Invalid parameter -herald-no-such-option/,
    );
  });

  it('user/password authentication (-rpcuser/-rpcpassword), and back to the cookie', async () => {
    const tip = await driver.height();
    await driver.node.restart({ rpcAuth: { user: 'herald', password: 'p4ss:word' } });
    expect(driver.node.cookieFile).toBeUndefined();
    expect(driver.chainConfig).toEqual({ chainId: 'regtest', rpcUser: 'herald', rpcPassword: 'p4ss:word' });
    expect(await driver.height()).toBe(tip);
    expect((await post('herald:p4ss:word')).status).toBe(200);
    expect((await post('herald:wrong')).status).toBe(401);
    await driver.node.restart({ rpcAuth: 'cookie' });
    expect(driver.chainConfig).toEqual({ chainId: 'regtest', rpcCookieFile: driver.node.cookieFile });
    expect(await driver.height()).toBe(tip);
  });
});

describeWithRealNode('two litecoind regtest nodes of one chain, peered over loopback', litecoind, () => {
  let pair: LitecoinPair;
  beforeAll(async () => {
    pair = await startLitecoinPair();
  }, 60_000);
  afterAll(async () => {
    const dirs = [pair?.a.datadir, pair?.b.datadir];
    await pair?.close();
    for (const dir of dirs) if (dir) expect(existsSync(dir)).toBe(false);
  });

  /** Where `hash` stands on `node`'s chain: confirmations -1 when it is off the best chain. */
  const confirmations = async (node: LitecoinNode, hash: string) => (await node.rpc<{ confirmations: number }>('getblockheader', hash)).confirmations;

  it('starts b with the initial blocks and a synced to them over a -connect to b; one user and password for both', async () => {
    expect(await pair.synced()).toEqual({ height: 101, hash: await pair.b.rpc<string>('getblockhash', 101) });
    expect(await pair.connected()).toBe(true);
    const [atA] = await pair.a.rpc<{ addr: string; inbound: boolean }[]>('getpeerinfo');
    expect(atA).toMatchObject({ addr: `127.0.0.1:${pair.p2pPort}`, inbound: false });
    const [atB] = await pair.b.rpc<{ inbound: boolean }[]>('getpeerinfo');
    expect(atB?.inbound).toBe(true);
    expect(pair.a.rpcAuth).toEqual(pair.b.rpcAuth);
    expect(pair.a.rpcAuth).not.toBe('cookie');
    // A block mined on either reaches the other.
    await pair.a.mine(1);
    expect((await pair.synced()).height).toBe(102);
    await pair.b.mine(1);
    expect((await pair.synced()).height).toBe(103);
  });

  it('a stopped node comes back on its data directory and catches up with what the other mined meanwhile', async () => {
    const before = await pair.synced();
    await pair.a.stop();
    expect(pair.a.running).toBe(false);
    await pair.b.mine(2);
    await pair.a.start();
    expect(await pair.synced()).toEqual({ height: before.height + 2, hash: await pair.b.rpc<string>('getbestblockhash') });

    await pair.b.stop();
    await pair.a.mine(1);
    await pair.b.start();
    await pair.reconnect(); // a's -connect retries have backed off meanwhile
    expect((await pair.synced()).height).toBe(before.height + 3);
  });

  it('disconnected, a falls behind; reconnected, it catches up', async () => {
    const before = await pair.synced();
    await pair.disconnect();
    expect(await pair.connected()).toBe(false);
    await pair.b.mine(5);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await pair.tip(pair.a)).toEqual(before); // nothing reaches a
    expect((await pair.tip(pair.b)).height).toBe(before.height + 5);
    await pair.reconnect();
    expect(await pair.synced()).toEqual(await pair.tip(pair.b));
  });

  it('a fork made while disconnected resolves to the branch with more work on both nodes', async () => {
    const before = await pair.synced();
    // A transaction both mempools hold, mined on a's branch only.
    const txid = await pair.b.rpc<string>('sendtoaddress', await pair.a.rpc<string>('getnewaddress'), 1);
    await until('the transaction to reach a', async () => (await pair.a.rpc<string[]>('getrawmempool')).includes(txid));
    await pair.disconnect();
    await pair.a.mine(1);
    const orphan = await pair.a.rpc<string>('getbestblockhash');
    expect((await pair.a.rpc<{ tx: string[] }>('getblock', orphan)).tx).toContain(txid);
    await pair.mineEmpty(pair.b, 3);
    const heavier = await pair.tip(pair.b);
    expect(heavier.height).toBe(before.height + 3);
    expect(await pair.b.rpc<string[]>('getrawmempool')).toContain(txid);
    expect(await pair.tip(pair.a)).toEqual({ height: before.height + 1, hash: orphan });

    await pair.reconnect();
    expect(await pair.synced()).toEqual(heavier);
    expect(await confirmations(pair.a, orphan)).toBe(-1);
    // b learnt a's branch (its header at least) and keeps it off its best chain.
    await until('b to know the orphaned block', async () => (await confirmations(pair.b, orphan).catch(() => 0)) === -1);
    // The orphaned block's transaction is pending again on a, and mined by the next block.
    expect(await pair.a.rpc<string[]>('getrawmempool')).toContain(txid);
    await pair.b.mine(1);
    const tip = await pair.synced();
    expect((await pair.a.rpc<{ blockhash: string }>('getrawtransaction', txid, true)).blockhash).toBe(tip.hash);
  });

  it('mineEmpty refuses to pass the MWEB height like mine()', async () => {
    const height = await pair.b.height();
    await expect(pair.mineEmpty(pair.b, MAX_REGTEST_HEIGHT - height + 1)).rejects.toThrow(/MWEB/);
    expect(await pair.b.height()).toBe(height);
  });
});

/**
 * The fake Bitcoin-family nodes against what real nodes print: key sets of blocks, transactions, inputs,
 * outputs and scripts compared with the recorded fixtures of each chain (test/fixtures), amounts as
 * Core writes them, ids that are the double SHA-256 of the printed bytes, HTTP and JSON-RPC behaviour
 * (auth, batches, error statuses), each dialect's own limits, growth, reorganisations, the Omni layer,
 * and the service's normaliser reading the fake's blocks.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type KnownPrevout, normalizeUtxoBlock, prevoutKey, prevoutsNeeded } from '../../src/chains/utxo/normalize.ts';
import type { RpcBlock, RpcTransaction } from '../../src/chains/utxo/rpc-types.ts';
import { validateAddress } from '../../src/domain/addresses.ts';
import { descriptorChecksum, fromHex, sha256d, toHex } from './fake-utxo/encoding.ts';
import { coinText } from './fake-utxo/json-text.ts';
import { type FakeUtxoNode, startFakeUtxoDriver, startFakeUtxoNode, type UtxoDialect } from './fake-utxo-node.ts';

const FIXTURES = path.resolve(process.cwd(), 'test/fixtures');
// biome-ignore lint/suspicious/noExplicitAny: recorded node output
const fixture = (file: string): any => JSON.parse(readFileSync(path.join(FIXTURES, file), 'utf8'));
const keys = (o: unknown) => Object.keys(o as object).sort();
const union = (a: string[], extra: string[]) => [...new Set([...a, ...extra])].sort();
const without = (a: string[], drop: string[]) => a.filter((k) => !drop.includes(k)).sort();

const started: FakeUtxoNode[] = [];
afterAll(async () => {
  await Promise.all(started.map((n) => n.close()));
});

async function start(dialect: UtxoDialect, options: Parameters<typeof startFakeUtxoNode>[1] = {}): Promise<FakeUtxoNode> {
  const node = await startFakeUtxoNode(dialect, { initialBlocks: 5, ...options });
  started.push(node);
  return node;
}

interface Reply {
  status: number;
  text: string;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: JSON of the node under test
  body: any;
}

async function post(node: FakeUtxoNode, payload: unknown, auth: string | null = `${node.user}:${node.password}`): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'text/plain' };
  if (auth !== null) headers.authorization = `Basic ${Buffer.from(auth).toString('base64')}`;
  const res = await fetch(node.url, { method: 'POST', headers, body: typeof payload === 'string' ? payload : JSON.stringify(payload) });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, text, headers: res.headers, body };
}

// biome-ignore lint/suspicious/noExplicitAny: JSON of the node under test
async function call(node: FakeUtxoNode, method: string, params: unknown[] = []): Promise<any> {
  const r = await post(node, { jsonrpc: '1.0', id: 'test', method, params });
  if (r.body?.error) throw new Error(`${method}: ${r.body.error.code} ${r.body.error.message}`);
  expect(r.status).toBe(200);
  return r.body.result;
}

/** A block with a payment from the faucet to A and a spend from A to B; returns the ids. */
async function paymentBlock(node: FakeUtxoNode, amount = 29_000_000n) {
  const a = node.newAddress();
  const b = node.newAddress();
  const fund = node.send(a, amount);
  node.mine(1);
  const spend = node.spend(a, b, 10_000_000n);
  const [hash] = node.mine(1);
  return { a, b, fund, spend, hash: hash as string };
}

describe('wire format against the recorded fixtures', () => {
  it('bitcoin (Core 30): block of verbosity 1 as the newest recorded Core block, transactions as Core 22+ prints them, plus desc', async () => {
    const node = await start('bitcoin');
    const { hash } = await paymentBlock(node);
    const v1 = await call(node, 'getblock', [hash, 1]);
    const recent = fixture('bitcoin/mainnet/electrumx/bitcoin_mainnet_951658.json');
    expect(keys(v1)).toEqual(without(keys(recent), ['block', 'nextblockhash']));
    expect(keys(v1.coinbase_tx)).toEqual(keys(recent.coinbase_tx));

    const v2 = await call(node, 'getblock', [hash, 2]);
    const ref = fixture('bitcoin/mainnet/vivita/getblock_2_height766390_000000000000000000042a94.json');
    const refTxs = ref.tx as Record<string, unknown>[];
    const [coinbase, spend] = v2.tx;
    expect(keys(coinbase)).toEqual(keys(refTxs[0]));
    expect(keys(spend)).toEqual(keys(refTxs.find((t) => 'fee' in t)));
    const refVins = refTxs.flatMap((t) => t.vin as object[]);
    expect(keys(coinbase.vin[0])).toEqual(keys(refVins[0]));
    expect(keys(spend.vin[0])).toEqual(keys(refVins.find((v) => 'txid' in v && 'txinwitness' in v)));
    expect(keys(spend.vout[0])).toEqual(keys(ref.tx[0].vout[0]));
    const refSpk = (type: string) =>
      refTxs.flatMap((t) => (t.vout as { scriptPubKey: { type: string } }[]).map((o) => o.scriptPubKey)).find((s) => s.type === type);
    // Core >= 23 adds `desc` to every scriptPubKey (the recorded block is from Core 22).
    expect(keys(spend.vout[0].scriptPubKey)).toEqual(union(keys(refSpk('witness_v0_keyhash')), ['desc']));
    expect(keys(coinbase.vout[1].scriptPubKey)).toEqual(union(keys(refSpk('nulldata')), ['desc']));
    expect(spend.vout[0].scriptPubKey.desc).toMatch(/^addr\(tb1q[a-z0-9]+\)#[a-z0-9]{8}$/);
  });

  it('omni (Omni Core 0.12 on Core 0.20): addresses[] and reqSigs, no fee, as the recorded pre-22 Core blocks', async () => {
    const node = await start('omni');
    const { hash } = await paymentBlock(node);
    const v2 = await call(node, 'getblock', [hash, 2]);
    const ref = fixture('bitcoin/mainnet/bitcoin-etl/getblock_2_height50001_000000001c920d49.json');
    expect(keys(v2)).toEqual(without(keys(ref), ['nextblockhash']));
    // Core 0.19+ prints `weight` per transaction; the recorded dump predates it.
    expect(keys(v2.tx[1])).toEqual(union(keys(ref.tx[1]), ['weight']));
    expect(keys(v2.tx[1].vout[0])).toEqual(keys(ref.tx[1].vout[0]));
    expect(keys(v2.tx[1].vout[0].scriptPubKey)).toEqual(keys(ref.tx[1].vout[0].scriptPubKey));
    expect(v2.tx[1].fee).toBeUndefined();
    // verbosity 3 did not exist in Core 0.20: it prints the transactions as verbosity 2, without prevouts.
    const v3 = await call(node, 'getblock', [hash, 3]);
    expect(v3.tx[1].vin[0].prevout).toBeUndefined();
  });

  it('bitcoin-cash (BCHN 29): cashaddr addresses[], the recorded getrawtransaction fields, nTx and ablastate', async () => {
    const node = await start('bitcoin-cash');
    const { hash, spend, b } = await paymentBlock(node);
    const v1 = await call(node, 'getblock', [hash, 1]);
    expect(keys(v1)).toEqual(
      union(without(keys(fixture('bitcoin-cash/mainnet/bitcoin-etl/getblock_true_height91722_00000000000271a2.json')), ['nextblockhash']), [
        'nTx',
        'ablastate',
      ]),
    );
    const raw = await call(node, 'getrawtransaction', [spend.txid, true]);
    const ref = fixture('bitcoin-cash/mainnet/bitcoin-etl/getrawtransaction_true_e3bf3d07.json');
    expect(keys(raw)).toEqual(keys(ref));
    expect(keys(raw.vout[0])).toEqual(keys(ref.vout[0]));
    expect(keys(raw.vout[0].scriptPubKey)).toEqual(keys(ref.vout[0].scriptPubKey));
    expect(raw.vout[0].scriptPubKey.addresses).toEqual([b]);
    expect(b).toMatch(/^bchtest:q[a-z0-9]{41}$/);
  });

  it('dogecoin (1.14): getblock <hash> true as the recorded blocks (no auxpow: the fake does not merge-mine), getrawtransaction with 1.14 fields', async () => {
    const node = await start('dogecoin');
    const { hash, spend } = await paymentBlock(node);
    const block = await call(node, 'getblock', [hash, true]);
    const ref = fixture('dogecoin/mainnet/vivita/getblock_1_height4505707_8aeed8122f97284e.json');
    expect(keys(block)).toEqual(without(keys(ref), ['auxpow', 'nextblockhash']));
    expect(block.tx).toEqual(expect.arrayContaining([spend.txid]));
    const raw = await call(node, 'getrawtransaction', [spend.txid, 1]);
    const refTx = fixture('dogecoin/mainnet/bitcoin-etl/getrawtransaction_true_3b14b76d.json');
    // The recorded one is from 1.10 (before hash/size/vsize were printed).
    expect(keys(raw)).toEqual(union(keys(refTx), ['hash', 'size', 'vsize']));
    expect(keys(raw.vout[0].scriptPubKey)).toEqual(keys(refTx.vout[0].scriptPubKey));
    expect(Object.keys(raw)[0]).toBe('hex');
  });

  it('zcash: blocks, transparent and shielded transactions, valuePools as the recorded zcashd blocks', async () => {
    const node = await start('zcash');
    const { a, hash } = await paymentBlock(node);
    const ref = fixture('zcash/mainnet/bitcoin-etl/getblock_2_height462085_00000000010678b8.json');
    const v2 = await call(node, 'getblock', [hash, 2]);
    expect(keys(v2)).toEqual(without(keys(ref), ['nextblockhash']));
    expect(keys(v2.valuePools[1])).toEqual(keys(ref.valuePools[1]));
    const refTxs = ref.tx as Record<string, unknown>[];
    const plain = refTxs.find((t) => !('bindingSig' in t));
    const shieldedRef = refTxs.find((t) => 'bindingSig' in t) as Record<string, unknown[]>;
    expect(keys(v2.tx[0])).toEqual(keys(plain));
    expect(keys(v2.tx[1])).toEqual(keys(plain));
    expect(keys(v2.tx[1].vin[0])).toEqual(keys(refTxs.flatMap((t) => t.vin as object[]).find((v) => 'txid' in v)));
    expect(keys(v2.tx[1].vout[0])).toEqual(keys(ref.tx[0].vout[0]));
    expect(keys(v2.tx[1].vout[0].scriptPubKey)).toEqual(keys(ref.tx[0].vout[0].scriptPubKey));

    node.send(a, 50_000_000n);
    node.mine(1);
    const shield = node.shield(a, 20_000_000n);
    const unshield = node.unshield(node.newAddress(), 5_000_000n);
    const [shieldedHash] = node.mine(1);
    const sv = await call(node, 'getblock', [shieldedHash, 2]);
    const [shieldTx, unshieldTx] = [shield, unshield].map((id) => sv.tx.find((t: { txid: string }) => t.txid === id));
    expect(keys(shieldTx)).toEqual(keys(shieldedRef));
    expect(keys(shieldTx.vShieldedOutput[0])).toEqual(keys(shieldedRef.vShieldedOutput?.[0]));
    expect(keys(unshieldTx.vShieldedSpend[0])).toEqual(keys(shieldedRef.vShieldedSpend?.[0]));
    expect(shieldTx.valueBalance).toBe(-0.2);
    expect(unshieldTx.vin).toEqual([]);
    expect(sv.valuePools[1].valueDeltaZat).toBe(20_000_000 - 5_000_000 - 10_000);
  });

  it('dash: valueSat next to value, the coinbase a special transaction (type 5, extraPayload, cbTx), others type 0', async () => {
    const node = await start('dash');
    const { hash, spend } = await paymentBlock(node);
    const v2 = await call(node, 'getblock', [hash, 2]);
    expect(v2.cbTx).toEqual(v2.tx[0].cbTx);
    expect(v2.tx[0]).toMatchObject({ version: 3, type: 5, extraPayloadSize: 70, extraPayload: expect.stringMatching(/^0200/) });
    expect(v2.tx[0].cbTx).toMatchObject({ version: 2, height: v2.height });
    const tx = v2.tx.find((t: { txid: string }) => t.txid === spend.txid);
    expect(tx).toMatchObject({ type: 0, instantlock: true, instantlock_internal: false });
    expect(tx.extraPayload).toBeUndefined();
    for (const o of tx.vout) expect(BigInt(o.valueSat)).toBe(BigInt(Math.round(o.value * 1e8)));
    expect(keys(tx.vout[0].scriptPubKey)).toEqual(['addresses', 'asm', 'hex', 'reqSigs', 'type']);
    // The special transaction is serialised as Dash does: version 3 | type 5 << 16, then extraPayload.
    expect(v2.tx[0].hex.slice(0, 8)).toBe('03000500');
    expect(v2.tx[0].hex.endsWith(v2.tx[0].extraPayload)).toBe(true);
  });
});

describe('identities, amounts and addresses', () => {
  it('txids, wtxids and block hashes are the double SHA-256 of the printed bytes; merkle roots and links hold', async () => {
    const node = await start('bitcoin');
    const { hash, spend } = await paymentBlock(node);
    const block = await call(node, 'getblock', [hash, 2]);
    for (const tx of block.tx) expect(toHex(sha256d(fromHex(tx.hex)).reverse())).toBe(tx.hash);
    const legacyHex = await call(node, 'getrawtransaction', [spend.txid, false]);
    expect(legacyHex).toBe(block.tx[1].hex);
    const header = await call(node, 'getblockheader', [hash, false]);
    expect(header).toHaveLength(160);
    expect(toHex(sha256d(fromHex(header)).reverse())).toBe(hash);
    expect(header.slice(8, 72)).toBe(toHex(fromHex(block.previousblockhash).reverse()));
    expect((await call(node, 'getblock', [hash, 0])).startsWith(header)).toBe(true);
    const previous = await call(node, 'getblock', [block.previousblockhash, 1]);
    expect(previous.nextblockhash).toBe(hash);
    expect(block.nextblockhash).toBeUndefined();
    expect(block.tx[1].txid).not.toBe(block.tx[1].hash); // a segwit spend
  });

  it('amounts are written as Core writes them: eight decimals, no float drift', async () => {
    expect(coinText(29_000_000n)).toBe('0.29000000');
    expect(coinText(1n)).toBe('0.00000001');
    expect(coinText(2_099_999_997_690_000n)).toBe('20999999.97690000');
    const node = await start('bitcoin');
    const a = node.newAddress();
    const txid = node.send(a, 29_000_000n);
    node.mine(1);
    const r = await post(node, { id: 1, method: 'getrawtransaction', params: [txid, true] });
    expect(r.text).toContain('"value":0.29000000,"n":0');
    expect(r.text.endsWith('}\n')).toBe(true);
  });

  it('descriptor checksums follow BIP-380', () => {
    expect(descriptorChecksum('raw(deadbeef)')).toBe('89f8spxm');
  });

  it.each(['bitcoin', 'bitcoin-cash', 'dogecoin', 'dash', 'zcash', 'omni'] as const)(
    '%s addresses pass herald validation on testnet and mainnet',
    async (dialect) => {
      for (const network of ['testnet', 'mainnet'] as const) {
        const node = await start(dialect, { network, initialBlocks: 1 });
        const blockchain = node.params.blockchain;
        for (const address of [node.newAddress(), node.newAddress('p2pkh')]) {
          const v = validateAddress(blockchain, network, address);
          expect(v, address).toEqual({ ok: true, normalized: address });
        }
        await node.close();
      }
    },
  );
});

describe('HTTP and JSON-RPC as Bitcoin Core serves them', () => {
  it('asks for HTTP Basic auth: 401 with WWW-Authenticate without or with wrong credentials, 405 for GET', async () => {
    const node = await start('bitcoin');
    const none = await post(node, { id: 1, method: 'getblockcount' }, null);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Basic realm="jsonrpc"');
    expect(none.text).toBe('');
    expect((await post(node, { id: 1, method: 'getblockcount' }, `${node.user}:wrong`)).status).toBe(401);
    const get = await fetch(node.url, { headers: { authorization: `Basic ${Buffer.from(`${node.user}:${node.password}`).toString('base64')}` } });
    expect(get.status).toBe(405);
    await get.text();
    const ok = await post(node, { id: 7, method: 'getblockcount' });
    expect(ok.status).toBe(200);
    expect(ok.text).toBe(`{"result":${node.height()},"error":null,"id":7}\n`);
    // The URL with credentials is what herald is given.
    expect(new URL(node.urlWithCredentials).username).toBe(node.user);
  });

  it('errors: 404 for an unknown method, 500 for other RPC errors and parse errors, 400 for an invalid request; batches answer 200 with one reply each', async () => {
    const node = await start('bitcoin');
    const unknown = await post(node, { jsonrpc: '1.0', id: 1, method: 'nosuchmethod', params: [] });
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe('{"result":null,"error":{"code":-32601,"message":"Method not found"},"id":1}\n');
    const missing = await post(node, { id: 2, method: 'getblock', params: ['00'.repeat(32)] });
    expect(missing.status).toBe(500);
    expect(missing.body).toEqual({ result: null, error: { code: -5, message: 'Block not found' }, id: 2 });
    const badHash = await post(node, { id: 3, method: 'getblock', params: ['xyz'] });
    expect(badHash.body.error).toEqual({ code: -8, message: "blockhash must be of length 64 (not 3, for 'xyz')" });
    const parse = await post(node, '{"id":');
    expect(parse.status).toBe(500);
    expect(parse.body.error.code).toBe(-32700);
    const invalid = await post(node, { id: 4, method: 5 });
    expect(invalid.status).toBe(400);
    const range = await post(node, { id: 5, method: 'getblockhash', params: [node.height() + 1] });
    expect(range.body.error).toEqual({ code: -8, message: 'Block height out of range' });
    const wrongType = await post(node, { id: 6, method: 'getblockhash', params: ['1'] });
    expect(wrongType.body.error.code).toBe(-3);

    const batch = await post(node, [
      { id: 'a', method: 'getblockcount' },
      { id: 'b', method: 'nosuchmethod' },
      { id: 'c', method: 'getblockhash', params: [0] },
    ]);
    expect(batch.status).toBe(200);
    expect(batch.body).toEqual([
      { result: node.height(), error: null, id: 'a' },
      { result: null, error: { code: -32601, message: 'Method not found' }, id: 'b' },
      { result: node.blockHash(0), error: null, id: 'c' },
    ]);
    const named = await post(node, { id: 8, method: 'getblockhash', params: { height: 1 } });
    expect(named.body.result).toBe(node.blockHash(1));
  });

  it('Core 30 answers "jsonrpc":"2.0" requests in JSON-RPC 2.0 (200 even for errors); Omni Core (0.20) does not', async () => {
    const core = await start('bitcoin');
    const v2 = await post(core, { jsonrpc: '2.0', id: 1, method: 'nosuchmethod' });
    expect(v2.status).toBe(200);
    expect(v2.body).toEqual({ jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: 1 });
    const notification = await post(core, { jsonrpc: '2.0', method: 'getblockcount' });
    expect(notification.status).toBe(204);
    const omni = await start('omni');
    const legacy = await post(omni, { jsonrpc: '2.0', id: 1, method: 'nosuchmethod' });
    expect(legacy.status).toBe(404);
    expect(legacy.body).toEqual({ result: null, error: { code: -32601, message: 'Method not found' }, id: 1 });
  });

  it('down() refuses connections until up()', async () => {
    const node = await start('dash');
    await node.down();
    await expect(post(node, { id: 1, method: 'getblockcount' })).rejects.toThrow();
    node.mine(1);
    await node.up();
    expect(await call(node, 'getblockcount')).toBe(node.height());
  });
});

describe('each node its own limits', () => {
  it('dogecoin 1.14: getblock takes a boolean only, getrawtransaction no blockhash, and there is no scantxoutset', async () => {
    const node = await start('dogecoin');
    const hash = node.blockHash(1);
    const two = await post(node, { id: 1, method: 'getblock', params: [hash, 2] });
    expect(two.status).toBe(500);
    expect(two.body.error).toEqual({ code: -1, message: 'JSON value is not a boolean as expected' });
    expect(await call(node, 'getblock', [hash, false])).toMatch(/^[0-9a-f]+$/);
    const txid = (await call(node, 'getblock', [hash])).tx[0];
    const third = await post(node, { id: 2, method: 'getrawtransaction', params: [txid, true, hash] });
    expect(third.body.error.code).toBe(-1);
    expect(third.body.error.message).toMatch(/^getrawtransaction "txid" \( verbose \)/);
    const scan = await post(node, { id: 3, method: 'scantxoutset', params: ['start', []] });
    expect(scan.status).toBe(404);
    expect(scan.body.error.code).toBe(-32601);
    // As with -txindex=1, any transaction is found without its block.
    expect((await call(node, 'getrawtransaction', [txid, true])).blockhash).toBe(hash);
  });

  it('zcash: verbosity above 2 is an error, no scantxoutset, a height is accepted for the block', async () => {
    const node = await start('zcash');
    const three = await post(node, { id: 1, method: 'getblock', params: [node.blockHash(1), 3] });
    expect(three.body.error).toEqual({ code: -8, message: 'Verbosity must be in range from 0 to 2' });
    expect((await post(node, { id: 2, method: 'scantxoutset', params: ['start', []] })).status).toBe(404);
    expect((await call(node, 'getblock', ['2', 1])).hash).toBe(node.blockHash(2));
  });

  it('bitcoin: verbosity 3 gives each input its prevout (generated, height, value, scriptPubKey)', async () => {
    const node = await start('bitcoin');
    const { hash, spend, a } = await paymentBlock(node);
    const block = await call(node, 'getblock', [hash, 3]);
    const tx = block.tx.find((t: { txid: string }) => t.txid === spend.txid);
    expect(keys(tx.vin[0].prevout)).toEqual(['generated', 'height', 'scriptPubKey', 'value']);
    expect(tx.vin[0].prevout).toMatchObject({ generated: false, height: block.height - 1, value: 0.29, scriptPubKey: { address: a } });
    expect(tx.fee).toBe(Number(spend.fee) / 1e8);
    expect(block.tx[0].vin[0].prevout).toBeUndefined();
  });

  it('bitcoin-cash: verbosity 3 prevouts carry one cashaddr `address`', async () => {
    const node = await start('bitcoin-cash');
    const { hash, spend, a } = await paymentBlock(node);
    const block = await call(node, 'getblock', [hash, 3]);
    const tx = block.tx.find((t: { txid: string }) => t.txid === spend.txid);
    expect(tx.vin[0].prevout).toMatchObject({ generated: false, value: 0.29, scriptPubKey: { type: 'pubkeyhash', address: a } });
    expect(keys(tx.vin[0].prevout.scriptPubKey)).toEqual(['address', 'asm', 'hex', 'type']);
  });

  it.each(['bitcoin', 'bitcoin-cash', 'dash', 'omni'] as const)('%s: scantxoutset finds the unspent outputs of an address at the tip', async (dialect) => {
    const node = await start(dialect);
    const a = node.newAddress();
    node.send(a, 1_000_000n);
    node.send(a, 2_000_000n);
    node.mine(1);
    node.send(a, 4_000_000n); // pending: not in the UTXO set
    const result = await call(node, 'scantxoutset', ['start', [`addr(${a})`, { desc: 'raw(6a)' }]]);
    expect(result).toMatchObject({ success: true, height: node.height(), bestblock: node.blockHash(node.height()), total_amount: 0.03 });
    expect(result.unspents.map((u: { amount: number }) => u.amount).sort()).toEqual([0.01, 0.02]);
    const unspent = result.unspents[0];
    const expected = ['amount', 'desc', 'height', 'scriptPubKey', 'txid', 'vout'];
    expect(keys(unspent)).toEqual(dialect === 'bitcoin' || dialect === 'bitcoin-cash' ? union(expected, ['blockhash', 'coinbase', 'confirmations']) : expected);
    expect(unspent.desc).toMatch(new RegExp(`^addr\\(${a.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\)#[a-z0-9]{8}$`));
    const bad = await post(node, { id: 1, method: 'scantxoutset', params: ['start', [`addr(${a})#00000000`]] });
    expect(bad.body.error.code).toBe(-5);
  });
});

describe('chain growth and reorganisations', () => {
  it('grows block by block with parent links; confirmations count', async () => {
    const node = await start('bitcoin-cash');
    const start0 = node.height();
    node.mine(3);
    expect(await call(node, 'getblockcount')).toBe(start0 + 3);
    expect(await call(node, 'getbestblockhash')).toBe(node.blockHash(start0 + 3));
    for (let h = 1; h <= start0 + 3; h++) {
      const header = await call(node, 'getblockheader', [node.blockHash(h)]);
      expect(header.previousblockhash).toBe(node.blockHash(h - 1));
      expect(header.confirmations).toBe(start0 + 3 - h + 1);
    }
    expect((await call(node, 'getblockheader', [node.blockHash(0)])).previousblockhash).toBeUndefined();
    const info = await call(node, 'getblockchaininfo');
    expect(info).toMatchObject({ chain: 'test', blocks: start0 + 3, bestblockhash: node.blockHash(start0 + 3) });
  });

  it('reorg(depth) replaces the last blocks with depth + 1 new ones: old ones get confirmations -1, their transactions are mined again unless dropped', async () => {
    const node = await start('bitcoin');
    const a = node.newAddress();
    const kept = node.send(a, 1_000_000n);
    const dropped = node.send(node.newAddress(), 2_000_000n);
    node.mine(1);
    node.mine(1);
    const before = node.height();
    const oldHashes = [node.blockHash(before - 1), node.blockHash(before)];
    node.reorg(2, { drop: [dropped] });
    expect(node.height()).toBe(before + 1);
    for (const old of oldHashes) {
      const stale = await call(node, 'getblock', [old, 1]);
      expect(stale.confirmations).toBe(-1);
      expect(stale.nextblockhash).toBeUndefined();
      expect(node.blockHash(stale.height)).not.toBe(old);
    }
    const again = await call(node, 'getrawtransaction', [kept, true]);
    expect(again.blockhash).toBe(node.blockHash(before - 1));
    expect(again.confirmations).toBe(3);
    // A dropped transaction is still in the transaction index, pointing at its stale block (as Core's txindex does).
    const gone = await call(node, 'getrawtransaction', [dropped, true]);
    expect(gone).toMatchObject({ blockhash: oldHashes[0], confirmations: 0 });
    expect(gone.time).toBeUndefined();
    const inStale = await call(node, 'getrawtransaction', [dropped, true, oldHashes[0]]);
    expect(inStale.in_active_chain).toBe(false);
    expect(node.balance(a)).toBe(1_000_000n);
    await expect(call(node, 'getblock', [oldHashes[1], 3])).resolves.toMatchObject({ confirmations: -1 });
  });

  it('the ChainDriver drives a fake node (credentials in the URL or in the chain config)', async () => {
    const driver = await startFakeUtxoDriver('dogecoin', { initialBlocks: 2, credentials: 'config' });
    started.push(driver.node);
    expect(driver).toMatchObject({ blockchain: 'dogecoin', network: 'testnet', chainConfig: { chainId: 'test', rpcUser: driver.node.user } });
    expect(driver.rpcUrl).toBe(driver.node.url);
    const to = await driver.newAddress();
    const txid = await driver.send(to, 123_456_789n);
    expect(await driver.mine(2)).toBe(4);
    expect(await driver.balance(to)).toBe(123_456_789n);
    const { transactionId, fee } = await (driver.spend as NonNullable<typeof driver.spend>)(to, await driver.newAddress(), 100_000_000n);
    expect(fee).toBeGreaterThan(0n);
    await driver.mine(1);
    expect(await driver.balance(to)).toBe(0n);
    expect(transactionId).not.toBe(txid);
    expect(await driver.reorg(1)).toBe(6);
    expect(await driver.blockHash(6)).toBe(driver.node.blockHash(6));
    const withUrl = await startFakeUtxoDriver('zcash', { initialBlocks: 1 });
    started.push(withUrl.node);
    expect(new URL(withUrl.rpcUrl).password).toBe(encodeURIComponent(withUrl.node.password));
    expect(withUrl.chainConfig).toEqual({ chainId: 'test' });
  });
});

describe('herald reads the fake blocks', () => {
  /** Fetches block `hash` as an adapter would and normalises it with prevouts resolved through getrawtransaction. */
  async function normalise(node: FakeUtxoNode, hash: string) {
    const doge = node.dialect === 'dogecoin';
    const block = (await call(node, 'getblock', doge ? [hash, true] : [hash, 2])) as RpcBlock;
    const transactions = doge
      ? await Promise.all((block.tx as string[]).map((id) => call(node, 'getrawtransaction', [id, true]) as Promise<RpcTransaction>))
      : undefined;
    const prevouts = new Map<string, KnownPrevout>();
    for (const key of prevoutsNeeded(block, transactions)) {
      const [txid, vout] = key.split(':') as [string, string];
      const prev = (await call(node, 'getrawtransaction', [txid, true])) as {
        vout: { value: number; scriptPubKey: { address?: string; addresses?: string[] } }[];
      };
      const out = prev.vout[Number(vout)];
      if (!out) throw new Error(`no output ${key}`);
      prevouts.set(prevoutKey(txid, Number(vout)), {
        address: out.scriptPubKey.address ?? out.scriptPubKey.addresses?.[0],
        value: BigInt(Math.round(out.value * 1e8)),
      });
    }
    return normalizeUtxoBlock({ block, transactions, prevouts }, { blockchain: node.params.blockchain, network: 'testnet' });
  }

  it.each(['bitcoin', 'bitcoin-cash', 'dogecoin', 'dash', 'zcash', 'omni'] as const)('%s: receipts and spends come out exact', async (dialect) => {
    const node = await start(dialect);
    const { a, b, fund, spend, hash } = await paymentBlock(node);
    const funded = await normalise(node, node.blockHash(node.height() - 1));
    expect(funded.transactionIds).toContain(fund);
    expect(funded.coinMovements).toContainEqual({ transactionId: fund, address: a, delta: 29_000_000n });
    const block = await normalise(node, hash);
    expect(block).toMatchObject({ height: node.height(), hash, parentHash: node.blockHash(node.height() - 1) });
    const moves = block.coinMovements.filter((m) => m.transactionId === spend.txid);
    expect(moves).toContainEqual({ transactionId: spend.txid, address: a, delta: -29_000_000n });
    expect(moves).toContainEqual({ transactionId: spend.txid, address: b, delta: 10_000_000n });
    // What left A and did not reach B or the change is the fee the fake reported.
    expect(moves.reduce((n, m) => n + m.delta, 0n)).toBe(-spend.fee);
  });

  it('bitcoin: with verbosity 3 no prevout needs resolving', async () => {
    const node = await start('bitcoin');
    const { hash } = await paymentBlock(node);
    expect(prevoutsNeeded(await call(node, 'getblock', [hash, 3]))).toEqual([]);
    expect(prevoutsNeeded(await call(node, 'getblock', [hash, 2]))).toHaveLength(1);
  });

  it('zcash: shielded parts are ignored, only transparent value moves', async () => {
    const node = await start('zcash');
    const a = node.newAddress();
    node.send(a, 50_000_000n);
    node.mine(1);
    const shield = node.shield(a, 20_000_000n);
    const to = node.newAddress();
    const unshield = node.unshield(to, 5_000_000n);
    const [hash] = node.mine(1);
    const block = await normalise(node, hash as string);
    expect(block.coinMovements.filter((m) => m.transactionId === unshield)).toEqual([{ transactionId: unshield, address: to, delta: 5_000_000n }]);
    const shieldMoves = block.coinMovements.filter((m) => m.transactionId === shield);
    expect(shieldMoves.reduce((n, m) => n + m.delta, 0n)).toBeLessThan(-20_000_000n);
  });
});

describe('Omni Core', () => {
  it('properties, simple sends, send all and invalid transactions as Omni Core reports them', async () => {
    const node = await start('omni');
    const issuer = node.newAddress();
    const alice = node.newAddress();
    const bob = node.newAddress();
    node.send(issuer, 10_000_000n);
    node.send(alice, 10_000_000n);
    node.mine(1);
    const created = node.createProperty(issuer, { name: 'Herald Dollar', category: 'Financial', subcategory: 'Stable', amount: 1_000_000_00000000n });
    expect(created.propertyId).toBe(3);
    node.mine(1);
    const property = await call(node, 'omni_getproperty', [3]);
    expect(keys(property)).toEqual(keys(fixture('omni/testnet/issues/omni_getproperty_31_testnet3.json')));
    expect(property).toMatchObject({
      propertyid: 3,
      name: 'Herald Dollar',
      divisible: true,
      issuer,
      creationtxid: created.txid,
      totaltokens: '1000000.00000000',
    });
    const creation = await call(node, 'omni_gettransaction', [created.txid]);
    const creationRef = fixture('omni/mainnet/issues/omni_gettransaction_5ed3694e_create_property_31_tetherus.json');
    expect(keys(creation)).toEqual(keys(creationRef));
    expect(creation).toMatchObject({ type_int: 50, type: 'Create Property - Fixed', propertyid: 3, valid: true, amount: '1000000.00000000' });

    const send = node.omniSend(issuer, alice, 3, 20_252_000_000n);
    const pending = await call(node, 'omni_gettransaction', [send]);
    expect(pending.confirmations).toBe(0);
    expect(pending.valid).toBeUndefined();
    const tooMuch = node.omniSend(alice, bob, 3, 1_000_000_00000000n);
    const noSuch = node.omniSend(alice, bob, 99, 1n);
    const [hash] = node.mine(1);
    const sent = await call(node, 'omni_gettransaction', [send]);
    const sendRef = fixture('omni/mainnet/issues/omniexplorer_tx_fc0368b2_simple_send_usdt.json');
    // omniexplorer adds propertyname and flags to what Omni Core prints.
    expect(keys(sent)).toEqual(without(keys(sendRef), ['propertyname', 'flags']));
    expect(sent).toMatchObject({
      txid: send,
      sendingaddress: issuer,
      referenceaddress: alice,
      type_int: 0,
      type: 'Simple Send',
      propertyid: 3,
      divisible: true,
      amount: '202.52000000',
      valid: true,
      blockhash: hash,
      block: node.height(),
      confirmations: 1,
      ismine: true,
    });
    expect(sent.fee).toMatch(/^0\.\d{8}$/);
    expect(await call(node, 'omni_gettransaction', [tooMuch])).toMatchObject({ valid: false, invalidreason: 'Sender has insufficient balance' });
    expect(await call(node, 'omni_gettransaction', [noSuch])).toMatchObject({ valid: false, invalidreason: 'Property does not exist' });
    expect(await call(node, 'omni_listblocktransactions', [node.height()])).toEqual([send, tooMuch, noSuch]);
    expect(await call(node, 'omni_getbalance', [alice, 3])).toEqual({ balance: '202.52000000', reserved: '0.00000000', frozen: '0.00000000' });
    expect(node.omniBalance(issuer, 3)).toBe(1_000_000_00000000n - 20_252_000_000n);

    node.send(alice, 1_000_000n); // fee money for alice's next transaction
    const all = node.omniSendAll(alice, bob);
    node.mine(1);
    expect(await call(node, 'omni_gettransaction', [all])).toMatchObject({
      type_int: 4,
      type: 'Send All',
      ecosystem: 'main',
      subsends: [{ propertyid: 3, divisible: true, amount: '202.52000000' }],
      valid: true,
    });
    expect(await call(node, 'omni_getallbalancesforaddress', [bob])).toEqual([
      { propertyid: 3, name: 'Herald Dollar', balance: '202.52000000', reserved: '0.00000000', frozen: '0.00000000' },
    ]);
    expect(await call(node, 'omni_getinfo')).toMatchObject({ block: node.height(), blocktransactions: 1, totaltransactions: 5 });

    // The Omni transaction is a bitcoin transaction: OP_RETURN "omni" + payload, dust to the receiver.
    const btc = await call(node, 'getrawtransaction', [send, true]);
    expect(btc.vout[0].scriptPubKey.hex).toBe(`6a146f6d6e69${'0000'}${'0000'}00000003${(20_252_000_000).toString(16).padStart(16, '0')}`);
    expect(btc.vout[1]).toMatchObject({ value: 0.00000546, scriptPubKey: { addresses: [alice] } });

    const notOmni = await post(node, { id: 1, method: 'omni_gettransaction', params: [node.send(bob, 1n + 1000n)] });
    expect(notOmni.body.error).toEqual({ code: -5, message: 'Not a Master Protocol transaction' });
    expect((await post(node, { id: 2, method: 'omni_getproperty', params: [77] })).body.error).toEqual({
      code: -8,
      message: 'Property identifier does not exist',
    });
  });

  it('a reorganisation re-evaluates the Omni state', async () => {
    const node = await start('omni');
    const issuer = node.newAddress();
    const to = node.newAddress();
    node.send(issuer, 10_000_000n);
    node.mine(1);
    node.createProperty(issuer, { name: 'Indivisible', divisible: false, amount: 1000n });
    node.mine(1);
    const send = node.omniSend(issuer, to, 3, 10n);
    node.mine(1);
    expect(await call(node, 'omni_getbalance', [to, 3])).toEqual({ balance: '10', reserved: '0', frozen: '0' });
    node.reorg(1, { drop: [send] });
    expect(await call(node, 'omni_getbalance', [to, 3])).toEqual({ balance: '0', reserved: '0', frozen: '0' });
    expect((await post(node, { id: 1, method: 'omni_gettransaction', params: [send] })).body.error.code).toBe(-5);
  });

  it('Omni operations are refused on other dialects', async () => {
    const node = await start('bitcoin');
    expect(() => node.omniSend(node.newAddress(), node.newAddress(), 3, 1n)).toThrow(/omni/);
    expect((await post(node, { id: 1, method: 'omni_getinfo' })).status).toBe(404);
  });
});

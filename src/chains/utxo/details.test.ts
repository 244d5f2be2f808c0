/**
 * The Bitcoin-family Callback Data reads against a JSON-RPC stub speaking Core's wire format: a recorded
 * litecoin mainnet block (its fields in litecoin's spelling), and the nodes that cannot answer (pruned,
 * no -txindex, down) answering NodeReadError with a message that names no URL.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type StubReply, startUtxoRpcStub, type UtxoRpcStub } from '../../../test/support/utxo-rpc-stub.ts';
import { NodeReadError } from '../details.ts';
import { createUtxoAdapter } from './adapter.ts';

const FIXTURE = path.resolve(import.meta.dirname, '../../../test/fixtures/litecoin/mainnet/vivita/getblock_2_height2383207_84da0de24f1f7007.json');
const HASH = '84da0de24f1f70074596f9a9da145a6b7961860519923b67545d095cf8262f9a';

let stub: UtxoRpcStub | undefined;
afterEach(async () => {
  await stub?.close();
  stub = undefined;
});

async function adapterAnswering(handle: (method: string, params: unknown[]) => StubReply) {
  stub = await startUtxoRpcStub(handle);
  return createUtxoAdapter({ blockchain: 'litecoin', network: 'mainnet', rpcUrl: `http://user:secret@${new URL(stub.url).host}/`, timeoutMs: 1000 });
}

async function failure(read: Promise<unknown>): Promise<NodeReadError> {
  const error = await read.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NodeReadError);
  expect((error as Error).message).not.toMatch(/127\.0\.0\.1|secret|http:/);
  return error as NodeReadError;
}

describe('Bitcoin-family block and transaction details', () => {
  it('a recorded litecoin block, in litecoin spelling', async () => {
    const recorded = readFileSync(FIXTURE, 'utf8');
    const adapter = await adapterAnswering((method, params) => {
      if (method === 'getblockhash' && params[0] === 2383207) return { result: HASH };
      if (method === 'getblock' && params[0] === HASH) return { resultText: recorded };
      return { error: { code: -8, message: 'Block height out of range' } };
    });
    const block = await adapter.getBlockDetails({ height: 2383207 });
    expect(block).toEqual({
      hash: HASH,
      height: 2383207,
      previousBlockHash: '7b3479a720700cbff29abf0da5d14842dcae9ac18c0f9942504af07f2b8910b9',
      timestamp: JSON.parse(recorded).time,
      transactionsCount: JSON.parse(recorded).tx.length,
      blockchainSpecific: {
        bits: JSON.parse(recorded).bits,
        chainwork: JSON.parse(recorded).chainwork,
        difficulty: String(JSON.parse(recorded).difficulty),
        merkleRoot: 'ffa16a0562317ef0b0de037028c6c88643e7d1c63c06cdfc068671bee39aa8df',
        nonce: JSON.parse(recorded).nonce,
        size: 2767,
        strippedsize: 2013,
        version: 536870932,
        versionHex: '20000014',
        weight: 8632,
      },
    });
    expect(await adapter.getBlockDetails({ height: 9_999_999 })).toBeUndefined();
    await adapter.close();
  });

  it('a pruned block: not served, saying so', async () => {
    const adapter = await adapterAnswering((method) =>
      method === 'getblockhash' ? { result: HASH } : { error: { code: -1, message: 'Block not available (pruned data)' } },
    );
    const error = await failure(adapter.getBlockDetails({ height: 5 }));
    expect(error.kind).toBe('not-served');
    expect(error.message).toMatch(/pruned.*block 5/);
    await adapter.close();
  });

  it('a node without -txindex: not served, saying what to change', async () => {
    const adapter = await adapterAnswering(() => ({
      error: {
        code: -5,
        message:
          'No such mempool transaction. Use -txindex or provide a block hash to enable blockchain transaction queries. Use gettransaction for wallet transactions.',
      },
    }));
    const error = await failure(adapter.getTransactionDetails('ab'.repeat(32)));
    expect(error.kind).toBe('not-served');
    expect(error.message).toMatch(/-txindex=1/);
    await adapter.close();
  });

  it('with -txindex, an unknown transaction is undefined; a node in trouble is unavailable', async () => {
    let reply: StubReply = { error: { code: -5, message: 'No such mempool or blockchain transaction. Use gettransaction for wallet transactions.' } };
    const adapter = await adapterAnswering(() => reply);
    expect(await adapter.getTransactionDetails('ab'.repeat(32))).toBeUndefined();
    reply = { status: 503, body: 'Work queue depth exceeded' };
    const error = await failure(adapter.getTransactionDetails('ab'.repeat(32)));
    expect(error.kind).toBe('unavailable');
    reply = { hang: true };
    expect((await failure(adapter.getBlockDetails({ height: 1 }))).message).toMatch(/did not answer/);
    await adapter.close();
  });
});

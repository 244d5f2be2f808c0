import { describe, expect, it } from 'vitest';
import { EvmRpcError } from './evm/rpc.ts';
import { NodeRpcError } from './rpc-error.ts';
import { TronRpcError } from './tron/rpc.ts';
import { UtxoRpcError } from './utxo/rpc.ts';
import { XrpRpcError } from './xrp/rpc.ts';

describe('NodeRpcError', () => {
  it('is the one error of every family, retryable only when asking again may get another answer', () => {
    const url = 'http://node.example:8545/';
    const errors = [
      new EvmRpcError('eth_blockNumber', url, 'timeout', 'no answer in 10 s'),
      new UtxoRpcError('getblock', url, 'network', 'ECONNREFUSED'),
      new TronRpcError('wallet/getblockbynum', url, 'http', 'Bad Gateway', 502),
      new XrpRpcError('ledger', url, 'http', 'HTTP 429', undefined, 429),
      new EvmRpcError('eth_call', url, 'reverted', 'execution reverted', 3),
      new UtxoRpcError('getrawtransaction', url, 'rpc', 'No such mempool or blockchain transaction', -5),
      new TronRpcError('wallet/getblockbalance', url, 'unsupported', 'Not Found', 404),
      new XrpRpcError('tx', url, 'rippled', 'Transaction not found.', 'txnNotFound'),
      new UtxoRpcError('getblockcount', url, 'auth', 'Unauthorized', undefined, 401),
    ];
    for (const error of errors) expect(error).toBeInstanceOf(NodeRpcError);
    expect(errors.map((e) => e.retryable)).toEqual([true, true, true, true, false, false, false, false, false]);
    expect(errors.map((e) => e.unanswered)).toEqual([true, true, false, false, false, false, false, false, false]);
    // One message format, the family in the name.
    expect(errors[5]?.message).toBe(`getrawtransaction failed at ${url}: rpc -5: No such mempool or blockchain transaction`);
    expect(errors[2]?.message).toBe(`wallet/getblockbynum failed at ${url}: http (HTTP 502): Bad Gateway`);
    expect(errors.map((e) => e.name)).toContain('TronRpcError');
  });
});

import { describe, expect, it } from 'vitest';
import { extractInternalTransfers, internalTransfersOfFrame } from './normalize.ts';
import { parityToCallTraces } from './parity-traces.ts';
import type { ParityTrace } from './rpc-types.ts';

const TX = `0x${'aa'.repeat(32)}`;
const A = `0x${'0a'.repeat(20)}`;
const B = `0x${'0b'.repeat(20)}`;
const C = `0x${'0c'.repeat(20)}`;
const D = `0x${'0d'.repeat(20)}`;

const call = (traceAddress: number[], from: string, to: string, value: string, extra: Partial<ParityTrace> = {}, callType = 'call'): ParityTrace => ({
  type: 'call',
  transactionHash: TX,
  traceAddress,
  action: { callType, from, to, value, gas: '0x0', input: '0x' },
  result: { gasUsed: '0x0', output: '0x' },
  ...extra,
});

describe('parityToCallTraces: trace_block as callTracer trees', () => {
  it('places frames by traceAddress (in any order), maps each frame type, and skips rewards', () => {
    const traces: ParityTrace[] = [
      { type: 'reward', transactionHash: null, traceAddress: [], action: { author: A, rewardType: 'block', value: '0x1' }, result: null },
      call([1, 0], B, D, '0x5'),
      call([], A, B, '0x0'),
      call([0], B, C, '0x0', {}, 'staticcall'),
      call([1], B, C, '0x7'),
      { type: 'create', transactionHash: TX, traceAddress: [2], action: { from: B, value: '0x3', creationMethod: 'create2' }, result: { address: D } },
      { type: 'suicide', transactionHash: TX, traceAddress: [3], action: { address: B, refundAddress: A, balance: '0x9' }, result: null },
    ];
    const [entry, ...rest] = parityToCallTraces(traces);
    expect(rest).toEqual([]);
    expect(entry?.txHash).toBe(TX);
    expect(entry?.result).toEqual({
      type: 'CALL',
      from: A,
      to: B,
      value: '0x0',
      calls: [
        { type: 'STATICCALL', from: B, to: C, value: '0x0' },
        { type: 'CALL', from: B, to: C, value: '0x7', calls: [{ type: 'CALL', from: B, to: D, value: '0x5' }] },
        { type: 'CREATE2', from: B, to: D, value: '0x3' },
        { type: 'SELFDESTRUCT', from: B, to: A, value: '0x9' },
      ],
    });
    // operationId = traceAddress, the zero-value static call counted.
    expect(internalTransfersOfFrame(entry?.result ?? {}, TX).map((t) => [t.operationId, t.to, t.amount])).toEqual([
      ['call_1', C, 7n],
      ['call_1_0', D, 5n],
      ['call_2', D, 3n],
      ['call_3', A, 9n],
    ]);
  });

  it('a failed frame keeps its error: nothing below it counts, as from a callTracer', () => {
    const traces = [call([], A, B, '0x0'), call([0], B, C, '0x7', { error: 'Reverted', result: null }), call([0, 0], C, D, '0x5'), call([1], B, D, '0x2')];
    const transfers = extractInternalTransfers(parityToCallTraces(traces), [TX]).get(TX);
    expect(transfers?.map((t) => t.operationId)).toEqual(['call_1']);
  });

  it('a frame without its parent, two top frames or a malformed traceAddress throw (the block is fetched again)', () => {
    expect(() => parityToCallTraces([call([], A, B, '0x0'), call([0, 1], B, C, '0x1')])).toThrow(/no parent/);
    expect(() => parityToCallTraces([call([], A, B, '0x0'), call([], A, B, '0x0')])).toThrow(/two top frames/);
    expect(() => parityToCallTraces([call([0], B, C, '0x1')])).toThrow(/no parent/);
    expect(() => parityToCallTraces([{ ...call([], A, B, '0x0'), traceAddress: [-1] }])).toThrow(/traceAddress/);
    expect(() => parityToCallTraces({} as ParityTrace[])).toThrow(/no array/);
  });
});

/**
 * Parity's `trace_block` (flat frames placed by `traceAddress`) rebuilt as geth callTracer trees, so that one
 * normaliser (normalize.ts) reads both dialects and an internal transfer gets the same operationId from
 * either: its `call_` path is the frame's traceAddress, which counts every child frame as callTracer's
 * `calls` does. Frame mapping: call → its callType in capitals (CALL, CALLCODE, DELEGATECALL, STATICCALL);
 * create → CREATE or CREATE2 with `to` the new contract; suicide → SELFDESTRUCT from the destroyed contract
 * to the refund address with its balance; `error` kept on the frame that failed. Rewards (no transaction) are
 * left out. A frame that cannot be placed (no parent, a malformed traceAddress) throws: the caller fetches
 * again rather than normalise a partial tree. Pure, no I/O.
 */
import { EvmNormalizeError } from './normalize.ts';
import type { CallFrame, CallTraceEntry, ParityTrace } from './rpc-types.ts';

/** One callTracer entry per transaction that has frames, in the order of their first frame. */
export function parityToCallTraces(traces: ParityTrace[]): CallTraceEntry[] {
  if (!Array.isArray(traces)) throw new EvmNormalizeError('trace_block answered no array');
  const byTransaction = new Map<string, { address: number[]; frame: CallFrame }[]>();
  traces.forEach((trace, i) => {
    if (trace === null || typeof trace !== 'object') throw new EvmNormalizeError(`trace_block entry ${i} is not an object`);
    const txHash = trace.transactionHash;
    if (typeof txHash !== 'string' || txHash === '') return; // a block or uncle reward
    const address = trace.traceAddress;
    if (!Array.isArray(address) || !address.every((k) => Number.isSafeInteger(k) && k >= 0)) {
      throw new EvmNormalizeError(`trace_block entry ${i} of ${txHash} has no valid traceAddress`);
    }
    const frames = byTransaction.get(txHash) ?? [];
    frames.push({ address, frame: toFrame(trace) });
    byTransaction.set(txHash, frames);
  });
  const entries: CallTraceEntry[] = [];
  for (const [txHash, frames] of byTransaction) {
    // Parents before children whatever the node's order: shorter addresses first.
    frames.sort((a, b) => a.address.length - b.address.length);
    const placed = new Map<string, CallFrame>();
    let top: CallFrame | undefined;
    for (const { address, frame } of frames) {
      if (address.length === 0) {
        if (top) throw new EvmNormalizeError(`trace_block has two top frames for ${txHash}`);
        top = frame;
      } else {
        const parent = placed.get(address.slice(0, -1).join('_'));
        if (!parent) throw new EvmNormalizeError(`trace_block frame [${address.join(',')}] of ${txHash} has no parent frame`);
        parent.calls ??= [];
        (parent.calls as CallFrame[])[address[address.length - 1] as number] = frame;
      }
      placed.set(address.join('_'), frame);
    }
    if (!top) throw new EvmNormalizeError(`trace_block has no top frame for ${txHash}`);
    entries.push({ txHash, result: top });
  }
  return entries;
}

function toFrame(trace: ParityTrace): CallFrame {
  const action = trace.action ?? {};
  const type = typeof trace.type === 'string' ? trace.type.toLowerCase() : '';
  const error = typeof trace.error === 'string' && trace.error !== '' ? { error: trace.error } : {};
  if (type === 'suicide' || type === 'selfdestruct') {
    return { type: 'SELFDESTRUCT', from: action.address, to: action.refundAddress, value: action.balance, ...error };
  }
  if (type === 'create') {
    const create2 = typeof action.creationMethod === 'string' && action.creationMethod.toLowerCase() === 'create2';
    return { type: create2 ? 'CREATE2' : 'CREATE', from: action.from, to: trace.result?.address, value: action.value, ...error };
  }
  const callType = typeof action.callType === 'string' ? action.callType.toUpperCase() : type.toUpperCase();
  return { type: callType, from: action.from, to: action.to, value: action.value, ...error };
}

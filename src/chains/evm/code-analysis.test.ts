import { describe, expect, it } from 'vitest';
import { codeMayMoveValue } from './code-analysis.ts';

// Opcodes used below: PUSH1 60, PUSH2 61, PUSH32 7f, JUMPDEST 5b, STOP 00, RETURN f3, REVERT fd, JUMP 56,
// CALL f1, STATICCALL fa, DELEGATECALL f4, CREATE f0, CREATE2 f5, SELFDESTRUCT ff, ADD 01.
describe('codeMayMoveValue (which contracts a transaction must be traced for)', () => {
  it.each([
    ['a reachable CALL', '0x6000600060006000600060006000f1'],
    ['DELEGATECALL (a proxy: its target may move value)', '0x600060006000600060006000f4'],
    ['CREATE', '0x600060006000f0'],
    ['CREATE2', '0x6000600060006000f5'],
    ['SELFDESTRUCT', '0x6000ff'],
    ['a CALL after a JUMPDEST that follows a STOP (a jump can land there)', '0x005bf1'],
    ['EOF-prefixed code (not analysed)', '0xef0001'],
  ])('true for %s', (_what, code) => expect(codeMayMoveValue(code)).toBe(true));

  it.each([
    ['empty code', '0x'],
    ['arithmetic and STATICCALL only', '0x6001600101600060006000600060006000fa00'],
    ['a CALL byte inside PUSH data', '0x61f1f100'],
    ['a CALL byte inside PUSH32 data', `0x7f${'f1'.repeat(32)}00`],
    ['a CALL after STOP with no JUMPDEST before it (unreachable)', '0x00f1'],
    ['a CALL after RETURN / REVERT / JUMP with no JUMPDEST', '0x60006000f3f1'],
    ['a JUMPDEST byte inside PUSH data in dead code does not revive it', '0x00605bf1'],
  ])('false for %s', (_what, code) => expect(codeMayMoveValue(code)).toBe(false));
});

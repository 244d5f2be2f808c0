/** What a contract's runtime code can do, read from its bytes: whether the tracer must look at a call to it (traces.ts). */

/** Opcodes after which execution does not fall through: STOP, JUMP, RETURN, REVERT, INVALID, SELFDESTRUCT. */
const TERMINATORS = new Set([0x00, 0x56, 0xf3, 0xfd, 0xfe, 0xff]);
/** CREATE, CALL, CALLCODE, DELEGATECALL, CREATE2, SELFDESTRUCT, and the 0xf6-0xfc range (never-activated or EOF-only calls). STATICCALL (0xfa) cannot carry value. */
const MAY_MOVE_VALUE = new Set([0xf0, 0xf1, 0xf2, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfb, 0xfc, 0xff]);

/**
 * Whether runtime code (hex) may execute an instruction that makes a value-carrying frame. Conservative:
 * true for EOF containers and EIP-7702 delegations (code starting with 0xef: what runs is elsewhere). The
 * instructions are read as the EVM does (PUSH data skipped: a jump can only land on a JUMPDEST that is an
 * instruction); one counts unless it is unreachable: after an instruction that does not fall through, and
 * before the next JUMPDEST. That leaves out the compiler's metadata after the code's final INVALID, whose
 * bytes would otherwise read as calls half of the time. Unknown opcodes are taken to fall through.
 */
export function codeMayMoveValue(code: string): boolean {
  const bytes = Buffer.from(code.startsWith('0x') ? code.slice(2) : code, 'hex');
  if (bytes[0] === 0xef) return true;
  let live = true;
  for (let pc = 0; pc < bytes.length; pc++) {
    const op = bytes[pc] as number;
    if (op === 0x5b) live = true;
    if (!live) {
      if (op >= 0x60 && op <= 0x7f) pc += op - 0x5f;
      continue;
    }
    if (MAY_MOVE_VALUE.has(op)) return true;
    if (op >= 0x60 && op <= 0x7f) pc += op - 0x5f;
    else if (TERMINATORS.has(op)) live = false;
  }
  return false;
}

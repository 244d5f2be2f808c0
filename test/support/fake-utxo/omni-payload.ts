/**
 * Omni Layer messages as Omni Core encodes them in class C transactions: an OP_RETURN output holding the
 * marker "omni" and the payload (big-endian version, type and fields). The fake records the decoded
 * message next to the transaction; the bytes are there so the block's nulldata output is the real one.
 */
import { beBytes, concat, utf8 } from './encoding.ts';

export const OMNI_MARKER = utf8('omni');

export type OmniMessage =
  | { type: 0; sender: string; reference: string; propertyId: number; amount: bigint }
  | { type: 4; sender: string; reference: string; ecosystem: 1 | 2 }
  | {
      type: 50;
      sender: string;
      ecosystem: 1 | 2;
      divisible: boolean;
      category: string;
      subcategory: string;
      name: string;
      url: string;
      data: string;
      amount: bigint;
    };

export const OMNI_TYPE_NAMES: Record<OmniMessage['type'], string> = { 0: 'Simple Send', 4: 'Send All', 50: 'Create Property - Fixed' };

const cString = (s: string): Uint8Array => concat(utf8(s), Uint8Array.of(0));

export function encodeOmniPayload(m: OmniMessage): Uint8Array {
  const head = concat(beBytes(0n, 2), beBytes(BigInt(m.type), 2));
  switch (m.type) {
    case 0:
      return concat(OMNI_MARKER, head, beBytes(BigInt(m.propertyId), 4), beBytes(m.amount, 8));
    case 4:
      return concat(OMNI_MARKER, head, Uint8Array.of(m.ecosystem));
    case 50:
      return concat(
        OMNI_MARKER,
        head,
        Uint8Array.of(m.ecosystem),
        beBytes(m.divisible ? 2n : 1n, 2),
        beBytes(0n, 4),
        cString(m.category),
        cString(m.subcategory),
        cString(m.name),
        cString(m.url),
        cString(m.data),
        beBytes(m.amount, 8),
      );
  }
}

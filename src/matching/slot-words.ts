/**
 * The layout of a subscription's slot in the index: 8 32-bit words (32 bytes; slots start at
 * multiples of 32 bytes, so none straddles two cache lines) that hold everything matching reads of a
 * slot. Walking a target's chain and building a match's record then cost one cache miss per slot,
 * where one typed array per field (id, customer, kind, confirmations, next, previous) cost up to one
 * each, in arrays of a million entries.
 *
 * Words 0..3 are the id's 16 bytes (IdSlots, over the same buffer); the others are named below.
 */

/** 32-bit words per slot. */
export const SLOT_WORDS = 8;
/** Bytes per slot. */
export const SLOT_BYTES = SLOT_WORDS * 4;
/** The customer: its position in the index's customer texts. */
export const CUSTOMER = 4;
/** The next slot with the same target (or of the same every-block kind), -1 at the end, UNLINKED on no chain. */
export const NEXT = 5;
/** The previous slot with the same target; the first slot's is the last one (see TargetTable). */
export const PREV = 6;
/** The kind (bits 0..7) and receiveCallbackOn, 0 for the chain default (bits 8..15). */
export const KIND = 7;

/** The chains of slots of each key, shared by the index's tables (a slot is in at most one): NEXT and PREV of `words`, replaced when the index grows. */
export interface SlotLinks {
  words: Int32Array;
}

/** NEXT of a slot on no chain. */
export const UNLINKED = -2;

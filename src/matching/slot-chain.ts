/**
 * The subscriptions of an event kind that matches every block (BLOCK_MINED, BLOCK_REVERTED): one chain
 * of slots through the index's shared links, in the order they were added, like the subscriptions of
 * one key of a TargetTable (see there: `prev` of the first slot is the last one, so appending and
 * unlinking take constant time). A slot on no chain has next = UNLINKED.
 */
import { NEXT, PREV, SLOT_WORDS, type SlotLinks, UNLINKED } from './slot-words.ts';

export class SlotChain {
  private head = -1;
  private count = 0;

  constructor(private readonly links: SlotLinks) {}

  /** Slots on the chain. */
  get size(): number {
    return this.count;
  }

  /** The first slot, or -1; the others follow through NEXT. */
  first(): number {
    return this.head;
  }

  /** Adds `slot` after the others. */
  add(slot: number): void {
    const { words } = this.links;
    words[slot * SLOT_WORDS + NEXT] = -1;
    if (this.head < 0) {
      this.head = slot;
      words[slot * SLOT_WORDS + PREV] = slot;
    } else {
      const tail = words[this.head * SLOT_WORDS + PREV] as number;
      words[tail * SLOT_WORDS + NEXT] = slot;
      words[slot * SLOT_WORDS + PREV] = tail;
      words[this.head * SLOT_WORDS + PREV] = slot;
    }
    this.count++;
  }

  /** Removes `slot`; false when it was on no chain. */
  remove(slot: number): boolean {
    const { words } = this.links;
    if (words[slot * SLOT_WORDS + NEXT] === UNLINKED) return false;
    const following = words[slot * SLOT_WORDS + NEXT] as number;
    if (this.head === slot) {
      this.head = following;
      if (following >= 0) words[following * SLOT_WORDS + PREV] = words[slot * SLOT_WORDS + PREV] as number; // the new first slot points at the last one
    } else {
      const before = words[slot * SLOT_WORDS + PREV] as number;
      words[before * SLOT_WORDS + NEXT] = following;
      if (following >= 0) words[following * SLOT_WORDS + PREV] = before;
      else words[this.head * SLOT_WORDS + PREV] = before; // slot was the last one
    }
    words[slot * SLOT_WORDS + NEXT] = UNLINKED;
    this.count--;
    return true;
  }
}

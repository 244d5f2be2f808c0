/**
 * The subscriptions of an event kind that matches every block (BLOCK_MINED, BLOCK_REVERTED): one chain
 * of slots through the index's shared links, in the order they were added, like the subscriptions of
 * one key of a TargetTable (see there: `prev` of the first slot is the last one, so appending and
 * unlinking take constant time). A slot on no chain has next = UNLINKED.
 */
import { type SlotLinks, UNLINKED } from './target-table.ts';

export class SlotChain {
  private head = -1;
  private count = 0;

  constructor(private readonly links: SlotLinks) {}

  /** Slots on the chain. */
  get size(): number {
    return this.count;
  }

  /** The first slot, or -1; the others follow through links.next. */
  first(): number {
    return this.head;
  }

  /** Adds `slot` after the others. */
  add(slot: number): void {
    const { next, prev } = this.links;
    next[slot] = -1;
    if (this.head < 0) {
      this.head = slot;
      prev[slot] = slot;
    } else {
      const tail = prev[this.head] as number;
      next[tail] = slot;
      prev[slot] = tail;
      prev[this.head] = slot;
    }
    this.count++;
  }

  /** Removes `slot`; false when it was on no chain. */
  remove(slot: number): boolean {
    const { next, prev } = this.links;
    if (next[slot] === UNLINKED) return false;
    const following = next[slot] as number;
    if (this.head === slot) {
      this.head = following;
      if (following >= 0) prev[following] = prev[slot] as number; // the new first slot points at the last one
    } else {
      const before = prev[slot] as number;
      next[before] = following;
      if (following >= 0) prev[following] = before;
      else prev[this.head] = before; // slot was the last one
    }
    next[slot] = UNLINKED;
    this.count--;
    return true;
  }
}

/**
 * Thresholds of CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER subscriptions, in base
 * units, sorted ascending, so that "every subscription with threshold <= amount" is a binary search
 * for the end of a prefix.
 *
 * Invariants: `amounts[0..length)` is sorted ascending, `approx[i]` is Number(amounts[i]) and
 * `slots[i]` is the slot of `amounts[i]`, or -1 for a removed entry (a tombstone, skipped by readers
 * and dropped at the next merge). Additions wait unsorted in `pending` and are merged in on the next
 * read, so loading N thresholds costs one sort, not N insertions into the middle of an array. Among
 * equal amounts, older entries come first. `where[slot]` is the entry's position: i >= 0 in the
 * sorted entries, -2 - i at pending[i], -1 for none; so a removal is a tombstone put in constant time,
 * even among 100,000 equal thresholds.
 *
 * The search runs on the doubles (a bigint comparison is a call out of generated code): Number() of a
 * bigint rounds to nearest, which never reverses an order, so entries whose double is above
 * Number(amount) are above amount, entries whose double is below it are below amount, and only those
 * whose double equals it are compared exactly, as bigints.
 */

const NOWHERE = -1;

export class SortedThresholds {
  private amounts: bigint[] = [];
  private approx = new Float64Array(0);
  private slots = new Int32Array(0);
  private length = 0;
  private tombstones = 0;
  private pendingAmounts: bigint[] = [];
  /** -1 for a pending entry removed before the merge. */
  private pendingSlots: number[] = [];
  private pendingRemoved = 0;
  private where = new Int32Array(0).fill(NOWHERE);

  /** Live entries. */
  get size(): number {
    return this.length - this.tombstones + this.pendingAmounts.length - this.pendingRemoved;
  }

  /** Adds `slot` with threshold `amount`; the slot must not be here already. */
  add(amount: bigint, slot: number): void {
    if (slot >= this.where.length) this.growWhere(slot + 1);
    this.where[slot] = -2 - this.pendingSlots.length;
    this.pendingAmounts.push(amount);
    this.pendingSlots.push(slot);
  }

  /** Removes the entry of `slot`; false when there is none. */
  remove(slot: number): boolean {
    const at = slot < this.where.length ? (this.where[slot] as number) : NOWHERE;
    if (at === NOWHERE) return false;
    this.where[slot] = NOWHERE;
    if (at < 0) {
      this.pendingSlots[-2 - at] = -1;
      this.pendingRemoved++;
      return true;
    }
    this.slots[at] = -1;
    this.tombstones++;
    if (this.tombstones > 1024 && this.tombstones * 8 > this.length) this.merge();
    return true;
  }

  /**
   * How many leading entries have a threshold <= `amount`: entries [0, n) of slotAt() are the
   * candidates (tombstones among them read -1).
   */
  countAtMost(amount: bigint): number {
    this.settle();
    const { approx, amounts } = this;
    const near = Number(amount);
    let low = 0;
    let high = this.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((approx[mid] as number) <= near) low = mid + 1;
      else high = mid;
    }
    while (low > 0 && approx[low - 1] === near && (amounts[low - 1] as bigint) > amount) low--;
    return low;
  }

  /** The slot of entry `i` (0 <= i < countAtMost(...)), -1 when that entry was removed. */
  slotAt(i: number): number {
    return this.slots[i] as number;
  }

  /** Merges pending additions in (done by every read; callable after a bulk load to pay it up front). */
  settle(): void {
    if (this.pendingSlots.length > 0) this.merge();
  }

  /** Bytes held by the typed arrays (the amounts are heap objects, counted by the heap). */
  get byteLength(): number {
    return this.slots.byteLength + this.approx.byteLength + this.where.byteLength;
  }

  /** Sorts the pending additions and merges them with the sorted entries, dropping tombstones. */
  private merge(): void {
    const { pendingAmounts, pendingSlots } = this;
    const order: number[] = [];
    for (let p = 0; p < pendingSlots.length; p++) if ((pendingSlots[p] as number) >= 0) order.push(p);
    order.sort((a, b) => {
      const x = pendingAmounts[a] as bigint;
      const y = pendingAmounts[b] as bigint;
      return x < y ? -1 : x > y ? 1 : a - b;
    });
    const total = this.length - this.tombstones + order.length;
    const amounts: bigint[] = new Array(total);
    const approx = new Float64Array(total);
    const slots = new Int32Array(total);
    let out = 0;
    let i = 0;
    let j = 0;
    while (i < this.length || j < order.length) {
      if (i < this.length && this.slots[i] === -1) {
        i++;
        continue;
      }
      const takeOld = j >= order.length || (i < this.length && (this.amounts[i] as bigint) <= (pendingAmounts[order[j] as number] as bigint));
      if (takeOld) {
        amounts[out] = this.amounts[i] as bigint;
        approx[out] = this.approx[i] as number;
        slots[out] = this.slots[i++] as number;
      } else {
        const p = order[j++] as number;
        amounts[out] = pendingAmounts[p] as bigint;
        approx[out] = Number(pendingAmounts[p]);
        slots[out] = pendingSlots[p] as number;
      }
      this.where[slots[out] as number] = out;
      out++;
    }
    this.amounts = amounts;
    this.approx = approx;
    this.slots = slots;
    this.length = out;
    this.tombstones = 0;
    this.pendingAmounts = [];
    this.pendingSlots = [];
    this.pendingRemoved = 0;
  }

  private growWhere(atLeast: number): void {
    const where = new Int32Array(Math.max(atLeast, this.where.length * 2, 16)).fill(NOWHERE);
    where.set(this.where);
    this.where = where;
  }
}

/**
 * The intern table of one token kind: a token's value → its token id (see `internKind` in tokens.ts).
 *
 * A {@link SlotTable} (slot-table.ts says why not a Map: here a lookup with a value just built, an address,
 * a host, a stem, cost about 0.7 µs in a Map of hundreds of thousands in the classify path).
 *
 * Unlike the word memo it never forgets a value: an id handed out must be found again, or one token
 * would get two ids and a message would count it twice apart. Values the slots cannot hold (longer than
 * {@link MAX_SLOT_VALUE} code units, whose probe sequence would pass `MAX_PROBE`: crafted collisions, or
 * whose id passes the slots' `MAX_VALUE`: millions of tokens in one message) go to a Map beside them, so
 * a crafted value costs a Map lookup, never a long probe.
 */
import { GAVE_UP, MAX_VALUE, SlotTable, wordHash } from './slot-table.js';
import { detach } from '../util/index.js';

/** Longest value kept in the slots (UTF-16 code units); longer ones go to the overflow Map. */
export const MAX_SLOT_VALUE = 64;

export class InternTable {
  private readonly table = new SlotTable();
  /** Values the slots do not hold (too long, or a probe sequence too long). */
  private overflow: Map<string, number> | undefined;
  private readonly keepDropped = (value: string, id: number): void => {
    (this.overflow ??= new Map()).set(detach(value), id);
  };

  /** `hash`: the hash of a range of a string (tests pass a colliding one). */
  constructor(private readonly hash: (s: string, start: number, end: number) => number = wordHash) {}

  /** The id of `value`, or −1 when it has none. */
  get(value: string): number {
    const len = value.length;
    if (len <= MAX_SLOT_VALUE) {
      const t = this.table;
      const i = t.find(value, 0, len, this.hash(value, 0, len));
      if (i >= 0) return t.valueAt(i);
    }
    const o = this.overflow;
    return o === undefined ? -1 : (o.get(value) ?? -1);
  }

  /**
   * The id of `value`; when it has none, records `value` → `id` and answers `id` (one hash and one probe
   * sequence where {@link get} then {@link add} take two of each: a new token in the classify path).
   */
  getOrAdd(value: string, id: number): number {
    const i = this.probe(value);
    if (i >= 0) return this.table.valueAt(i);
    // Not in the slots: it may still have an id beside them (given up on, or dropped by a growth).
    const beside = this.overflow?.get(value);
    if (beside !== undefined) return beside;
    if (i !== GAVE_UP && id <= MAX_VALUE) {
      this.table.insert(i, value, 0, value.length, this.probedHash, id);
      return id;
    }
    this.keepDropped(value, id);
    return id;
  }

  /**
   * Records `value` → `id` (a value that has an id gets the new one). Throws `RangeError` for an id above
   * the slots' `MAX_VALUE` when the value is in the slots (ids only grow while a table lasts).
   */
  add(value: string, id: number): void {
    const i = this.probe(value);
    if (i >= 0) this.table.setValue(i, id);
    else if (i !== GAVE_UP && id <= MAX_VALUE) this.table.insert(i, value, 0, value.length, this.probedHash, id);
    else this.keepDropped(value, id);
  }

  /** {@link probe}'s hash of the value it probed for. */
  private probedHash = 0;

  /**
   * Where `value` is in the slots (after making room for one more), or −1 − a free slot (see
   * `SlotTable.find`), or {@link GAVE_UP} (also for a value too long for the slots).
   */
  private probe(value: string): number {
    const len = value.length;
    if (len > MAX_SLOT_VALUE) return GAVE_UP;
    const t = this.table;
    t.reserve(this.keepDropped);
    const h = (this.probedHash = this.hash(value, 0, len));
    return t.find(value, 0, len, h);
  }

  /** Forgets every value (the arrays keep their size). */
  clear(): void {
    this.table.clear();
    this.overflow = undefined;
  }
}

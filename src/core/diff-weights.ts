/**
 * Keys compared by their collation weights (MariaDB/MySQL's WEIGHT_STRING), for the merge walk
 * of a same-server diff: both key indexes are read in order and merged here, so no row is looked
 * up. Two keys with equal weights are equal under the collation; a PAD SPACE collation also
 * calls keys equal that differ by trailing spaces, so the trailing weights of a space are cut off
 * first. Pure: byte ranges in, decisions out.
 */

/**
 * Collations whose weight string is one level of fixed-size units per character, so that cutting
 * the trailing space weights gives exactly the collation's equality. Others (accent- or
 * case-sensitive UCA 14 levels, for example) are not merged.
 */
const SINGLE_LEVEL =
  /^(utf8mb4|utf8mb3|utf8|latin1|ascii)_(general_ci|general_nopad_ci|unicode_ci|unicode_nopad_ci|unicode_520_ci|unicode_520_nopad_ci|swedish_ci|swedish_nopad_ci|bin|nopad_bin|0900_ai_ci|0900_bin)$/;

export function mergeableCollation(collation: string | null | undefined): boolean {
  return typeof collation === 'string' && SINGLE_LEVEL.test(collation);
}

/** Whether a collation ignores trailing spaces (PAD SPACE): MariaDB's `nopad` ones and MySQL 8's `0900` ones do not. */
export function padsSpaces(collation: string): boolean {
  return !/nopad|_0900_/.test(collation);
}

/**
 * The end of a weight once the trailing weights of a space (`space`, one unit) are cut off; the
 * weight is left whole when its length is not a whole number of units.
 */
export function trimmedEnd(buf: Buffer, start: number, end: number, space: Buffer | null): number {
  if (!space || space.length === 0 || (end - start) % space.length !== 0) return end;
  const unit = space.length;
  let e = end;
  for (;;) {
    if (e - start < unit) return e;
    for (let i = 0; i < unit; i++) if (buf[e - unit + i] !== space[i]) return e;
    e -= unit;
  }
}

/** Whether `a[as, ae)` and `b[bs, be)` hold the same bytes; compared from the end, where neighbouring keys differ. */
function sameBytes(a: Buffer, as: number, ae: number, b: Buffer, bs: number, be: number): boolean {
  if (ae - as !== be - bs) return false;
  for (let i = ae - as - 1; i >= 0; i--) if (a[as + i] !== b[bs + i]) return false;
  return true;
}

/** Compares `a[as, ae)` with `b[bs, be)` in byte order (negative, 0, positive). */
function compareBytes(a: Buffer, as: number, ae: number, b: Buffer, bs: number, be: number): number {
  const la = ae - as;
  const lb = be - bs;
  const n = la < lb ? la : lb;
  for (let i = 0; i < n; i++) {
    const d = (a[as + i] as number) - (b[bs + i] as number);
    if (d !== 0) return d;
  }
  return la - lb;
}

/** A growable Int32 column. */
class Column {
  values = new Int32Array(1024);
  push(index: number, value: number): void {
    if (index >= this.values.length) {
      const grown = new Int32Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[index] = value;
  }
}

/**
 * The business keys of one chunk, in the order the server's index gave them, as runs of equal
 * weights: how many rows each run has, the first key of the run as the server sent it, and
 * whether a task matched it. Keys equal under the collation are neighbours in the index, so a
 * run is all the rows of its key. Tasks come in the same order and are matched by a cursor
 * moving forward; a task the cursor cannot place is reported unmatched (the caller then asks the
 * server), never matched by mistake: a match is always an equality of weights.
 * A run points into the buffer its row arrived in (the driver never writes into a buffer it has
 * handed out), so nothing is copied; a chunk holds on to the buffers of its rows until reset.
 */
export class KeyRuns {
  private bufs: Buffer[] = [];
  private readonly buf = new Column();
  private readonly wStart = new Column();
  private readonly wEnd = new Column();
  private readonly kStart = new Column();
  private readonly kEnd = new Column();
  private readonly rows = new Column();
  private matched = new Uint8Array(0);
  private count = 0;
  private cursor = 0;

  constructor(private readonly space: Buffer | null) {}

  get runs(): number {
    return this.count;
  }

  /** Adds one business row: its weight `buf[ws, we)` and key `buf[ks, ke)`. */
  add(buf: Buffer, ws: number, we: number, ks: number, ke: number): void {
    const end = trimmedEnd(buf, ws, we, this.space);
    const last = this.count - 1;
    if (last >= 0 && this.isRun(last, buf, ws, end)) {
      this.rows.values[last] = (this.rows.values[last] as number) + 1;
      return;
    }
    if (this.bufs[this.bufs.length - 1] !== buf) this.bufs.push(buf);
    const i = this.count++;
    this.buf.push(i, this.bufs.length - 1);
    this.wStart.push(i, ws);
    this.wEnd.push(i, end);
    this.kStart.push(i, ks);
    this.kEnd.push(i, ke);
    this.rows.push(i, 1);
  }

  /** Once every row is in, before the first match. */
  seal(): void {
    if (this.matched.length < this.count)
      this.matched = new Uint8Array(Math.max(this.count, this.matched.length * 2));
    else this.matched.fill(0, 0, this.count);
    this.cursor = 0;
  }

  /** Empties the runs for another chunk (letting go of its buffers), keeping the columns' memory. */
  reset(): void {
    this.count = 0;
    this.cursor = 0;
    this.bufs = [];
  }

  private bufOf(i: number): Buffer {
    return this.bufs[this.buf.values[i] as number] as Buffer;
  }

  private isRun(i: number, buf: Buffer, ws: number, we: number): boolean {
    const [w, start, end] = [this.bufOf(i), this.wStart.values[i] as number, this.wEnd.values[i] as number];
    return sameBytes(w, start, end, buf, ws, we);
  }

  /** Run `i`'s weight against `buf[ws, we)`. */
  private compareAt(i: number, buf: Buffer, ws: number, we: number): number {
    const [w, start, end] = [this.bufOf(i), this.wStart.values[i] as number, this.wEnd.values[i] as number];
    return compareBytes(w, start, end, buf, ws, we);
  }

  /** Marks the run equal to the weight `buf[ws, we)` as matched; false when there is none. */
  match(buf: Buffer, ws: number, we: number): boolean {
    const end = trimmedEnd(buf, ws, we, this.space);
    let i = this.cursor;
    // The usual cases first: another task of the same key, or the next key.
    if (i < this.count && this.isRun(i, buf, ws, end)) return this.hit(i);
    if (i + 1 < this.count && this.isRun(i + 1, buf, ws, end)) return this.hit(i + 1);
    while (i < this.count && this.compareAt(i, buf, ws, end) < 0) i++;
    if (i < this.count && this.isRun(i, buf, ws, end)) return this.hit(i);
    this.cursor = i;
    return false;
  }

  private hit(i: number): boolean {
    this.cursor = i;
    this.matched[i] = 1;
    return true;
  }

  /** The first key of run `i`, decoded. */
  private key(i: number): string {
    return this.bufOf(i).toString('utf8', this.kStart.values[i], this.kEnd.values[i]);
  }

  /** Whether every run was matched by a task and has one row (for the tasks matched so far). */
  clean(): boolean {
    for (let i = 0; i < this.count; i++)
      if (!this.matched[i] || (this.rows.values[i] as number) > 1) return false;
    return true;
  }

  /** Keys of the runs no task matched. */
  *unmatched(): Iterable<string> {
    for (let i = 0; i < this.count; i++) if (!this.matched[i]) yield this.key(i);
  }

  /** Keys of the runs with more than one row. */
  *repeated(): Iterable<string> {
    for (let i = 0; i < this.count; i++) if ((this.rows.values[i] as number) > 1) yield this.key(i);
  }
}

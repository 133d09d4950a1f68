import { emptyDigest, HASH_SPACE, segmentConsistent, type SegmentDigest } from './diff-keys.js';

/**
 * One level of segment digests over the whole hash space, kept in typed arrays: the client
 * aggregates a stream of key hashes into it, where a GROUP BY of as many groups would build a
 * temporary table on the server. A segment costs 8 bytes (its rows, and the sum of its hashes mod
 * 2^32: a dense level is only compared with another), whatever the table's size, so a level can
 * be fine enough to leave a few rows in each segment that differs.
 */

/** Segments of a dense level at most (8 MiB of digests per side, 4 more for tasks not done). */
export const DENSE_FANOUT = 2 ** 20;
/** Rows a dense level aims to leave in each segment. */
export const DENSE_LEAF_ROWS = 2;

/** A segment whose digests disagree, and the larger of its two row counts. */
export interface SegmentMismatch {
  id: number;
  rows: number;
}

export class DenseDigests {
  readonly segments: number;
  private readonly rows: Uint32Array;
  private readonly sums: Uint32Array;
  private notDone: Uint32Array | undefined;

  /** In: the width of a segment in hash values (it fixes how many there are). */
  constructor(readonly width: number) {
    this.segments = Math.ceil(HASH_SPACE / width);
    this.rows = new Uint32Array(this.segments);
    this.sums = new Uint32Array(this.segments);
  }

  /** Counts one key of hash `h` (0 ≤ h < 2^32) in its segment. */
  add(h: number): void {
    const g = Math.floor(h / this.width);
    this.rows[g] = (this.rows[g] as number) + 1;
    this.sums[g] = (this.sums[g] as number) + h; // a Uint32Array wraps: the sum mod 2^32
  }

  /** Counts a task that is not done in the segment of its hash (task side only). */
  addNotDone(h: number): void {
    this.notDone ??= new Uint32Array(this.segments);
    const g = Math.floor(h / this.width);
    this.notDone[g] = (this.notDone[g] as number) + 1;
  }

  /** Segment `g`'s digest, into `out` when given (a level is compared without an object per segment). */
  digest(g: number, out: SegmentDigest = { rows: 0, hashSum: 0, notDone: 0 }): SegmentDigest {
    out.rows = this.rows[g] as number;
    out.hashSum = this.sums[g] as number;
    out.notDone = this.notDone?.[g] ?? 0;
    return out;
  }

  /** Whether segment `g` holds no key (and no task not done). */
  empty(g: number): boolean {
    return this.rows[g] === 0 && !this.notDone?.[g];
  }
}

/**
 * Compares two sides' dense digests of one width, segment by segment (segmentConsistent).
 * Out: how many segments hold a key on either side, and those that need a closer look.
 */
export function denseMismatches(
  tasks: DenseDigests,
  business: DenseDigests,
): { segments: number; mismatched: SegmentMismatch[] } {
  if (tasks.width !== business.width) throw new Error('dense digests of different widths compared');
  let segments = 0;
  const mismatched: SegmentMismatch[] = [];
  const [t, b] = [emptyDigest(), emptyDigest()];
  for (let g = 0; g < tasks.segments; g++) {
    if (tasks.empty(g) && business.empty(g)) continue;
    segments++;
    tasks.digest(g, t);
    business.digest(g, b);
    if (!segmentConsistent(t, b)) mismatched.push({ id: g, rows: Math.max(t.rows, b.rows) });
  }
  return { segments, mismatched };
}

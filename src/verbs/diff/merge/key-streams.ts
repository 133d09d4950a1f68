import type { KeyRuns } from '../../../core/diff-weights.js';
import type { RowEncoder } from '../../../db/types.js';

/**
 * The encoders the merge walk drains its two key streams into: business keys into runs of equal
 * weights, then tasks matched against those runs, read off the wire with no JS value per row.
 */

/** Business rows into runs of equal weights (columns: weight, key). Nothing comes out. */
export class BusinessRowsIn implements RowEncoder {
  readonly pending = 0;
  constructor(private readonly runs: KeyRuns) {}
  encode(buf: Buffer, starts: Int32Array, ends: Int32Array): void {
    const [weightStart, keyStart] = [starts[0] as number, starts[1] as number];
    if (weightStart < 0 || keyStart < 0) return;
    this.runs.add(buf, weightStart, ends[0] as number, keyStart, ends[1] as number);
  }
  take(): Buffer {
    return Buffer.alloc(0);
  }
}

/**
 * Tasks matched against the runs (columns: weight, id); the ids of tasks that match none come
 * out, each as a 4-byte length and its bytes, when `suspects` is set.
 */
export class TaskRowsIn implements RowEncoder {
  rows = 0;
  unmatched = 0;
  private out = Buffer.allocUnsafe(1 << 16);
  private used = 0;
  constructor(
    private readonly runs: KeyRuns,
    private readonly suspects: boolean,
  ) {}
  get pending(): number {
    return this.used;
  }
  encode(buf: Buffer, starts: Int32Array, ends: Int32Array): void {
    const weightStart = starts[0] as number;
    if (weightStart < 0) return;
    this.rows++;
    if (this.runs.match(buf, weightStart, ends[0] as number)) return;
    this.unmatched++;
    if (!this.suspects) return;
    const [idStart, idEnd] = [starts[1] as number, ends[1] as number];
    if (idStart < 0) return;
    const need = this.used + 4 + (idEnd - idStart);
    if (need > this.out.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.out.length * 2));
      this.out.copy(grown, 0, 0, this.used);
      this.out = grown;
    }
    this.out.writeUInt32LE(idEnd - idStart, this.used);
    for (let i = idStart, j = this.used + 4; i < idEnd; i++, j++) this.out[j] = buf[i] as number;
    this.used = need;
  }
  take(): Buffer {
    const taken = Buffer.from(this.out.subarray(0, this.used));
    this.used = 0;
    return taken;
  }
}

/** The ids in a chunk of TaskRowsIn's output: integers as numbers when exact, else text. */
export function* idsIn(bytes: Buffer): Iterable<number | string> {
  for (let at = 0; at + 4 <= bytes.length;) {
    const length = bytes.readUInt32LE(at);
    const text = bytes.toString('utf8', at + 4, at + 4 + length);
    at += 4 + length;
    yield /^-?\d{1,15}$/.test(text) ? Number(text) : text;
  }
}

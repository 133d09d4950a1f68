import { KeyRuns } from '../../core/diff-weights.js';
import { nullKeyTasks } from '../../db/sql/diff-checksum.js';
import {
  duplicateCandidates,
  missingByIds,
  nullKeyBusinessRows,
  orphansByKeys,
  ROLE_DONE,
} from '../../db/sql/diff.js';
import {
  businessRangeDigest,
  businessWeights,
  taskRangeDigest,
  taskWeights,
  type RangeDigest,
} from '../../db/sql/diff-merge.js';
import { drainEncoded } from '../../db/encoded-stream.js';
import type { Queryable, RowEncoder } from '../../db/types.js';
import type { PreparedRule } from './prepare.js';
import { orphanFinding, taskFinding } from './findings.js';
import {
  businessKeyRanges,
  emitClassified,
  KEYS_PER_LOOKUP,
  type KeyRange,
  type Walk,
  type WalkOptions,
} from './walk.js';

/**
 * The merge walk of a same-server diff, for keys that are text of one collation on both sides
 * (MariaDB/MySQL): the business key index and the task (biz type, key) index are read in key
 * order, range by range, with each key's collation weight, and merged in the client — a merge
 * join, where a LEFT JOIN would look every row up in the other index. Keys whose weights meet
 * are matched; a key whose weight meets none is only a suspect, checked by the exact join
 * statements (missingByIds, orphansByKeys), so the answer is the server's even where a weight
 * comparison would not be. Business keys with several rows are classified as the join walk
 * does. Memory holds one range's business keys (at most MAX_SPAN rows) and a batch of suspects.
 */

/** Business rows per range at most: the range's keys are held while its tasks stream past. */
const MAX_SPAN = 50_000;

/** What the merge walk counted: the rule's tasks (any time) it read. */
export interface MergeTally {
  tasks: number;
}

/** Business rows into runs of equal weights (columns: weight, key). Nothing comes out. */
class BusinessRowsIn implements RowEncoder {
  readonly pending = 0;
  constructor(private readonly runs: KeyRuns) {}
  encode(buf: Buffer, starts: Int32Array, ends: Int32Array): void {
    const [ws, ks] = [starts[0] as number, starts[1] as number];
    if (ws < 0 || ks < 0) return;
    this.runs.add(buf, ws, ends[0] as number, ks, ends[1] as number);
  }
  take(): Buffer {
    return Buffer.alloc(0);
  }
}

/**
 * Tasks matched against the runs (columns: weight, id); the ids of tasks that match none come
 * out, each as a 4-byte length and its bytes, when `suspects` is set.
 */
class TaskRowsIn implements RowEncoder {
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
    const ws = starts[0] as number;
    if (ws < 0) return;
    this.rows++;
    if (this.runs.match(buf, ws, ends[0] as number)) return;
    this.unmatched++;
    if (!this.suspects) return;
    const [is, ie] = [starts[1] as number, ends[1] as number];
    if (is < 0) return;
    const need = this.used + 4 + (ie - is);
    if (need > this.out.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.out.length * 2));
      this.out.copy(grown, 0, 0, this.used);
      this.out = grown;
    }
    this.out.writeUInt32LE(ie - is, this.used);
    for (let i = is, j = this.used + 4; i < ie; i++, j++) this.out[j] = buf[i] as number;
    this.used = need;
  }
  take(): Buffer {
    const taken = Buffer.from(this.out.subarray(0, this.used));
    this.used = 0;
    return taken;
  }
}

/** The ids in a chunk of TaskRowsIn's output: integers as numbers when exact, else text. */
function* idsIn(bytes: Buffer): Iterable<number | string> {
  for (let at = 0; at + 4 <= bytes.length;) {
    const length = bytes.readUInt32LE(at);
    const text = bytes.toString('utf8', at + 4, at + 4 + length);
    at += 4 + length;
    yield /^-?\d{1,15}$/.test(text) ? Number(text) : text;
  }
}

function sameDigest(a: RangeDigest, b: RangeDigest): boolean {
  return a.n === b.n && a.s === b.s && a.x === b.x;
}

/** In batches of KEYS_PER_LOOKUP: what `each` does with them is awaited batch by batch. */
async function inBatches<T>(items: Iterable<T>, each: (batch: T[]) => Promise<void>): Promise<void> {
  let batch: T[] = [];
  for (const item of items) {
    batch.push(item);
    if (batch.length >= KEYS_PER_LOOKUP) {
      await each(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await each(batch);
}

/** The merge walk: business key ranges (see businessKeyRanges) of at most MAX_SPAN rows. */
export function mergeWalk(
  p: PreparedRule,
  space: Buffer | null,
  options: WalkOptions,
  progress: (text: string) => void,
  tally: MergeTally,
): Walk {
  // Whether the next range is digested first: not right after one that differed, where
  // differences are likely to go on (the digest would only add a scan).
  let digest = true;
  // Runs of finished ranges, reused: a range's keys reach megabytes, allocated once per worker.
  const spare: KeyRuns[] = [];
  return businessKeyRanges(
    p,
    options,
    progress,
    async (q, range) => {
      const runs = spare.pop() ?? new KeyRuns(space);
      runs.reset();
      try {
        digest = !(await mergeRange(q, p, runs, { ...range, digest }, options, tally));
      } finally {
        spare.push(runs);
      }
    },
    MAX_SPAN,
  );
}

/** A range of the merge walk; `digest`: compare digests before reading keys. */
interface MergeRange extends KeyRange {
  digest: boolean;
}

/**
 * One range: unless its digests agree, its business keys into `runs` (empty) and its tasks merged
 * against them; then the suspects checked by the server — tasks matching no run (missing?), runs
 * matching no task (orphans?) — and the runs of several rows classified (duplicates). The last
 * range also takes the NULL keys. Resolves whether the two sides' keys differed.
 */
async function mergeRange(
  q: Queryable,
  p: PreparedRule,
  runs: KeyRuns,
  range: MergeRange,
  options: WalkOptions,
  tally: MergeTally,
): Promise<boolean> {
  const differed =
    range.digest && (await sameKeys(q, p, range, tally))
      ? false
      : await mergeKeys(q, p, runs, range, options, tally);
  if (range.last) await nullKeys(q, p, options, tally);
  return differed;
}

/**
 * Whether the range's digests agree — the same keys, byte for byte, as often on each side, so
 * nothing is missing, duplicated or orphaned there; its tasks are then counted.
 */
async function sameKeys(
  q: Queryable,
  p: PreparedRule,
  { after, upTo }: KeyRange,
  tally: MergeTally,
): Promise<boolean> {
  const tasksDigest = await taskRangeDigest(q, p.task, after, upTo);
  if (!sameDigest(tasksDigest, await businessRangeDigest(q, p.business, after, upTo))) return false;
  tally.tasks += Number(tasksDigest.n);
  return true;
}

/** The keys of a range read and merged (see mergeRange). Resolves whether any key was left unmatched or repeated. */
async function mergeKeys(
  q: Queryable,
  p: PreparedRule,
  runs: KeyRuns,
  { after, upTo }: MergeRange,
  options: WalkOptions,
  tally: MergeTally,
): Promise<boolean> {
  const { expect, orphans } = p.rule.business;
  const wantMissing = expect !== 'at-most-one';
  let unmatchedTasks = 0;
  const business = businessWeights(p.business, after, upTo);
  await drainEncoded(p.businessDb, business, new BusinessRowsIn(runs));
  runs.seal();
  if (wantMissing || orphans) {
    const tasks = taskWeights(p.task, after, upTo);
    const matched = new TaskRowsIn(runs, wantMissing);
    const suspects: (number | string)[] = [];
    const check = async (ids: (number | string)[]) => {
      for (const row of await missingByIds(q, p.task, p.business, ids)) {
        await options.emit(taskFinding(p, 'missing', row, 0));
      }
    };
    await drainEncoded(p.source.db, tasks, matched, async (bytes) => {
      for (const id of idsIn(bytes)) {
        suspects.push(id);
        if (suspects.length >= KEYS_PER_LOOKUP) await check(suspects.splice(0));
      }
    });
    if (suspects.length > 0) await check(suspects.splice(0));
    tally.tasks += matched.rows;
    unmatchedTasks = matched.unmatched;
  }
  if (orphans) {
    await inBatches(runs.unmatched(), async (keys) => {
      for (const row of await orphansByKeys(q, p.task, p.business, keys)) {
        await options.emit(orphanFinding(p, row.k, Number(row.n)));
      }
    });
  }
  if (expect !== 'at-least-one') {
    await inBatches(runs.repeated(), async (keys) =>
      emitClassified(q, p, 'done', await duplicateCandidates(q, p.task, p.business, keys), options),
    );
  }
  return unmatchedTasks > 0 || !runs.clean();
}

/** NULL keys match nothing: done tasks with one are missing, business rows with one are orphans. */
async function nullKeys(
  q: Queryable,
  p: PreparedRule,
  options: WalkOptions,
  tally: MergeTally,
): Promise<void> {
  const tasks = await nullKeyTasks(q, p.crossTask);
  tally.tasks += tasks.length;
  if (p.rule.business.expect !== 'at-most-one') {
    for (const row of tasks) {
      if (Number(row.r) === ROLE_DONE && Number(row.w) === 1) {
        await options.emit(taskFinding(p, 'missing', { ...row, k: null }, 0));
      }
    }
  }
  if (p.rule.business.orphans) {
    const rows = await nullKeyBusinessRows(q, p.business);
    if (rows > 0) await options.emit(orphanFinding(p, null, rows));
  }
}

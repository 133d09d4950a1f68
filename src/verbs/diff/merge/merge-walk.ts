import { KeyRuns } from '../../../core/diff-weights.js';
import { store, ROLE_DONE, type RangeDigest } from '../../../db/port/index.js';
import { drainEncoded } from '../../../db/encoded-stream.js';
import type { Queryable } from '../../../db/types.js';
import type { MergePlan } from '../plan.js';
import { emitClassified, KEYS_PER_LOOKUP } from '../walk/classify.js';
import { orphanFinding, taskFinding } from '../walk/findings.js';
import { businessKeyRanges, type KeyRange } from '../walk/key-ranges.js';
import type { Walk, WalkOptions } from '../walk/workers.js';
import { BusinessRowsIn, idsIn, TaskRowsIn } from './key-streams.js';

/**
 * The merge walk of the merge strategy, for keys that are text of one collation on both sides
 * (MariaDB/MySQL) or compared byte-wise (PostgreSQL): the business key index and the task
 * (biz type, key) index are read in weight order, range by range, with each key's weight (its
 * collation weight, or its bytes), and merged in the client — a merge
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

function sameDigest(tasks: RangeDigest, business: RangeDigest): boolean {
  return tasks.n === business.n && tasks.s === business.s && tasks.x === business.x;
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
  plan: MergePlan,
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
    plan,
    options,
    progress,
    async (q, range) => {
      const runs = spare.pop() ?? new KeyRuns(plan.space);
      runs.reset();
      try {
        digest = !(await mergeRange(q, plan, runs, { ...range, digest }, options, tally));
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
  plan: MergePlan,
  runs: KeyRuns,
  range: MergeRange,
  options: WalkOptions,
  tally: MergeTally,
): Promise<boolean> {
  const differed =
    range.digest && (await sameKeys(q, plan, range, tally))
      ? false
      : await mergeKeys(q, plan, runs, range, options, tally);
  if (range.last) await nullKeys(q, plan, options, tally);
  return differed;
}

/**
 * Whether the range's digests agree — the same keys, byte for byte, as often on each side, so
 * nothing is missing, duplicated or orphaned there; its tasks are then counted.
 */
async function sameKeys(
  q: Queryable,
  plan: MergePlan,
  { after, upTo }: KeyRange,
  tally: MergeTally,
): Promise<boolean> {
  const tasksDigest = await store.diff.taskRangeDigest(q, plan.task, after, upTo);
  if (
    !sameDigest(
      tasksDigest,
      await store.diff.businessRangeDigest(q, plan.task.dialect, plan.business, after, upTo),
    )
  )
    return false;
  tally.tasks += Number(tasksDigest.n);
  return true;
}

/** The keys of a range read and merged (see mergeRange). Resolves whether any key was left unmatched or repeated. */
async function mergeKeys(
  q: Queryable,
  plan: MergePlan,
  runs: KeyRuns,
  { after, upTo }: MergeRange,
  options: WalkOptions,
  tally: MergeTally,
): Promise<boolean> {
  const { expect, orphans } = plan.rule.business;
  const wantMissing = expect !== 'at-most-one';
  let unmatchedTasks = 0;
  const business = store.diff.businessWeights(plan.task.dialect, plan.business, after, upTo);
  await drainEncoded(plan.businessDb, business, new BusinessRowsIn(runs));
  runs.seal();
  if (wantMissing || orphans) {
    const tasks = store.diff.taskWeights(plan.task, after, upTo);
    const matched = new TaskRowsIn(runs, wantMissing);
    const suspects: (number | string)[] = [];
    const check = async (ids: (number | string)[]) => {
      for (const row of await store.diff.missingByIds(q, plan.task, plan.business, ids)) {
        await options.emit(taskFinding(plan, 'missing', row, 0));
      }
    };
    await drainEncoded(plan.source.db, tasks, matched, async (bytes) => {
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
      for (const row of await store.diff.orphansByKeys(q, plan.task, plan.business, keys)) {
        await options.emit(orphanFinding(plan, row.k, Number(row.n)));
      }
    });
  }
  if (expect !== 'at-least-one') {
    await inBatches(runs.repeated(), async (keys) =>
      emitClassified(
        q,
        plan,
        'done',
        await store.diff.duplicateCandidates(q, plan.task, plan.business, keys),
        options,
      ),
    );
  }
  return unmatchedTasks > 0 || !runs.clean();
}

/** NULL keys match nothing: done tasks with one are missing, business rows with one are orphans. */
async function nullKeys(
  q: Queryable,
  plan: MergePlan,
  options: WalkOptions,
  tally: MergeTally,
): Promise<void> {
  const tasks = await store.diff.nullKeyTasks(q, plan.nullKeyTasks);
  tally.tasks += tasks.length;
  if (plan.rule.business.expect !== 'at-most-one') {
    for (const row of tasks) {
      if (Number(row.r) === ROLE_DONE && Number(row.w) === 1) {
        await options.emit(taskFinding(plan, 'missing', { ...row, k: null }, 0));
      }
    }
  }
  if (plan.rule.business.orphans) {
    const rows = await store.diff.nullKeyBusinessRows(q, plan.business);
    if (rows > 0) await options.emit(orphanFinding(plan, null, rows));
  }
}

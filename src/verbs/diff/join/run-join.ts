import { store } from '../../../db/port/index.js';
import type { Queryable } from '../../../db/types.js';
import type { JoinPlan } from '../plan.js';
import { emitClassified, KEYS_PER_LOOKUP } from '../walk/classify.js';
import { orphanFinding } from '../walk/findings.js';
import { businessKeyRanges, type KeyRange } from '../walk/key-ranges.js';
import { taskWalk } from '../walk/task-walk.js';
import {
  DEFAULT_PARALLEL,
  progressLine,
  runWorkers,
  single,
  workerDbs,
  type Walk,
  type WalkOptions,
} from '../walk/workers.js';

/**
 * The join strategy (same server, any key): the database joins, in two walks cut into chunks
 * sized toward `chunkTimeMs`:
 * - the task walk reads the task table by primary-key ranges: done tasks without a business row
 *   (missing), open tasks with one (unsettled candidates);
 * - the business walk reads the business table in key order: keys without a task (orphans), and
 *   keys with several rows, whose tasks are then looked up (duplicates).
 * The worker pool shares both walks: a worker takes the next chunk of its walk and, once that
 * walk is exhausted, helps with the other.
 */
export async function runJoin(plan: JoinPlan, options: WalkOptions): Promise<{ tasksChecked: number }> {
  const line = progressLine(options.progress);
  const tasks = await taskWalk(plan, options, line('tasks'), { missing: true, count: true });
  const business = businessWalk(plan, options, line('business'));
  const dbs = workerDbs(plan, options.parallel ?? DEFAULT_PARALLEL);
  await runWorkers(dbs, [tasks.walk, ...(business ? [business] : [])]);
  return { tasksChecked: await tasks.tasksChecked() };
}

/**
 * The business walk: business keys in order, chunks ending on a key (so a key never spans two),
 * for orphans (unless the rule leaves them out) and duplicates (unless it expects at least one).
 * A business key without an index is read in one pass.
 */
function businessWalk(
  plan: JoinPlan,
  options: WalkOptions,
  progress: (text: string) => void,
): Walk | undefined {
  if (!plan.rule.business.orphans && plan.rule.business.expect === 'at-least-one') return undefined;
  if (!plan.businessKeyIndexed) {
    return single((q) => businessChunk(q, plan, { after: undefined, upTo: undefined, last: true }, options));
  }
  return businessKeyRanges(plan, options, progress, (q, range) => businessChunk(q, plan, range, options));
}

/**
 * One chunk of the business walk, keys in (after, upTo]: its orphans, the done tasks with
 * several rows of its duplicated keys classified (only duplicates come from here: missing and
 * unsettled tasks are the task walk's), and — in the last chunk — the business rows with a NULL
 * key (orphans).
 */
async function businessChunk(
  q: Queryable,
  plan: JoinPlan,
  { after, upTo, last }: KeyRange,
  options: WalkOptions,
): Promise<void> {
  if (plan.rule.business.orphans) {
    for (const row of await store.diff.orphanChunk(q, plan.task, plan.business, after, upTo)) {
      await options.emit(orphanFinding(plan, row.k, Number(row.n)));
    }
    const nullRows = last ? await store.diff.nullKeyBusinessRows(q, plan.business) : 0;
    if (nullRows > 0) await options.emit(orphanFinding(plan, null, nullRows));
  }
  if (plan.rule.business.expect !== 'at-least-one') {
    const keys = await store.diff.duplicateKeys(q, plan.business, after, upTo);
    for (let i = 0; i < keys.length; i += KEYS_PER_LOOKUP) {
      const batch = keys.slice(i, i + KEYS_PER_LOOKUP);
      const candidates = await store.diff.duplicateCandidates(q, plan.task, plan.business, batch);
      await emitClassified(q, plan, 'done', candidates, options);
    }
  }
}

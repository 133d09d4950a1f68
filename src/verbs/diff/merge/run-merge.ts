import type { MergePlan } from '../plan.js';
import { taskWalk } from '../walk/task-walk.js';
import { DEFAULT_PARALLEL, progressLine, runWorkers, workerDbs, type WalkOptions } from '../walk/workers.js';
import { mergeWalk, type MergeTally } from './merge-walk.js';

/**
 * The merge strategy (same server, text keys of one single-level collation, both indexed, no
 * business `where`): the merge walk (merge-walk.ts) finds missing, orphan and duplicated keys
 * from the two key indexes, and the task walk only looks for unsettled tasks. The worker pool
 * shares both walks.
 */
export async function runMerge(plan: MergePlan, options: WalkOptions): Promise<{ tasksChecked: number }> {
  const line = progressLine(options.progress);
  // The merge walk reads every task of the rule's biz type; without a time window that count is the answer.
  const { expect, orphans } = plan.rule.business;
  const countMerged = plan.task.window.sql === '1=1' && (expect !== 'at-most-one' || orphans);
  const tally: MergeTally = { tasks: 0 };
  const tasks = await taskWalk(plan, options, line('tasks'), { missing: false, count: !countMerged });
  const merge = mergeWalk(plan, options, line('business'), tally);
  // Each worker may hold a second connection for its stream: two of them fit the pool.
  const parallel = Math.min(options.parallel ?? DEFAULT_PARALLEL, DEFAULT_PARALLEL);
  await runWorkers(workerDbs(plan, parallel), [tasks.walk, merge]);
  return { tasksChecked: countMerged ? tally.tasks : await tasks.tasksChecked() };
}

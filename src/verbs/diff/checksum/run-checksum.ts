import { bisectDigests, type LevelRecord } from '../../../core/diff-levels.js';
import { store } from '../../../db/port/index.js';
import type { Queryable } from '../../../db/types.js';
import type { ChecksumPlan } from '../plan.js';
import type { WalkOptions } from '../walk/workers.js';
import { businessSource, taskSource } from './digest-sources.js';
import { compareNullKeys, compareSegments } from './row-level.js';

/**
 * The checksum strategy (the business table on another server): both sides digest their keys per
 * segment of the hash space and the digests are bisected (core/diff-levels.ts) until the
 * mismatching segments are small; only their rows are read and classified (row-level.ts). Keys
 * are never held for a whole table: digests are a few thousand numbers (a dense level, a few
 * megabytes of typed arrays), and row-level reads come in bounded batches. Each side runs in one
 * read-only transaction of its own server.
 */

export interface ChecksumStats {
  tasksChecked: number;
  /** Segments compared at each level, and how many mismatched; the first level compares keys as stored. */
  levels: LevelRecord[];
  rowsCompared: number;
}

export async function runChecksum(plan: ChecksumPlan, options: WalkOptions): Promise<ChecksumStats> {
  return store.diff.withReadOnly(plan.source.db, (taskQuery) =>
    store.diff.withReadOnly(plan.businessDb, (businessQuery) =>
      checksumDiff(plan, taskQuery, businessQuery, options),
    ),
  );
}

async function checksumDiff(
  plan: ChecksumPlan,
  taskQuery: Queryable,
  businessQuery: Queryable,
  options: WalkOptions,
): Promise<ChecksumStats> {
  const sides = { tasks: taskSource(plan, taskQuery), business: businessSource(plan, businessQuery) };
  const { window } = plan.task;
  // The window's tasks are counted apart (the digests read no time column); it runs alongside.
  const counted = window.sql !== '1=1' ? store.diff.countTasks(taskQuery, plan.task, window) : undefined;
  counted?.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
  const outcome = await bisectDigests(sides.tasks, sides.business, options.progress);
  let tasksChecked = counted ? await counted : outcome.taskKeys;
  const rowsCompared = await compareSegments(plan, sides, outcome.width, outcome.mismatched, options);
  tasksChecked += await compareNullKeys(plan, taskQuery, businessQuery, options);
  return { tasksChecked, levels: outcome.levels, rowsCompared };
}

import { classifyTask, isOrphan } from '../../../core/diff.js';
import { keyHash, normalizeKey } from '../../../core/diff-keys.js';
import { ROW_BATCH } from '../../../core/diff-levels.js';
import type { SegmentMismatch } from '../../../core/dense-digests.js';
import { store } from '../../../db/port/index.js';
import type { Queryable } from '../../../db/types.js';
import type { ChecksumPlan } from '../plan.js';
import { roleOfCode } from '../walk/classify.js';
import { orphanFinding, taskFinding } from '../walk/findings.js';
import type { WalkOptions } from '../walk/workers.js';
import type { ChecksumSide } from './digest-sources.js';
import { grouped } from '../../../core/grouped.js';

/**
 * The row level of a checksum diff: the segments the levels left are read from both sides in
 * batches of at most ROW_BATCH rows, grouped by normal-form key and classified with the same pure
 * functions as the same-server walks; then the NULL keys, which match nothing.
 */

interface KeyGroup {
  /** The key as the side that met it first spelled it (an orphan's is the business row's). */
  rawKey: unknown;
  rows: number;
  tasks: Array<{ id: unknown; e: unknown; s: unknown; r: unknown; w: unknown; k: unknown }>;
}

/** Reads the mismatching segments (in hash order) batch by batch. Returns the rows compared. */
export async function compareSegments(
  plan: ChecksumPlan,
  sides: { tasks: ChecksumSide; business: ChecksumSide },
  width: number,
  mismatched: readonly SegmentMismatch[],
  options: WalkOptions,
): Promise<number> {
  let rowsCompared = 0;
  let batch: number[] = [];
  let batchRows = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    rowsCompared += await compareRows(plan, sides, width, batch, options);
    options.progress(`rows: ${grouped(rowsCompared)} compared`);
    batch = [];
    batchRows = 0;
  };
  for (const segment of mismatched) {
    if (batchRows + segment.rows > ROW_BATCH) await flush();
    batch.push(segment.id);
    batchRows += segment.rows;
  }
  await flush();
  return rowsCompared;
}

/** Reads one batch of segments from both sides and classifies every task and key in it. */
async function compareRows(
  plan: ChecksumPlan,
  sides: { tasks: ChecksumSide; business: ChecksumSide },
  width: number,
  ids: number[],
  options: WalkOptions,
): Promise<number> {
  const wanted = new Set(ids);
  const groups = new Map<string, KeyGroup>();
  const group = (normal: string, rawKey: unknown): KeyGroup => {
    let found = groups.get(normal);
    if (!found) groups.set(normal, (found = { rawKey, rows: 0, tasks: [] }));
    return found;
  };
  const inBatch = (normal: string) => wanted.has(Math.floor(keyHash(normal, plan.task.hash) / width));
  let compared = 0;
  // Both sides are read at once; a group is classified only when both are done.
  const readTasks = async () => {
    for await (const raw of await sides.tasks.rows(width, ids)) {
      const task = raw as KeyGroup['tasks'][number];
      const normal = normalizeKey(task.k, plan.keySemantics);
      if (normal === null || !inBatch(normal)) continue;
      group(normal, task.k).tasks.push(task);
      compared++;
    }
  };
  const readBusiness = async () => {
    for await (const raw of await sides.business.rows(width, ids)) {
      const row = raw as { k: unknown };
      const normal = normalizeKey(row.k, plan.keySemantics);
      if (normal === null || !inBatch(normal)) continue;
      group(normal, row.k).rows++;
      compared++;
    }
  };
  await Promise.all([readTasks(), readBusiness()]);
  const expect = plan.rule.business.expect;
  for (const keyGroup of groups.values()) {
    if (isOrphan(keyGroup.tasks.length, keyGroup.rows)) {
      if (!plan.rule.business.orphans) continue;
      await options.emit(orphanFinding(plan, keyGroup.rawKey, keyGroup.rows));
      continue;
    }
    const doneTasks = keyGroup.tasks.filter((task) => roleOfCode(task.r) === 'done').length;
    const counts = { rows: keyGroup.rows, tasks: keyGroup.tasks.length, doneTasks };
    for (const task of keyGroup.tasks) {
      if (Number(task.w) !== 1) continue;
      const kind = classifyTask(roleOfCode(task.r), counts, expect);
      if (kind) await options.emit(taskFinding(plan, kind, task, keyGroup.rows));
    }
  }
  return compared;
}

/**
 * NULL keys match nothing: a done task with one is missing, a business row with one is an orphan.
 * Returns how many tasks with a NULL key are in the window (they count as checked).
 */
export async function compareNullKeys(
  plan: ChecksumPlan,
  taskQuery: Queryable,
  businessQuery: Queryable,
  options: WalkOptions,
): Promise<number> {
  let checked = 0;
  for (const task of await store.diff.nullKeyTasks(taskQuery, plan.task)) {
    if (Number(task.w) !== 1) continue;
    checked++;
    const kind = classifyTask(
      roleOfCode(task.r),
      { rows: 0, tasks: 1, doneTasks: 0 },
      plan.rule.business.expect,
    );
    if (kind) await options.emit(taskFinding(plan, kind, { ...task, k: null }, 0));
  }
  const rows = plan.rule.business.orphans
    ? await store.diff.nullKeyBusinessRows(businessQuery, plan.business)
    : 0;
  if (rows > 0) await options.emit(orphanFinding(plan, null, rows));
  return checked;
}

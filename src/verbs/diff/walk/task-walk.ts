import { FIRST_CHUNK_SPAN, nextChunkSpan } from '../../../core/diff.js';
import { store, type ChunkRange as IdRange } from '../../../db/port/index.js';
import { isColumn } from '../../../db/dialect.js';
import type { Queryable } from '../../../db/types.js';
import type { SameServerPlan } from '../plan.js';
import { emitClassified } from './classify.js';
import { taskFinding } from './findings.js';
import { serialized, single, type Chunk, type Walk, type WalkOptions } from './workers.js';
import { grouped } from '../../../core/grouped.js';

/** What the task walk does besides unsettled tasks: missing ones (unless the merge walk finds them), the count. */
export interface TaskParts {
  missing: boolean;
  count: boolean;
}

export interface TaskWalk {
  walk: Walk;
  /** The rule's tasks in the window, once the walk is done. */
  tasksChecked: () => Promise<number>;
}

/**
 * The task walk of both same-server strategies: primary-key ranges from the smallest id to the
 * largest one at the start (rows inserted during the run are not looked at), a chunk never
 * starting inside a gap, each sized toward `chunkTimeMs`.
 */
export async function taskWalk(
  plan: SameServerPlan,
  options: WalkOptions,
  progress: (text: string) => void,
  parts: TaskParts,
): Promise<TaskWalk> {
  if (!chunkableIds(plan)) {
    // Ids that are not integers cannot be ranged by arithmetic: one pass (still only findings come back).
    let checked = 0;
    const walk = single(async (q) => {
      await taskChunk(q, plan, undefined, options, parts);
      if (parts.count) checked = await store.diff.countChunkTasks(q, plan.task, undefined);
    });
    return { walk, tasksChecked: async () => checked };
  }
  const range = await store.diff.withReadOnly(plan.source.db, (q) => store.diff.taskIdRange(q, plan.task));
  if (!range) return { walk: { next: async () => undefined }, tasksChecked: async () => 0 };
  const [min, max] = range;
  // Without a time window the rule's tasks are counted once from the (biz type, key) index; with
  // one, each chunk counts its own (the window's column is in the rows just read).
  const perChunkCount = parts.count && plan.task.window.sql !== '1=1';
  // The count reads another index than the walk: on its own connection it runs alongside.
  const counted =
    perChunkCount || !parts.count
      ? undefined
      : store.diff.withReadOnly(plan.source.db, (q) =>
          store.diff.countChunkTasks(q, plan.task, { lo: min, hi: max }),
        );
  counted?.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
  const cursor = { lo: min as number | undefined, span: FIRST_CHUNK_SPAN, through: min - 1, checked: 0 };
  const next = serialized(async (q: Queryable): Promise<Chunk | undefined> => {
    if (cursor.lo === undefined) return undefined;
    const chunk = { lo: cursor.lo, hi: Math.min(max, cursor.lo + cursor.span - 1) };
    const span = cursor.span;
    const following = chunk.hi >= max ? undefined : await store.diff.nextTaskId(q, plan.task, chunk.hi + 1);
    cursor.lo = following === undefined || following > max ? undefined : following;
    return async (cq) => {
      const started = performance.now();
      await taskChunk(cq, plan, chunk, options, parts);
      const inChunk = perChunkCount ? await store.diff.countChunkTasks(cq, plan.task, chunk) : 0;
      cursor.checked += inChunk; // not `+= await`: that adds to a total read before another chunk added
      cursor.span = nextChunkSpan(span, performance.now() - started, options.chunkTimeMs);
      cursor.through = Math.max(cursor.through, chunk.hi);
      progress(
        `tasks: id ${grouped(cursor.through)} of ${grouped(max)} (${Math.floor(((cursor.through - min + 1) / (max - min + 1)) * 100)}%)`,
      );
    };
  });
  return { walk: { next }, tasksChecked: async () => (counted ? counted : cursor.checked) };
}

/** Whether the task ids are integers (ranged by arithmetic); an unknown id column is assumed so. */
function chunkableIds(plan: SameServerPlan): boolean {
  const { source } = plan;
  const idColumn = source.columns.find((c) => isColumn(source.db.dialect, plan.task.id, c.name));
  return !idColumn || /int/.test(idColumn.dataType);
}

/**
 * One chunk of the task walk: its missing tasks (a done task without a business row is missing
 * whatever its siblings), then its open tasks with business rows, classified against the done
 * tasks sharing their key.
 */
async function taskChunk(
  q: Queryable,
  plan: SameServerPlan,
  range: IdRange,
  options: WalkOptions,
  parts: TaskParts,
): Promise<void> {
  if (parts.missing && plan.rule.business.expect !== 'at-most-one') {
    for (const row of await store.diff.missingChunk(q, plan.task, plan.business, range)) {
      await options.emit(taskFinding(plan, 'missing', row, 0));
    }
  }
  const candidates = await store.diff.unsettledCandidates(q, plan.task, plan.business, range);
  await emitClassified(q, plan, 'open', candidates, options);
}

import type { Task, TaskId } from '../core/task.js';
import type { BoundSource } from '../db/bind-source.js';
import { tasksByIds } from '../verbs/scan/index.js';

/** Rows a preview page shows of its frozen set. */
export const SAMPLE_ROWS = 20;

/** The first frozen tasks as they are now, in the frozen (list) order (a frozen task moved meanwhile shows its new status). */
export async function sampleTasks(source: BoundSource, ids: readonly TaskId[]): Promise<Task[]> {
  return tasksByIds(source, ids.slice(0, SAMPLE_ROWS));
}

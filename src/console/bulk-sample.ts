import type { Task, TaskId } from '../core/task.js';
import type { BoundSource } from '../db/bind-source.js';
import { store } from '../db/port/index.js';

/** Rows a preview page shows of its frozen set. */
export const SAMPLE_ROWS = 20;

/** The first frozen tasks as they are now (a frozen task moved meanwhile shows its new status). */
export async function sampleTasks(source: BoundSource, ids: readonly TaskId[]): Promise<Task[]> {
  const first = ids.slice(0, SAMPLE_ROWS);
  const order = new Map(first.map((id, i) => [String(id), i]));
  const tasks = (await store.tasks.selectTasksByIds(source, first)).map((r) => source.sql.toTask(r));
  // In the frozen (list) order.
  return tasks.sort((a, b) => (order.get(String(a.id)) ?? 0) - (order.get(String(b.id)) ?? 0));
}

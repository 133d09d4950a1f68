import type { TaskId } from '../core/task.js';
import type { BoundSource } from '../db/bind-source.js';
import type { AuditEntry } from '../verbs/audit/index.js';
import { tasksByIds } from '../verbs/scan/index.js';
import { parseTaskId } from '../verbs/show/index.js';

/**
 * Which audit entries may link to a task page: those of this source's table whose task is still
 * there (a forgotten task, a drill's sandbox task or a broker job has no page to open).
 */
export async function existingTaskLinks(
  source: BoundSource,
  entries: readonly AuditEntry[],
): Promise<(e: AuditEntry) => boolean> {
  const own = (e: AuditEntry) => e.source === source.name && e.table === source.profile.table;
  const ids: TaskId[] = [];
  for (const e of entries) {
    if (!own(e)) continue;
    try {
      ids.push(parseTaskId(source, e.taskId));
    } catch {
      // not an id of this table: no link
    }
  }
  const found = new Set(
    ids.length ? (await tasksByIds(source, [...new Set(ids)])).map((t) => String(t.id)) : [],
  );
  return (e) => own(e) && found.has(e.taskId);
}

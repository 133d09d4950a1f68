import { store, type ConsoleAuditFilter } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { toAuditEntry, type AuditEntry } from '../../ops/audit-trail.js';

/** What a page of the audit log filters on: the source, and optionally operator, action, task id, run id. */
export type AuditPageFilter = ConsoleAuditFilter;

/** One page of the audit log, and the id to page on from when older entries exist. */
export interface AuditPage {
  /** Newest first. */
  entries: AuditEntry[];
  /** The oldest entry's id: the next page starts before it. Undefined on the last page. */
  older: number | undefined;
}

/**
 * Up to `size` entries of the audit log before entry `beforeId` (undefined: the newest), keyset on
 * the primary key walked backwards; an empty page when the audit table does not exist. Reads only.
 */
export async function auditPage(
  db: Db,
  filter: AuditPageFilter,
  beforeId: number | undefined,
  size: number,
): Promise<AuditPage> {
  if (!(await store.audit.tableExists(db))) return { entries: [], older: undefined };
  const ids = await store.audit.selectIdsBefore(db, db.dialect, filter, beforeId, size + 1);
  const shown = ids.slice(0, size);
  const oldest = shown[shown.length - 1];
  let entries: AuditEntry[] = [];
  if (oldest !== undefined) {
    const records = await store.audit.selectPage(
      db,
      db.dialect,
      {
        source: filter.source,
        runId: filter.runId,
        operator: filter.operator,
        actions: filter.action ? [filter.action] : undefined,
        taskIds: filter.taskId ? [filter.taskId] : undefined,
      },
      oldest - 1,
      shown.length,
    );
    entries = records.map(toAuditEntry).reverse();
  }
  return { entries, older: ids.length > size ? oldest : undefined };
}

import { expandAuditRecord, store, type AuditFilter } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { requireAuditTable, toAuditEntry, type AuditEntry } from '../../ops/audit-trail.js';

export {
  auditHistory,
  missingAuditTable,
  requireAuditTable,
  toAuditEntry,
  type AuditEntry,
} from '../../ops/audit-trail.js';

export interface AuditQuery extends AuditFilter {
  /** The newest N entries (oldest first); 0 means every entry. */
  limit: number;
}

/** The newest `limit` entries matching the filter, oldest first. */
export async function latestAudit(db: Db, query: AuditQuery): Promise<AuditEntry[]> {
  await requireAuditTable(db);
  return (await store.audit.selectLatest(db, db.dialect, query, query.limit)).map(toAuditEntry);
}

/**
 * Every entry matching the filter, oldest first, a page of rows at a time, a job-batch row expanded
 * only when its entries are reached (constant memory: one batch's entries at a time, hence pages
 * of a few hundred rows).
 */
export async function* streamAudit(db: Db, filter: AuditFilter, pageSize = 200): AsyncGenerator<AuditEntry> {
  await requireAuditTable(db);
  let after = 0;
  for (;;) {
    const page = await store.audit.selectPage(db, db.dialect, filter, after, pageSize, false);
    for (const row of page)
      for (const record of expandAuditRecord(row, filter.taskIds)) yield toAuditEntry(record);
    if (page.length < pageSize) return;
    after = page[page.length - 1]?.id ?? after;
  }
}

import type { TaskId } from '../core/task.js';
import { AUDIT_TABLE } from '../db/ddl.js';
import { store, type AuditFilter, type AuditRecord } from '../db/port/index.js';
import type { Db } from '../db/types.js';
import { TaskreconError } from '../errors.js';

/** One audit entry of the JSON contract: who did what to which task, before and after, and why. */
export interface AuditEntry {
  id: number;
  /** When, by the database clock (ISO-8601 UTC, milliseconds). */
  at: string;
  operator: string;
  host: string;
  action: string;
  source: string;
  table: string;
  taskId: string;
  eventId: string | null;
  from: string | null;
  to: string | null;
  /** The row before the change and after it (null after a delete), as JSON values. */
  before: unknown;
  after: unknown;
  reason: string | null;
  runId: string;
}

/** The audit table is missing: say how to create it. */
export function missingAuditTable(db: Db): TaskreconError {
  return new TaskreconError(`the audit table ${AUDIT_TABLE} does not exist in ${db.display}`, {
    code: 'SCHEMA',
    hint: `Create it with \`taskrecon init --audit-only\` (or \`taskrecon init --print --audit-only\` for a DBA).`,
  });
}

/** Stops with exit 3 when the audit table is missing (a change that cannot be audited is not made). */
export async function requireAuditTable(db: Db): Promise<void> {
  if (!(await store.audit.tableExists(db))) throw missingAuditTable(db);
}

function parseJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function toAuditEntry(record: AuditRecord): AuditEntry {
  return {
    id: record.id,
    at: new Date(Math.round(record.atEpoch * 1000)).toISOString(),
    operator: record.operator,
    host: record.host,
    action: record.action,
    source: record.source,
    table: record.taskTable,
    taskId: record.taskId,
    eventId: record.eventId,
    from: record.fromStatus,
    to: record.toStatus,
    before: parseJson(record.beforeJson),
    after: parseJson(record.afterJson),
    reason: record.reason,
    runId: record.runId,
  };
}

const HISTORY_PAGE = 500;

/**
 * Every audit entry of one task of one table, oldest first (for `show`). Keyed by the table, not the
 * source name, so a task changed through `--profile` and read through a named source (or the other
 * way round) shows one history. An empty list when the task was never touched by hand, or when the
 * audit table does not exist yet.
 */
export async function auditHistory(db: Db, taskTable: string, taskId: TaskId): Promise<AuditEntry[]> {
  if (!(await store.audit.tableExists(db))) return [];
  const filter: AuditFilter = { taskTable, taskIds: [String(taskId)] };
  const out: AuditEntry[] = [];
  let after = 0;
  for (;;) {
    const page = await store.audit.selectPage(db, db.dialect, filter, after, HISTORY_PAGE);
    out.push(...page.map(toAuditEntry));
    if (page.length < HISTORY_PAGE) return out;
    after = page[page.length - 1]?.id ?? after;
  }
}

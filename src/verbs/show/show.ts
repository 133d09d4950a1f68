import type { TaskDetail } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store } from '../../db/port/index.js';
import { hasNumericId, parseTaskId, parseTaskKey, type TaskKey } from '../../ops/task-id.js';
import { toText } from '../../db/task-sql.js';
import { TaskreconError } from '../../errors.js';
import { auditHistory, type AuditEntry } from '../../ops/audit-trail.js';
import { sourceInfo, type SourceInfo } from '../../ops/task-lists.js';

export { hasNumericId, parseTaskId, parseTaskKey, type TaskKey };

/** The task of `show`: every field, the payload parsed when it is JSON, the last error whole. */
export interface ShownTask extends TaskDetail {
  /** `json` when payloadText parses as JSON (then `payload` is the parsed value), `text` when not, null when empty. */
  payloadFormat: 'json' | 'text' | null;
}

/** The JSON contract of `show`. */
export interface ShowResult {
  source: SourceInfo;
  task: ShownTask;
  /** Manual changes to this task, oldest first (taskrecon_audit). */
  audit: AuditEntry[];
}

/** Splits a payload into its parsed JSON value and its text; a payload that is not JSON stays text. */
export function readPayload(raw: unknown): Pick<ShownTask, 'payload' | 'payloadText' | 'payloadFormat'> {
  // A driver may hand a JSON column over already parsed.
  if (raw !== null && typeof raw === 'object' && !Buffer.isBuffer(raw)) {
    return { payload: raw, payloadText: JSON.stringify(raw), payloadFormat: 'json' };
  }
  const text = toText(raw);
  if (text === null || text === '') return { payload: null, payloadText: text, payloadFormat: null };
  try {
    return { payload: JSON.parse(text) as unknown, payloadText: text, payloadFormat: 'json' };
  } catch {
    return { payload: null, payloadText: text, payloadFormat: 'text' };
  }
}

/** One task with its audit history; exit 3 when no row has the id. */
export async function showTask(source: BoundSource, input: string): Promise<ShowResult> {
  const { key, value } = parseTaskKey(source, input);
  const row = await store.tasks.selectTaskBy(source, key, value);
  if (!row) {
    const history = key === 'id' ? await auditHistory(source.db, source.profile.table, value) : [];
    const last = history[history.length - 1];
    throw new TaskreconError(
      `task ${input} not found in ${source.profile.table} (source ${source.name})${key === 'eventId' ? ', by id or event id' : ''}`,
      {
        code: 'NOT_FOUND',
        hint: last
          ? `The audit log says ${last.operator} did '${last.action}' on it at ${last.at}${last.to ? ` (→ ${last.to})` : ''}.`
          : 'List tasks with `taskrecon scan`; the id is the one its lists show.',
      },
    );
  }
  const task = source.sql.toTask(row);
  const payload = readPayload(row[row.length - 1]);
  return {
    source: sourceInfo(source),
    task: { ...task, ...payload },
    audit: await auditHistory(source.db, source.profile.table, task.id),
  };
}

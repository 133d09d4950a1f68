import type { Finding } from '../../core/diff.js';
import { toId, toText } from '../../db/task-sql.js';
import type { PreparedRule } from './prepare.js';

/** The findings both walks emit, built one way so that the same-server and cross-server ones read alike. */

/** A task's finding from its row: id, key, event id and raw status as the database returned them. */
export function taskFinding(
  p: PreparedRule,
  kind: Finding['kind'],
  row: { id: unknown; k: unknown; e: unknown; s: unknown },
  businessRows: number,
): Finding {
  const key = toText(row.k);
  return {
    kind,
    rule: p.rule.name,
    taskId: toId(row.id),
    key,
    bizId: p.rule.taskKey === 'bizId' ? key : null,
    eventId: toText(row.e),
    status: p.source.sql.logicalStatus(row.s),
    businessRows,
  };
}

/** A business key (null: the rows with a NULL key) with `rows` rows and no task. */
export function orphanFinding(p: PreparedRule, key: unknown, rows: number): Finding {
  return {
    kind: 'orphan',
    rule: p.rule.name,
    taskId: null,
    key: toText(key),
    bizId: null,
    eventId: null,
    status: null,
    businessRows: rows,
  };
}

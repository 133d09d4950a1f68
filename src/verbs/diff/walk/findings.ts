import type { Finding } from '../../../core/diff.js';
import { toText } from '../../../db/task-sql.js';
import type { PlanBase } from '../plan.js';

/** The findings every strategy emits, built one way so that they read alike whichever walk found them. */

/** A task's finding from its row: id, key, event id and raw status as the database returned them. */
export function taskFinding(
  plan: PlanBase,
  kind: Finding['kind'],
  row: { id: unknown; k: unknown; e: unknown; s: unknown },
  businessRows: number,
): Finding {
  const key = toText(row.k);
  return {
    kind,
    rule: plan.rule.name,
    taskId: plan.source.sql.id(row.id),
    key,
    bizId: plan.rule.taskKey === 'bizId' ? key : null,
    eventId: toText(row.e),
    status: plan.source.sql.logicalStatus(row.s),
    businessRows,
  };
}

/** A business key (null: the rows with a NULL key) with `rows` rows and no task. */
export function orphanFinding(plan: PlanBase, key: unknown, rows: number): Finding {
  return {
    kind: 'orphan',
    rule: plan.rule.name,
    taskId: null,
    key: toText(key),
    bizId: null,
    eventId: null,
    status: null,
    businessRows: rows,
  };
}

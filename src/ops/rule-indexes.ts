import type { RuleConfig } from '../config/schema.js';
import type { DiffRule } from '../core/diff.js';
import type { BoundSource } from '../db/bind-source.js';
import { columnOf } from '../db/profiles/types.js';
import { store } from '../db/port/index.js';
import type { Db, IndexInfo } from '../db/types.js';

/**
 * The indexes a diff rule reads through, and whether each exists — for `doctor`. Without them a
 * diff still gives the right answer, only slowly: every chunk's join scans the business table,
 * and every sibling or orphan lookup scans the task table.
 */
export interface RuleIndexNeed {
  rule: string;
  /** `task` (the source's table) or `business`. */
  side: 'task' | 'business';
  table: string;
  /** The columns an index must start with (in any order among themselves). */
  columns: string[];
  why: string;
  present: boolean;
  /** The existing index that serves it, if any. */
  index: string | null;
  /** DDL that would create it, for the operator to review. */
  suggestion: string | null;
}

/** An index serves `columns` when its leading columns are exactly those (any order: equality lookups). */
export function servingIndex(indexes: IndexInfo[], columns: string[]): IndexInfo | undefined {
  const wanted = new Set(columns.map((c) => c.toLowerCase()));
  return indexes.find((i) => {
    const lead = i.columns.slice(0, wanted.size).map((c) => c.toLowerCase());
    return lead.length === wanted.size && lead.every((c) => wanted.has(c));
  });
}

function need(
  db: Db,
  rule: string,
  side: RuleIndexNeed['side'],
  table: string,
  columns: string[],
  why: string,
  indexes: IndexInfo[],
): RuleIndexNeed {
  const found = servingIndex(indexes, columns);
  const name = `idx_${table}_${columns.join('_')}`.slice(0, 64);
  return {
    rule,
    side,
    table,
    columns,
    why,
    present: Boolean(found),
    index: found?.name ?? null,
    suggestion: found ? null : store.doctor.createIndexStatement(db.dialect, name, table, columns),
  };
}

/**
 * Lists the indexes `rule` needs on the task source's table and on the business table (in
 * `businessDb`, the source's own database unless the rule's business.db is elsewhere), and
 * whether each exists. Columns the profile lacks or the business table lacks are skipped (diff
 * itself reports those as errors). Reads the catalogue only.
 */
export async function ruleIndexes(
  businessDb: Db,
  rule: DiffRule | RuleConfig,
  source: BoundSource,
): Promise<RuleIndexNeed[]> {
  const out: RuleIndexNeed[] = [];
  const taskTable = source.profile.table;
  const taskIndexes = await source.db.indexes(taskTable);
  const bizType = columnOf(source.profile, 'bizType');
  const key = columnOf(source.profile, rule.taskKey ?? 'bizId');
  const id = columnOf(source.profile, 'id');
  if (id) {
    const walk = need(
      source.db,
      rule.name,
      'task',
      taskTable,
      [id],
      'walk the task table by primary-key ranges',
      taskIndexes,
    );
    // SQLite's INTEGER PRIMARY KEY is the rowid and appears in no index list.
    if (
      !walk.present &&
      (await store.diff.integerPrimaryKey(source.db, taskTable))?.toLowerCase() === id.toLowerCase()
    ) {
      Object.assign(walk, { present: true, index: 'PRIMARY', suggestion: null });
    }
    out.push(walk);
  }
  if (bizType && key) {
    out.push(
      need(
        source.db,
        rule.name,
        'task',
        taskTable,
        [bizType, key],
        'find the tasks of a business key (orphans, duplicates, tasks sharing a key), and read them in key order (merge walk)',
        taskIndexes,
      ),
    );
  }
  const businessColumns = await businessDb.columns(rule.business.table);
  const businessKey = businessColumns?.find((c) => c.name.toLowerCase() === rule.business.key.toLowerCase());
  if (businessKey) {
    const indexes = await businessDb.indexes(rule.business.table);
    out.push(
      need(
        businessDb,
        rule.name,
        'business',
        rule.business.table,
        [businessKey.name],
        'look up the business rows of each task, and walk the business table in key order',
        indexes,
      ),
    );
  }
  return out;
}

import type { TaskSql } from '../task-sql.js';
import type { Queryable } from '../types.js';

/**
 * Whether any row has this biz type (the `(biz_type, …)` index answers it with one probe).
 * In: the biz type. Out: true when a row has it. Side effects: none.
 */
export async function bizTypeExists(db: Queryable, sql: TaskSql, bizType: string): Promise<boolean> {
  const expr = sql.expr('bizType');
  if (!expr) return false;
  const rows = await db.query(`SELECT 1 AS hit FROM ${sql.table} WHERE ${expr} = ? LIMIT 1`, [bizType]);
  return rows.length > 0;
}

/**
 * The biz types the table holds, at most `limit` (for "did you mean" suggestions).
 * In: the limit. Out: distinct biz types, sorted. Side effects: none.
 */
export async function selectBizTypes(db: Queryable, sql: TaskSql, limit: number): Promise<string[]> {
  const expr = sql.expr('bizType');
  if (!expr) return [];
  const rows = await db.query(
    `SELECT DISTINCT ${expr} AS bizType FROM ${sql.table} WHERE ${expr} IS NOT NULL ORDER BY 1 LIMIT ${Number(limit)}`,
  );
  return rows.map((r) => String(r.bizType));
}

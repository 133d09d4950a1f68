import { AUDIT_TABLE } from '../ddl.js';
import type { Queryable } from '../types.js';
import type { Dialect } from '../dialect.js';

/**
 * The distinct run ids of `taskrecon_audit` that start with `prefix` (a short id as `audit`
 * displays it), at most `limit` of them.
 * In: the prefix (LIKE wildcards in it are matched literally). Out: run ids. Side effects: none.
 */
export async function selectRunIdsByPrefix(
  db: Queryable,
  dialect: Dialect,
  prefix: string,
  limit: number,
): Promise<string[]> {
  // '!' escapes the LIKE wildcards the same way on MySQL and SQLite (a backslash literal differs).
  const escaped = `${prefix.replace(/[!%_]/g, (c) => `!${c}`)}%`;
  const rows = await db.query(
    `SELECT DISTINCT ${dialect.quoteId('run_id')} AS run_id FROM ${dialect.quoteId(AUDIT_TABLE)} WHERE ${dialect.quoteId('run_id')} LIKE ? ESCAPE '!' ORDER BY 1 LIMIT ${Number(limit)}`,
    [escaped],
  );
  return rows.map((r) => String(r.run_id));
}

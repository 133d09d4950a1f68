import type { TaskSql } from '../task-sql.js';
import type { Db } from '../types.js';

/**
 * How many of the newest `limit` rows have a `next_retry_time` on a whole minute (seconds :00).
 * In: the limit. Out: rows read and rows on the minute (both 0 without the column). Side effects: none.
 */
export async function retryTimesOnTheMinute(
  db: Db,
  sql: TaskSql,
  limit: number,
): Promise<{ rows: number; onTheMinute: number }> {
  const epoch = sql.epoch('nextRetryAt');
  const id = sql.expr('id');
  if (!epoch || !id) return { rows: 0, onTheMinute: 0 };
  const rows = await db.query(
    `SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN e % 60 = 0 THEN 1 ELSE 0 END), 0) AS zero FROM (SELECT ${epoch} AS e FROM ${sql.table} WHERE ${epoch} IS NOT NULL ORDER BY ${id} DESC LIMIT ${Number(limit)}) recent`,
  );
  return { rows: Number(rows[0]?.n ?? 0), onTheMinute: Number(rows[0]?.zero ?? 0) };
}

/**
 * The server's `wait_timeout` (seconds an idle connection is kept), or null where there is none (SQLite).
 * In: nothing. Out: seconds or null. Side effects: none.
 */
export async function serverWaitTimeout(db: Db): Promise<number | null> {
  return db.engine.idleTimeout(db);
}

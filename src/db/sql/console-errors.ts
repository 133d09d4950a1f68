import type { BoundSource } from '../bind-source.js';
import type { Fragment } from '../fragment.js';

/** One distinct last error of a list and how many of its tasks carry it. */
export interface ErrorCount {
  error: string | null;
  count: number;
}

/**
 * How many tasks a list holds (the console's list total). In: the list predicate. Out: the count.
 * Reads only (the status index range of the list).
 */
export async function countList(source: BoundSource, where: Fragment): Promise<number> {
  const rows = await source.db.query<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM ${source.sql.table} WHERE ${where.sql}`,
    where.params,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * The most frequent last errors of a list, at most `limit`, most frequent first (the console groups
 * them further by their normalised text). In: the list predicate, limit. Out: error, count.
 * Reads only; undefined when the table has no error column.
 */
export async function countListByError(
  source: BoundSource,
  where: Fragment,
  limit: number,
): Promise<ErrorCount[] | undefined> {
  const error = source.sql.has('lastError') ? source.sql.expr('lastError') : undefined;
  if (!error) return undefined;
  const rows = await source.db.query<{ e: unknown; n: unknown }>(
    `SELECT ${error} AS e, COUNT(*) AS n FROM ${source.sql.table} WHERE ${where.sql} GROUP BY ${error} ORDER BY COUNT(*) DESC LIMIT ${Math.trunc(limit)}`,
    where.params,
  );
  return rows.map((r) => ({
    error:
      r.e === null || r.e === undefined ? null : Buffer.isBuffer(r.e) ? r.e.toString('utf8') : String(r.e),
    count: Number(r.n),
  }));
}

import type { BoundSource } from '../bind-source.js';
import { filterWhere, type ScanFilter } from '../fragment.js';
import type { StatusCountRow } from './scan.js';

/**
 * The summary counts in the shapes an index can answer. Counting by (status, biz type), in that
 * order, reads an index that leads with them entry by entry and groups in index order (no
 * temporary table); counting by status alone reads the status index. Neither touches a row.
 */

/**
 * Rows by stored status and biz type, grouped status first.
 * In: filter. Out: one row per (status, biz type). Reads only: a whole (status, biz_type) index
 * when there is one, else whatever the engine picks (the caller decides whether it may).
 */
export async function countByStatusAndBizType(
  source: BoundSource,
  filter: ScanFilter,
): Promise<StatusCountRow[]> {
  const { sql } = source;
  const where = filterWhere(sql, filter);
  const status = sql.rawStatusExpr();
  const bizType = sql.bizTypeExpr();
  const rows = await source.db.query<{ bizType: unknown; rawStatus: unknown; n: unknown }>(
    `SELECT ${status} AS rawStatus, ${bizType} AS bizType, COUNT(*) AS n FROM ${sql.table} WHERE ${where.sql} GROUP BY ${status}, ${bizType}`,
    where.params,
  );
  return rows.map((r) => ({
    bizType: r.bizType === null ? null : String(r.bizType),
    rawStatus: r.rawStatus,
    count: Number(r.n),
  }));
}

/**
 * Rows by stored status only (the per-biz-type figures skipped).
 * In: filter. Out: one row per status, biz type null. Reads only: the status index.
 */
export async function countByStatus(source: BoundSource, filter: ScanFilter): Promise<StatusCountRow[]> {
  const { sql } = source;
  const where = filterWhere(sql, filter);
  const status = sql.rawStatusExpr();
  const rows = await source.db.query<{ rawStatus: unknown; n: unknown }>(
    `SELECT ${status} AS rawStatus, COUNT(*) AS n FROM ${sql.table} WHERE ${where.sql} GROUP BY ${status}`,
    where.params,
  );
  return rows.map((r) => ({ bizType: null, rawStatus: r.rawStatus, count: Number(r.n) }));
}

/**
 * The engine's estimate of the table's rows (InnoDB statistics: no row is read). An embedded
 * file is never a shared primary: its estimate is 0, so nothing is ever held back there.
 * In: the source. Out: estimated rows. Reads only the catalogue.
 */
export async function estimatedRows(source: BoundSource): Promise<number> {
  return source.db.engine.estimatedRows(source.db, source.profile.table);
}

import type { TaskSql } from './task-sql.js';

/**
 * Pieces of SQL with their bound values, and the few ways they are put together. Every value is
 * bound (`?`); identifiers come quoted from TaskSql or the dialect.
 */
export interface Fragment {
  sql: string;
  params: unknown[];
}

/** `?, ?, ?` for an IN or VALUES list of these values. */
export function placeholders(values: readonly unknown[]): string {
  return values.map(() => '?').join(', ');
}

/** The parts AND-ed, each in parentheses; `1=1` parts are dropped, and no parts at all is `1=1`. */
export function and(parts: Fragment[]): Fragment {
  const kept = parts.filter((p) => p.sql !== '1=1');
  if (kept.length === 0) return { sql: '1=1', params: [] };
  return { sql: kept.map((p) => `(${p.sql})`).join(' AND '), params: kept.flatMap((p) => p.params) };
}

/** `CASE WHEN a THEN 1 WHEN b THEN 2 … ELSE otherwise END`: the value of the first predicate that holds. */
export function caseWhen(branches: ReadonlyArray<readonly [Fragment, number]>, otherwise: number): Fragment {
  return {
    sql: `CASE ${branches.map(([when, then]) => `WHEN ${when.sql} THEN ${then}`).join(' ')} ELSE ${otherwise} END`,
    params: branches.flatMap(([when]) => when.params),
  };
}

/**
 * Which rows a scan (or a compensate selection) looks at: biz types, a created-at window (epoch
 * seconds), text in the last error and queues.
 */
export interface ScanFilter {
  bizTypes?: string[];
  sinceEpoch?: number;
  untilEpoch?: number;
  /** Text the last error contains; with a `%` in it, a LIKE pattern of the last error. */
  errorLike?: string;
  queues?: string[];
}

/** The time field --since/--until apply to: createdAt, or updatedAt (failed_at) for tables without one. */
export function windowField(sql: TaskSql): 'createdAt' | 'updatedAt' | undefined {
  if (sql.has('createdAt')) return 'createdAt';
  if (sql.has('updatedAt')) return 'updatedAt';
  return undefined;
}

/** The filter as AND-ed predicates (always at least `1=1`). */
export function filterWhere(sql: TaskSql, filter: ScanFilter): Fragment {
  const parts: Fragment[] = [];
  if (filter.bizTypes?.length) {
    const col = sql.expr('bizType') as string;
    parts.push({ sql: `${col} IN (${placeholders(filter.bizTypes)})`, params: filter.bizTypes });
  }
  const field = windowField(sql);
  if (field && filter.sinceEpoch !== undefined) parts.push(sql.timeCompare(field, '>=', filter.sinceEpoch));
  if (field && filter.untilEpoch !== undefined) parts.push(sql.timeCompare(field, '<', filter.untilEpoch));
  const lastError = sql.expr('lastError');
  if (filter.errorLike !== undefined && lastError)
    parts.push(errorLike(lastError, filter.errorLike, sql.dialect.textLike));
  const queue = sql.expr('queue');
  if (filter.queues?.length && queue) parts.push(inList(queue, filter.queues));
  return and(parts);
}

/**
 * `--error-like`: text without `%` matches where it appears literally (its `_` and `!` escaped, so
 * `order_sn` never matches `orderXsn`); text with a `%` is the user's LIKE pattern as written.
 * `like` is the dialect's `textLike` (case-insensitive for ASCII on every engine).
 */
export function errorLike(columnSql: string, text: string, like: string): Fragment {
  if (text.includes('%')) return { sql: `${columnSql} ${like} ?`, params: [text] };
  return containsText(columnSql, text, like);
}

/** Text search on a column, as a LIKE of the literal text anywhere in it (no wildcards of the user's). */
export function containsText(
  columnSql: string | undefined,
  text: string | undefined,
  like: string,
): Fragment {
  if (!columnSql || text === undefined || text === '') return { sql: '1=1', params: [] };
  const literal = text.replace(/[!%_]/g, (ch) => `!${ch}`);
  return { sql: `${columnSql} ${like} ? ESCAPE '!'`, params: [`%${literal}%`] };
}

/** `column IN (?, …)` over these values. */
export function inList(columnSql: string, values: readonly unknown[]): Fragment {
  return { sql: `${columnSql} IN (${placeholders(values)})`, params: [...values] };
}

/** True where `predicate` is false or `columnSql` is NULL (a NULL makes the predicate itself NULL). */
export function notOrNull(predicate: Fragment, columnSql: string): Fragment {
  return { sql: `NOT (${predicate.sql}) OR ${columnSql} IS NULL`, params: predicate.params };
}

/** Every raw condition AND-ed as it is (conditions from the config, already checked). */
export function andRaw(conditions: readonly string[]): string {
  return conditions.length > 1 ? conditions.map((c) => `(${c})`).join(' AND ') : (conditions[0] ?? '1=1');
}

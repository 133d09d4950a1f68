import type { LogicalStatus, TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import type { Dialect } from '../dialect.js';
import { and, type Fragment } from '../fragment.js';
import { placeholders, type TaskSql } from '../task-sql.js';
import type { Queryable, Row } from '../types.js';
import type { ScanFilter } from './scan.js';
import { statusColumnOf } from '../profiles/types.js';
import { EXECUTION_STATE } from '../task-sql.js';

/**
 * Statements of manual compensation (`compensate`): selecting candidates a page at a time by id,
 * locking whole rows for the audit's before-image, deleting failed rows (forget, re-push), and
 * inserting re-pushed jobs into a database queue table. Status changes themselves go through the
 * guarded transitions of transitions.ts; every call here runs on the caller's transaction.
 */

function idIn(sql: TaskSql, ids: readonly TaskId[]): Fragment {
  const id = sql.expr('id') as string;
  return ids.length === 1
    ? { sql: `${id} = ?`, params: [...ids] }
    : { sql: `${id} IN (${placeholders(ids)})`, params: [...ids] };
}

/**
 * Where a candidate walk stands: the last (next_retry_time, id) read, and whether the rows with no
 * next_retry_time (read first, by id) are done.
 */
export interface CandidateCursor {
  nullsDone: boolean;
  nrt: number | null;
  id: TaskId | undefined;
}

/**
 * The next page of candidate ids after `cursor`. Reads along the (status, next_retry_time) index in
 * its own order — rows with no next_retry_time by id, then by (next_retry_time, id) — so a page costs
 * its own rows and no sort, however large the selection (call it once per status); a table without a
 * next-retry column is read by id.
 * In: the selection predicate (one status), cursor (undefined at the start), limit.
 * Out: ids and the cursor after them. Reads only.
 */
export async function selectCandidatePage(
  q: Queryable,
  source: BoundSource,
  where: Fragment,
  cursor: CandidateCursor | undefined,
  limit: number,
): Promise<{ ids: TaskId[]; cursor: CandidateCursor }> {
  const { sql } = source;
  const id = sql.expr('id') as string;
  const nrt = sql.expr('nextRetryAt');
  const page = async (extra: Fragment, order: string) => {
    const w = and([where, extra]);
    return q.query<{ id: TaskId; nrt: unknown }>(
      `SELECT ${id} AS id, ${nrt ? sql.epoch('nextRetryAt') : 'NULL'} AS nrt FROM ${sql.table} WHERE ${w.sql} ORDER BY ${order} LIMIT ${Math.trunc(limit)}`,
      w.params,
    );
  };
  const after = (at: TaskId | undefined): Fragment =>
    at === undefined ? { sql: '1=1', params: [] } : { sql: `${id} > ?`, params: [at] };
  if (!nrt) {
    const rows = await page(after(cursor?.id), id);
    return {
      ids: rows.map((r) => r.id),
      cursor: { nullsDone: true, nrt: null, id: rows.at(-1)?.id ?? cursor?.id },
    };
  }
  if (!cursor?.nullsDone) {
    const rows = await page(and([{ sql: `${nrt} IS NULL`, params: [] }, after(cursor?.id)]), id);
    if (rows.length > 0)
      return { ids: rows.map((r) => r.id), cursor: { nullsDone: false, nrt: null, id: rows.at(-1)?.id } };
    cursor = { nullsDone: true, nrt: null, id: undefined };
  }
  const param = sql.dialect.epochParam(sql.timeTypes.nextRetryAt ?? 'datetime');
  const from: Fragment =
    cursor.nrt === null || cursor.id === undefined
      ? { sql: `${nrt} IS NOT NULL`, params: [] }
      : {
          sql: `(${nrt} > ${param} OR (${nrt} = ${param} AND ${id} > ?))`,
          params: [cursor.nrt, cursor.nrt, cursor.id],
        };
  const rows = await page(from, `${nrt}, ${id}`);
  const last = rows.at(-1);
  return {
    ids: rows.map((r) => r.id),
    cursor: last ? { nullsDone: true, nrt: Number(last.nrt), id: last.id } : cursor,
  };
}

/**
 * How many rows the selection matches (for progress and `matched`).
 * In: the selection predicate. Out: a count. Reads only.
 */
export async function countCandidates(q: Queryable, source: BoundSource, where: Fragment): Promise<number> {
  const rows = await q.query<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM ${source.sql.table} WHERE ${where.sql}`,
    where.params,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Reads whole rows (every column) by id; with `lock`, inside a transaction, locks them until it ends
 * so no other run or worker can move them between this read and the guarded write.
 * In: ids. Out: the rows found (vanished ids are absent). Side effect: row locks when `lock`.
 */
/** The failed execution's `error` a whole row of an executions table carries beside it (Solid Queue). */
const EXECUTION_ERROR = 'taskrecon_error';

export async function selectWholeRows(
  q: Queryable,
  source: BoundSource,
  ids: readonly TaskId[],
  lock: boolean,
): Promise<Row[]> {
  if (ids.length === 0) return [];
  const { sql } = source;
  const w = idIn(sql, ids);
  // A job whose state lives in execution rows carries that state and its error (an audit's before
  // image of a discarded job keeps why it failed).
  const error = sql.executions ? sql.expr('lastError') : undefined;
  const extra = sql.executions
    ? `, ${sql.executions.rawStatusExpr()} AS ${EXECUTION_STATE}${error ? `, ${error} AS ${EXECUTION_ERROR}` : ''}`
    : '';
  return q.query<Row>(
    `SELECT ${sql.table}.*${extra} FROM ${sql.table} WHERE ${w.sql} ORDER BY ${sql.expr('id')}${lock ? sql.dialect.forUpdate : ''}`,
    w.params,
  );
}

/**
 * Deletes rows that are still in one of the expected statuses (forget, or a failed job re-pushed).
 * In: ids, expected statuses. Out: rows deleted (fewer = rows that moved on). Side effect: DELETE.
 */
export async function deleteGuarded(
  q: Queryable,
  source: BoundSource,
  ids: readonly TaskId[],
  expect: readonly LogicalStatus[],
): Promise<number> {
  if (ids.length === 0) return 0;
  const { sql } = source;
  const w = and([idIn(sql, ids), sql.statusIn(expect)]);
  const result = await q.execute(`DELETE FROM ${sql.table} WHERE ${w.sql}`, w.params);
  return result.affectedRows;
}

/** One job row for a database queue table; time columns are written from the database clock. */
export interface QueueJobInsert {
  /** Column names, already checked against the live table. */
  columns: {
    queue: string;
    payload: string;
    attempts: string;
    reservedAt: string;
    availableAt: string;
    createdAt: string;
    reservedFlag?: string;
  };
  queue: string;
  payload: string;
}

/**
 * Inserts one job into a database queue table the way the framework's `pushRaw` does: attempts 0,
 * not reserved, available now, created now (unix seconds from the database clock).
 * In: table, the job. Out: the new row's id. Side effect: one INSERT.
 */
export async function insertQueueJob(
  q: Queryable,
  dialect: Dialect,
  table: string,
  job: QueueJobInsert,
): Promise<number | string> {
  const c = job.columns;
  const names = [
    c.queue,
    c.payload,
    c.attempts,
    c.reservedAt,
    c.availableAt,
    c.createdAt,
    ...(c.reservedFlag ? [c.reservedFlag] : []),
  ];
  const now = dialect.nowOf('unix');
  const values = ['?', '?', '0', 'NULL', now, now, ...(c.reservedFlag ? ['0'] : [])];
  const result = await q.execute(
    `INSERT INTO ${dialect.quoteId(table)} (${names.map((n) => dialect.quoteId(n)).join(', ')}) VALUES (${values.join(', ')})`,
    [job.queue, job.payload],
  );
  return result.insertId;
}

/**
 * What a compensate selection may filter on, besides status: the scan filter (biz types, window,
 * error text, queues) and, when id arguments include ranges, those ids and ranges.
 */
export interface ManualFilter extends ScanFilter {
  /** Id arguments with ranges among them: the rows whose id is in a range or is one of `ids`. */
  idRanges?: { ranges: IdRange[]; ids: TaskId[] };
}

/** An inclusive id range `LO-HI`. */
export interface IdRange {
  lo: TaskId;
  hi: TaskId;
}

/** The filter's id ranges as `BETWEEN` (never expanded into ids), or-ed with its single ids (pure). */
export function idRangeWhere(sql: TaskSql, filter: ManualFilter): Fragment {
  const selection = filter.idRanges;
  if (!selection) return and([]);
  const id = sql.expr('id') as string;
  const parts: Fragment[] = selection.ranges.map((r) => ({
    sql: `${id} BETWEEN ? AND ?`,
    params: [r.lo, r.hi],
  }));
  if (selection.ids.length) parts.push(idIn(sql, selection.ids));
  return {
    sql: `(${parts.map((p) => p.sql).join(' OR ')})`,
    params: parts.flatMap((p) => p.params),
  };
}

/**
 * The first `limit` matching tasks as task objects (for the interactive picker's table).
 * In: the selection predicate, limit. Out: rows as arrays in TaskSql.taskSelect() order. Reads only.
 */
export async function selectCandidateTasks(
  source: BoundSource,
  where: Fragment,
  limit: number,
): Promise<unknown[][]> {
  const { sql } = source;
  const rows: unknown[][] = [];
  for await (const row of source.db.stream(
    `SELECT ${sql.taskSelect()} FROM ${sql.table} WHERE ${where.sql} ORDER BY ${sql.expr('id')} LIMIT ${Math.trunc(limit)}`,
    where.params,
    {
      rowsAsArray: true,
    },
  ))
    rows.push(row as unknown[]);
  return rows;
}

/**
 * The columns a manual transition writes (status, attempts, next retry, last error, updated_at),
 * read back after the write, by their real names — merged into the before-image they make the
 * after-image without reading every column (payload, errors) a second time.
 * In: ids. Out: rows of those columns and the id. Reads only (on the caller's transaction).
 */
export async function selectWrittenColumns(
  q: Queryable,
  source: BoundSource,
  ids: readonly TaskId[],
): Promise<Row[]> {
  if (ids.length === 0) return [];
  const { sql, profile } = source;
  const names = new Set<string>();
  for (const field of ['id', 'attempts', 'nextRetryAt', 'lastError', 'updatedAt'] as const) {
    const ref = profile.fields[field];
    if (ref && 'column' in ref) names.add(ref.column);
  }
  const statusColumn = statusColumnOf(profile);
  if (statusColumn) names.add(statusColumn);
  const w = idIn(sql, ids);
  return q.query<Row>(
    `SELECT ${[...names].map((n) => sql.dialect.quoteId(n)).join(', ')} FROM ${sql.table} WHERE ${w.sql}`,
    w.params,
  );
}

import type { Task, TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import type { Dialect } from '../dialect.js';
import type { Queryable } from '../types.js';

/**
 * Statements of the drill on the task table. Every write names a drill row by id AND by the run's
 * event-id prefix (`drill-<run>-`), so no statement here can change a row a drill did not write.
 */

const DRILL_PREFIX = /^drill-[0-9a-f]{4,32}-$/;

/** The LIKE pattern of a run's rows; the prefix is checked so it can hold no wildcard. */
export function drillLike(prefix: string): string {
  if (!DRILL_PREFIX.test(prefix)) throw new Error(`not a drill prefix: ${prefix}`);
  return `${prefix}%`;
}

/**
 * A business-table filter narrowed to one run's rows: the key carries the run prefix (checked to
 * hold only [0-9a-f-], so it is safe as a literal), AND-ed with the rule's own filter if any.
 */
export function drillRunFilter(dialect: Dialect, key: string, prefix: string, where?: string): string {
  const runOnly = `${dialect.quoteId(key)} LIKE '${drillLike(prefix)}'`;
  return where ? `(${where}) AND ${runOnly}` : runOnly;
}

export interface DrillTaskInsert {
  bizType: string;
  bizId: string;
  eventId: string;
  payload: string;
  maxAttempts?: number;
}

/**
 * Inserts one pending drill task, due now.
 * In: the task's biz type, biz id, event id (carrying the run prefix) and payload. Out: its id.
 * Side effect: one INSERT into the task table, times from the database clock.
 */
export async function insertDrillTask(source: BoundSource, task: DrillTaskInsert): Promise<TaskId> {
  const { sql, db } = source;
  const columns: string[] = [];
  const values: string[] = [];
  const params: unknown[] = [];
  const bind = (field: Parameters<typeof sql.expr>[0], value: unknown): void => {
    const col = sql.expr(field);
    if (!col || !('column' in (source.profile.fields[field] ?? {}))) return;
    columns.push(col);
    values.push('?');
    params.push(value);
  };
  bind('bizType', task.bizType);
  bind('bizId', task.bizId);
  bind('eventId', task.eventId);
  bind('payload', task.payload);
  bind('attempts', 0);
  if (task.maxAttempts !== undefined) bind('maxAttempts', task.maxAttempts);
  const status = source.profile.status;
  if (status.kind === 'column') {
    columns.push(db.dialect.quoteId(status.column));
    values.push('?');
    params.push(sql.rawStatus('pending'));
  }
  for (const field of sql.timeFields()) {
    columns.push(sql.expr(field) as string);
    values.push(sql.nowOf(field));
  }
  const result = await db.execute(
    `INSERT INTO ${sql.table} (${columns.join(', ')}) VALUES (${values.join(', ')})`,
    params,
  );
  if (source.profile.fields.id && result.insertId) return result.insertId;
  const [row] = await db.query<{ id: TaskId }>(
    `SELECT ${sql.expr('id')} AS id FROM ${sql.table} WHERE ${sql.expr('eventId')} = ?`,
    [task.eventId],
  );
  if (!row) throw new Error(`the drill task ${task.eventId} was not found after its INSERT`);
  return row.id;
}

/** A drill task as it stands, with its times as epoch seconds for checks against the policy. */
export interface DrillTaskRow extends Task {
  nextRetryEpoch: number | null;
  updatedEpoch: number | null;
}

/**
 * Reads one drill task.
 * In: id, run prefix. Out: the task, or undefined when it is gone. Reads only.
 */
export async function readDrillTask(
  source: BoundSource,
  id: TaskId,
  prefix: string,
): Promise<DrillTaskRow | undefined> {
  const { sql, db } = source;
  let values: unknown[] | undefined;
  const rows = db.stream(
    `SELECT ${sql.taskSelect(undefined)} FROM ${sql.table} WHERE ${sql.expr('id')} = ? AND ${sql.expr('eventId')} LIKE ?`,
    [id, drillLike(prefix)],
    { rowsAsArray: true },
  );
  for await (const row of rows) values ??= row as unknown[];
  if (!values) return undefined;
  const task = sql.toTask(values);
  const epoch = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return { ...task, nextRetryEpoch: epoch(values[6]), updatedEpoch: epoch(values[9]) };
}

/**
 * Fast-forwards a pending drill task's next retry to `epoch` instead of sleeping until it.
 * In: id, run prefix, target epoch. Out: rows changed (1, or 0 when the row is not pending).
 * Side effect: one guarded UPDATE of that drill row's next retry time.
 */
export async function fastForwardRetry(
  source: BoundSource,
  id: TaskId,
  prefix: string,
  epoch: number,
): Promise<number> {
  const { sql, db } = source;
  const pending = sql.statusIn(['pending']);
  const nrt = sql.expr('nextRetryAt') as string;
  const result = await db.execute(
    `UPDATE ${sql.table} SET ${nrt} = ${db.dialect.epochParam(sql.timeTypes.nextRetryAt ?? 'datetime')}
      WHERE ${sql.expr('id')} = ? AND ${sql.expr('eventId')} LIKE ? AND ${pending.sql}`,
    [epoch, id, drillLike(prefix), ...pending.params],
  );
  return result.affectedRows;
}

/**
 * Ages a processing drill task as if its worker had died `epoch` ago: its last touch and its
 * lease expiry (the next-retry column, where a claim writes it) both move to `epoch`.
 * In: id, run prefix, target epoch. Out: rows changed (1, or 0 when the row is not processing).
 * Side effect: one guarded UPDATE of that drill row's updated and next-retry times.
 */
export async function ageClaim(
  source: BoundSource,
  id: TaskId,
  prefix: string,
  epoch: number,
): Promise<number> {
  const { sql, db } = source;
  const processing = sql.statusIn(['processing']);
  const set: string[] = [];
  const params: unknown[] = [];
  for (const field of ['updatedAt', 'nextRetryAt'] as const) {
    const col = sql.expr(field);
    if (!col) continue;
    set.push(`${col} = ${db.dialect.epochParam(sql.timeTypes[field] ?? 'datetime')}`);
    params.push(epoch);
  }
  const result = await db.execute(
    `UPDATE ${sql.table} SET ${set.join(', ')} WHERE ${sql.expr('id')} = ? AND ${sql.expr('eventId')} LIKE ? AND ${processing.sql}`,
    [...params, id, drillLike(prefix), ...processing.params],
  );
  return result.affectedRows;
}

/**
 * Deletes every task row of a run.
 * In: run prefix. Out: rows deleted. Side effect: DELETE of the drill's own rows only.
 */
export async function deleteDrillTasks(source: BoundSource, prefix: string): Promise<number> {
  const { sql, db } = source;
  const result = await db.execute(`DELETE FROM ${sql.table} WHERE ${sql.expr('eventId')} LIKE ?`, [
    drillLike(prefix),
  ]);
  return result.affectedRows;
}

/**
 * Counts the task rows of a run (0 after cleanup).
 * In: run prefix. Out: the count. Reads only.
 */
export async function countDrillTasks(source: BoundSource, prefix: string): Promise<number> {
  const { sql, db } = source;
  const [row] = await db.query<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM ${sql.table} WHERE ${sql.expr('eventId')} LIKE ?`,
    [drillLike(prefix)],
  );
  return Number(row?.n ?? 0);
}

/** The business side of a drill: the table a diff rule names and the column keyed by the task. */
export interface EffectTable {
  table: string;
  key: string;
  /** Operator-authored read-only filter from the rule (no `;`). */
  where?: string;
  /** The rule's business DSN when the table is on another server. */
  db?: string;
}

/**
 * Counts business rows for one key (the drill's effect check when no diff is at hand).
 * In: the rule's table/key/where, the key value. Out: the count. Reads only.
 */
export async function countEffects(
  db: Queryable & { dialect: BoundSource['db']['dialect'] },
  effect: EffectTable,
  key: string,
): Promise<number> {
  const where = effect.where ? ` AND (${effect.where})` : '';
  const [row] = await db.query<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM ${db.dialect.quoteId(effect.table)} WHERE ${db.dialect.quoteId(effect.key)} = ?${where}`,
    [key],
  );
  return Number(row?.n ?? 0);
}

/**
 * Deletes the business rows a run's tasks caused (their key carries the run prefix).
 * In: the rule's table/key, run prefix. Out: rows deleted. Side effect: DELETE of drill-keyed rows only.
 */
export async function deleteDrillEffects(
  db: Queryable & { dialect: BoundSource['db']['dialect'] },
  effect: EffectTable,
  prefix: string,
): Promise<number> {
  const result = await db.execute(
    `DELETE FROM ${db.dialect.quoteId(effect.table)} WHERE ${db.dialect.quoteId(effect.key)} LIKE ?`,
    [drillLike(prefix)],
  );
  return result.affectedRows;
}

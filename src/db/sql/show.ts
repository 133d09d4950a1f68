import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';

/**
 * One task by its id, or by its event id (Laravel's uuid, async_task's event_id): every task field
 * (last_error whole, not capped) and the payload text.
 * In: which key and its value. Out: the row as an array in TaskSql.taskSelect() order with the
 * payload appended, or undefined when no row has it. Reads one row through the primary or unique key.
 */
export async function selectTaskBy(
  source: BoundSource,
  key: 'id' | 'eventId',
  value: TaskId,
): Promise<unknown[] | undefined> {
  const { sql } = source;
  const keyExpr = sql.expr(key);
  if (!keyExpr) throw new Error(`profile ${source.profile.name} has no ${key}`);
  const rows = source.db.stream(
    `SELECT ${sql.taskSelect(0)}, ${sql.expr('payload') ?? 'NULL'} FROM ${sql.table} WHERE ${keyExpr} = ? LIMIT 1`,
    [value],
    { rowsAsArray: true },
  );
  let found: unknown[] | undefined;
  for await (const row of rows) found = row as unknown[];
  return found;
}

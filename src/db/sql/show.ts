import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';

/**
 * One task by its id: every task field (last_error whole, not capped) and the payload text.
 * In: the id. Out: the row as an array in TaskSql.taskSelect() order with the payload appended,
 * or undefined when no row has that id. Reads one row through the primary key.
 */
export async function selectTaskById(source: BoundSource, id: TaskId): Promise<unknown[] | undefined> {
  const { sql } = source;
  const idExpr = sql.expr('id');
  if (!idExpr) throw new Error(`profile ${source.profile.name} has no id`);
  const rows = source.db.stream(
    `SELECT ${sql.taskSelect(0)}, ${sql.expr('payload') ?? 'NULL'} FROM ${sql.table} WHERE ${idExpr} = ? LIMIT 1`,
    [id],
    { rowsAsArray: true },
  );
  let found: unknown[] | undefined;
  for await (const row of rows) found = row as unknown[];
  return found;
}

import { placeholders } from '../fragment.js';
import type { Db, Queryable } from '../types.js';

/**
 * The statements of the demo sandbox (SQLite only): its three business tables, its marker table,
 * and the rows `taskrecon demo` writes. Times are written relative to SQLite's `now`, as UTC text.
 */

const MARKER_TABLE = 'taskrecon_demo_meta';

export const DEMO_BUSINESS_DDL = [
  `CREATE TABLE user_coupon (id INTEGER PRIMARY KEY AUTOINCREMENT, order_id VARCHAR(64) NOT NULL, user_id INTEGER NOT NULL,
     coupon_template_id VARCHAR(32) NOT NULL, event_id VARCHAR(64), created_at DATETIME NOT NULL DEFAULT (datetime('now')))`,
  'CREATE INDEX idx_user_coupon_order ON user_coupon (order_id)',
  'CREATE INDEX idx_user_coupon_event ON user_coupon (event_id)',
  `CREATE TABLE user_points (id INTEGER PRIMARY KEY AUTOINCREMENT, order_id VARCHAR(64) NOT NULL, user_id INTEGER NOT NULL,
     points INTEGER NOT NULL, event_id VARCHAR(64), created_at DATETIME NOT NULL DEFAULT (datetime('now')))`,
  'CREATE INDEX idx_user_points_order ON user_points (order_id)',
  'CREATE INDEX idx_user_points_event ON user_points (event_id)',
  `CREATE TABLE sms_log (id INTEGER PRIMARY KEY AUTOINCREMENT, order_id VARCHAR(64) NOT NULL, phone VARCHAR(20) NOT NULL,
     event_id VARCHAR(64), created_at DATETIME NOT NULL DEFAULT (datetime('now')))`,
  'CREATE INDEX idx_sms_log_order ON sms_log (order_id)',
  'CREATE INDEX idx_sms_log_event ON sms_log (event_id)',
  `CREATE TABLE ${MARKER_TABLE} (built_at DATETIME NOT NULL DEFAULT (datetime('now')), tasks INTEGER NOT NULL)`,
];

/** One generated task; times are seconds relative to now (negative: in the past). */
export interface DemoTaskRow {
  bizType: string;
  bizId: string;
  eventId: string;
  payload: string;
  status: number;
  retryCount: number;
  nextRetryIn: number;
  lastError: string | null;
  createdAgo: number;
  updatedAgo: number;
}

/** True when the file holds the sandbox's marker table (it is safe to rebuild). */
export async function isDemoSandbox(db: Db): Promise<boolean> {
  return (await db.columns(MARKER_TABLE)) !== undefined;
}

/** Inserts one task into async_task. */
export async function insertDemoTask(tx: Pick<Queryable, 'execute'>, task: DemoTaskRow): Promise<void> {
  await tx.execute(
    `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, datetime('now', ?), ?, datetime('now', ?), datetime('now', ?))`,
    [
      task.bizType,
      task.bizId,
      task.eventId,
      task.payload,
      task.status,
      task.retryCount,
      `${task.nextRetryIn} seconds`,
      task.lastError,
      `-${task.createdAgo} seconds`,
      `-${task.updatedAgo} seconds`,
    ],
  );
}

/** Records that this file is a sandbox of `count` tasks. */
export async function markSandbox(tx: Pick<Queryable, 'execute'>, count: number): Promise<void> {
  await tx.execute(`INSERT INTO ${MARKER_TABLE} (tasks) VALUES (?)`, [count]);
}

export type DemoBizType = 'coupon' | 'points' | 'sms';

/** Each biz type's business table, its columns and their values from a delivery (order id first, event id last). */
const EFFECT_ROWS: Record<
  DemoBizType,
  { table: string; columns: string[]; values(orderId: string, payload: Record<string, unknown>): unknown[] }
> = {
  coupon: {
    table: 'user_coupon',
    columns: ['order_id', 'user_id', 'coupon_template_id'],
    values: (orderId, payload) => [orderId, payload.user_id, 'TPL-NEWUSER-20'],
  },
  points: {
    table: 'user_points',
    columns: ['order_id', 'user_id', 'points'],
    values: (orderId, payload) => [orderId, payload.user_id, payload.points],
  },
  sms: {
    table: 'sms_log',
    columns: ['order_id', 'phone'],
    values: (orderId, payload) => [orderId, payload.phone],
  },
};

/** The business row of one delivery: its table, its column list (event id last) and their values. */
function effectRow(
  bizType: DemoBizType,
  orderId: string,
  eventId: string | null,
  payload: Record<string, unknown>,
): { table: string; columns: string; values: unknown[] } {
  const row = EFFECT_ROWS[bizType];
  return {
    table: row.table,
    columns: [...row.columns, 'event_id'].join(', '),
    values: [...row.values(orderId, payload), eventId],
  };
}

/** Inserts one business row (the effect a task had) into its biz type's table; returns 1. */
export async function insertDemoEffect(
  tx: Pick<Queryable, 'execute'>,
  bizType: DemoBizType,
  orderId: string,
  eventId: string | null,
  payload: Record<string, unknown>,
): Promise<number> {
  const row = effectRow(bizType, orderId, eventId, payload);
  await tx.execute(
    `INSERT INTO ${row.table} (${row.columns}) VALUES (${placeholders(row.values)})`,
    row.values,
  );
  return 1;
}

/**
 * The sandbox handler's write: the business row of one delivery, unless a row of the same event id
 * is already there (a duplicate delivery adds nothing). One statement, so the check and the insert
 * are atomic under SQLite's write lock.
 * Out: 'applied', or 'duplicate' when the event had its row already.
 */
export async function applyDemoEffectOnce(
  tx: Pick<Queryable, 'execute'>,
  bizType: DemoBizType,
  orderId: string,
  eventId: string,
  payload: Record<string, unknown>,
): Promise<'applied' | 'duplicate'> {
  const row = effectRow(bizType, orderId, eventId, payload);
  const result = await tx.execute(
    `INSERT INTO ${row.table} (${row.columns}) SELECT ${placeholders(row.values)}
      WHERE NOT EXISTS (SELECT 1 FROM ${row.table} WHERE event_id = ?)`,
    [...row.values, eventId],
  );
  return result.affectedRows === 1 ? 'applied' : 'duplicate';
}

/** True for the biz types the sandbox has a business table for. */
export function isDemoBizType(value: string): value is DemoBizType {
  return Object.hasOwn(EFFECT_ROWS, value);
}

/** Ids worth looking at in the tour: the first failed, stuck (untouched 10 minutes) and due task. */
export async function demoSamples(
  db: Pick<Queryable, 'query'>,
): Promise<{ failedId: number | null; stuckId: number | null; dueId: number | null }> {
  const first = async (where: string): Promise<number | null> => {
    const rows = await db.query<{ id: number }>(
      `SELECT id FROM async_task WHERE ${where} ORDER BY id LIMIT 1`,
    );
    return rows[0]?.id ?? null;
  };
  return {
    failedId: await first('status = 3'),
    stuckId: await first(`status = 1 AND updated_at <= datetime('now', '-600 seconds')`),
    dueId: await first(`status = 0 AND next_retry_time <= datetime('now')`),
  };
}

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
  `CREATE TABLE user_points (id INTEGER PRIMARY KEY AUTOINCREMENT, order_id VARCHAR(64) NOT NULL, user_id INTEGER NOT NULL,
     points INTEGER NOT NULL, event_id VARCHAR(64), created_at DATETIME NOT NULL DEFAULT (datetime('now')))`,
  'CREATE INDEX idx_user_points_order ON user_points (order_id)',
  `CREATE TABLE sms_log (id INTEGER PRIMARY KEY AUTOINCREMENT, order_id VARCHAR(64) NOT NULL, phone VARCHAR(20) NOT NULL,
     event_id VARCHAR(64), created_at DATETIME NOT NULL DEFAULT (datetime('now')))`,
  'CREATE INDEX idx_sms_log_order ON sms_log (order_id)',
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

/** Inserts one business row (the effect a task had) into its biz type's table; returns 1. */
export async function insertDemoEffect(
  tx: Pick<Queryable, 'execute'>,
  bizType: 'coupon' | 'points' | 'sms',
  orderId: string,
  eventId: string | null,
  payload: Record<string, unknown>,
): Promise<number> {
  if (bizType === 'coupon') {
    await tx.execute(
      'INSERT INTO user_coupon (order_id, user_id, coupon_template_id, event_id) VALUES (?, ?, ?, ?)',
      [orderId, payload.user_id, 'TPL-NEWUSER-20', eventId],
    );
  } else if (bizType === 'points') {
    await tx.execute('INSERT INTO user_points (order_id, user_id, points, event_id) VALUES (?, ?, ?, ?)', [
      orderId,
      payload.user_id,
      payload.points,
      eventId,
    ]);
  } else {
    await tx.execute('INSERT INTO sms_log (order_id, phone, event_id) VALUES (?, ?, ?)', [
      orderId,
      payload.phone,
      eventId,
    ]);
  }
  return 1;
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

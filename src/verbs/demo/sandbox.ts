import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { TaskreconError } from '../../errors.js';
import { auditDdl, asyncTaskDdl } from '../../db/ddl.js';
import { openSqlite } from '../../db/sqlite.js';
import type { Db } from '../../db/types.js';
import { buildFixtures, type FixtureTask } from './fixtures.js';

/** The business tables the sandbox's tasks were meant to change, and the column that names the order. */
export const BUSINESS_TABLES = {
  coupon: { table: 'user_coupon', key: 'order_id' },
  points: { table: 'user_points', key: 'order_id' },
  sms: { table: 'sms_log', key: 'order_id' },
} as const;

const MARKER_TABLE = 'taskrecon_demo_meta';

export interface Sandbox {
  file: string;
  configFile: string;
  tasks: number;
  businessRows: number;
  /** Ids worth looking at in the tour. */
  samples: { failedId: number | null; stuckId: number | null; dueId: number | null };
}

const BUSINESS_DDL = [
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

/**
 * Builds the SQLite sandbox: the reference task table, taskrecon's audit table, three business
 * tables and `count` tasks, plus a config file beside it. An existing sandbox is rebuilt; any
 * other file at that path is left alone.
 */
export async function buildSandbox(fileArg: string, count: number): Promise<Sandbox> {
  const file = resolve(fileArg);
  if (existsSync(file)) {
    let isSandbox = false;
    try {
      const probe = openSqlite({ kind: 'sqlite', file });
      isSandbox = (await probe.columns(MARKER_TABLE)) !== undefined;
      await probe.close();
    } catch {
      // Not SQLite at all: certainly not ours.
    }
    if (!isSandbox) {
      throw new TaskreconError(`${file} exists and is not a taskrecon sandbox; it was left as it is`, {
        code: 'USAGE',
        hint: 'Choose another path with --file.',
      });
    }
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
  }
  const db = openSqlite({ kind: 'sqlite', file }, { create: true });
  try {
    for (const statement of [...asyncTaskDdl(db.dialect), ...auditDdl(db.dialect), ...BUSINESS_DDL])
      await db.execute(statement);
    const fixtures = buildFixtures(count);
    const businessRows = await db.transaction(async (tx) => {
      let rows = 0;
      for (const task of fixtures.tasks) {
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
        for (let i = 0; i < task.effects; i++)
          rows += await insertEffect(tx, task.bizType, task.bizId, task.eventId, JSON.parse(task.payload));
      }
      for (const [bizType, orderId] of fixtures.orphans)
        rows += await insertEffect(tx, bizType, orderId, null, {
          user_id: 10_001,
          points: 5,
          phone: '13800000000',
        });
      await tx.execute(`INSERT INTO ${MARKER_TABLE} (tasks) VALUES (?)`, [count]);
      return rows;
    });
    const configFile = join(dirname(file), `${basename(file).replace(/\.sqlite$/, '')}.config.yaml`);
    writeFileSync(configFile, sandboxConfig(basename(file)));
    return { file, configFile, tasks: count, businessRows, samples: await samples(db) };
  } finally {
    await db.close();
  }
}

async function insertEffect(
  tx: Pick<Db, 'execute'>,
  bizType: FixtureTask['bizType'],
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

async function samples(db: Db): Promise<Sandbox['samples']> {
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

/** The sandbox's config: one source, handlers that only mark, and a diff rule per business table. */
export function sandboxConfig(sqliteFile: string): string {
  return `# taskrecon sandbox config, written by \`taskrecon demo\`. Paths are relative to this file.
db: sqlite:${sqliteFile}
sources:
  tasks: { profile: async-task, table: async_task, default: true }
handlers:
  default: { type: mark-only }
retry:
  default: { policy: schedule, schedule: [1s, 4s, 16s, 64s, 5m, 30m, 2h] }
rules:
${Object.entries(BUSINESS_TABLES)
  .map(
    ([bizType, b]) =>
      `  - { name: ${bizType}-applied, bizType: ${bizType}, taskStatus: [success], business: { table: ${b.table}, key: ${b.key}, expect: exactly-one } }`,
  )
  .join('\n')}
report:
  thresholds: { failureRate: { warn: 1%, crit: 5% }, stuck: { warn: 1 }, oldestDue: { warn: 10m } }
`;
}

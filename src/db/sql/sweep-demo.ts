import type { Queryable } from '../types.js';

/**
 * The demo sandbox's think-queue tables (SQLite): `failed_jobs` as a ThinkPHP shop writes it by hand,
 * the database queue `jobs` a retry pushes onto, and the failures of such a shop's first month —
 * SMS jobs the channel rate-limited, warehouse jobs that hit the nightly maintenance, one job
 * that broke on a schema change — so that `sweep --dry-run` has every rule to show.
 */
export const SWEEP_DEMO_DDL = [
  `CREATE TABLE failed_jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, connection VARCHAR(255) NOT NULL,
     queue VARCHAR(255) NOT NULL, payload TEXT NOT NULL, exception TEXT NOT NULL,
     fail_time DATETIME NOT NULL DEFAULT (datetime('now')))`,
  'CREATE INDEX idx_fail_time ON failed_jobs (fail_time)',
  `CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, queue VARCHAR(255) NOT NULL, payload TEXT NOT NULL,
     attempts INTEGER NOT NULL, reserve_time INTEGER NULL, available_time INTEGER NOT NULL, create_time INTEGER NOT NULL)`,
];

export const SMS_JOB = 'app\\job\\SendPaidSmsJob';
export const PICK_JOB = 'app\\job\\CreatePickTaskJob';

/**
 * Inserts the demo failures, failed `minutesAgo` before the database's now.
 * In: none. Out: rows inserted. Side effect: INSERTs into failed_jobs.
 */
export async function insertSweepDemoFailures(tx: Queryable): Promise<number> {
  const rows: Array<[string, string, object, string, number]> = [];
  for (let n = 1; n <= 8; n++)
    rows.push([
      'database',
      'high',
      { job: SMS_JOB, order_sn: `SN${1000 + n}` },
      'sms channel: 429 rate limited',
      5 + n,
    ]);
  for (let n = 1; n <= 4; n++)
    rows.push([
      'database',
      'low',
      { job: PICK_JOB, order_sn: `SN${2000 + n}` },
      'warehouse API 503: nightly maintenance',
      20 + n,
    ]);
  rows.push([
    'database',
    'default',
    { job: 'app\\job\\RefreshDailyReportJob', day: 'today' },
    "SQLSTATE[42S22]: Unknown column 'gmv' in 'field list'",
    30,
  ]);
  for (const [connection, queue, body, error, minutesAgo] of rows) {
    const { job, ...data } = body as { job: string };
    const payload = JSON.stringify({ job, maxTries: 3, timeout: 60, data, attempts: 3 });
    await tx.execute(
      `INSERT INTO failed_jobs (connection, queue, payload, exception, fail_time) VALUES (?, ?, ?, ?, datetime('now', ?))`,
      [connection, queue, payload, error, `-${minutesAgo} minutes`],
    );
  }
  return rows.length;
}

/** The sandbox config's think-queue source (YAML lines under `sources:`). */
export const SWEEP_DEMO_SOURCE = `  failed:
    profile: thinkphp-failed-jobs
    queue: { connections: { database: { driver: database, table: jobs } } }
`;

/**
 * The sandbox's sweep rules (YAML, top level). The windows are read in UTC here: SQLite stores
 * DATETIME text as UTC and the sandbox has no other zone; a real config names its appTimeZone.
 */
export const SWEEP_DEMO_RULES = `appTimeZone: UTC
sweeps:
  - { name: sms, match: { bizType: '${SMS_JOB}' }, action: retry, rate: 20/s, maxSweeps: 1 }
  - { name: warehouse, match: { bizType: '${PICK_JOB}' }, action: retry, window: "09:00-18:00", blackout: ["01:00-05:00"], maxSweeps: 2 }
  - { name: schema, match: { errorLike: 'Unknown column' }, action: hold }
`;

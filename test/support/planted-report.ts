import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './cli.js';

/**
 * A SQLite task table in `dir` (made by `taskrecon init`) with rows planted relative to now, and a
 * config naming it as source `name`. `failures` of `created` window tasks are failed; the rest
 * succeeded; `due` and `stuck` add one pending task past its retry time and one processing task
 * past its lease (each of biz type `sms`).
 */
export interface PlantedTable {
  created: number;
  failures: number;
  due?: boolean;
  stuck?: boolean;
}

export async function plantTaskTable(
  dir: string,
  name: string,
  table: PlantedTable,
  extraConfig: string[] = [],
): Promise<string> {
  const file = join(dir, `${name}.sqlite`);
  const init = await runCli(['init', '--db', `sqlite:${file}`], { cwd: dir });
  if (init.code !== 0) throw new Error(`taskrecon init failed: ${init.stderr}`);
  const db = new Database(file);
  const insert = db.prepare(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, next_retry_time, last_error, created_at, updated_at)
     VALUES (?, ?, ?, ?, 0, datetime('now', ?), ?, datetime('now', ?), datetime('now', ?))`,
  );
  for (let i = 0; i < table.created; i++) {
    const failed = i < table.failures;
    insert.run(
      'coupon',
      `c${i}`,
      `ec${i}`,
      failed ? 3 : 2,
      '+0 seconds',
      failed ? 'HTTP 503 from coupon-service' : null,
      `-${600 + i} seconds`,
      `-${590 + i} seconds`,
    );
  }
  if (table.due)
    insert.run('sms', 's-due', 'es-due', 0, '-1800 seconds', 'timeout', '-2400 seconds', '-1800 seconds');
  if (table.stuck)
    insert.run('sms', 's-stuck', 'es-stuck', 1, '+0 seconds', null, '-2400 seconds', '-1200 seconds');
  db.close();
  const config = join(dir, `${name}.config.yaml`);
  writeFileSync(
    config,
    ['sources:', `  ${name}:`, '    profile: async-task', `    db: sqlite:${file}`, ...extraConfig, ''].join(
      '\n',
    ),
  );
  return config;
}

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * Real-system mode on MariaDB: the drill works on a staging task table that also holds other
 * tasks (some due, some stuck — a careless drill would claim them), against the reference
 * handler running as its own OS process on loopback.
 */
const HANDLER_MAIN = fileURLToPath(
  new URL('../../dist/verbs/drill/serve-reference-handler.js', import.meta.url),
);
const RECORDER = fileURLToPath(new URL('../support/record-connections.mjs', import.meta.url));
const APP_ZONE = '+08:00';

interface DrillJson {
  runId: string;
  passed: number;
  failed: number;
  keptRows: number;
  target: { mode: string; db: string; handler: string };
  scenarios: Array<{
    name: string;
    status: string;
    steps: Array<{ name: string; status: string; detail: string }>;
  }>;
}

let schema: TestSchema;
let cwd: string;
const handlers: ChildProcess[] = [];

async function startHandler(variant: 'idempotent' | 'non-idempotent'): Promise<string> {
  const child = spawn(process.execPath, [HANDLER_MAIN, '--db', schema.dsn, '--variant', variant], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  handlers.push(child);
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`handler exited with ${code}`)));
  });
  return (JSON.parse(line) as { url: string }).url;
}

/** Count and checksum of every row no drill wrote, per table. */
async function nonDrillChecksum(): Promise<Record<string, string>> {
  const tables: Record<string, string> = {
    async_task: `SELECT COUNT(*) AS n, COALESCE(SUM(CRC32(CONCAT_WS('#', id, biz_type, biz_id, event_id, payload, status, retry_count,
                   next_retry_time, IFNULL(last_error, '-'), created_at, updated_at))), 0) AS c FROM async_task WHERE event_id NOT LIKE 'drill-%'`,
    user_coupon: `SELECT COUNT(*) AS n, COALESCE(SUM(CRC32(CONCAT_WS('#', id, order_id, coupon_template_id, IFNULL(event_id, '-'), created_at))), 0) AS c
                  FROM user_coupon WHERE order_id NOT LIKE 'drill-%'`,
    handler_processed_event: `SELECT COUNT(*) AS n, COALESCE(SUM(CRC32(CONCAT_WS('#', event_id, processed_at))), 0) AS c
                  FROM handler_processed_event WHERE event_id NOT LIKE 'drill-%'`,
    taskrecon_audit: `SELECT COUNT(*) AS n, COALESCE(SUM(CRC32(CONCAT_WS('#', id, created_at, operator, action, task_id, IFNULL(event_id, '-')))), 0) AS c
                  FROM taskrecon_audit WHERE IFNULL(event_id, '') NOT LIKE 'drill-%'`,
  };
  const out: Record<string, string> = {};
  for (const [table, sql] of Object.entries(tables)) {
    const [rows] = (await schema.sql.query(sql)) as unknown as [Array<{ n: number; c: string }>];
    out[table] = `${rows[0]?.n}:${rows[0]?.c}`;
  }
  return out;
}

async function drillRowsLeft(): Promise<{ tasks: number; effects: number }> {
  const [t] = (await schema.sql.query(
    `SELECT COUNT(*) AS n FROM async_task WHERE event_id LIKE 'drill-%'`,
  )) as unknown as [Array<{ n: number }>];
  const [e] = (await schema.sql.query(
    `SELECT COUNT(*) AS n FROM user_coupon WHERE order_id LIKE 'drill-%'`,
  )) as unknown as [Array<{ n: number }>];
  return { tasks: Number(t[0]?.n), effects: Number(e[0]?.n) };
}

beforeAll(async () => {
  schema = await createTestSchema('drill_system', { timeZone: APP_ZONE });
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-drill-system-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      `appTimeZone: "${APP_ZONE}"`,
      'sources:',
      '  tasks: { profile: async-task, default: true, stuckAfter: 2m }',
      'rules:',
      '  - { name: coupon-issued, bizType: coupon, taskStatus: [success], business: { table: user_coupon, key: order_id, expect: exactly-one } }',
      '',
    ].join('\n'),
  );
  const init = await runCli(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
  await startHandler('idempotent'); // creates the business tables
  await schema.sql.query(`
    INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at) VALUES
    ('coupon', 'PAY1', 'evt-1', '{"order_id":"PAY1"}', 0, 1, NOW() - INTERVAL 5 MINUTE, 'timeout', NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 5 MINUTE),
    ('coupon', 'PAY2', 'evt-2', '{"order_id":"PAY2"}', 1, 0, NOW() - INTERVAL 1 HOUR, NULL, NOW() - INTERVAL 2 HOUR, NOW() - INTERVAL 1 HOUR),
    ('coupon', 'PAY3', 'evt-3', '{"order_id":"PAY3"}', 2, 0, NOW(), NULL, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 59 MINUTE),
    ('coupon', 'PAY4', 'evt-4', '{"order_id":"PAY4"}', 3, 7, NOW(), 'HTTP 500', NOW() - INTERVAL 3 HOUR, NOW() - INTERVAL 1 HOUR),
    ('sms',    'PAY5', 'evt-5', '{"order_id":"PAY5"}', 0, 0, NOW() - INTERVAL 1 MINUTE, NULL, NOW() - INTERVAL 1 MINUTE, NOW() - INTERVAL 1 MINUTE);
    INSERT INTO user_coupon (order_id, coupon_template_id, event_id) VALUES ('PAY3', 'TPL-NEWUSER-20', 'evt-3'), ('PAY9', 'TPL-NEWUSER-20', NULL);
    INSERT INTO handler_processed_event (event_id) VALUES ('evt-3');
    INSERT INTO taskrecon_audit (operator, host, action, source, task_table, task_id, event_id, from_status, to_status, reason, run_id)
      VALUES ('alice', 'ops1', 'retry', 'tasks', 'async_task', '4', 'evt-4', 'failed', 'pending', 'earlier fix', 'run-1');`);
});

afterAll(async () => {
  for (const child of handlers) child.kill('SIGTERM');
  await schema?.drop();
  rmSync(cwd, { recursive: true, force: true });
});

describe('drill against a staging table and a handler process', () => {
  it('passes with an idempotent handler, touches no other row, leaves no drill row, contacts only loopback', async () => {
    const url = await startHandler('idempotent');
    const before = await nonDrillChecksum();
    const connections = join(cwd, 'connections.ndjson');
    const { code, json, stderr } = await runJson<DrillJson>(
      ['drill', '--handler-url', url, '--diff-rule', 'coupon-issued', '--timeout', '400ms'],
      {
        cwd,
        env: {
          TZ: 'America/New_York',
          NODE_OPTIONS: `--import=${RECORDER}`,
          TASKRECON_RECORD_CONNECTIONS: connections,
        },
      },
    );
    const failed = json.scenarios?.flatMap((s) =>
      s.steps.filter((st) => st.status === 'failed').map((st) => `${s.name}: ${st.name}: ${st.detail}`),
    );
    expect(failed, stderr).toEqual([]);
    expect(code).toBe(0);
    assertMatchesSchema('drill', json);
    expect(json).toMatchObject({ passed: 5, failed: 0, target: { mode: 'system', handler: url } });
    expect(json.target.db).not.toContain(':@'); // masked DSN, never a password
    expect(await nonDrillChecksum()).toEqual(before);
    expect(await drillRowsLeft()).toEqual({ tasks: 0, effects: 0 });
    // The audit log is append-only: the drill's manual retries stay recorded, under its run.
    const [audit] = (await schema.sql.query(
      `SELECT operator, action, from_status, to_status, run_id FROM taskrecon_audit WHERE event_id LIKE ?`,
      [`drill-${json.runId}-%`],
    )) as unknown as [Array<{ operator: string; action: string; run_id: string }>];
    expect(audit).toHaveLength(2);
    expect(audit[0]).toMatchObject({
      operator: 'taskrecon-drill',
      action: 'retry',
      run_id: `drill-${json.runId}`,
    });
    const seen = readFileSync(connections, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { host: string });
    expect(seen.length).toBeGreaterThan(5);
    expect(seen.filter((c) => !['127.0.0.1', '::1', 'localhost'].includes(c.host))).toEqual([]);
  });

  it('fails with a non-idempotent handler, and still touches no other row and leaves no drill row', async () => {
    const url = await startHandler('non-idempotent');
    const before = await nonDrillChecksum();
    const { code, json } = await runJson<DrillJson>(
      ['drill', '--handler-url', url, '--diff-rule', 'coupon-issued', '--timeout', '400ms'],
      { cwd },
    );
    expect(code).toBe(1);
    assertMatchesSchema('drill', json);
    const failed = json.scenarios.filter((s) => s.status === 'failed').map((s) => s.name);
    expect(failed).toEqual(['duplicate-delivery', 'worker-crash', 'slow-target']);
    const detail = json.scenarios[1]?.steps.find((s) => s.status === 'failed')?.detail;
    expect(detail).toMatch(/user_coupon has 2 rows for drill-[0-9a-f]{8}-duplicate-sequential/);
    expect(await nonDrillChecksum()).toEqual(before);
    expect(await drillRowsLeft()).toEqual({ tasks: 0, effects: 0 });
  });

  it('leaves its rows to inspect with --keep', async () => {
    const url = await startHandler('idempotent');
    const { code, json } = await runJson<DrillJson>(
      [
        'drill',
        '--handler-url',
        url,
        '--diff-rule',
        'coupon-issued',
        '--timeout',
        '400ms',
        '--scenario',
        'worker-crash',
        '--keep',
      ],
      { cwd },
    );
    expect(code).toBe(0);
    expect(json.keptRows).toBe(1);
    expect(await drillRowsLeft()).toEqual({ tasks: 1, effects: 1 });
    await schema.sql.query(`DELETE FROM async_task WHERE event_id LIKE 'drill-%'`);
    await schema.sql.query(`DELETE FROM user_coupon WHERE order_id LIKE 'drill-%'`);
  });

  it('refuses an unknown diff rule or a rule whose table is missing, writing nothing', async () => {
    const before = await nonDrillChecksum();
    const unknown = await runCli(
      ['drill', '--handler-url', 'http://127.0.0.1:9/x', '--diff-rule', 'coupon-isued'],
      { cwd },
    );
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain("Did you mean 'coupon-issued'?");
    writeFileSync(
      join(cwd, 'missing.yaml'),
      `db: ${schema.dsn}\nrules:\n  - { name: r, bizType: coupon, business: { table: no_such_table, key: order_id } }\n`,
    );
    const missing = await runCli(
      [
        'drill',
        '--config',
        join(cwd, 'missing.yaml'),
        '--handler-url',
        'http://127.0.0.1:9/x',
        '--diff-rule',
        'r',
      ],
      { cwd },
    );
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("business table 'no_such_table' does not exist");
    await schema.sql.query('RENAME TABLE taskrecon_audit TO audit_away');
    const noAudit = await runCli(
      ['drill', '--handler-url', 'http://127.0.0.1:9/x', '--diff-rule', 'coupon-issued'],
      { cwd },
    );
    await schema.sql.query('RENAME TABLE audit_away TO taskrecon_audit');
    expect(noAudit.code).toBe(3);
    expect(noAudit.stderr).toContain('taskrecon init --audit-only');
    expect(await nonDrillChecksum()).toEqual(before);
  });
});

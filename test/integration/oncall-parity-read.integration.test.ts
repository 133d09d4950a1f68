import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runJson } from '../support/cli.js';
import { createFixtureTable } from '../support/fixtures.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { num, type ScanJson } from '../support/scan-json.js';
import { assertMatchesSchema } from '../support/schemas.js';

// What `php artisan queue:failed` shows, in taskrecon: the queue and connection of each failed job,
// attempts from the payload, the order a job was for (a JSON path of its payload), and the
// queue / exception filters. Real think-queue and Laravel failed_jobs tables on MariaDB.
let schema: TestSchema;
let dir: string;

interface TaskJson {
  id: number;
  bizType: string | null;
  bizId: string | null;
  eventId: string | null;
  attempts: number | null;
  maxAttempts?: number | null;
  queue: string | null;
  connection: string | null;
}

/** think-queue's payload, as `Queue::push(SendSms::class, ['order_sn' => …])` writes it. */
const thinkPayload = (job: string, data: Record<string, unknown>, attempts: number) =>
  JSON.stringify({ job: `app\\job\\${job}`, maxTries: 3, timeout: 60, data, attempts });

const ORDER_SN = '$.data.order_sn';

/** A config file of one source; returns its path. */
function config(name: string, source: string): string {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, `db: ${schema.dsn}\nsources:\n  ${name}:\n${source}`);
  return path;
}

let tp: string;

beforeAll(async () => {
  schema = await createTestSchema('oncall_parity_read', { timeZone: '+08:00' });
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-parity-read-'));
  expect((await runCli(['init', '--db', schema.dsn])).code).toBe(0);
  await createFixtureTable(schema, 'laravel_failed_jobs');
  await schema.sql.query('RENAME TABLE failed_jobs TO laravel_failed_jobs');
  await createFixtureTable(schema, 'thinkphp_failed_jobs');
  const rows: Array<[string, Record<string, unknown>, number, string, string, string, number]> = [
    ['SendSms', { order_sn: 'SN1001' }, 2, 'sms', 'redis', 'gateway timeout, order_sn SN1001', 600],
    ['SendCoupon', { order_sn: 'SN1002' }, 3, 'coupon', 'redis', 'bad orderXsn in request', 300],
    ['SendSms', { order_sn: null }, 1, 'sms', 'database', '50% off rule failed', 120],
    ['SendSms', {}, 1, 'default', 'redis', 'plain failure', 60],
  ];
  for (const [job, data, attempts, queue, connection, error, ago] of rows) {
    await schema.sql.query(
      `INSERT INTO failed_jobs (connection, queue, payload, exception, fail_time) VALUES (?, ?, ?, ?, NOW() - INTERVAL ? SECOND)`,
      [
        connection,
        queue,
        thinkPayload(job, data, attempts),
        `think\\exception\\ErrorException: ${error}`,
        ago,
      ],
    );
  }
  // Laravel's Redis queue keeps attempts in the payload; maxTries is null unless the job sets $tries.
  const laravel = (job: string, attempts: number, maxTries: number | null) =>
    JSON.stringify({
      uuid: `u-${job}`,
      displayName: `App\\Jobs\\${job}`,
      job: 'Illuminate\\Queue\\CallQueuedHandler@call',
      maxTries,
      data: { commandName: `App\\Jobs\\${job}`, command: 'O:16:"App\\Jobs\\SendSms":0:{}' },
      attempts,
    });
  await schema.sql.query(
    `INSERT INTO laravel_failed_jobs (uuid, connection, queue, payload, exception, failed_at) VALUES
       ('u-SendSms', 'redis', 'emails', ?, 'Illuminate\\\\Queue\\\\TimeoutExceededException', NOW() - INTERVAL 5 MINUTE),
       ('u-Charge', 'database', 'payments', ?, 'RuntimeException: card declined', NOW() - INTERVAL 1 MINUTE)`,
    [laravel('SendSms', 4, 5), laravel('Charge', 1, null)],
  );
  tp = config(
    'tp',
    `    profile: thinkphp-failed-jobs\n    columns:\n      bizId: { json: payload, path: '${ORDER_SN}' }\n`,
  );
});

afterAll(async () => {
  await schema?.drop();
});

describe('failed jobs carry their queue and connection', () => {
  it('scan --json lists each failed job with its queue, its connection and the order it was for', async () => {
    const { code, json } = await runJson<ScanJson & { failed: TaskJson[] }>(['scan', '--config', tp]);
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    // think-queue's attempts as its worker counted them: the payload's + 1.
    expect(json.failed.map((t) => [t.bizId, t.attempts, t.maxAttempts, t.queue, t.connection])).toEqual([
      ['SN1001', 3, 3, 'sms', 'redis'],
      ['SN1002', 4, 3, 'coupon', 'redis'],
      [null, 2, 3, 'sms', 'database'], // JSON null is no order, never the text "null"
      [null, 2, 3, 'default', 'redis'],
    ]);
  });

  it("reads Laravel's attempts and maxTries from the payload, with queue and connection", async () => {
    const { code, json } = await runJson<ScanJson & { failed: TaskJson[] }>([
      'scan',
      '--db',
      schema.dsn,
      '--profile',
      'laravel-failed-jobs',
      '--table',
      'laravel_failed_jobs',
    ]);
    expect(code).toBe(0);
    assertMatchesSchema('scan', json);
    expect(json.failed.map((t) => [t.eventId, t.attempts, t.maxAttempts, t.queue, t.connection])).toEqual([
      ['u-SendSms', 4, 5, 'emails', 'redis'],
      ['u-Charge', 1, null, 'payments', 'database'],
    ]);
  });

  it('task tables have queue and connection null in JSON, and no such columns in the table', async () => {
    await schema.sql.query(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error) VALUES ('coupon', 'o-1', 'e-1', 3, 8, 'HTTP 503')`,
    );
    const { json } = await runJson<ScanJson & { failed: TaskJson[] }>(['scan', '--db', schema.dsn]);
    assertMatchesSchema('scan', json);
    expect(json.failed[0]).toMatchObject({ bizId: 'o-1', queue: null, connection: null });
    const table = await runCli(['scan', '--db', schema.dsn, '--status', 'failed']);
    expect(table.stdout).not.toMatch(/\tconnection\t/);
  });

  it('the scan table of failed jobs has queue and connection columns', async () => {
    const { code, stdout } = await runCli(['scan', '--config', tp, '--status', 'failed']);
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    const head = lines.findIndex((l) => l.startsWith('id\t'));
    const columns = (lines[head] as string).split('\t');
    expect(columns).toEqual(expect.arrayContaining(['queue', 'connection']));
    const first = (lines[head + 1] as string).split('\t');
    expect(first[columns.indexOf('biz id')]).toBe('SN1001');
    expect(first[columns.indexOf('queue')]).toBe('sms');
    expect(first[columns.indexOf('connection')]).toBe('redis');
  });

  it('NDJSON and CSV lines carry the queue, the connection and the order', async () => {
    const ndjson = await runCli(['scan', '--config', tp, '--format', 'ndjson', '--limit', '1']);
    expect(ndjson.code, ndjson.stderr).toBe(0);
    expect(JSON.parse(ndjson.stdout.split('\n')[0] as string)).toMatchObject({
      list: 'failed',
      bizId: 'SN1001',
      queue: 'sms',
      connection: 'redis',
    });
    const csv = await runCli(['scan', '--config', tp, '--format', 'csv', '--limit', '1']);
    const [header, line] = csv.stdout.split('\n');
    expect(header?.endsWith(',queue,connection')).toBe(true);
    expect(line).toMatch(/^failed,\d+,"app\\job\\SendSms","SN1001",.*,"sms","redis"$/);
  });

  it('show names the order, the queue and the connection', async () => {
    const { json: scan } = await runJson<ScanJson & { failed: TaskJson[] }>(['scan', '--config', tp]);
    const id = String(scan.failed[0]?.id);
    const { code, json } = await runJson<{ task: TaskJson }>(['show', id, '--config', tp]);
    expect(code).toBe(0);
    assertMatchesSchema('show', json);
    expect(json.task).toMatchObject({ bizId: 'SN1001', queue: 'sms', connection: 'redis', attempts: 3 });
    const table = await runCli(['show', id, '--config', tp]);
    expect(table.stdout).toMatch(/biz id\s+SN1001/);
    expect(table.stdout).toMatch(/queue\s+sms/);
    expect(table.stdout).toMatch(/connection\s+redis/);
  });

  it("report's alert sample names the order of the latest failure", async () => {
    const { json } = await runJson<{
      byBizType: Array<{ bizType: string | null; sample: { bizId: string | null } | null }>;
    }>(['report', '--config', tp]);
    assertMatchesSchema('report', json);
    const coupon = json.byBizType.find((b) => b.bizType === 'app\\job\\SendCoupon');
    expect(coupon?.sample?.bizId).toBe('SN1002');
  });
});

describe('a bad JSON path or JSON column stops before reading', () => {
  it('exits 3 naming the field and how to write the path', async () => {
    const bad = config(
      'badpath',
      `    profile: thinkphp-failed-jobs\n    columns:\n      bizId: { json: payload, path: 'data.order_sn' }\n`,
    );
    const { code, stdout, stderr } = await runCli(['scan', '--config', bad]);
    expect(code).toBe(3);
    expect(stdout).toBe('');
    expect(stderr).toContain('columns.bizId.path');
    expect(stderr).toContain("'$.data.order_sn'");
  });

  it('exits 3 naming a JSON column the table lacks', async () => {
    const bad = config(
      'badcol',
      `    profile: thinkphp-failed-jobs\n    columns:\n      eventId: { json: body, path: '$.id' }\n`,
    );
    const { code, stderr } = await runCli(['scan', '--config', bad]);
    expect(code).toBe(3);
    expect(stderr).toMatch(/no column 'body' \(mapped to eventId/);
  });
});

describe('scan --queue and --error-like', () => {
  it('--queue narrows the list and the counts to those queues', async () => {
    const { code, json } = await runJson<ScanJson & { failed: TaskJson[] }>([
      'scan',
      '--config',
      tp,
      '--queue',
      'sms',
      '--queue',
      'coupon',
    ]);
    expect(code).toBe(0);
    const [truth] = (await schema.sql.query(
      `SELECT COUNT(*) AS n FROM failed_jobs WHERE queue IN ('sms', 'coupon')`,
    )) as unknown as [Array<{ n: number }>];
    expect(json.summary.total).toBe(num(truth[0]?.n));
    expect(json.summary.byStatus.failed).toBe(3);
    expect(json.failed.map((t) => t.queue)).toEqual(['sms', 'coupon', 'sms']);
    expect(json.byBizType.reduce((sum, b) => sum + b.total, 0)).toBe(3);
  });

  it('--error-like matches its text literally: an _ is not a wildcard', async () => {
    const { json } = await runJson<ScanJson & { failed: TaskJson[] }>([
      'scan',
      '--config',
      tp,
      '--error-like',
      'order_sn',
    ]);
    expect(json.failed.map((t) => t.bizId)).toEqual(['SN1001']);
    expect(json.summary.total).toBe(1);
  });

  it('--error-like with a % is a LIKE pattern, and combines with --queue', async () => {
    const { json } = await runJson<ScanJson & { failed: TaskJson[] }>([
      'scan',
      '--config',
      tp,
      '--error-like',
      '%ErrorException: %fail%',
      '--queue',
      'sms',
    ]);
    expect(json.failed.map((t) => t.connection)).toEqual(['database']);
    expect(json.summary.total).toBe(1);
  });

  it('--queue on a table without a queue exits 3 and says why (scan and compensate alike)', async () => {
    const scan = await runCli(['scan', '--db', schema.dsn, '--queue', 'sms']);
    expect(scan.code).toBe(3);
    expect(scan.stdout).toBe('');
    expect(scan.stderr).toMatch(/--queue needs a queue column, and profile async-task/);
    const compensate = await runCli([
      'compensate',
      '--db',
      schema.dsn,
      '--queue',
      'sms',
      '--action',
      'forget',
      '--dry-run',
    ]);
    expect(compensate.code).toBe(3);
    expect(compensate.stderr).toMatch(/--queue needs a queue column/);
  });
});

describe('a JSON path on SQLite', () => {
  it('reads the order from the payload as MariaDB does', async () => {
    const file = join(dir, 'tp.sqlite');
    const db = new Database(file);
    db.exec(`CREATE TABLE failed_jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, connection TEXT NOT NULL,
      queue TEXT NOT NULL, payload TEXT NOT NULL, exception TEXT NOT NULL, fail_time TIMESTAMP NOT NULL)`);
    const insert = db.prepare(
      `INSERT INTO failed_jobs (connection, queue, payload, exception, fail_time) VALUES (?, ?, ?, ?, datetime('now'))`,
    );
    insert.run('redis', 'sms', thinkPayload('SendSms', { order_sn: 'SN1001' }, 2), 'timeout');
    insert.run('redis', 'sms', thinkPayload('SendSms', { order_sn: null }, 1), 'timeout');
    db.close();
    const path = join(dir, 'sqlite.yaml');
    writeFileSync(
      path,
      `db: sqlite:${file}\nsources:\n  tp:\n    profile: thinkphp-failed-jobs\n    columns:\n      bizId: { json: payload, path: '${ORDER_SN}' }\n`,
    );
    const { code, json, stderr } = await runJson<ScanJson & { failed: TaskJson[] }>([
      'scan',
      '--config',
      path,
      '--queue',
      'sms',
    ]);
    expect(code, stderr).toBe(0);
    expect(json.failed.map((t) => [t.bizId, t.attempts, t.queue, t.connection])).toEqual([
      ['SN1001', 3, 'sms', 'redis'],
      [null, 2, 'sms', 'redis'],
    ]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindSource, type BoundSource } from '../../src/db/bind-source.js';
import { asyncTaskDdl } from '../../src/db/ddl.js';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { parseDsn, type MysqlDsn } from '../../src/db/dsn.js';
import { openMysql } from '../../src/db/engines/mysql/db.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import type { Db, Row } from '../../src/db/types.js';
import { buildReport } from '../../src/verbs/report/report.js';
import { THRESHOLD_METRICS, type Thresholds } from '../../src/core/thresholds.js';
import { scanStatements } from '../../src/verbs/doctor/indexes.js';
import { runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

const NO_THRESHOLDS = Object.fromEntries(THRESHOLD_METRICS.map((m) => [m, {}])) as Thresholds;

/** Large enough that the optimizer weighs indexes against a full scan honestly, and past FULL_SCAN_FREE_ROWS. */
const ROWS = 200_000;

interface ScanJson {
  summary: { total: number; byStatus: Record<string, number>; due: number | null; stuck: number | null };
  byBizType: Array<{ bizType: string; total: number }>;
  notes: string[];
  skipped?: string[];
}
interface ReportJson {
  metrics: { created: number | null; failedOpen: number | null; due: number | null };
  notes: string[];
  skipped?: string[];
}
interface DoctorJson {
  checks: Array<{ name: string; status: string; message: string; hint: string | null }>;
}

let schema: TestSchema;
let db: Db;
let source: BoundSource;

async function rows(sql: string): Promise<Row[]> {
  const [r] = await schema.sql.query(sql);
  return r as Row[];
}

beforeAll(async () => {
  schema = await createTestSchema('production_index');
  for (const ddl of asyncTaskDdl(mysqlDialect)) await schema.sql.query(ddl);
  // 97% success over 14 days (created_at grows with id), the rest failed, pending (half due) and processing.
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, next_retry_time, created_at, updated_at)
     SELECT ELT(1 + seq % 5, 'coupon', 'points', 'sms', 'refund', 'email'), CONCAT('biz-', seq), CONCAT('evt-', seq),
            CASE WHEN seq % 100 < 97 THEN 2 WHEN seq % 100 = 97 THEN 3 WHEN seq % 100 = 98 THEN 0 ELSE 1 END,
            seq % 3,
            NOW() - INTERVAL ${ROWS} * 6 SECOND + INTERVAL seq * 6 SECOND + INTERVAL (seq % 2) * 2 DAY,
            NOW() - INTERVAL ${ROWS} * 6 SECOND + INTERVAL seq * 6 SECOND,
            NOW() - INTERVAL ${ROWS} * 6 SECOND + INTERVAL seq * 6 SECOND + INTERVAL 3 SECOND
       FROM seq_1_to_${ROWS}`,
  );
  await schema.sql.query('ANALYZE TABLE async_task');
  db = await openMysql(parseDsn(schema.dsn) as MysqlDsn);
  source = await bindSource(db, asyncTask, 'tasks');
}, 120_000);

afterAll(async () => {
  await db?.close();
  await schema?.drop();
});

const truth = async () =>
  Object.fromEntries(
    (await rows('SELECT status, COUNT(*) AS n FROM async_task GROUP BY status')).map((r) => [
      String(r.status),
      Number(r.n),
    ]),
  );

describe('on a 200k-row table with only the reference indexes', () => {
  it('scan gives the counts by status through the status index and skips the per-biz-type counts, naming the index', async () => {
    const { code, json, stderr } = await runJson<ScanJson>(['scan', '--db', schema.dsn, '--limit', '1']);
    expect(code, stderr).toBe(0);
    const t = await truth();
    expect(json.summary.total).toBe(ROWS);
    expect(json.summary.byStatus.success).toBe(t['2']);
    expect(json.summary.byStatus.failed).toBe(t['3']);
    expect(json.summary.due).toBeGreaterThan(0);
    expect(json.byBizType).toEqual([]);
    expect(json.skipped).toEqual(['byBizType']);
    expect(json.notes.join('\n')).toMatch(
      /per-biz-type counts skipped: without an index on \(status, biz_type\)/,
    );
    expect(json.notes.join('\n')).toContain(
      'CREATE INDEX `idx_status_biz_type` ON `async_task` (`status`, `biz_type`, `next_retry_time`, `updated_at`)',
    );
  });

  it('scan --full-scan reads the whole table for them when asked', async () => {
    const { json } = await runJson<ScanJson>(['scan', '--db', schema.dsn, '--limit', '1', '--full-scan']);
    expect(json.skipped).toBeUndefined();
    expect(json.byBizType.reduce((n, b) => n + b.total, 0)).toBe(ROWS);
    expect(json.byBizType).toHaveLength(5);
  });

  it('report skips the window figures without an index on created_at, and keeps the as-of-now ones', async () => {
    const { json, stderr } = await runJson<ReportJson>(['report', '--db', schema.dsn]);
    expect(json.skipped, stderr).toEqual(['window']);
    expect(json.metrics.created).toBeNull();
    expect(json.metrics.failedOpen).toBe((await truth())['3']);
    expect(json.notes.join('\n')).toMatch(/window's figures .* skipped: without an index on \(created_at\)/);
    const full = await runJson<ReportJson>(['report', '--db', schema.dsn, '--full-scan']);
    expect(full.json.skipped).toBeUndefined();
    expect(full.json.metrics.created).toBeGreaterThan(0);
  });

  it('doctor warns with the CREATE INDEX of each missing summary index and why', async () => {
    const { json } = await runJson<DoctorJson>(['doctor', '--db', schema.dsn]);
    const check = json.checks.find((c) => c.name === 'summary indexes');
    expect(check?.status).toBe('warn');
    expect(check?.message).toMatch(/per-biz-type counts read one index entry per row/);
    expect(check?.hint).toContain(
      'CREATE INDEX `idx_status_biz_type` ON `async_task` (`status`, `biz_type`, `next_retry_time`, `updated_at`);',
    );
    expect(check?.hint).toContain('CREATE INDEX `idx_created_at` ON `async_task` (`created_at`);');
  });
});

describe("with doctor's indexes", () => {
  beforeAll(async () => {
    const { json } = await runJson<DoctorJson>(['doctor', '--db', schema.dsn]);
    const hint = json.checks.find((c) => c.name === 'summary indexes')?.hint ?? '';
    for (const statement of hint
      .split(';')
      .map((s) => s.trim())
      .filter(Boolean))
      await schema.sql.query(statement);
    await schema.sql.query('ANALYZE TABLE async_task');
  }, 60_000);

  it('doctor is content, and scan and report give every figure without --full-scan', async () => {
    const doctor = await runJson<DoctorJson>(['doctor', '--db', schema.dsn]);
    expect(doctor.json.checks.find((c) => c.name === 'summary indexes')?.status).toBe('ok');
    const scan = await runJson<ScanJson>(['scan', '--db', schema.dsn, '--limit', '1']);
    expect(scan.json.skipped).toBeUndefined();
    expect(scan.json.byBizType.reduce((n, b) => n + b.total, 0)).toBe(ROWS);
    const report = await runJson<ReportJson>(['report', '--db', schema.dsn]);
    expect(report.json.skipped).toBeUndefined();
    expect(report.json.metrics.created).toBeGreaterThan(0);
  });

  /** EXPLAIN of every statement: which ones read a whole index or the whole table. */
  async function plans(statements: Array<{ name: string; sql: string; params: unknown[] }>) {
    const out: Array<{ name: string; types: string[]; keys: string[] }> = [];
    for (const s of statements) {
      // Only the reads of the task table: a derived table's own plan row reads the temporary result.
      const plan = (await db.query<Row>(`EXPLAIN ${s.sql}`, s.params)).filter(
        (p) => p.table === 'async_task',
      );
      expect(plan.length, s.sql).toBeGreaterThan(0);
      out.push({
        name: s.name,
        types: plan.map((p) => String(p.type)),
        keys: plan.map((p) => String(p.key)),
      });
    }
    return out;
  }

  it('EXPLAIN: no scan statement reads the table whole; only the per-biz-type counts read a whole index', async () => {
    const nowEpoch = await db.nowEpoch();
    const explained = await plans(
      await scanStatements(source, { nowEpoch, stuckAfterMs: 600_000, limit: 20 }),
    );
    for (const p of explained) {
      expect(p.types, p.name).not.toContain('ALL');
      if (p.name === 'summary by status') {
        expect(p.types, p.name).toEqual(['index']);
        expect(p.keys, p.name).toEqual(['idx_status_biz_type']);
      } else expect(p.types, p.name).not.toContain('index');
    }
  });

  it('EXPLAIN: every report statement reads index ranges only', async () => {
    const recorded: Array<{ name: string; sql: string; params: unknown[] }> = [];
    const recorder: Db = Object.create(db, {
      query: {
        value: async (sql: string, params: unknown[] = []) => {
          if (/^\s*SELECT\b/i.test(sql) && !/information_schema/i.test(sql))
            recorded.push({ name: sql.slice(0, 60), sql, params });
          return [];
        },
      },
    }) as Db;
    await buildReport(
      { ...source, db: recorder },
      {
        nowEpoch: await db.nowEpoch(),
        windowSeconds: 3600,
        stuckAfterMs: 600_000,
        thresholds: NO_THRESHOLDS,
      },
    );
    expect(recorded.length).toBeGreaterThanOrEqual(4);
    for (const p of await plans(recorded)) {
      expect(p.types, p.name).not.toContain('ALL');
      expect(p.types, p.name).not.toContain('index');
    }
    // The sample of a failing biz type (one per alert): the (status, biz_type) range, newest first.
    const { latestFailure } = await import('../../src/db/sql/report.js');
    recorded.length = 0;
    await latestFailure({ ...source, db: recorder }, 'coupon');
    const [sample] = await plans(recorded);
    expect(sample?.types).not.toContain('ALL');
    expect(sample?.keys).toEqual(['idx_status_biz_type']);
  });
});

describe('without any index leading with status', () => {
  beforeAll(async () => {
    await schema.sql.query(
      'ALTER TABLE async_task DROP INDEX idx_status_next_retry, DROP INDEX idx_status_biz_type',
    );
    await schema.sql.query('ANALYZE TABLE async_task');
  }, 60_000);

  it('scan stops with exit 3 instead of printing counts it did not take, and --full-scan takes them', async () => {
    const run = await runJson<{ error: { code: string; message: string; hint: string } }>([
      'scan',
      '--db',
      schema.dsn,
    ]);
    expect(run.code).toBe(3);
    expect(run.json.error.code).toBe('FULL_SCAN');
    expect(run.json.error.message).toMatch(/no index leads with status/);
    expect(run.json.error.hint).toMatch(/--full-scan/);
    const full = await runJson<ScanJson>(['scan', '--db', schema.dsn, '--limit', '1', '--full-scan']);
    expect(full.code, full.stderr).toBe(0);
    expect(full.json.summary.total).toBe(ROWS);
  });
});

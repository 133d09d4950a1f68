import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { signIn, startConsoleCli } from '../support/console.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

/**
 * River's `river_job` and Oban's `oban_jobs` on real PostgreSQL, created with exactly the columns,
 * types, enums and defaults their own migrations create (fixtures/schemas/postgres). `scan` counts
 * every state as SQL does; a retry leaves each row as River's JobRetry / Oban's retry_job would,
 * column by column; mark-compensated writes what their cancel writes; forget deletes, audited; a
 * wrong table, an unsupported migration version and a job no longer there are refused (exit 3,
 * nothing written).
 */

type Row = Record<string, unknown>;

interface SystemCase {
  profile: 'river' | 'oban';
  table: string;
  fixture: string;
  running: string;
  /** The SQL "now" in the table's time type (Oban: UTC without a zone). */
  now: string;
  /** Logical status → the system's states. */
  states: Record<'pending' | 'processing' | 'success' | 'failed' | 'compensated', string[]>;
  /** Extra config lines (Oban's times are UTC). */
  config: string[];
  /** Inserts one job; answers its id. */
  insert(
    state: string,
    kind: string,
    attempt: number,
    maxAttempts: number,
    attemptedAgo: string | null,
  ): string;
  /** The row a retry by the system's own tool leaves, from the row before. */
  retried(before: Row): Row;
  /** The row its cancel leaves. */
  cancelled(before: Row): Row;
  /** Time columns the write sets to now. */
  setNow: { retry: string[]; cancel: string[] };
  setVersion(version: number | null): string;
}

const FINALIZED = new Set(['cancelled', 'completed', 'discarded']);

const river: SystemCase = {
  profile: 'river',
  table: 'river_job',
  fixture: 'river_job.sql',
  running: 'running',
  now: 'now()',
  states: {
    pending: ['available', 'scheduled', 'retryable', 'pending'],
    processing: ['running'],
    success: ['completed'],
    failed: ['discarded'],
    compensated: ['cancelled'],
  },
  config: [],
  insert: (state, kind, attempt, max, ago) =>
    `INSERT INTO river_job (state, kind, attempt, max_attempts, args, attempted_at, finalized_at, scheduled_at, errors, queue)
     VALUES ('${state}', '${kind}', ${attempt}, ${max}, '{"order":1}',
             ${ago ? `now() - interval '${ago}'` : 'NULL'},
             ${FINALIZED.has(state) ? "now() - interval '1 minute'" : 'NULL'},
             ${state === 'scheduled' ? "now() + interval '1 hour'" : "now() - interval '3 hours'"},
             ${state === 'discarded' ? `ARRAY['{"at":"2026-01-01T00:00:00Z","attempt":${attempt},"error":"the ${kind} service is down"}'::jsonb]` : 'NULL'},
             'default') RETURNING id`,
  retried: (b) => ({
    ...b,
    state: 'available',
    max_attempts: b.attempt === b.max_attempts ? Number(b.max_attempts) + 1 : b.max_attempts,
    finalized_at: null,
  }),
  cancelled: (b) => ({ ...b, state: 'cancelled' }),
  setNow: { retry: ['scheduled_at'], cancel: ['finalized_at'] },
  setVersion: (v) =>
    v === null
      ? 'DELETE FROM river_migration'
      : `DELETE FROM river_migration; INSERT INTO river_migration (line, version) SELECT 'main', generate_series(1, ${v})`,
};

const oban: SystemCase = {
  profile: 'oban',
  table: 'oban_jobs',
  fixture: 'oban_jobs.sql',
  running: 'executing',
  now: "timezone('UTC', now())",
  states: {
    pending: ['available', 'scheduled', 'retryable'],
    processing: ['executing'],
    success: ['completed'],
    failed: ['discarded'],
    compensated: ['cancelled'],
  },
  config: ['appTimeZone: UTC'],
  insert: (state, kind, attempt, max, ago) =>
    `INSERT INTO oban_jobs (state, worker, attempt, max_attempts, args, attempted_at, scheduled_at, completed_at,
                            discarded_at, cancelled_at, errors)
     VALUES ('${state}', '${kind}', ${attempt}, ${max}, '{"order":1}',
             ${ago ? `timezone('UTC', now()) - interval '${ago}'` : 'NULL'},
             ${state === 'scheduled' ? "timezone('UTC', now()) + interval '1 hour'" : "timezone('UTC', now()) - interval '3 hours'"},
             ${state === 'completed' ? "timezone('UTC', now()) - interval '1 minute'" : 'NULL'},
             ${state === 'discarded' ? "timezone('UTC', now()) - interval '1 minute'" : 'NULL'},
             ${state === 'cancelled' ? "timezone('UTC', now()) - interval '1 minute'" : 'NULL'},
             ${state === 'discarded' ? `ARRAY['{"at":"2026-01-01T00:00:00","attempt":${attempt},"error":"the ${kind} service is down"}'::jsonb]` : 'ARRAY[]::jsonb[]'})
     RETURNING id`,
  retried: (b) => ({
    ...b,
    state: 'available',
    max_attempts: Math.max(Number(b.max_attempts), Number(b.attempt) + 1),
    completed_at: null,
    discarded_at: null,
    cancelled_at: null,
  }),
  cancelled: (b) => ({ ...b, state: 'cancelled' }),
  setNow: { retry: ['scheduled_at'], cancel: ['cancelled_at'] },
  setVersion: (v) => `COMMENT ON TABLE oban_jobs IS ${v === null ? 'NULL' : `'${v}'`}`,
};

let db: PgTestDatabase;

beforeAll(async () => {
  db = await createPgDatabase('river_oban');
  for (const c of [river, oban])
    await db.sql.query(readFileSync(join('fixtures/schemas/postgres', c.fixture), 'utf8'));
  const init = await runCli(['init', '--audit-only', '--db', db.dsn]);
  expect(init.code, init.stderr).toBe(0);
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

interface ScanJson {
  source: { profile: string; table: string; system?: { name: string; schemaVersion: number | null } };
  summary: { total: number; byStatus: Record<string, number>; stuck: number | null };
  byBizType: Array<{ bizType: string; byStatus: Record<string, number> }>;
  stuck: Array<{ id: string }>;
  failed: Array<{ id: string; bizType: string; lastError: string | null }>;
}
interface CompensateJson {
  client?: string;
  applied: number;
  results: Array<{ id: string; from: string; to: string; outcome: string }>;
}
interface ErrorJson {
  error: { message: string; hint?: string };
}

describe.each([river, oban])('$profile profile', (c) => {
  let cwd: string;
  const ids: Record<string, string[]> = {};
  const add = async (
    state: string,
    kind: string,
    attempt: number,
    max: number,
    ago: string | null = null,
  ) => {
    const [row] = await db.rows<{ id: string }>(c.insert(state, kind, attempt, max, ago));
    const id = String(row?.id);
    (ids[state] ??= []).push(id);
    return id;
  };
  const allRows = () => db.rows<Row>(`SELECT * FROM ${c.table} ORDER BY id`);
  const rowOf = async (id: string) => (await db.rows<Row>(`SELECT * FROM ${c.table} WHERE id = $1`, [id]))[0];
  const auditCount = async () =>
    Number((await db.rows<{ n: string }>('SELECT COUNT(*) AS n FROM taskrecon_audit'))[0]?.n);
  const write = (lines: string[]) => {
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), [`db: ${db.dsn}`, ...lines, ''].join('\n'));
  };
  const standardConfig = () =>
    write([...c.config, 'sources:', '  jobs:', `    profile: ${c.profile}`, '    default: true']);

  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), `taskrecon-${c.profile}-`));
    standardConfig();
    // Failed: two that used every attempt, one discarded early (a cancel from its worker), another kind.
    await add('discarded', 'Mailer', 3, 3, '2 hours');
    await add('discarded', 'Mailer', 5, 5, '2 hours');
    await add('discarded', 'Mailer', 1, 4, '2 hours');
    await add('discarded', 'Payments', 2, 2, '2 hours');
    // Stuck past the one-hour rescue time, and one running for ten minutes.
    await add(c.running, 'Mailer', 1, 3, '2 hours');
    await add(c.running, 'Payments', 1, 3, '90 minutes');
    await add(c.running, 'Payments', 1, 3, '10 minutes');
    for (const state of c.states.pending) await add(state, 'Mailer', 0, 3);
    await add('available', 'Payments', 0, 3);
    await add('completed', 'Mailer', 1, 3, '5 minutes');
    await add('completed', 'Payments', 1, 3, '5 minutes');
    await add('cancelled', 'Payments', 0, 3);
  });

  afterAll(() => {
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('scan counts every state and the stuck jobs as SQL does', async () => {
    const counts = await db.rows<{ state: string; n: string }>(
      `SELECT state::text AS state, COUNT(*) AS n FROM ${c.table} GROUP BY state`,
    );
    const byState = Object.fromEntries(counts.map((r) => [r.state, Number(r.n)]));
    const truth = Object.fromEntries(
      Object.entries(c.states).map(([logical, states]) => [
        logical,
        states.reduce((sum, s) => sum + (byState[s] ?? 0), 0),
      ]),
    );
    const [stuck] = await db.rows<{ n: string }>(
      `SELECT COUNT(*) AS n FROM ${c.table} WHERE state = '${c.running}' AND attempted_at < ${c.now} - interval '1 hour'`,
    );
    expect(Number(stuck?.n)).toBe(2);

    const { code, json, stderr } = await runJson<ScanJson>(['scan', '--limit', '0'], { cwd });
    expect(code, stderr).toBe(0);
    assertMatchesSchema('scan', json);
    expect(json.source).toMatchObject({ profile: c.profile, table: c.table });
    expect(json.source.system).toMatchObject({
      name: c.profile,
      schemaVersion: c.profile === 'river' ? 6 : 12,
    });
    expect(json.summary.total).toBe(counts.reduce((sum, r) => sum + Number(r.n), 0));
    expect(json.summary.byStatus).toEqual(expect.objectContaining(truth));
    expect(json.summary.stuck).toBe(Number(stuck?.n));
    expect(json.failed.map((t) => String(t.id)).sort()).toEqual([...(ids.discarded ?? [])].sort());
    for (const task of json.failed) expect(task.lastError).toContain(`the ${task.bizType} service is down`);
    expect(json.byBizType.find((b) => b.bizType === 'Mailer')?.byStatus.failed).toBe(3);
    expect(json.byBizType.find((b) => b.bizType === 'Payments')?.byStatus.failed).toBe(1);
  }, 60_000);

  it('the rescue time is configurable per source', async () => {
    write([
      ...c.config,
      'sources:',
      '  jobs:',
      `    profile: ${c.profile}`,
      '    default: true',
      '    stuckAfter: 5m',
    ]);
    try {
      const { code, json, stderr } = await runJson<ScanJson>(['scan'], { cwd });
      expect(code, stderr).toBe(0);
      expect(json.summary.stuck).toBe(3);
    } finally {
      standardConfig();
    }
  }, 60_000);

  it("retry leaves each row as the system's own retry does, column by column, audited", async () => {
    const targets = (ids.discarded ?? []).slice(0, 3);
    const before = await Promise.all(targets.map(rowOf));
    const others = (await allRows()).filter((r) => !targets.includes(String(r.id)));
    const [t0] = await db.rows<{ at: Date }>(`SELECT ${c.now} AS at`);
    const { code, json, stderr } = await runJson<CompensateJson>(
      ['compensate', ...targets, '--action', 'retry', '--reason', 'the service is back', '--yes'],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    expect(json.applied).toBe(3);
    expect(json.client).toMatch(
      c.profile === 'river' ? /^River \(migration version 6\)$/ : /^Oban \(migration version 12\)$/,
    );
    const [t1] = await db.rows<{ at: Date }>(`SELECT ${c.now} AS at`);
    for (const [i, id] of targets.entries()) {
      const was = before[i] as Row;
      const now = (await rowOf(id)) as Row;
      const expected = c.retried(was);
      for (const column of Object.keys(was)) {
        if (c.setNow.retry.includes(column)) {
          const at = (now[column] as Date).getTime();
          expect(at, column).toBeGreaterThanOrEqual((t0?.at as Date).getTime());
          expect(at, column).toBeLessThanOrEqual((t1?.at as Date).getTime());
        } else expect(now[column], `${id}.${column}`).toEqual(expected[column]);
      }
    }
    // River bumps max_attempts only when the last attempt was used; Oban to attempt + 1 at least.
    expect((await rowOf(targets[2] as string))?.max_attempts).toBe(4);
    expect((await rowOf(targets[0] as string))?.max_attempts).toBe(4);
    expect((await allRows()).filter((r) => !targets.includes(String(r.id)))).toEqual(others);
    const audit = await db.rows<{ task_id: string; action: string; from_status: string; to_status: string }>(
      "SELECT task_id, action, from_status, to_status FROM taskrecon_audit WHERE action = 'retry' AND task_table = $1 ORDER BY task_id",
      [c.table],
    );
    expect(audit.map((a) => a.task_id).sort()).toEqual([...targets].sort());
    expect(audit.every((a) => a.from_status === 'failed' && a.to_status === 'pending')).toBe(true);
    const log = await runJson<{ count: number; entries: Array<{ action: string; reason: string | null }> }>(
      ['audit', '--task', targets[0] as string],
      { cwd },
    );
    expect(log.code, log.stderr).toBe(0);
    assertMatchesSchema('audit', log.json);
    expect(log.json.entries).toEqual([
      expect.objectContaining({ action: 'retry', reason: 'the service is back' }),
    ]);
    // Run again: nothing left to retry among them.
    const again = await runJson<CompensateJson>(['compensate', ...targets, '--action', 'retry', '--yes'], {
      cwd,
    });
    expect(again.json.applied).toBe(0);
  }, 60_000);

  it('show and report read the jobs', async () => {
    const id = (ids.discarded ?? [])[3] as string;
    const show = await runJson<{ task: Record<string, unknown> }>(['show', id], { cwd });
    expect(show.code, show.stderr).toBe(0);
    assertMatchesSchema('show', show.json);
    expect(show.json.task).toMatchObject({ status: 'failed', rawStatus: 'discarded', bizType: 'Payments' });
    expect(show.json.task.payload).toEqual({ order: 1 });
    expect(String(show.json.task.lastError)).toContain('the Payments service is down');

    // Failed jobs breach the default thresholds: CRITICAL, exit 2; stuck and failed as scan has them.
    const report = await runJson<{ metrics: Record<string, number | null> }>(['report', '--window', '1h'], {
      cwd,
    });
    expect(report.code, report.stderr).toBe(2);
    assertMatchesSchema('report', report.json);
    expect(report.json.metrics).toMatchObject({ stuck: 2 });

    // doctor checks the columns; redrive is refused: the system's own workers run its jobs.
    const doctor = await runJson<{ checks: Array<{ name: string; status: string }> }>(['doctor'], { cwd });
    expect(doctor.json.checks.find((k) => k.name === 'columns')?.status).toBe('ok');
    expect(doctor.json.checks.filter((k) => k.status === 'fail')).toEqual([]);
    const redrive = await runJson<ErrorJson>(['redrive'], { cwd });
    expect(redrive.code).toBe(3);
    expect(redrive.json.error.message).toMatch(`${c.profile}'s own workers run`);
  }, 60_000);

  it('the console lists the failed and stuck jobs and shows one with its error', async () => {
    const proc = await startConsoleCli(['--read-only'], { cwd });
    try {
      const cookie = await signIn(proc.url);
      const page = async (path: string) => {
        const res = await fetch(`${proc.origin}${path}`, { headers: { cookie } });
        expect(res.status, path).toBe(200);
        return res.text();
      };
      const failed = await page('/tasks?list=failed');
      const discarded = await db.rows<{ id: string }>(`SELECT id FROM ${c.table} WHERE state = 'discarded'`);
      expect(discarded.length).toBeGreaterThan(0);
      for (const { id } of discarded) expect(failed).toContain(`/tasks/${id}`);
      const stuck = await page('/tasks?list=stuck');
      for (const id of (ids[c.running] ?? []).slice(0, 2)) expect(stuck).toContain(`/tasks/${id}`);
      expect(stuck).not.toContain(`/tasks/${(ids[c.running] ?? [])[2]}"`);
      const detail = await page(`/tasks/${(ids.discarded ?? [])[3]}`);
      expect(detail).toContain('Payments');
      expect(detail).toContain('the Payments service is down');
    } finally {
      await proc.stop();
    }
  }, 60_000);

  it('a filter by kind and error retries exactly the jobs it matches', async () => {
    const [match] = await db.rows<{ n: string }>(
      `SELECT COUNT(*) AS n FROM ${c.table} WHERE state = 'discarded' AND ${c.profile === 'river' ? 'kind' : 'worker'} = 'Payments'
         AND errors[array_upper(errors, 1)]::text LIKE '%service is down%'`,
    );
    expect(Number(match?.n)).toBe(1);
    const filter = ['--status', 'failed', '--biz-type', 'Payments', '--error-like', 'service is down'];
    const dry = await runJson<CompensateJson>(['compensate', '--action', 'retry', ...filter, '--dry-run'], {
      cwd,
    });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json.results.map((r) => String(r.id))).toEqual([(ids.discarded ?? [])[3]]);
    const rows = await allRows();
    const done = await runJson<CompensateJson>(['compensate', '--action', 'retry', ...filter, '--yes'], {
      cwd,
    });
    expect(done.code, done.stderr).toBe(0);
    expect(done.json.applied).toBe(1);
    const changed = (await allRows()).filter((r, i) => JSON.stringify(r) !== JSON.stringify(rows[i]));
    expect(changed.map((r) => String(r.id))).toEqual([(ids.discarded ?? [])[3]]);
    expect(changed[0]?.state).toBe('available');
  }, 60_000);

  it('mark-compensated cancels as the system does; forget deletes, audited whole', async () => {
    await add('discarded', 'Mailer', 3, 3, '2 hours');
    await add('discarded', 'Mailer', 3, 3, '2 hours');
    const [cancel, forget] = (ids.discarded ?? []).slice(-2) as [string, string];
    const before = (await rowOf(cancel)) as Row;
    const [t0] = await db.rows<{ at: Date }>(`SELECT ${c.now} AS at`);
    const marked = await runJson<CompensateJson>(
      ['compensate', cancel, '--action', 'mark-compensated', '--reason', 'refunded by hand', '--yes'],
      { cwd },
    );
    expect(marked.code, marked.stderr).toBe(0);
    expect(marked.json.results).toEqual([
      { id: Number(cancel), from: 'failed', to: 'compensated', outcome: 'applied' },
    ]);
    const after = (await rowOf(cancel)) as Row;
    const expected = c.cancelled(before);
    for (const column of Object.keys(before)) {
      if (c.setNow.cancel.includes(column))
        expect((after[column] as Date).getTime(), column).toBeGreaterThanOrEqual((t0?.at as Date).getTime());
      else if (column === 'metadata')
        expect(Object.keys(after.metadata as object)).toEqual(['cancel_attempted_at']);
      else expect(after[column], column).toEqual(expected[column]);
    }

    const forgot = await runJson<CompensateJson>(['compensate', forget, '--action', 'forget', '--yes'], {
      cwd,
    });
    expect(forgot.code, forgot.stderr).toBe(0);
    expect(await rowOf(forget)).toBeUndefined();
    const [audit] = await db.rows<{ before_json: string }>(
      "SELECT before_json FROM taskrecon_audit WHERE task_id = $1 AND action = 'forget' AND task_table = $2",
      [forget, c.table],
    );
    expect(JSON.parse(audit?.before_json ?? '{}')).toMatchObject({ state: 'discarded' });
  }, 60_000);

  it('a job no longer there, a wrong table and an unsupported version: exit 3, nothing written', async () => {
    await add('discarded', 'Mailer', 3, 3, '2 hours');
    const id = (ids.discarded ?? []).at(-1) as string;
    const rows = await allRows();
    const audits = await auditCount();

    const missing = await runJson<ErrorJson>(['compensate', '999999', '--action', 'retry', '--yes'], { cwd });
    expect(missing.code).toBe(3);
    expect(missing.json.error.message).toMatch('unknown task id 999999');

    const other = c.profile === 'river' ? 'oban_jobs' : 'river_job';
    write([
      ...c.config,
      'sources:',
      '  jobs:',
      `    profile: ${c.profile}`,
      `    table: ${other}`,
      '    default: true',
    ]);
    try {
      const wrong = await runJson<ErrorJson>(['compensate', id, '--action', 'retry', '--yes'], { cwd });
      expect(wrong.code).toBe(3);
      expect(wrong.json.error.message).toMatch(new RegExp(`table '${other}' has no column`));
    } finally {
      standardConfig();
    }

    for (const version of [c.profile === 'river' ? 7 : 14, null]) {
      await db.sql.query(c.setVersion(version));
      try {
        const newer = await runJson<ErrorJson>(['compensate', id, '--action', 'retry', '--yes'], { cwd });
        expect(newer.code).toBe(3);
        expect(newer.json.error.message).toMatch(
          version === null
            ? /no migration version found/
            : new RegExp(`migration version ${version} is not one taskrecon writes`),
        );
      } finally {
        await db.sql.query(c.setVersion(c.profile === 'river' ? 6 : 12));
      }
    }
    // Migrated before the states the profile reads: even a scan is refused, naming the version.
    await db.sql.query(c.setVersion(c.profile === 'river' ? 3 : 8));
    try {
      const older = await runJson<ErrorJson>(['scan'], { cwd });
      expect(older.code).toBe(3);
      expect(older.json.error.message).toMatch(
        `${c.profile} migration version ${c.profile === 'river' ? 3 : 8} predates the states taskrecon reads`,
      );
    } finally {
      await db.sql.query(c.setVersion(c.profile === 'river' ? 6 : 12));
    }
    expect(await allRows()).toEqual(rows);
    expect(await auditCount()).toBe(audits);
  }, 60_000);

  it('sweep rules by job kind and error retry the fresh failures once and hold the rest', async () => {
    const fresh = [
      await add('discarded', 'Payments', 2, 2, '5 minutes'),
      await add('discarded', 'Reports', 2, 2, '5 minutes'),
    ];
    write([
      ...c.config,
      'sources:',
      '  jobs:',
      `    profile: ${c.profile}`,
      '    default: true',
      'sweeps:',
      "  - { name: payments, match: { bizType: Payments, errorLike: 'service is down' }, action: retry }",
      '  - { name: reports, match: { bizType: Reports }, action: hold }',
    ]);
    try {
      const rows = await allRows();
      const dry = await runJson<{ retried: number; held: number }>(['sweep', '--since', '1h', '--dry-run'], {
        cwd,
      });
      expect(dry.code, dry.stderr).toBe(0);
      expect(await allRows()).toEqual(rows);
      const { code, json, stderr } = await runJson<{ retried: number; held: number; unmatched: number }>(
        ['sweep', '--since', '1h'],
        { cwd },
      );
      expect(code, stderr).toBe(0);
      assertMatchesSchema('sweep', json);
      expect([json.retried, json.held]).toEqual([1, 1]);
      expect((await rowOf(fresh[0] as string))?.state).toBe('available');
      expect((await rowOf(fresh[1] as string))?.state).toBe('discarded');
      const audit = await db.rows<{ task_id: string }>(
        "SELECT task_id FROM taskrecon_audit WHERE action = 'sweep-retry' AND task_table = $1",
        [c.table],
      );
      expect(audit.map((a) => a.task_id)).toEqual([fresh[0]]);
      const again = await runJson<{ retried: number }>(['sweep', '--since', '1h'], { cwd });
      expect(again.json.retried).toBe(0);
    } finally {
      standardConfig();
    }
  }, 60_000);
});

describe('Oban times are UTC', () => {
  it('a connection reading them in another zone is refused rather than off by hours', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-oban-zone-'));
    try {
      writeFileSync(
        join(cwd, 'taskrecon.config.yaml'),
        [
          `db: ${db.dsn}`,
          'appTimeZone: Asia/Shanghai',
          'sources:',
          '  jobs: { profile: oban, default: true }',
          '',
        ].join('\n'),
      );
      const { code, json } = await runJson<ErrorJson>(['scan'], { cwd });
      expect(code).toBe(3);
      expect(json.error.message).toMatch(
        /oban stores UTC times in timestamp without time zone, but this connection reads them in Asia\/Shanghai/,
      );
      expect(json.error.hint).toMatch(/appTimeZone: UTC/);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 60_000);
});

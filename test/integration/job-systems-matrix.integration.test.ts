import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { csrfOf, signIn, startConsoleCli } from '../support/console.js';
import { createEngineDb } from '../support/engine-db.js';
import { frameworkTableDdl } from '../support/framework-tables.js';
import { createPgDatabase } from '../support/postgres.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * Every table job system through every read and write surface, on the tables their own migrations
 * create: `report` (Prometheus and thresholds that trip and that do not), `show`, a sweep rule by
 * job class and error (and the jobs it must leave alone), the console's failed list and job page
 * (the error shown escaped), a console retry through its form (CSRF token, Origin), and the audit.
 * Each system seeds four failed jobs: A (class Payments, "service is down"), B (Payments, "card
 * declined"), C (Reports, "service is down"), D (Reports, "card declined"). A sweep rule retries A,
 * the console's retry form B, its bulk retry by filter D; C is cancelled or deleted.
 */

type Row = Record<string, unknown>;
interface Db {
  dsn: string;
  rows(sql: string): Promise<Row[]>;
  drop(): Promise<void>;
}
interface Seeded {
  /** The ids of A, B, C and D, as the CLI and console print them. */
  a: string;
  b: string;
  c: string;
  d: string;
}
interface SystemCase {
  name: string;
  profile: string;
  config: string[];
  /** The console's buttons on a failed job. */
  actions: string[];
  /** The last word on a failed job (cancel where the system has it, else delete), and its check. */
  settle: { action: 'forget' | 'mark-compensated'; done(db: Db, id: string): Promise<boolean> };
  /** An action the system has no operation for. */
  lacks: string;
  /** Fails job `id` again, as its worker would, at the SQL time `at`. */
  refail(db: Db, id: string, at: string): Promise<void>;
  open(): Promise<Db>;
  /** Three failed jobs, their last error `error(kind)`; answers their ids. */
  seed(db: Db): Promise<Seeded>;
  /** Whether the job is where the system's own retry puts it. */
  retried(db: Db, id: string): Promise<boolean>;
  /** Whether the job is still failed. */
  failed(db: Db, id: string): Promise<boolean>;
  close?(): Promise<void>;
}

/** The error text, with markup a page must escape. */
const HTML = '<b>boom</b>';
const error = (what: string) => `${what} ${HTML}`;
const DOWN = 'the service is down';
const DECLINED = 'card declined';

const pg = async (prefix: string, fixture?: string): Promise<Db> => {
  const db = await createPgDatabase(prefix);
  if (fixture) await db.sql.query(readFileSync(join('fixtures/schemas/postgres', fixture), 'utf8'));
  return { dsn: db.dsn, rows: (sql) => db.rows(sql), drop: () => db.drop() };
};
const one = async (db: Db, sql: string): Promise<string> => String((await db.rows(sql))[0]?.id);
const stateOf = async (db: Db, sql: string): Promise<string | undefined> =>
  (await db.rows(sql))[0]?.state as string | undefined;

/** pg-boss's client, as the application runs it (its migrations create its schema). */
interface Boss {
  start(): Promise<unknown>;
  stop(options?: Record<string, unknown>): Promise<void>;
  on(event: 'error', listener: (e: unknown) => void): unknown;
  createQueue(name: string, options?: Record<string, unknown>): Promise<void>;
  send(name: string, data: object): Promise<string | null>;
  fetch(name: string): Promise<Array<{ id: string }> | null>;
  fail(name: string, id: string, data: object): Promise<unknown>;
}
let boss: Boss | undefined;

const pgBoss: SystemCase = {
  name: 'pg-boss',
  profile: 'pg-boss',
  config: [],
  actions: ['retry', 'forget'],
  settle: {
    action: 'forget',
    done: async (db, id) => (await db.rows(`SELECT 1 AS x FROM pgboss.job WHERE id = '${id}'`)).length === 0,
  },
  lacks: 'mark-compensated',
  async refail(db, id, at) {
    await db.rows(`UPDATE pgboss.job SET state = 'failed', completed_on = ${at} WHERE id = '${id}'`);
  },
  open: () => pg('matrix_pgboss'),
  async seed(db) {
    const mod = (await import('pg-boss')) as unknown as { default?: unknown; PgBoss?: unknown };
    const PgBoss = (mod.PgBoss ?? mod.default) as new (o: Record<string, unknown>) => Boss;
    boss = new PgBoss({ connectionString: db.dsn, supervise: false, schedule: false });
    boss.on('error', () => undefined);
    await boss.start();
    const failOne = async (queue: string, message: string) => {
      await boss?.createQueue(queue, { retryLimit: 0 });
      const id = (await boss?.send(queue, { order: 1 })) as string;
      const [job] = (await boss?.fetch(queue)) ?? [];
      expect(job?.id).toBe(id);
      await boss?.fail(queue, id, { message });
      return id;
    };
    return {
      a: await failOne('Payments', error(DOWN)),
      b: await failOne('Payments', error(DECLINED)),
      c: await failOne('Reports', error(DOWN)),
      d: await failOne('Reports', error(DECLINED)),
    };
  },
  retried: async (db, id) =>
    (await stateOf(db, `SELECT state::text AS state FROM pgboss.job WHERE id = '${id}'`)) === 'retry',
  failed: async (db, id) =>
    (await stateOf(db, `SELECT state::text AS state FROM pgboss.job WHERE id = '${id}'`)) === 'failed',
  async close() {
    await boss?.stop({ graceful: false, wait: true });
  },
};

const riverJob = (kind: string, message: string) =>
  `INSERT INTO river_job (state, kind, attempt, max_attempts, args, attempted_at, finalized_at, errors, queue)
   VALUES ('discarded', '${kind}', 1, 1, '{"order":1}', now() - interval '2 minutes', now() - interval '1 minute',
           ARRAY['${JSON.stringify({ at: '2026-01-01T00:00:00Z', attempt: 1, error: message })}'::jsonb], 'default')
   RETURNING id`;
const river: SystemCase = {
  name: 'river',
  profile: 'river',
  config: [],
  actions: ['retry', 'mark-compensated', 'forget'],
  settle: {
    action: 'mark-compensated',
    done: async (db, id) =>
      (await stateOf(db, `SELECT state::text AS state FROM river_job WHERE id = ${id}`)) === 'cancelled',
  },
  lacks: 'mark-failed',
  async refail(db, id, at) {
    await db.rows(
      `UPDATE river_job SET state = 'discarded', attempted_at = ${at}, finalized_at = ${at} WHERE id = ${id}`,
    );
  },
  open: () => pg('matrix_river', 'river_job.sql'),
  seed: async (db) => ({
    a: await one(db, riverJob('Payments', error(DOWN))),
    b: await one(db, riverJob('Payments', error(DECLINED))),
    c: await one(db, riverJob('Reports', error(DOWN))),
    d: await one(db, riverJob('Reports', error(DECLINED))),
  }),
  retried: async (db, id) =>
    (await stateOf(db, `SELECT state::text AS state FROM river_job WHERE id = ${id}`)) === 'available',
  failed: async (db, id) =>
    (await stateOf(db, `SELECT state::text AS state FROM river_job WHERE id = ${id}`)) === 'discarded',
};

const obanJob = (worker: string, message: string) =>
  `INSERT INTO oban_jobs (state, worker, attempt, max_attempts, args, attempted_at, discarded_at, errors)
   VALUES ('discarded', '${worker}', 1, 1, '{"order":1}', timezone('UTC', now()) - interval '2 minutes',
           timezone('UTC', now()) - interval '1 minute',
           ARRAY['${JSON.stringify({ at: '2026-01-01T00:00:00', attempt: 1, error: message })}'::jsonb])
   RETURNING id`;
const oban: SystemCase = {
  name: 'oban',
  profile: 'oban',
  config: ['appTimeZone: UTC'],
  actions: ['retry', 'mark-compensated', 'forget'],
  settle: {
    action: 'mark-compensated',
    done: async (db, id) =>
      (await stateOf(db, `SELECT state::text AS state FROM oban_jobs WHERE id = ${id}`)) === 'cancelled',
  },
  lacks: 'mark-failed',
  async refail(db, id, at) {
    const utc = `timezone('UTC', ${at})`;
    await db.rows(
      `UPDATE oban_jobs SET state = 'discarded', attempted_at = ${utc}, discarded_at = ${utc} WHERE id = ${id}`,
    );
  },
  open: () => pg('matrix_oban', 'oban_jobs.sql'),
  seed: async (db) => ({
    a: await one(db, obanJob('Payments', error(DOWN))),
    b: await one(db, obanJob('Payments', error(DECLINED))),
    c: await one(db, obanJob('Reports', error(DOWN))),
    d: await one(db, obanJob('Reports', error(DECLINED))),
  }),
  retried: async (db, id) =>
    (await stateOf(db, `SELECT state::text AS state FROM oban_jobs WHERE id = ${id}`)) === 'available',
  failed: async (db, id) =>
    (await stateOf(db, `SELECT state::text AS state FROM oban_jobs WHERE id = ${id}`)) === 'discarded',
};

const solidQueue = (engine: 'mysql' | 'postgres'): SystemCase => {
  let at: (seconds: number) => string = () => '';
  return {
    name: `solid-queue (${engine})`,
    profile: 'solid-queue',
    config: ['appTimeZone: UTC'],
    actions: ['retry', 'forget'],
    settle: {
      action: 'forget',
      done: async (db, id) =>
        (await db.rows(`SELECT 1 AS x FROM solid_queue_jobs WHERE id = ${id}`)).length === 0 &&
        (await db.rows(`SELECT 1 AS x FROM solid_queue_failed_executions WHERE job_id = ${id}`)).length === 0,
    },
    lacks: 'mark-compensated',
    async refail(db, id, at) {
      await db.rows(`DELETE FROM solid_queue_ready_executions WHERE job_id = ${id}`);
      await db.rows(`INSERT INTO solid_queue_failed_executions (job_id, error, created_at)
        VALUES (${id}, '{"exception_class":"RuntimeError","message":"${DOWN} again"}', ${at})`);
      await db.rows(`UPDATE solid_queue_jobs SET updated_at = ${at} WHERE id = ${id}`);
    },
    async open() {
      const db = await createEngineDb(engine, `matrix_sq_${engine}`, { timeZone: '+00:00' });
      for (const statement of frameworkTableDdl(engine, 'solid_queue')) await db.run(statement);
      at = (s) => db.at(s);
      return { dsn: db.dsn, rows: (sql) => db.rows(sql), drop: () => db.drop() };
    },
    async seed(db) {
      const job = async (id: number, cls: string, message: string) => {
        await db.rows(`INSERT INTO solid_queue_jobs (id, queue_name, class_name, arguments, priority, active_job_id,
            scheduled_at, created_at, updated_at)
          VALUES (${id}, 'default', '${cls}', '{"job_class":"${cls}","executions":1}', 0, 'aj-${id}',
                  ${at(-120)}, ${at(-120)}, ${at(-60)})`);
        const text = JSON.stringify({ exception_class: 'RuntimeError', message, backtrace: [] });
        await db.rows(`INSERT INTO solid_queue_failed_executions (job_id, error, created_at)
          VALUES (${id}, '${text}', ${at(-60)})`);
        return String(id);
      };
      return {
        a: await job(1, 'Payments', error(DOWN)),
        b: await job(2, 'Payments', error(DECLINED)),
        c: await job(3, 'Reports', error(DOWN)),
        d: await job(4, 'Reports', error(DECLINED)),
      };
    },
    retried: async (db, id) =>
      (await db.rows(`SELECT 1 AS x FROM solid_queue_ready_executions WHERE job_id = ${id}`)).length === 1 &&
      (await db.rows(`SELECT 1 AS x FROM solid_queue_failed_executions WHERE job_id = ${id}`)).length === 0,
    failed: async (db, id) =>
      (await db.rows(`SELECT 1 AS x FROM solid_queue_failed_executions WHERE job_id = ${id}`)).length === 1,
  };
};

const engineOf = (system: SystemCase) => (system.name.includes('mysql') ? 'mysql' : 'postgres');

const SYSTEMS = [pgBoss, river, oban, solidQueue('mysql'), solidQueue('postgres')];

describe.each(SYSTEMS)('$name: everything works on it', (system) => {
  let db: Db;
  let cwd: string;
  let ids: Seeded;
  const audit = (action: string) =>
    db.rows(`SELECT task_id, action FROM taskrecon_audit WHERE action = '${action}' ORDER BY id`);

  beforeAll(async () => {
    db = await system.open();
    ids = await system.seed(db);
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-matrix-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        ...system.config,
        'sources:',
        `  jobs: { profile: ${system.profile}, default: true }`,
        'sweeps:',
        "  - { name: payments-down, match: { bizType: Payments, errorLike: 'service is down' }, action: retry }",
        '',
      ].join('\n'),
    );
    const init = await runCli(['init', '--audit-only'], { cwd });
    expect(init.code, init.stderr).toBe(0);
  }, 60_000);

  afterAll(async () => {
    await system.close?.();
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('scan counts and lists the failed jobs', async () => {
    const { code, json, stderr } = await runJson<{
      summary: { byStatus: Record<string, number> };
      failed: Array<{ id: string | number; bizType: string }>;
    }>(['scan'], { cwd });
    expect(code, stderr).toBe(0);
    assertMatchesSchema('scan', json);
    expect(json.summary.byStatus.failed).toBe(4);
    expect(json.failed.map((t) => String(t.id)).sort()).toEqual([ids.a, ids.b, ids.c, ids.d].sort());
  }, 60_000);

  it('report: Prometheus counts the failed jobs; a threshold they breach trips, one they do not stays OK', async () => {
    const prom = await runCli(['report', '--format', 'prometheus', '--threshold', 'failed.crit=4'], { cwd });
    expect(prom.code, prom.stderr).toBe(2);
    expect(prom.stdout).toMatch(/^taskrecon_report_overall_failed_open\{source="jobs"\} 4$/m);
    expect(prom.stdout).toMatch(/^taskrecon_report_status\{source="jobs"\} 2$/m);
    const quiet = [
      'failed.crit=5',
      'failureRate.warn=off',
      'failureRate.crit=off',
      'stuck.warn=off',
      'oldestDue.warn=off',
    ].flatMap((t) => ['--threshold', t]);
    const ok = await runCli(['report', '--format', 'prometheus', ...quiet], { cwd });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^taskrecon_report_status\{source="jobs"\} 0$/m);
  }, 60_000);

  it('show reads a failed job with its error', async () => {
    const { code, json, stderr } = await runJson<{
      task: { id: string | number; bizType: string; status: string; lastError: string | null };
    }>(['show', ids.a], { cwd });
    expect(code, stderr).toBe(0);
    assertMatchesSchema('show', json);
    expect(String(json.task.id)).toBe(ids.a);
    expect(json.task).toMatchObject({ bizType: 'Payments', status: 'failed' });
    expect(json.task.lastError).toContain(DOWN);
  }, 60_000);

  it('a sweep rule by class and error retries A only, once', async () => {
    const dry = await runJson<{ retried: number }>(['sweep', '--since', '1h', '--dry-run'], { cwd });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json.retried).toBe(1);
    expect(await system.failed(db, ids.a)).toBe(true);
    expect(await audit('sweep-retry')).toEqual([]);
    const { code, json, stderr } = await runJson<{ retried: number; unmatched: number }>(
      ['sweep', '--since', '1h'],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    expect(json).toMatchObject({ retried: 1, unmatched: 3 });
    expect(await system.retried(db, ids.a)).toBe(true);
    expect(await system.failed(db, ids.b)).toBe(true);
    expect(await system.failed(db, ids.c)).toBe(true);
    expect(await system.failed(db, ids.d)).toBe(true);
    expect(await audit('sweep-retry')).toEqual([{ task_id: ids.a, action: 'sweep-retry' }]);
    const again = await runJson<{ retried: number }>(['sweep', '--since', '1h'], { cwd });
    expect(again.json.retried).toBe(0);
  }, 60_000);

  it('the console lists the failed jobs and shows one escaped; its retry form and a bulk retry by filter write through the system, audited', async () => {
    const proc = await startConsoleCli(['--operator', 'alice'], { cwd });
    try {
      const cookie = await signIn(proc.url);
      const page = async (path: string) => {
        const res = await fetch(`${proc.origin}${path}`, { headers: { cookie } });
        const body = await res.text();
        expect(res.status, `${path}: ${body.slice(0, 500)}`).toBe(200);
        return body;
      };
      // A was retried by the sweep: no longer in the failed list.
      const list = await page('/tasks?list=failed');
      for (const id of [ids.b, ids.c, ids.d]) expect(list).toContain(`/tasks/${id}"`);
      expect(list).not.toContain(`/tasks/${ids.a}"`);
      const detail = await page(`/tasks/${ids.b}`);
      expect(detail).toContain('Payments');
      expect(detail).toContain(DECLINED);
      expect(detail).toContain('&lt;b&gt;boom&lt;/b&gt;');
      expect(detail).not.toContain(HTML);
      // The actions offered are the ones the system's own tools have for a failed job.
      const offered = [...detail.matchAll(/name="action"\s+value="([\w-]+)"/g)].map((m) => m[1]);
      expect(offered).toEqual(system.actions);
      const post = (path: string, body: Record<string, string>) =>
        fetch(`${proc.origin}${path}`, {
          method: 'POST',
          redirect: 'manual',
          headers: { cookie, origin: proc.origin, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(body).toString(),
        });
      // Without the page's token: refused, nothing written.
      expect((await post(`/tasks/${ids.b}/actions`, { action: 'retry', reason: 'no token' })).status).toBe(
        403,
      );
      expect(await system.failed(db, ids.b)).toBe(true);
      const res = await post(`/tasks/${ids.b}/actions`, {
        action: 'retry',
        reason: 'the card was replaced',
        _csrf: csrfOf(detail),
      });
      expect(res.status, proc.stderr()).toBe(303);
      const flash = await (
        await fetch(`${proc.origin}${res.headers.get('location') ?? ''}`, { headers: { cookie } })
      ).text();
      expect(flash).not.toMatch(/not applied/);

      // Bulk: every failed job the filter (class and error) matches, frozen, previewed, applied.
      const bulk = await post('/bulk', {
        action: 'retry',
        list: 'failed',
        biz: 'Reports',
        error: DECLINED,
        _csrf: csrfOf(detail),
      });
      expect(bulk.status, proc.stderr()).toBe(303);
      const preview = bulk.headers.get('location') ?? '';
      expect(preview).toMatch(/^\/bulk\//);
      expect(await page(preview)).toContain(`/tasks/${ids.d}"`);
      const apply = await post(`${preview}/apply`, {
        reason: 'the cards were replaced',
        _csrf: csrfOf(detail),
      });
      expect(apply.status).toBe(303);
      let done = '';
      for (let i = 0; i < 100 && !done.includes('id="bulk-result"'); i++) {
        await new Promise((r) => setTimeout(r, 100));
        done = await page(preview);
      }
      expect(done).toMatch(/applied <b>1<\/b>/);
      // The overview, the stuck list and the audit page read the same source.
      await page('/');
      await page('/tasks?list=stuck');
      const trailPage = await page('/audit');
      for (const id of [ids.a, ids.b, ids.d]) expect(trailPage).toContain(`>${id}<`);
    } finally {
      await proc.stop();
    }
    expect(await system.retried(db, ids.b)).toBe(true);
    expect(await system.retried(db, ids.d)).toBe(true);
    expect(await system.failed(db, ids.c)).toBe(true);
    expect(await audit('retry')).toEqual([
      { task_id: ids.b, action: 'retry' },
      { task_id: ids.d, action: 'retry' },
    ]);
    const trail = await runJson<{ entries: Array<{ taskId: string; action: string; operator: string }> }>(
      ['audit', '--task', ids.b],
      { cwd },
    );
    expect(trail.code, trail.stderr).toBe(0);
    expect(trail.json.entries.map((e) => [e.taskId, e.action, e.operator])).toEqual([
      [ids.b, 'retry', 'alice'],
    ]);
  }, 60_000);

  it('compensate: an action the system lacks is refused, nothing written; its own last word on C is audited', async () => {
    const refused = await runJson<{ error: { message: string } }>(
      ['compensate', ids.c, '--action', system.lacks, '--reason', 'not here', '--yes'],
      { cwd },
    );
    expect(refused.code).toBe(3);
    expect(refused.json.error.message).toMatch(/use --action retry/);
    expect(await system.failed(db, ids.c)).toBe(true);
    const { code, json, stderr } = await runJson<{ applied: number }>(
      ['compensate', ids.c, '--action', system.settle.action, '--reason', 'handled by hand', '--yes'],
      { cwd },
    );
    expect(code, stderr).toBe(0);
    expect(json.applied).toBe(1);
    expect(await system.settle.done(db, ids.c)).toBe(true);
    expect(await audit(system.settle.action)).toEqual([{ task_id: ids.c, action: system.settle.action }]);
    const [before] = await db.rows(`SELECT before_json FROM taskrecon_audit WHERE task_id = '${ids.c}'`);
    expect(String(before?.before_json)).toContain(DOWN);
  }, 60_000);

  it('a job that fails again within the second of its sweep retry is a second failure, not retried again', async () => {
    const [row] = await db.rows(
      `SELECT ${engineOf(system) === 'mysql' ? 'DATE_ADD(created_at, INTERVAL 1000 MICROSECOND)' : "created_at + interval '1 millisecond'"} AS at
         FROM taskrecon_audit WHERE action = 'sweep-retry' AND task_id = '${ids.a}'`,
    );
    expect(row?.at).toBeTruthy();
    const at =
      engineOf(system) === 'mysql'
        ? `DATE_ADD((SELECT created_at FROM taskrecon_audit WHERE action = 'sweep-retry' AND task_id = '${ids.a}'), INTERVAL 1000 MICROSECOND)`
        : `((SELECT created_at FROM taskrecon_audit WHERE action = 'sweep-retry' AND task_id = '${ids.a}') + interval '1 millisecond')`;
    await system.refail(db, ids.a, at);
    expect(await system.failed(db, ids.a)).toBe(true);
    const { code, json, stderr } = await runJson<{ retried: number; secondFailures: number }>(
      ['sweep', '--since', '1h'],
      { cwd },
    );
    expect(code, stderr).toBe(1);
    expect(json).toMatchObject({ retried: 0, secondFailures: 1 });
    expect(await system.failed(db, ids.a)).toBe(true);
    expect(await audit('sweep-retry')).toEqual([{ task_id: ids.a, action: 'sweep-retry' }]);
  }, 60_000);
});

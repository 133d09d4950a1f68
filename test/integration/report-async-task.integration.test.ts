import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { ReportMetrics } from '../../src/core/report.js';
import type { Trend } from '../../src/core/trend.js';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb, type TestEngine } from '../support/engine-db.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The app writes its times in +08:00 (MySQL's DATETIMEs hold them as wall-clock times) while the
// CLI runs in New York: no metric may move, on any engine.
const APP_ZONE = '+08:00';
const CLIENT = { TZ: 'America/New_York' };

/** A DSN of each engine whose database cannot be reached (a server's password to be masked). */
const DOWN: Record<TestEngine, { dsn: string; says: RegExp }> = {
  mysql: {
    dsn: 'mysql://root:secret@127.0.0.1:1/none',
    says: /^TASKRECON UNKNOWN - cannot connect to mysql:\/\/root:\*\*\*@127\.0\.0\.1:1\/none/,
  },
  postgres: {
    dsn: 'postgres://root:secret@127.0.0.1:1/none',
    says: /^TASKRECON UNKNOWN - cannot connect to postgres:\/\/root:\*\*\*@127\.0\.0\.1:1\/none/,
  },
  sqlite: {
    dsn: 'sqlite:/nonexistent/tasks.sqlite',
    says: /^TASKRECON UNKNOWN - the SQLite file \/nonexistent\/tasks\.sqlite does not exist/,
  },
};

type Metrics = ReportMetrics;
interface ReportJson {
  status: string;
  metrics: Metrics;
  breaches: Array<{ metric: string; level: string; value: number; threshold: number }>;
  byBizType: Array<
    Metrics & { bizType: string; sample: { bizId: string; eventId: string; error: string } | null }
  >;
  notes: string[];
}

/** Every threshold off but the ones a test names, so that one metric decides the status. */
const ONLY = ['failureRate', 'stuck', 'oldestDue'].flatMap((m) => [
  '--threshold',
  `${m}.warn=off`,
  '--threshold',
  `${m}.crit=off`,
]);

function expectMetrics(actual: Metrics, truth: Metrics): void {
  const { oldestDueSeconds, latencyAvgSeconds, ...exact } = truth;
  const { oldestDueSeconds: gotOldest, latencyAvgSeconds: gotAvg } = actual;
  const gotExact = Object.fromEntries(Object.keys(exact).map((k) => [k, actual[k as keyof Metrics]]));
  expect(gotExact).toEqual(exact);
  if (latencyAvgSeconds === null) expect(gotAvg).toBeNull();
  else expect(gotAvg).toBeCloseTo(latencyAvgSeconds, 3);
  if (oldestDueSeconds === null) expect(gotOldest).toBeNull();
  else expect(Math.abs((gotOldest ?? -1e9) - oldestDueSeconds)).toBeLessThanOrEqual(3); // the runs are a few seconds apart
}

describe.each(TEST_ENGINES)('report on the async-task profile (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;

  beforeAll(async () => {
    db = await createEngineDb(engine, 'report_async', { timeZone: APP_ZONE });
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-report-'));
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${db.dsn}\nappTimeZone: "${APP_ZONE}"\n`);
    const init = await runCli(['init', '--db', db.dsn]);
    expect(init.code, init.stderr).toBe(0);
    // coupon: 200 successes created 30 min ago with latencies 1..200 s, 6 failed, 4 still pending (not due).
    // sms: 37 successes with latencies 10, 20, … 370 s; 1 due (2 h overdue), 1 stuck, 1 in flight.
    // legacy: only rows created 3 h ago, outside the window, one of them failed awaiting action.
    const at = (seconds: number) => db.at(seconds);
    const values: string[] = [];
    for (let i = 1; i <= 200; i++)
      values.push(`('coupon','c${i}','ec${i}',2,0,${at(0)},NULL,${at(-1800)},${at(-(1800 - i))})`);
    for (let i = 1; i <= 6; i++)
      values.push(
        `('coupon','cf${i}','ecf${i}',3,7,${at(0)},'HTTP 500 from coupon-svc\n  at send()',${at(-1700)},${at(-60 * i)})`,
      );
    for (let i = 1; i <= 4; i++)
      values.push(`('coupon','cp${i}','ecp${i}',0,1,${at(3600)},NULL,${at(-600)},${at(0)})`);
    for (let i = 1; i <= 37; i++)
      values.push(`('sms','s${i}','es${i}',2,0,${at(0)},NULL,${at(-3000)},${at(-(3000 - 10 * i))})`);
    values.push(`('sms','s-due','es-due',0,3,${at(-7200)},'timeout',${at(-3000)},${at(-7200)})`);
    values.push(`('sms','s-stuck','es-stuck',1,0,${at(0)},NULL,${at(-3000)},${at(-1200)})`);
    values.push(`('sms','s-flight','es-flight',1,0,${at(0)},NULL,${at(-3000)},${at(-60)})`);
    values.push(`('legacy','l1','el1',2,0,${at(0)},NULL,${at(-10_800)},${at(-10_800)})`);
    values.push(`('legacy','l2','el2',3,7,${at(0)},'HTTP 404 no such user',${at(-10_800)},${at(-10_200)})`);
    await db.run(
      `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, next_retry_time, last_error, created_at, updated_at) VALUES ${values.join(',\n')}`,
    );
  });

  afterAll(async () => {
    await db?.drop();
  });

  /** The SQL ground truth, written plainly (no window functions): the report must agree with it. */
  async function groundTruth(bizType?: string): Promise<Metrics> {
    const biz = bizType ? 'AND biz_type = ?' : '';
    const params = bizType ? [bizType] : [];
    const latency = `${db.epoch('updated_at')} - ${db.epoch('created_at')}`;
    const [w] = await db.rows<Record<string, number | null>>(
      `SELECT COUNT(*) AS created, ${db.countIf('status = 2')} AS succeeded, ${db.countIf('status = 3')} AS failed,
              AVG(CASE WHEN status = 2 THEN ${latency} END) AS avg_lat
         FROM async_task WHERE created_at >= ${db.at(-3600)} ${biz}`,
      params,
    );
    const lats = await db.rows<{ lat: number }>(
      `SELECT ${latency} AS lat FROM async_task
        WHERE status = 2 AND created_at >= ${db.at(-3600)} ${biz} ORDER BY lat`,
      params,
    );
    const [now] = await db.rows<Record<string, number | null>>(
      `SELECT ${db.countIf(`status = 0 AND next_retry_time <= ${db.at(0)}`)} AS due,
              ${db.countIf(`status = 1 AND updated_at <= ${db.at(-600)}`)} AS stuck,
              ${db.countIf('status = 3')} AS failed_open,
              ${db.epoch('now')} - ${db.epoch(`MIN(CASE WHEN status = 0 AND next_retry_time <= ${db.at(0)} THEN next_retry_time END)`)} AS oldest_due
         FROM async_task WHERE 1=1 ${biz}`,
      params,
    );
    const created = Number(w?.created);
    const failed = Number(w?.failed);
    const p95Rank = Math.ceil(0.95 * lats.length);
    return {
      created,
      succeeded: Number(w?.succeeded),
      failed,
      failureRate: created ? failed / created : null,
      latencyAvgSeconds: w?.avg_lat === null ? null : Number(w?.avg_lat),
      latencyP95Seconds: lats.length ? Number(lats[p95Rank - 1]?.lat) : null,
      due: Number(now?.due),
      stuck: Number(now?.stuck),
      failedOpen: Number(now?.failed_open),
      oldestDueSeconds: now?.oldest_due === null ? null : Number(now?.oldest_due),
    };
  }

  it('computes every metric, overall and per biz type, as the SQL ground truth says, across zones', async () => {
    const { code, json } = await runJson<ReportJson>(['report'], { cwd, env: CLIENT });
    assertMatchesSchema('report', json);
    expectMetrics(json.metrics, await groundTruth());
    for (const biz of ['coupon', 'sms', 'legacy']) {
      const row = json.byBizType.find((b) => b.bizType === biz);
      expect(row, biz).toBeDefined();
      expectMetrics(row as Metrics, await groundTruth(biz));
    }
    // The fixture's known answers, so that the ground truth itself is checked.
    expect(json.metrics).toMatchObject({
      created: 250,
      succeeded: 237,
      failed: 6,
      due: 1,
      stuck: 1,
      failedOpen: 7,
    });
    expect(json.byBizType.find((b) => b.bizType === 'coupon')?.latencyP95Seconds).toBe(190);
    expect(json.byBizType.find((b) => b.bizType === 'sms')?.latencyP95Seconds).toBe(360);
    expect(json.byBizType.find((b) => b.bizType === 'coupon')?.latencyAvgSeconds).toBeCloseTo(100.5, 6);
    expect(json.metrics.failureRate).toBeCloseTo(6 / 250, 10);
    expect(json.metrics.oldestDueSeconds).toBeGreaterThanOrEqual(7200);
    expect(json.metrics.oldestDueSeconds).toBeLessThan(7230);
    // 6/250 = 2.4% ≥ 1% warn, < 5% crit; stuck 1 ≥ 1; oldest due 2 h ≥ 10 min.
    expect(json.status).toBe('WARNING');
    expect(code).toBe(1);
    expect(json.breaches.map((b) => `${b.metric}:${b.level}`).sort()).toEqual([
      'failureRate:warn',
      'oldestDue:warn',
      'stuck:warn',
    ]);
  });

  it('names a sample biz_id, event_id and error summary for each failing biz type', async () => {
    const { json } = await runJson<ReportJson>(['report'], { cwd });
    const coupon = json.byBizType.find((b) => b.bizType === 'coupon');
    expect(coupon?.sample).toMatchObject({ bizId: 'cf6', eventId: 'ecf6' });
    expect(coupon?.sample?.error).toContain('HTTP 500 from coupon-svc');
    expect(json.byBizType.find((b) => b.bizType === 'legacy')?.sample?.bizId).toBe('l2');
    expect(json.byBizType.find((b) => b.bizType === 'sms')?.sample).toBeNull();
  });

  it('reports an empty window as null rates and latencies, never 0', async () => {
    const { code, json } = await runJson<ReportJson>(['report', '--biz-type', 'legacy'], { cwd });
    expect(code).toBe(0);
    expectMetrics(json.metrics, await groundTruth('legacy'));
    expect(json.metrics).toMatchObject({
      created: 0,
      failureRate: null,
      latencyAvgSeconds: null,
      latencyP95Seconds: null,
      failedOpen: 1,
    });
  });

  it('--trend 24h: hourly buckets of created, failed and latency, as the SQL ground truth buckets them', async () => {
    const { json } = await runJson<ReportJson & { trend: Trend }>(['report', '--trend', '24h'], {
      cwd,
      env: CLIENT,
    });
    assertMatchesSchema('report', json);
    expect(json.trend).toMatchObject({ span: '24h', bucketSeconds: 3600 });
    expect(json.trend.points).toHaveLength(24);
    const rows = await db.rows<{ created: number; status: number; lat: number }>(
      `SELECT ${db.epoch('created_at')} AS created, status, ${db.epoch('updated_at')} - ${db.epoch('created_at')} AS lat FROM async_task`,
    );
    const buckets = new Map<number, { created: number; failed: number; succeeded: number; lat: number }>();
    for (const r of rows) {
      const start = Number(r.created) - (Number(r.created) % 3600);
      const b = buckets.get(start) ?? { created: 0, failed: 0, succeeded: 0, lat: 0 };
      b.created++;
      if (Number(r.status) === 3) b.failed++;
      if (Number(r.status) === 2) {
        b.succeeded++;
        b.lat += Number(r.lat);
      }
      buckets.set(start, b);
    }
    const filled = json.trend.points.filter((p) => p.created > 0);
    expect(filled.map((p) => p.start).sort()).toEqual([...buckets.keys()].sort());
    for (const p of filled) {
      const b = buckets.get(p.start);
      expect({ created: p.created, failed: p.failed }).toEqual({ created: b?.created, failed: b?.failed });
      expect(p.latencyAvgSeconds).toBeCloseTo((b?.lat ?? 0) / (b?.succeeded || 1), 6);
    }
    expect(filled.reduce((n, p) => n + p.created, 0)).toBe(252);
    expect(filled.reduce((n, p) => n + p.failed, 0)).toBe(7);
  });

  it('exits 0, 1 and 2 at each threshold level, just inside and just outside', async () => {
    const cases: Array<[string[], number, string]> = [
      [['failureRate.warn=2.41%'], 0, 'OK'], // 2.4% is just under
      [['failureRate.warn=2.4%'], 1, 'WARNING'], // at the limit
      [['failureRate.warn=1%', 'failureRate.crit=2.4%'], 2, 'CRITICAL'],
      [['stuck.warn=2'], 0, 'OK'],
      [['stuck.warn=1'], 1, 'WARNING'],
      [['stuck.crit=1'], 2, 'CRITICAL'],
    ];
    const runs = await Promise.all(
      cases.map(([thresholds]) =>
        runJson<ReportJson>(['report', ...ONLY, ...thresholds.flatMap((t) => ['--threshold', t])], { cwd }),
      ),
    );
    cases.forEach(([thresholds, exit, status], i) => {
      expect({ thresholds, code: runs[i]?.code, status: runs[i]?.json.status }).toEqual({
        thresholds,
        code: exit,
        status,
      });
    });
  });

  it('prints a Nagios status line with perfdata, and UNKNOWN with exit 3 when the database is down', async () => {
    const ok = await runCli(['report', '--format', 'nagios', ...ONLY], { cwd });
    expect(ok.code).toBe(0);
    expect(ok.stdout.split('\n')[0]).toMatch(
      /^TASKRECON OK - .+ \| created=250;;;0 succeeded=237;;;0 failed=6;;;0 failure_rate=0\.024;;;0;1 /,
    );
    expect(ok.stdout).toContain(
      'coupon: 6 failed in window, 6 awaiting action; e.g. biz_id=cf6 event_id=ecf6: HTTP 500 from coupon-svc',
    );
    const down = await runCli(['report', '--format', 'nagios', '--db', DOWN[engine].dsn], { cwd });
    expect(down.code).toBe(3);
    expect(down.stdout).toMatch(DOWN[engine].says);
    expect(down.stdout + down.stderr).not.toContain('secret');
    const downJson = await runJson<{ error: { exit: number } }>(['report', '--db', DOWN[engine].dsn], {
      cwd,
    });
    expect(downJson.code).toBe(3);
    expect(downJson.json.error.exit).toBe(3);
  });

  it('writes --format json to --output and nothing to stdout, as cron wants it', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'taskrecon-json-')), 'report.json');
    const run = await runCli(['report', '--format', 'json', '--output', file], { cwd });
    // The file written is the run's success; the verdict is in it (--exit-status keeps it as the code).
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`wrote json to ${file}`);
    const written = JSON.parse(readFileSync(file, 'utf8')) as { status: string };
    expect(written.status).toBe('WARNING');
    const printed = await runCli(['report', '--format', 'json'], { cwd });
    expect((JSON.parse(printed.stdout) as { status: string }).status).toBe('WARNING');
  });

  it('writes Prometheus text that a real parser reads back, atomically replacing the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskrecon-prom-'));
    const file = join(dir, 'taskrecon.prom');
    writeFileSync(file, 'old\n');
    const before = statSync(file).ino;
    const run = await runCli(['report', '--format', 'prometheus', '--output', file, '--exit-status'], {
      cwd,
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(statSync(file).ino).not.toBe(before); // renamed over, not rewritten in place
    expect(readdirSync(dir)).toEqual(['taskrecon.prom']); // no temporary file left behind
    const text = readFileSync(file, 'utf8');
    const families = parsePrometheusTextFormat(text);
    const value = (name: string, labels: Record<string, string>) =>
      families
        .find((f) => f.name === name)
        ?.metrics.find((m) => JSON.stringify(m.labels ?? {}) === JSON.stringify(labels))?.value;
    expect(families.every((f) => f.help && f.type === 'GAUGE')).toBe(true);
    expect(value('taskrecon_report_overall_created', { source: 'async-task' })).toBe('250');
    expect(value('taskrecon_report_failed', { source: 'async-task', biz_type: 'coupon' })).toBe('6');
    expect(value('taskrecon_report_latency_p95_seconds', { source: 'async-task', biz_type: 'sms' })).toBe(
      '360',
    );
    expect(value('taskrecon_report_status', { source: 'async-task' })).toBe('1');
    expect(value('taskrecon_report_breach', { source: 'async-task', metric: 'stuck', level: 'warn' })).toBe(
      '1',
    );
    // legacy created nothing in the window: its failure ratio is unknown, so the series is absent, not 0.
    expect(
      value('taskrecon_report_failure_ratio', { source: 'async-task', biz_type: 'legacy' }),
    ).toBeUndefined();
    expect(text.match(/^# TYPE /gm)?.length).toBe(text.match(/^# HELP /gm)?.length);
  });

  it('refuses bad input with exit 3 and writes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskrecon-prom-'));
    mkdirSync(join(dir, 'sub'));
    const bad = [
      ['--threshold', 'failureRate.warn=150%'],
      ['--threshold', 'nope.warn=1'],
      ['--window', '5x'],
      ['--webhook', 'teams=http://127.0.0.1:1/'],
      ['--output', join(dir, 'missing', 'x.prom')],
    ];
    const results = await Promise.all(
      bad.map((args) => {
        const output = args[0] === '--output' ? [] : ['--output', join(dir, 'sub', 'x.prom')];
        return runCli(['report', '--format', 'prometheus', ...output, ...args], { cwd });
      }),
    );
    bad.forEach((args, i) => {
      expect(results[i]?.code, args.join(' ')).toBe(3);
      expect(results[i]?.stderr).toContain(args[0] as string);
    });
    expect(readdirSync(join(dir, 'sub'))).toEqual([]);
  });
});

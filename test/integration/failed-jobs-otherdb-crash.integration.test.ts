import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { BIN, runCli, runJson } from '../support/cli.js';
import { frameworkTableDdl } from '../support/framework-tables.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

// Laravel failed jobs re-pushed (compensate --action retry) into a `jobs` table of ANOTHER database
// (the queue connection's `db:`), whose insert commits there before the failed rows' delete and
// audit commit in the source's database. 3,000 failed jobs, the run SIGKILLed at random points (half
// of the kills as soon as a batch's jobs have committed in the target and before the source
// commits) and rerun until done: every uuid is in the target's jobs table exactly once, no failed
// row is left, each has one audit row and no intent is open. Without the write-ahead intent (its
// row taken away after such a kill) the rerun pushes that batch a second time, so the check can
// fail; and a target database without taskrecon's marker table is refused with exit 3.

const JOBS = 3000;
const KILLS = 8;
/** Paced so a killed run retries at most a batch plus RATE × window rows: eight kills never run out of work. */
const RATE = '800/s';
const KILL_WINDOW_MS = 300;

let source: TestSchema;
let target: TestSchema;
let cwd: string;

const q = async <T>(db: TestSchema, sql: string, params: unknown[] = []): Promise<T[]> =>
  (await db.sql.query(sql, params))[0] as T[];

function laravelPayload(uuid: string, n: number): string {
  return JSON.stringify({
    uuid,
    displayName: 'App\\Jobs\\IssueCoupon',
    job: 'Illuminate\\Queue\\CallQueuedHandler@call',
    maxTries: 3,
    timeout: null,
    retryUntil: null,
    data: {
      commandName: 'App\\Jobs\\IssueCoupon',
      command: `O:20:"App\\Jobs\\IssueCoupon":1:{s:1:"n";i:${n};}`,
    },
    id: randomBytes(16).toString('hex'),
    attempts: 3,
  });
}

/** JOBS failed jobs on the `database` connection; their uuids. */
async function seed(jobs = JOBS): Promise<Set<string>> {
  const uuids = new Set<string>();
  for (let start = 0; start < jobs; start += 500) {
    const values: unknown[] = [];
    const n = Math.min(500, jobs - start);
    for (let i = start; i < start + n; i++) {
      const uuid = randomUUID();
      uuids.add(uuid);
      values.push(uuid, 'database', 'default', laravelPayload(uuid, i), 'Exception: partner down');
    }
    await q(
      source,
      `INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) VALUES ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?)').join(', ')}`,
      values,
    );
  }
  return uuids;
}

/** How many times each uuid is in the target database's jobs table. */
async function queued(): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  for (const r of await q<{ payload: string }>(target, 'SELECT payload FROM jobs')) {
    const uuid = (JSON.parse(r.payload) as { uuid: string }).uuid;
    seen.set(uuid, (seen.get(uuid) ?? 0) + 1);
  }
  return seen;
}

const doubled = (m: Map<string, number>) => [...m].filter(([, n]) => n > 1).length;

async function jobCount(): Promise<number> {
  return Number((await q<{ n: number }>(target, 'SELECT COUNT(*) AS n FROM jobs'))[0]?.n);
}

/** A batch whose jobs committed in the target and whose source transaction has not (its marker is there). */
async function landedMarker(): Promise<boolean> {
  const rows = await q<{ n: number }>(
    target,
    "SELECT COUNT(*) AS n FROM taskrecon_push_marker WHERE state = 'landed'",
  );
  return Number(rows[0]?.n) > 0;
}

/** Open intents whose batch landed in the target: a kill between its commit there and the source's. */
async function landedOpen(): Promise<Array<{ id: number; run_id: string }>> {
  const open = await q<{ id: number; run_id: string }>(
    source,
    "SELECT id, run_id FROM taskrecon_intent WHERE state = 'open'",
  );
  const out: Array<{ id: number; run_id: string }> = [];
  for (const i of open) {
    const [m] = await q<{ state: string }>(
      target,
      'SELECT state FROM taskrecon_push_marker WHERE run_id = ? AND intent_id = ?',
      [i.run_id, i.id],
    );
    if (m?.state === 'landed') out.push(i);
  }
  return out;
}

/**
 * Runs taskrecon and SIGKILLs it at a random point within `windowMs` after its first push landed
 * or, with `atMarker`, as soon as a batch's marker shows in the target (its jobs committed there,
 * the source's transaction most often not yet). Resolves with whether the kill hit.
 */
function runAndKill(args: string[], windowMs: number, atMarker: boolean): Promise<{ killed: boolean }> {
  return new Promise((resolve, reject) => {
    void jobCount().then((before) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd,
        env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' },
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      let done = false;
      let armed = false;
      const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
      let timer: NodeJS.Timeout | undefined;
      void (async () => {
        while (!done && !armed) {
          if ((await jobCount()) > before) {
            armed = true;
            if (!atMarker)
              timer = setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * windowMs));
            break;
          }
          await new Promise((r) => setTimeout(r, 10));
        }
        while (atMarker && !done) {
          if (await landedMarker()) {
            child.kill('SIGKILL');
            return;
          }
          await new Promise((r) => setTimeout(r, 2));
        }
      })();
      child.on('error', reject);
      child.on('close', (_code, signal) => {
        done = true;
        clearTimeout(guard);
        clearTimeout(timer);
        resolve({ killed: signal === 'SIGKILL' && armed });
      });
    }, reject);
  });
}

const RETRY = ['compensate', '--source', 'laravel', '--action', 'retry', '--yes', '--batch', '50'];

beforeAll(async () => {
  source = await createTestSchema('fj_src');
  target = await createTestSchema('fj_target');
  for (const ddl of frameworkTableDdl('mysql', 'laravel_failed_jobs')) await source.sql.query(ddl);
  for (const ddl of frameworkTableDdl('mysql', 'laravel_jobs')) await target.sql.query(ddl);
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-fjotherdb-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${source.dsn}`,
      'sources:',
      '  laravel:',
      '    profile: laravel-failed-jobs',
      '    queue:',
      '      connections:',
      `        database: { driver: database, table: jobs, db: "${target.dsn}" }`,
      '',
    ].join('\n'),
  );
  const init = await runCli(['init', '--audit-only', '--source', 'laravel'], { cwd });
  expect(init.code, init.stderr).toBe(0);
});

beforeEach(async () => {
  for (const t of ['failed_jobs', 'taskrecon_audit', 'taskrecon_intent']) await q(source, `DELETE FROM ${t}`);
  await q(target, 'DELETE FROM jobs');
  if (await target.sql.query("SHOW TABLES LIKE 'taskrecon_push_marker'").then(([r]) => (r as []).length))
    await q(target, 'DELETE FROM taskrecon_push_marker');
});

afterAll(async () => {
  await source?.drop();
  await target?.drop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe('failed jobs re-pushed into a jobs table of another database', () => {
  it('is refused with exit 3 while that database has no taskrecon_push_marker, nothing written', async () => {
    await seed(20);
    const run = await runCli(RETRY, { cwd });
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain('taskrecon_push_marker');
    expect(run.stderr).toContain('taskrecon init --audit-only --db');
    const [failed] = await q<{ n: number }>(source, 'SELECT COUNT(*) AS n FROM failed_jobs');
    const [audit] = await q<{ n: number }>(source, 'SELECT COUNT(*) AS n FROM taskrecon_audit');
    const [open] = await q<{ n: number }>(source, 'SELECT COUNT(*) AS n FROM taskrecon_intent');
    expect([Number(failed?.n), Number(audit?.n), Number(open?.n), await jobCount()]).toEqual([20, 0, 0, 0]);
    const dry = await runJson<{ wouldFail: number }>([...RETRY, '--dry-run'], { cwd });
    expect(dry.json.wouldFail).toBe(20);
    const init = await runCli(['init', '--audit-only', '--db', target.dsn], { cwd });
    expect(init.code, init.stderr).toBe(0);
    expect(await target.sql.query("SHOW TABLES LIKE 'taskrecon_push_marker'").then(([r]) => r)).toHaveLength(
      1,
    );
  });

  it(`${JOBS} failed jobs, killed ${KILLS} times at random points and rerun: every uuid once`, async () => {
    const uuids = await seed();
    let kills = 0;
    let betweenCommits = 0;
    // Kills land at random: go on (bounded) until one has also fallen between the two commits.
    for (let attempt = 0; (kills < KILLS || betweenCommits === 0) && attempt < KILLS + 10; attempt++) {
      const run = await runAndKill([...RETRY, '--rate', RATE], KILL_WINDOW_MS, attempt % 2 === 1);
      if (run.killed) kills++;
      betweenCommits += (await landedOpen()).length;
      expect({ attempt, doubled: doubled(await queued()) }).toEqual({ attempt, doubled: 0 });
    }
    console.log(
      `other database: ${kills} kills, ${betweenCommits} between the target's commit and the source's`,
    );
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    // The case a re-push without an intent doubles happened: jobs committed in the target, failed
    // rows not yet deleted; the rerun settled it by the marker instead of pushing again.
    expect(betweenCommits).toBeGreaterThan(0);
    const done = await runJson<{ applied: number }>(RETRY, { cwd });
    expect(done.code, done.stderr).toBe(0);
    const now = await queued();
    expect({
      missing: [...uuids].filter((u) => !now.has(u)).length,
      doubled: doubled(now),
      foreign: [...now.keys()].filter((u) => !uuids.has(u)).length,
    }).toEqual({ missing: 0, doubled: 0, foreign: 0 });
    const [left] = await q<{ n: number }>(source, 'SELECT COUNT(*) AS n FROM failed_jobs');
    expect(Number(left?.n)).toBe(0);
    const [audit] = await q<{ ids: number; most: number }>(
      source,
      `SELECT COUNT(*) AS ids, MAX(n) AS most FROM
         (SELECT task_id, COUNT(*) AS n FROM taskrecon_audit WHERE action = 'retry' GROUP BY task_id) per`,
    );
    expect([Number(audit?.ids), Number(audit?.most)]).toEqual([JOBS, 1]);
    const [open] = await q<{ n: number }>(
      source,
      "SELECT COUNT(*) AS n FROM taskrecon_intent WHERE state = 'open'",
    );
    expect(Number(open?.n)).toBe(0);
    // Markers of landed batches are removed once settled; fenced ones stay to keep a slow push out.
    // A kill between a batch's commit and the removal of its marker leaves that marker: its intent
    // is settled, so nothing reads it again (harmless, and at most one per kill).
    const landed = await q<{ run_id: string; intent_id: number }>(
      target,
      "SELECT run_id, intent_id FROM taskrecon_push_marker WHERE state = 'landed'",
    );
    expect(landed.length).toBeLessThanOrEqual(kills);
    for (const m of landed) {
      const [intent] = await q<{ state: string }>(
        source,
        'SELECT state FROM taskrecon_intent WHERE id = ? AND run_id = ?',
        [m.intent_id, m.run_id],
      );
      expect(intent?.state, `marker of intent ${m.intent_id}`).not.toBe('open');
    }
  });

  it('without the intent, a batch killed between the two commits is pushed twice', async () => {
    await seed(600);
    let landed: Array<{ id: number; run_id: string }> = [];
    for (let attempt = 0; landed.length === 0 && attempt < 30; attempt++) {
      await runAndKill([...RETRY, '--rate', RATE], KILL_WINDOW_MS, true);
      landed = await landedOpen();
    }
    expect(landed.length, 'no kill landed between the two commits in 30 tries').toBeGreaterThan(0);
    // A re-push without a write-ahead intent: nothing tells the rerun the batch landed.
    for (const intent of landed) await q(source, 'DELETE FROM taskrecon_intent WHERE id = ?', [intent.id]);
    const done = await runCli(RETRY, { cwd });
    expect(done.code, done.stderr).toBe(0);
    expect(doubled(await queued())).toBeGreaterThan(0);
  });

  it('a push a later run fenced off cannot land: its marker key is taken', async () => {
    // The later run's look wrote `fenced` for (run, intent) first; the slow run's push then finds
    // the key taken and inserts nothing (the whole target transaction rolls back).
    await q(
      target,
      "INSERT INTO taskrecon_push_marker (run_id, intent_id, state, jobs, created_epoch) VALUES ('r-slow', 7, 'fenced', '[]', 0)",
    );
    const { FailedJobRequeuer } = await import('../../src/dispatch/failed-job-queue.js');
    const { laravelQueue } = await import('../../src/dispatch/laravel-queue.js');
    const { connect } = await import('../../src/db/connect.js');
    const db = await connect(source.dsn);
    const requeuer = new FailedJobRequeuer(laravelQueue, 'laravel', db, {
      database: { driver: 'database', table: 'jobs', db: target.dsn },
    });
    try {
      const row = {
        id: 1,
        connection: 'database',
        queue: 'default',
        payload: laravelPayload(randomUUID(), 1),
      };
      const plan = requeuer.plan(row, Math.floor(Date.now() / 1000));
      if ('refused' in plan) throw new Error(plan.refused);
      const [group] = requeuer.journaledGroups([plan]);
      const markers = new Map([[group?.target ?? '', { key: 'unused', runId: 'r-slow', intentId: 7 }]]);
      await expect(db.transaction((tx) => requeuer.push(tx, [plan], markers))).rejects.toThrow(
        /settled this batch/,
      );
      expect(await jobCount()).toBe(0);
      // The same push under a key nobody fenced lands, with its marker.
      markers.set(group?.target ?? '', { key: 'unused', runId: 'r-slow', intentId: 8 });
      await db.transaction((tx) => requeuer.push(tx, [plan], markers));
      expect(await jobCount()).toBe(1);
    } finally {
      await requeuer.close();
      await db.close();
    }
  });
});

import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { dropPrefix, openTestRedis } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { runWorker, testQueue } from '../support/bullmq/worker.js';
import { openRedisBroker } from '../../src/brokers/redis/index.js';
import { connect } from '../../src/db/connect.js';
import { bullmqJournal } from '../../src/verbs/queues/bullmq-journal.js';
import { targetJobId } from '../../src/brokers/redis/bullmq/move.js';

// Crash safety of `queues move --what failed` on BullMQ: failed jobs planted by a real BullMQ
// Worker that throws, the move (the built CLI) killed with SIGKILL at random points inside its
// batches, then run again until nothing is failed. A BullMQ Worker then runs each job exactly once,
// and each moved job has exactly one audit row, naming the run that moved it (a killed one
// included: its batch's write-ahead intent, left open, is settled by the next run by looking at the
// job). Taking a killed run's open intent away leaves jobs that moved with no audit row, so the
// audit check can fail.

const REDIS_DB = 12;
const prefix = `trtest-bqcrash-${randomBytes(4).toString('hex')}`;
const JOBS = 1500;
const KILLS = 10;
const HANG_WORKER = fileURLToPath(new URL('../support/bullmq/hang-worker.mjs', import.meta.url));

let schema: TestSchema;
let redis: Redis;
let cwd: string;
const queues: Queue[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function queue(name: string): Queue {
  const q = testQueue(REDIS_DB, prefix, name);
  queues.push(q);
  return q;
}

/** Plants `n` failed jobs in `name` with a real BullMQ Worker that throws; returns their ids. */
async function plantFailures(name: string, n: number): Promise<string[]> {
  const q = queue(name);
  const ids: string[] = [];
  for (let start = 0; start < n; start += 500) {
    const jobs = await q.addBulk(
      Array.from({ length: Math.min(500, n - start) }, (_, i) => ({
        name: 'send-mail',
        data: { n: start + i },
      })),
    );
    ids.push(...jobs.map((j) => String(j.id)));
  }
  await runWorker(REDIS_DB, prefix, name, {
    fail: true,
    until: async () => (await q.getJobCounts('failed')).failed === n,
    timeoutMs: 120_000,
  });
  return ids;
}

const failedCount = (name: string) => redis.zcard(`${prefix}:${name}:failed`);

interface Killed {
  /** Killed while it was moving (the failed set had shrunk), not before or after. */
  midway: boolean;
  stderr: string;
}

/**
 * Runs `queues move` and SIGKILLs it once the failed set of `from` has lost a random 1..`upTo` jobs
 * (anywhere inside a batch or between two); a run that finishes first is not killed.
 */
function moveAndKill(args: string[], from: string, upTo: number): Promise<Killed> {
  return new Promise((resolve, reject) => {
    void failedCount(from).then((before) => {
      const target = before - 1 - Math.floor(Math.random() * upTo);
      const child = spawn(process.execPath, [BIN, 'queues', 'move', ...args, '--yes'], {
        cwd,
        env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      let done = false;
      let midway = false;
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      void (async () => {
        while (!done) {
          if ((await failedCount(from)) <= target) {
            midway = !done;
            child.kill('SIGKILL');
            return;
          }
          await sleep(2);
        }
      })();
      child.on('error', reject);
      child.on('close', () => {
        done = true;
        clearTimeout(killer);
        resolve({ midway, stderr });
      });
    }, reject);
  });
}

interface MoveJson {
  matched: number;
  moved: number;
  runId: string;
  settledIntents?: Array<{ kind: string; runId: string; state: string; audited: number }>;
}

/** Runs the move to its end until nothing of `from` is failed (bounded). Out: each run's --json. */
async function moveUntilEmpty(args: string[], from: string): Promise<MoveJson[]> {
  const runs: MoveJson[] = [];
  for (let i = 0; i < 5 && (runs.length === 0 || (await failedCount(from)) > 0); i++) {
    const run = await runJson<MoveJson>(['queues', 'move', ...args, '--yes'], { cwd, timeoutMs: 120_000 });
    expect(run.code, run.stderr).toBe(0);
    assertMatchesSchema('queues-move', run.json);
    runs.push(run.json);
  }
  expect(await failedCount(from)).toBe(0);
  return runs;
}

interface IntentRow {
  id: number;
  run_id: string;
  state: string;
  jobs: string;
}

async function intents(where = '1 = 1'): Promise<IntentRow[]> {
  const [rows] = await schema.sql.query(
    `SELECT id, run_id, state, jobs FROM taskrecon_intent WHERE ${where}`,
  );
  return rows as IntentRow[];
}

/** The audit rows of moves out of `from`, by job id: the runs that audited it (and who settled). */
async function auditByJob(from: string): Promise<Map<string, Array<{ run: string; settledBy?: string }>>> {
  const [rows] = await schema.sql.query(
    "SELECT task_id, run_id, after_json FROM taskrecon_audit WHERE action = 'queue-move' AND source = 'app' AND task_table = ?",
    [from],
  );
  const out = new Map<string, Array<{ run: string; settledBy?: string }>>();
  for (const row of rows as Array<{ task_id: string; run_id: string; after_json: string }>) {
    const { settledBy } = JSON.parse(row.after_json) as { settledBy?: string };
    out.set(row.task_id, [...(out.get(row.task_id) ?? []), { run: row.run_id, settledBy }]);
  }
  return out;
}

/** Each job id → the runs whose landed (or partly landed) intent named it. */
async function runsThatNamed(): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  for (const intent of await intents("state IN ('landed', 'partial')"))
    for (const id of JSON.parse(intent.jobs) as string[])
      out.set(id, (out.get(id) ?? new Set()).add(intent.run_id));
  return out;
}

/** Kills the move `KILLS` times midway (bounded attempts). Out: how many kills left an intent open. */
async function killRepeatedly(args: string[], from: string, upTo: number): Promise<number> {
  let kills = 0;
  let leftOpen = 0;
  const log: string[] = [];
  for (let attempt = 0; kills < KILLS && attempt < KILLS + 10; attempt++) {
    const run = await moveAndKill(args, from, upTo);
    log.push(run.stderr);
    if (!run.midway) continue;
    kills++;
    if ((await intents("state = 'open'")).length > 0) leftOpen++;
  }
  expect(kills, log.join('\n')).toBe(KILLS);
  return leftOpen;
}

beforeAll(async () => {
  redis = await openTestRedis(REDIS_DB);
  schema = await createTestSchema('queues_bullmq_crash');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-bqcrash-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'brokers:',
      '  app:',
      '    kind: redis',
      `    url: redis://127.0.0.1:6379/${REDIS_DB}`,
      '    framework: bullmq',
      `    prefix: ${prefix}`,
      '',
    ].join('\n'),
  );
  const init = await runJson(['init', '--audit-only'], { cwd });
  expect(init.code, init.stderr).toBe(0);
}, 60_000);

afterAll(async () => {
  for (const q of queues) await q.close().catch(() => undefined);
  await dropPrefix(redis, `${prefix}:`).catch(() => undefined);
  redis?.disconnect();
  await schema?.drop();
});

describe('queues move --what failed on BullMQ survives SIGKILL at any point', () => {
  it(`retries ${JOBS} failed jobs in place, killed ${KILLS} times: each runs once, each audited once under its run`, async () => {
    const ids = await plantFailures('crash', JOBS);
    const args = ['--broker', 'app', '--from', 'crash', '--what', 'failed', '--batch', '50'];
    const leftOpen = await killRepeatedly(args, 'crash', 120);
    // A direct look: kills inside a batch leave its intent open (the retries done, the audit not).
    expect(leftOpen).toBeGreaterThan(0);
    const runs = await moveUntilEmpty(args, 'crash');
    expect(await intents("state = 'open'")).toEqual([]);
    // The last kill's open batches were settled by the rerun, which says so.
    const settled = runs.flatMap((r) => r.settledIntents ?? []);
    expect(settled.length).toBeGreaterThan(0);
    expect(settled.every((s) => s.kind === 'bullmq-move')).toBe(true);

    const audit = await auditByJob('crash');
    const named = await runsThatNamed();
    const wrong = ids.filter((id) => {
      const rows = audit.get(id) ?? [];
      return rows.length !== 1 || !named.get(id)?.has(rows[0]?.run as string);
    });
    expect(wrong).toEqual([]);
    // Some jobs were retried by a killed run and audited under it by a later one.
    const byLater = [...audit.values()].flat().filter((r) => r.settledBy && r.settledBy !== r.run);
    expect(byLater.length).toBeGreaterThan(0);

    const q = queue('crash');
    const executions = await runWorker(REDIS_DB, prefix, 'crash', {
      until: async () => {
        if (((await q.getJobCounts('completed')).completed ?? 0) < JOBS) return false;
        await sleep(500);
        return true;
      },
      timeoutMs: 120_000,
    });
    expect([...executions.keys()].sort()).toEqual([...ids].sort());
    expect([...executions.values()].filter((n) => n !== 1)).toEqual([]);
    expect(await q.getJobCounts('failed', 'wait', 'active', 'completed')).toEqual({
      failed: 0,
      wait: 0,
      active: 0,
      completed: JOBS,
    });
  }, 600_000);

  it('--to another queue, killed at random points: each job added there once, removed here, audited once', async () => {
    const n = 400;
    const ids = await plantFailures('crashsrc', n);
    await queue('crashdst').add('seed', { n: -1 });
    const args = [
      '--broker',
      'app',
      '--from',
      'crashsrc',
      '--to',
      'crashdst',
      '--what',
      'failed',
      '--batch',
      '20',
    ];
    await killRepeatedly(args, 'crashsrc', 30);
    await moveUntilEmpty(args, 'crashsrc');
    expect(await intents("state = 'open'")).toEqual([]);
    const src = queue('crashsrc');
    expect(await src.getJobCounts('failed', 'wait', 'completed')).toEqual({
      failed: 0,
      wait: 0,
      completed: 0,
    });

    const audit = await auditByJob('crashsrc');
    expect(ids.filter((id) => audit.get(id)?.length !== 1)).toEqual([]);

    const dst = queue('crashdst');
    const seen = new Map<number, number>();
    await runWorker(REDIS_DB, prefix, 'crashdst', {
      until: async () => {
        if (((await dst.getJobCounts('completed')).completed ?? 0) < n + 1) return false;
        await sleep(500);
        return true;
      },
      timeoutMs: 120_000,
    });
    for (const job of await dst.getCompleted(0, -1)) {
      const k = (job.data as { n: number }).n;
      seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    expect(seen.size).toBe(n + 1);
    expect([...seen.values()].filter((c) => c !== 1)).toEqual([]);
    expect(await dst.getJobCounts('failed', 'wait', 'active')).toEqual({ failed: 0, wait: 0, active: 0 });
  }, 600_000);

  it('a killed batch whose open intent is taken away leaves retried jobs nobody audited', async () => {
    const ids = await plantFailures('neg', 600);
    const args = ['--broker', 'app', '--from', 'neg', '--what', 'failed', '--batch', '50'];
    // An open intent of which BullMQ retried a job already: a kill between the retry and the audit.
    let open: IntentRow[] = [];
    for (let attempt = 0; open.length === 0 && attempt < 20; attempt++) {
      await moveAndKill(args, 'neg', 40);
      open = [];
      for (const intent of await intents("state = 'open'")) {
        const jobs = JSON.parse(intent.jobs) as string[];
        const scores = await Promise.all(jobs.map((id) => redis.zscore(`${prefix}:neg:failed`, id)));
        if (scores.some((s) => s === null)) open.push(intent);
      }
    }
    expect(open.length, 'no kill landed between a retry and its audit in 20 tries').toBeGreaterThan(0);
    await schema.sql.query("DELETE FROM taskrecon_intent WHERE state = 'open'");
    await moveUntilEmpty(args, 'neg');
    const audit = await auditByJob('neg');
    expect(ids.filter((id) => !audit.has(id)).length).toBeGreaterThan(0);
  }, 300_000);

  it('recover: a check a killed run made is audited under it by the next recover, once that run is gone', async () => {
    const q = queue('stall');
    const jobs = await q.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'charge', data: { n: i } })));
    const ids = jobs.map((j) => String(j.id));
    const child = spawn(process.execPath, [HANG_WORKER, String(REDIS_DB), prefix, 'stall', '4', '1000'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const deadline = Date.now() + 20_000;
    while (((await q.getJobCounts('active')).active ?? 0) < 4) {
      if (Date.now() > deadline) throw new Error('the hanging worker took no job');
      await sleep(50);
    }
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    await sleep(2000);

    // What a recover killed between BullMQ's stalled check and its settlement leaves: the batch's
    // intent committed, the jobs moved to wait by the check, no audit row. Its run is still
    // connected (this test's connection carries its name) until the name is dropped.
    const killedRun = randomUUID();
    const db = await connect(schema.dsn);
    const meta = {
      operator: 'ops',
      host: 'h1',
      action: 'queue-recover',
      broker: 'app',
      reason: null,
      runId: killedRun,
    };
    const journal = await bullmqJournal(db, meta);
    const asPicked = (id: string) => ({
      jobId: id,
      from: 'stall',
      to: 'stall',
      fromSet: 'active',
      toSet: 'wait',
      finishedOn: null,
    });
    await journal.open('stall', 'stall', ids.map(asPicked));
    await db.close();
    const url = `redis://127.0.0.1:6379/${REDIS_DB}`;
    const broker = await openRedisBroker('app', { kind: 'redis', url, framework: 'bullmq', prefix });
    try {
      const moved = await broker.recover({
        from: 'stall',
        what: 'all',
        batch: 100,
        dryRun: false,
        runId: randomUUID(),
        onBatch: async () => undefined,
        shouldStop: () => false,
      });
      expect(moved.reduce((n, r) => n + r.moved, 0)).toBe(4);
    } finally {
      await broker.close();
    }
    await redis.client('SETNAME', `taskrecon-run-${killedRun}`);

    const args = ['queues', 'recover', '--broker', 'app', '--queue', 'stall', '--yes'];
    const alive = await runJson<MoveJson>(args, { cwd });
    expect(alive.code, alive.stderr).toBe(0);
    expect(alive.json.settledIntents ?? []).toEqual([]);
    expect(await intents(`state = 'open' AND run_id = '${killedRun}'`)).toHaveLength(1);

    await redis.client('SETNAME', '');
    const gone = await runJson<MoveJson>(args, { cwd });
    expect(gone.code, gone.stderr).toBe(0);
    assertMatchesSchema('queues-recover', gone.json);
    expect(gone.json.settledIntents).toMatchObject([
      { kind: 'bullmq-recover', runId: killedRun, state: 'landed', audited: 4 },
    ]);
    const [rows] = await schema.sql.query(
      "SELECT task_id, run_id, after_json FROM taskrecon_audit WHERE action = 'queue-recover' AND task_table = 'stall'",
    );
    const audit = rows as Array<{ task_id: string; run_id: string; after_json: string }>;
    expect(audit.map((r) => r.task_id).sort()).toEqual([...ids].sort());
    expect(audit.every((r) => r.run_id === killedRun)).toBe(true);
    expect(
      audit.every((r) => (JSON.parse(r.after_json) as { settledBy?: string }).settledBy === gone.json.runId),
    ).toBe(true);

    const executions = await runWorker(REDIS_DB, prefix, 'stall', {
      until: async () => {
        if (((await q.getJobCounts('completed')).completed ?? 0) < 4) return false;
        await sleep(300);
        return true;
      },
    });
    expect([...executions.values()]).toEqual([1, 1, 1, 1]);
  }, 120_000);

  it('--to: a batch killed between the add and the remove is finished and audited; one never moved is moved by the rerun', async () => {
    const [a, b] = await plantFailures('half', 2);
    const src = queue('half');
    const dst = queue('halfdst');
    const jobA = await src.getJob(a as string);
    const jobB = await src.getJob(b as string);
    if (!jobA || !jobB) throw new Error('planted jobs missing');
    // What a move killed between `Queue.add` of A and its `Job.remove` leaves: the intent open,
    // A in both queues, B not moved yet.
    const killedRun = randomUUID();
    const db = await connect(schema.dsn);
    const meta = {
      operator: 'ops',
      host: 'h1',
      action: 'queue-move',
      broker: 'app',
      reason: null,
      runId: killedRun,
    };
    const journal = await bullmqJournal(db, meta);
    await journal.open(
      'half',
      'halfdst',
      [jobA, jobB].map((job) => ({
        jobId: String(job.id),
        from: 'half',
        to: 'halfdst',
        fromSet: 'failed',
        toSet: 'wait',
        finishedOn: job.finishedOn ?? null,
        targetId: targetJobId('half', job),
      })),
    );
    await db.close();
    await dst.add(jobA.name, jobA.data, { jobId: targetJobId('half', jobA) });

    const run = await runJson<MoveJson>(
      ['queues', 'move', '--broker', 'app', '--from', 'half', '--to', 'halfdst', '--what', 'failed', '--yes'],
      { cwd },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.settledIntents).toMatchObject([{ runId: killedRun, state: 'partial', audited: 1 }]);
    expect(run.json).toMatchObject({ matched: 1, moved: 1 });
    expect(await src.getJobCounts('failed', 'wait')).toEqual({ failed: 0, wait: 0 });
    expect(await dst.getJobCounts('wait')).toEqual({ wait: 2 });
    const audit = await auditByJob('half');
    expect(audit.get(a as string)).toEqual([{ run: killedRun, settledBy: run.json.runId }]);
    expect(audit.get(b as string)).toEqual([{ run: run.json.runId, settledBy: undefined }]);
  }, 120_000);
});

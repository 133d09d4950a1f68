import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { dropPrefix, openTestRedis } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { runWorker, testQueue } from '../support/bullmq/worker.js';
import { openRedisBroker } from '../../src/brokers/redis/index.js';
import { connect } from '../../src/db/connect.js';
import { BullmqRetryJournal } from '../../src/verbs/sweep/bullmq-journal.js';

// Sweep rules on a BullMQ broker: failures planted by a real BullMQ Worker (each job throws the
// error its data names), rules by job name, error and queue; retries through BullMQ's own
// Job.retry, audited one row per job; two sweeps at once retry each job once; a dry run writes
// nothing; jobs no rule matches stay failed; a real Worker then runs each retried job exactly once.

const REDIS_DB = 12;
const prefix = `trtest-bullsweep-${randomBytes(4).toString('hex')}`;
const URL = `redis://127.0.0.1:6379/${REDIS_DB}`;

let schema: TestSchema;
let redis: Redis;
let cwd: string;
const queues = new Map<string, Queue>();
let hook: Server;
const hooks: string[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function queue(name: string): Queue {
  let q = queues.get(name);
  if (!q) {
    q = testQueue(REDIS_DB, prefix, name);
    queues.set(name, q);
  }
  return q;
}

const BROKERS = [
  'brokers:',
  '  jobs:',
  '    kind: redis',
  `    url: ${URL}`,
  '    framework: bullmq',
  `    prefix: ${prefix}`,
  '  elsewhere:',
  '    kind: redis',
  `    url: ${URL}`,
  '    framework: bullmq',
  `    prefix: ${prefix}-other`,
  '  laravel:',
  '    kind: redis',
  `    url: ${URL}`,
  '    framework: laravel',
  `    prefix: ${prefix}-laravel_`,
];

function config(sweeps: string[], db = true): void {
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [...(db ? [`db: ${schema.dsn}`] : []), ...BROKERS, 'sweeps:', ...sweeps, ''].join('\n'),
  );
}

const SMTP_RULE =
  "  - { name: smtp, match: { broker: jobs, queue: mail, bizType: send-mail, errorLike: 'smtp timeout' }, action: retry, maxSweeps: 1 }";

/** A digest of every key of this file's prefix: equal before and after means nothing was written. */
async function digestPrefix(): Promise<string> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  keys.sort();
  const hash = createHash('sha256');
  for (const key of keys) hash.update(key).update((await redis.dump(key)) ?? '');
  return hash.digest('hex');
}

interface AuditRow {
  task_id: string;
  event_id: string;
  source: string;
  task_table: string;
  from_status: string;
  to_status: string;
  run_id: string;
}

async function sweepAudit(): Promise<AuditRow[]> {
  const [rows] = await schema.sql.query(
    "SELECT task_id, event_id, source, task_table, from_status, to_status, run_id FROM taskrecon_audit WHERE action = 'sweep-retry' ORDER BY id",
  );
  return rows as AuditRow[];
}

/** Fails each planted job with the error its data names; returns the ids by job. */
async function plantFailures(name: string, jobs: Array<{ name: string; error: string }>): Promise<string[]> {
  const q = queue(name);
  const before = (await q.getJobCounts('failed')).failed ?? 0;
  const added = await q.addBulk(jobs.map((j, i) => ({ name: j.name, data: { n: i, error: j.error } })));
  await runWorker(REDIS_DB, prefix, name, {
    fail: true,
    error: (job: Job) => String((job.data as { error: string }).error),
    until: async () => (await q.getJobCounts('failed')).failed === before + jobs.length,
  });
  return added.map((j) => String(j.id));
}

interface SweepJson {
  dryRun: boolean;
  matched: number;
  unmatched: number;
  retried: number;
  lostRace: number;
  secondFailures: number;
  alerted: number;
  settledIntents?: Array<{ runId: string; state: string; audited: number }>;
  brokers?: string[];
  runId: string;
  results: Array<{
    source: string;
    queue?: string;
    id: string;
    bizType: string;
    rule: string;
    outcome: string;
    reason?: string;
  }>;
}

let smtpIds: string[] = [];
let otherErrorIds: string[] = [];
let otherNameIds: string[] = [];
let otherQueueIds: string[] = [];

beforeAll(async () => {
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      hooks.push(body);
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  redis = await openTestRedis(REDIS_DB);
  schema = await createTestSchema('sweep_bullmq');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-bullsweep-'));
  config([SMTP_RULE]);
  const init = await runJson(['init', '--audit-only'], { cwd });
  expect(init.code, init.stderr).toBe(0);
  const planted = await plantFailures('mail', [
    ...Array.from({ length: 4 }, () => ({ name: 'send-mail', error: 'SMTP timeout after 30s' })),
    ...Array.from({ length: 2 }, () => ({ name: 'send-mail', error: 'mailbox full' })),
    ...Array.from({ length: 2 }, () => ({ name: 'send-sms', error: 'SMTP timeout after 30s' })),
  ]);
  smtpIds = planted.slice(0, 4);
  otherErrorIds = planted.slice(4, 6);
  otherNameIds = planted.slice(6, 8);
  otherQueueIds = await plantFailures('digest', [{ name: 'send-mail', error: 'SMTP timeout after 30s' }]);
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => hook?.close(resolve));
  for (const q of queues.values()) await q.close().catch(() => undefined);
  if (redis) await dropPrefix(redis, prefix);
  redis?.disconnect();
  await schema?.drop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe('sweep rules on a BullMQ broker', () => {
  it('--dry-run decides by job name, error and queue, and writes nothing', async () => {
    const before = await digestPrefix();
    const dry = await runJson<SweepJson>(['sweep', '--dry-run'], { cwd });
    expect(dry.code, dry.stderr).toBe(0);
    assertMatchesSchema('sweep', dry.json);
    expect(dry.json).toMatchObject({ dryRun: true, retried: 4, brokers: ['jobs'] });
    // The other jobs of `mail` match no rule; `digest` is a queue no rule names, so it is not read.
    expect(dry.json.unmatched).toBe(4);
    expect(dry.json.results.map((r) => r.id).sort()).toEqual([...smtpIds].sort());
    for (const r of dry.json.results)
      expect(r).toMatchObject({
        source: 'jobs',
        queue: 'mail',
        bizType: 'send-mail',
        outcome: 'would-retry',
      });
    expect(await digestPrefix()).toBe(before);
    expect(await sweepAudit()).toEqual([]);
  });

  it('two sweeps at once retry each matching job once, audited; the others stay failed; a worker runs each once', async () => {
    const [a, b] = await Promise.all([
      runJson<SweepJson>(['sweep'], { cwd }),
      runJson<SweepJson>(['sweep'], { cwd }),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    assertMatchesSchema('sweep', a.json);
    const retried = [...a.json.results, ...b.json.results].filter((r) => r.outcome === 'retried');
    expect(retried.map((r) => r.id).sort()).toEqual([...smtpIds].sort());
    // A job the twin took first is a lost race, with BullMQ's word for why, never a second retry.
    const lost = [...a.json.results, ...b.json.results].filter((r) => r.outcome === 'lost-race');
    for (const r of lost) expect(r.reason).toMatch(/retried meanwhile|refused the retry|failed again/);
    expect(a.json.retried + b.json.retried).toBe(4);

    const audit = await sweepAudit();
    expect(audit.map((r) => r.task_id).sort()).toEqual([...smtpIds].sort());
    for (const row of audit)
      expect(row).toMatchObject({
        event_id: row.task_id,
        source: 'jobs',
        task_table: 'mail',
        from_status: 'failed',
        to_status: 'wait',
      });
    const runs = new Set(audit.map((r) => r.run_id));
    expect([...runs].every((r) => r === a.json.runId || r === b.json.runId)).toBe(true);
    // `taskrecon audit` lists them by run, as every other change.
    const busy = a.json.retried > 0 ? a.json.runId : b.json.runId;
    const listed = await runJson<{ count: number; entries: Array<{ action: string; taskId: string }> }>(
      ['audit', '--action', 'sweep-retry', '--run', busy],
      { cwd },
    );
    expect(listed.code, listed.stderr).toBe(0);
    assertMatchesSchema('audit', listed.json);
    expect(listed.json.entries.length).toBeGreaterThan(0);
    expect(listed.json.entries.map((e) => e.taskId).sort()).toEqual(
      audit
        .filter((r) => r.run_id === busy)
        .map((r) => r.task_id)
        .sort(),
    );

    const mail = queue('mail');
    for (const id of smtpIds) expect(await mail.getJobState(id)).toBe('waiting');
    for (const id of [...otherErrorIds, ...otherNameIds]) expect(await mail.getJobState(id)).toBe('failed');
    expect(await queue('digest').getJobState(otherQueueIds[0] as string)).toBe('failed');

    const executions = await runWorker(REDIS_DB, prefix, 'mail', {
      until: async () => {
        if (((await mail.getJobCounts('completed')).completed ?? 0) < 4) return false;
        await sleep(300);
        return true;
      },
    });
    expect([...executions.keys()].sort()).toEqual([...smtpIds].sort());
    for (const id of smtpIds) expect(executions.get(id)).toBe(1);
    expect(await mail.getJobCounts('failed', 'completed')).toEqual({ failed: 4, completed: 4 });
  });

  it('a sweep of the same window again does nothing new', async () => {
    const before = await digestPrefix();
    const again = await runJson<SweepJson>(['sweep'], { cwd });
    expect(again.code, again.stderr).toBe(0);
    expect(again.json).toMatchObject({ retried: 0, matched: 0, unmatched: 4 });
    expect(await digestPrefix()).toBe(before);
    expect(await sweepAudit()).toHaveLength(4);
  });

  it('a job that fails again after its sweep is a second failure: not retried, exit 1', async () => {
    config([
      SMTP_RULE,
      "  - { name: sms, match: { broker: jobs, queue: sms, errorLike: 'gateway%503' }, action: retry, maxSweeps: 1 }",
    ]);
    const ids = await plantFailures('sms', [
      { name: 'send-sms', error: 'gateway said 503' },
      { name: 'send-sms', error: 'gateway said 503' },
    ]);
    const first = await runJson<SweepJson>(['sweep'], { cwd });
    expect(first.code, first.stderr).toBe(0);
    expect(first.json.results.filter((r) => r.rule === 'sms').map((r) => r.outcome)).toEqual([
      'retried',
      'retried',
    ]);
    const sms = queue('sms');
    await runWorker(REDIS_DB, prefix, 'sms', {
      fail: true,
      error: () => 'gateway said 503',
      until: async () => (await sms.getJobCounts('failed')).failed === 2,
    });
    const second = await runJson<SweepJson>(['sweep'], { cwd });
    expect(second.code).toBe(1);
    expect(second.json.secondFailures).toBe(2);
    expect(
      second.json.results
        .filter((r) => r.outcome === 'second-failure')
        .map((r) => r.id)
        .sort(),
    ).toEqual([...ids].sort());
    for (const id of ids) expect(await sms.getJobState(id)).toBe('failed');
    const text = await runCli(['sweep'], { cwd });
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('jobs/sms');
    expect((await sweepAudit()).filter((r) => r.task_table === 'sms')).toHaveLength(2);

    // Alerted once, naming the broker, the job class and the error; the next sweep does not alert again.
    const webhook = `generic=http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    const alerted = await runJson<SweepJson>(['sweep', '--notify', '--webhook', webhook], { cwd });
    expect(alerted.code).toBe(1);
    expect(alerted.json.alerted).toBe(2);
    expect(hooks).toHaveLength(1);
    expect(hooks[0]).toContain('send-sms');
    expect(hooks[0]).toContain('"source":"jobs"');
    expect(hooks[0]).toContain('gateway said 503');
    const quiet = await runJson<SweepJson>(['sweep', '--notify', '--webhook', webhook], { cwd });
    expect(quiet.code).toBe(1);
    expect(quiet.json.alerted).toBe(0);
    expect(hooks).toHaveLength(1);
    for (const id of ids) expect(await sms.getJobState(id)).toBe('failed');
  });
});

describe('a sweep killed mid-retry: the next one settles its write-ahead intents by looking', () => {
  it('a job it retried is audited under it, a job it never retried is retried now, a young intent is left alone', async () => {
    config([
      SMTP_RULE,
      '  - { name: crash, match: { broker: jobs, queue: crashq }, action: retry, maxSweeps: 1 }',
    ]);
    const [landed, never, young] = (await plantFailures('crashq', [
      { name: 'charge', error: 'card declined' },
      { name: 'charge', error: 'card declined' },
      { name: 'charge', error: 'card declined' },
    ])) as [string, string, string];
    const crashq = queue('crashq');
    const killedRun = `killed-${randomBytes(4).toString('hex')}`;
    const db = await connect(schema.dsn);
    try {
      const journal = await BullmqRetryJournal.open(db, 'jobs');
      const begin = async (id: string) => {
        const job = await crashq.getJob(id);
        await journal.begin(
          {
            operator: 'sweep:killed',
            host: 'h',
            action: 'sweep-retry',
            source: 'jobs',
            taskTable: 'crashq',
            taskId: id,
            eventId: id,
            fromStatus: 'failed',
            toStatus: 'wait',
            beforeJson: '{}',
            afterJson: JSON.stringify({ queue: 'crashq', set: 'wait', rule: 'crash' }),
            reason: 'sweep rule crash',
            runId: killedRun,
          },
          'crashq',
          job?.finishedOn ?? null,
        );
        return job;
      };
      // Killed after BullMQ took the retry of `landed`, and before it asked BullMQ about `never`.
      await (await begin(landed))?.retry('failed');
      await begin(never);
      await schema.sql.query(
        "UPDATE taskrecon_intent SET opened_epoch = opened_epoch - 700 WHERE run_id = ? AND kind = 'bullmq-retry'",
        [killedRun],
      );
      // A sweep still running: its intent is minutes young.
      await begin(young);
    } finally {
      await db.close();
    }

    const next = await runJson<SweepJson>(['sweep'], { cwd });
    expect(next.code, next.stderr).toBe(0);
    assertMatchesSchema('sweep', next.json);
    expect(next.json.settledIntents).toEqual([
      expect.objectContaining({ runId: killedRun, state: 'landed', audited: 1 }),
      expect.objectContaining({ runId: killedRun, state: 'not-landed', audited: 0 }),
    ]);
    const crash = next.json.results.filter((r) => r.queue === 'crashq');
    expect(crash.map((r) => [r.id, r.outcome]).sort()).toEqual(
      [
        [never, 'retried'],
        [young, 'retried'],
      ].sort(),
    );
    const audit = (await sweepAudit()).filter((r) => r.task_table === 'crashq');
    expect(audit.map((r) => [r.task_id, r.run_id]).sort()).toEqual(
      [
        [landed, killedRun],
        [never, next.json.runId],
        [young, next.json.runId],
      ].sort(),
    );
    const [open] = await schema.sql.query(
      "SELECT COUNT(*) AS n FROM taskrecon_intent WHERE kind = 'bullmq-retry' AND state = 'open'",
    );
    expect(Number((open as Array<{ n: number }>)[0]?.n)).toBe(1);

    const executions = await runWorker(REDIS_DB, prefix, 'crashq', {
      until: async () => {
        if (((await crashq.getJobCounts('completed')).completed ?? 0) < 3) return false;
        await sleep(300);
        return true;
      },
    });
    for (const id of [landed, never, young]) expect(executions.get(id)).toBe(1);
  });
});

describe('the retry refuses a failure BullMQ no longer holds', () => {
  it('a job retried meanwhile, or failed again since it was read, is left alone', async () => {
    const [id] = await plantFailures('race', [{ name: 'charge', error: 'card declined' }]);
    const job = await queue('race').getJob(id as string);
    const finishedOn = job?.finishedOn ?? null;
    const broker = await openRedisBroker('jobs', { kind: 'redis', url: URL, framework: 'bullmq', prefix });
    try {
      const stale = await broker.retryFailedJob('race', {
        jobId: id as string,
        finishedOn: (finishedOn ?? 0) - 1,
      });
      expect(stale).toEqual({ retried: false, reason: expect.stringContaining('failed again') });
      expect(await queue('race').getJobState(id as string)).toBe('failed');
      expect(await broker.retryFailedJob('race', { jobId: id as string, finishedOn })).toEqual({
        retried: true,
      });
      const twice = await broker.retryFailedJob('race', { jobId: id as string, finishedOn });
      expect(twice).toEqual({ retried: false, reason: expect.stringContaining('as waiting') });
      expect(await queue('race').getJobCounts('wait', 'failed')).toEqual({ wait: 1, failed: 0 });
    } finally {
      await broker.close();
    }
  });
});

describe('bad sweep rules for brokers: exit 3, a clear message, nothing written', () => {
  it('an unknown broker, a broker of another framework, broker and source together, a prefix with no BullMQ queue, no database', async () => {
    const before = await digestPrefix();
    const audited = (await sweepAudit()).length;
    const cases: Array<[string[], boolean, string]> = [
      [
        ['  - { name: x, match: { broker: nosuch }, action: retry }'],
        true,
        "'nosuch' is not a configured broker",
      ],
      [['  - { name: x, match: { broker: laravel }, action: retry }'], true, 'is not a BullMQ broker'],
      [['  - { name: x, match: { broker: jobs, source: tasks }, action: retry }'], true, 'not both'],
      [
        ['  - { name: x, match: { broker: elsewhere }, action: retry }'],
        true,
        `no BullMQ queue with prefix '${prefix}-other'`,
      ],
      [[SMTP_RULE], false, 'needs a database for the audit log'],
    ];
    for (const [sweeps, db, message] of cases) {
      config(sweeps, db);
      const run = await runJson<{ error: { message: string } }>(['sweep'], { cwd });
      expect(run.code, JSON.stringify(run.json)).toBe(3);
      expect(run.json.error.message).toContain(message);
    }
    expect(await digestPrefix()).toBe(before);
    expect(await sweepAudit()).toHaveLength(audited);
    config([SMTP_RULE]);
  });
});

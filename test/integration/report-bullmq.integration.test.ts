import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { dropPrefix, openTestRedis } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';
import { runWorker, testQueue } from '../support/bullmq/worker.js';

// `report` with a BullMQ broker: failures planted by a real BullMQ Worker, the gauges (JSON and
// Prometheus) equal to BullMQ's own getJobCounts, and the failed / stalled thresholds setting the
// exit code when they trip and leaving it alone when they do not.

const REDIS_DB = 12;
const prefix = `trtest-bullrep-${randomBytes(4).toString('hex')}`;
const STATES = ['wait', 'active', 'delayed', 'prioritized', 'paused', 'failed', 'completed'] as const;

let schema: TestSchema;
let redis: Redis;
let cwd: string;
let mail: Queue;
let idle: Queue;

interface Gauge {
  broker: string;
  queue: string;
  failed: number | null;
  stalled: number | null;
  bullmq: Record<string, number> | null;
}

interface ReportJson {
  status: string;
  queues: {
    status: string;
    queues: Gauge[];
    breaches: Array<{ queue: string; metric: string; level: string; value: number; threshold: number }>;
  };
}

function config(thresholds: string[]): void {
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'brokers:',
      '  jobs:',
      '    kind: redis',
      `    url: redis://127.0.0.1:6379/${REDIS_DB}`,
      '    framework: bullmq',
      `    prefix: ${prefix}`,
      ...(thresholds.length ? ['report:', '  thresholds:', '    queues:', ...thresholds] : []),
      '',
    ].join('\n'),
  );
}

beforeAll(async () => {
  redis = await openTestRedis(REDIS_DB);
  schema = await createTestSchema('report_bullmq');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-bullrep-'));
  config([]);
  const init = await runJson(['init', '--profile', 'async-task'], { cwd });
  expect(init.code, init.stderr).toBe(0);
  mail = testQueue(REDIS_DB, prefix, 'mail');
  idle = testQueue(REDIS_DB, prefix, 'idle');
  await mail.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'send-mail', data: { n: i } })));
  await runWorker(REDIS_DB, prefix, 'mail', {
    fail: true,
    until: async () => (await mail.getJobCounts('failed')).failed === 4,
  });
  // Left behind the failures: two waiting, one delayed, one prioritized.
  await mail.add('send-mail', { n: 10 });
  await mail.add('send-mail', { n: 11 });
  await mail.add('send-mail', { n: 12 }, { delay: 600_000 });
  await mail.add('send-mail', { n: 13 }, { priority: 5 });
  await idle.add('noop', {});
}, 60_000);

afterAll(async () => {
  await mail?.close();
  await idle?.close();
  if (redis) await dropPrefix(redis, `${prefix}:`);
  redis?.disconnect();
  await schema?.drop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe('report with a BullMQ broker', () => {
  it("carries each queue's counts as BullMQ's getJobCounts gives them, in JSON and Prometheus", async () => {
    const { json } = await runJson<ReportJson>(['report'], { cwd });
    assertMatchesSchema('report', json);
    const truth = await mail.getJobCounts(...STATES);
    expect(truth).toMatchObject({ failed: 4, wait: 2, delayed: 1, prioritized: 1 });
    const gauge = json.queues.queues.find((g) => g.queue === 'mail');
    expect(gauge).toMatchObject({ broker: 'jobs', failed: 4, stalled: 0 });
    expect(gauge?.bullmq).toEqual({ ...truth, stalled: 0 });

    const prom = await runCli(['report', '--format', 'prometheus'], { cwd });
    const families = parsePrometheusTextFormat(prom.stdout);
    const jobs = families.find((f) => f.name === 'taskrecon_queue_jobs');
    expect(jobs?.type).toBe('GAUGE');
    for (const queue of [mail, idle]) {
      const counts = await queue.getJobCounts(...STATES);
      for (const state of STATES) {
        const sample = jobs?.metrics.find(
          (m) =>
            'labels' in m &&
            m.labels?.queue === queue.name &&
            m.labels?.state === state &&
            m.labels?.broker === 'jobs',
        );
        expect(sample && 'value' in sample ? Number(sample.value) : undefined, `${queue.name} ${state}`).toBe(
          counts[state],
        );
      }
    }
    expect(prom.stdout).toContain('taskrecon_queue_stalled{broker="jobs",queue="mail"} 0');
    expect(prom.stdout).toContain('taskrecon_queue_ready{broker="jobs",queue="mail"} 3');
  });

  it('a failed threshold at the count trips it (exit 2 on crit); a loose one leaves the exit code alone', async () => {
    config(['      failed: { warn: 100, crit: 500 }', '      stalled: { warn: 1 }']);
    const loose = await runJson<ReportJson>(['report'], { cwd });
    expect(loose.json.queues.breaches).toEqual([]);
    // What is left is the broker's own findings (a Redis without persistence warns), as `queues` exits.
    const queues = await runJson(['queues'], { cwd });
    expect(loose.code).toBe(queues.code);
    expect(loose.code).toBeLessThan(2);

    config(['      failed: { warn: 2, crit: 4 }']);
    const tight = await runJson<ReportJson>(['report'], { cwd });
    expect(tight.code).toBe(2);
    expect(tight.json.status).toBe('CRITICAL');
    expect(tight.json.queues.breaches).toEqual([
      { broker: 'jobs', queue: 'mail', metric: 'failed', level: 'crit', value: 4, threshold: 4 },
    ]);
    const text = await runCli(['report'], { cwd });
    expect(text.code).toBe(2);
    expect(text.stdout).toContain('jobs/mail failed 4 (limit 4)');

    config(['      failed: { warn: 3 }']);
    const warn = await runJson<ReportJson>(['report'], { cwd });
    expect(warn.code).toBe(1);
    expect(warn.json.queues.breaches).toEqual([
      { broker: 'jobs', queue: 'mail', metric: 'failed', level: 'warn', value: 4, threshold: 3 },
    ]);
  });

  it('a threshold that is not a whole number is refused, exit 3', async () => {
    config(['      failed: { warn: lots }']);
    const bad = await runJson<{ error: { message: string } }>(['report'], { cwd });
    expect(bad.code).toBe(3);
    expect(bad.json.error.message).toContain('report.thresholds.queues.failed.warn');
  });
});

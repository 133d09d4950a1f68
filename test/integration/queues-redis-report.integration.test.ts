import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { dropPrefix, freePort, openTestRedis, laravelBrokerYaml } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';

// `report` and `doctor` with `brokers:` in the config: queue gauges and report.thresholds.queues
// (breached and not), Prometheus gauges taskrecon_queue_*{broker,queue}, doctor's broker checks,
// and an unreachable broker reported, not hidden.

const DB = 12;
const URL = `redis://127.0.0.1:6379/${DB}`;
const filePrefix = `tr_h2rp_${randomBytes(3).toString('hex')}_`;
let redis: Redis;

interface ReportJson {
  status: string;
  queues: {
    status: string;
    queues: Array<Record<string, unknown>>;
    breaches: Array<Record<string, unknown>>;
    unreachable: Array<{ broker: string; message: string }>;
    findings: Array<{ code: string; level: string; broker: string; queue: string | null }>;
  };
}

/** `queues`' exit code as a report status. */
const VERDICT: Record<number, string> = { 0: 'OK', 1: 'WARNING', 2: 'CRITICAL' };

beforeAll(async () => {
  redis = await openTestRedis(DB);
});

afterAll(async () => {
  await dropPrefix(redis, filePrefix);
  redis?.disconnect();
});

describe.each(TEST_ENGINES)('with brokers (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;
  const prefix = `${filePrefix}${engine}_`;

  function config(thresholds: string[], extraBrokers: string[] = []): void {
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        'brokers:',
        ...laravelBrokerYaml('app', URL, prefix, ['high']),
        ...extraBrokers,
        'report:',
        '  thresholds:',
        '    queues:',
        ...thresholds,
        '',
      ].join('\n'),
    );
  }

  beforeAll(async () => {
    db = await createEngineDb(engine, 'queues_report');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-qreport-'));
    config(['      ready: { warn: 100 }']);
    expect((await runCli(['init', '--profile', 'async-task'], { cwd })).code).toBe(0);
    await redis.rpush(
      `${prefix}queues:high`,
      ...Array.from({ length: 12 }, (_, i) => JSON.stringify({ uuid: `j${i}` })),
    );
  });

  afterAll(async () => {
    await db?.drop();
  });

  describe('report with brokers', () => {
    it('adds the queue gauges; under the limit nothing breaches, and the verdict is the one queues gives', async () => {
      const { code, json } = await runJson<ReportJson>(['report'], { cwd });
      assertMatchesSchema('report', json);
      expect(json.queues.queues).toEqual([
        expect.objectContaining({ broker: 'app', queue: 'high', ready: 12, delayedOverdue: 0 }),
      ]);
      expect(json.queues.breaches).toEqual([]);
      // The task table is healthy: what is left is the broker's own findings (a Redis without
      // persistence is one), judged as `queues` judges them.
      const queues = await runJson<{ findings: Array<{ code: string; level: string }> }>(['queues'], { cwd });
      expect(json.queues.status).toBe(VERDICT[queues.code ?? -1]);
      expect(code).toBe(queues.code);
      expect(json.queues.findings.map((f) => f.code).sort()).toEqual(
        queues.json.findings.map((f) => f.code).sort(),
      );
    });

    it('never says Queues: OK while queues has a warning: a queue nobody consumes makes both WARNING', async () => {
      const orphan = `${prefix}queues:high_old`;
      await redis.rpush(orphan, JSON.stringify({ uuid: 'old-1' }), JSON.stringify({ uuid: 'old-2' }));
      try {
        const queues = await runJson<{ findings: Array<{ code: string; level: string }> }>(['queues'], {
          cwd,
        });
        expect(queues.code).toBe(1);
        expect(queues.json.findings).toContainEqual(
          expect.objectContaining({ code: 'unknown-queue', level: 'warn' }),
        );
        const { code, json } = await runJson<ReportJson>(['report'], { cwd });
        expect(code).toBe(1);
        expect(json.status).toBe('WARNING');
        expect(json.queues.status).toBe('WARNING');
        expect(json.queues.breaches).toEqual([]);
        expect(json.queues.findings).toContainEqual(
          expect.objectContaining({ code: 'unknown-queue', level: 'warn', broker: 'app', queue: 'high_old' }),
        );
        const text = await runCli(['report'], { cwd });
        expect(text.stdout).toContain('Queues: WARNING');
        expect(text.stdout).not.toContain('Queues: OK');
        expect(text.stdout).toMatch(/WARN unknown-queue app\/high_old: /);
      } finally {
        await redis.del(orphan);
      }
    });

    it('a ready count at the limit breaches it: WARNING, exit 1; crit wins', async () => {
      config(['      ready: { warn: 12, crit: 50 }']);
      const warn = await runJson<ReportJson>(['report'], { cwd });
      expect(warn.code).toBe(1);
      expect(warn.json.queues.breaches).toEqual([
        { broker: 'app', queue: 'high', metric: 'ready', level: 'warn', value: 12, threshold: 12 },
      ]);
      config(['      ready: { warn: 5, crit: 10 }']);
      const crit = await runJson<ReportJson>(['report'], { cwd });
      expect(crit.code).toBe(2);
      expect(crit.json.status).toBe('CRITICAL');
    });

    it('writes the Prometheus gauges with one label set {broker, queue}', async () => {
      config(['      ready: { warn: 100 }']);
      const { stdout } = await runCli(['report', '--format', 'prometheus'], { cwd });
      expect(stdout).toContain('# TYPE taskrecon_queue_ready gauge');
      expect(stdout).toContain('taskrecon_queue_ready{broker="app",queue="high"} 12');
      expect(stdout).toContain('taskrecon_queue_reserved_expired{broker="app",queue="high"} 0');
      expect(stdout).not.toContain('taskrecon_queue_consumers');
    });

    it('an unreachable broker is named and makes the report WARNING', async () => {
      const port = await freePort();
      config(
        ['      ready: { warn: 100 }'],
        ['  gone:', '    kind: redis', `    url: redis://127.0.0.1:${port}/0`, '    framework: laravel'],
      );
      const { code, json } = await runJson<ReportJson>(['report'], { cwd });
      expect(code).toBe(1);
      expect(json.queues.unreachable).toEqual([
        {
          broker: 'gone',
          message: expect.stringContaining(`cannot reach Redis at redis://127.0.0.1:${port}/0`),
        },
      ]);
    });
  });

  describe('doctor with brokers', () => {
    it("adds each broker's checks, and a fail for one it cannot reach", async () => {
      const port = await freePort();
      config(
        ['      ready: { warn: 100 }'],
        ['  gone:', '    kind: redis', `    url: redis://127.0.0.1:${port}/0`, '    framework: laravel'],
      );
      const { json } = await runJson<{ checks: Array<{ name: string; status: string }> }>(['doctor'], {
        cwd,
      });
      const broker = json.checks.filter((c) => c.name.startsWith('broker '));
      expect(broker.map((c) => c.name)).toEqual([
        'broker app: reachable',
        'broker app: persistence',
        'broker app: eviction policy',
        'broker app: key layout',
        'broker gone: reachable',
      ]);
      expect(broker.find((c) => c.name === 'broker app: key layout')?.status).toBe('ok');
      expect(broker.find((c) => c.name === 'broker gone: reachable')?.status).toBe('fail');
    });
  });
});

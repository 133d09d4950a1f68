import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { laravelTablesDdl } from '../support/framework-tables.js';
import { assertMatchesSchema } from '../support/schemas.js';

// Payloads as Laravel 8 stores them in failed_jobs. The database queue's payload has no `attempts`
// (the column counts them); the Redis one carries `id` and `attempts` (incremented by the pop script).
const DB_PAYLOAD =
  '{"uuid":"3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d01","displayName":"App\\\\Jobs\\\\IssueCoupon","job":"Illuminate\\\\Queue\\\\CallQueuedHandler@call",' +
  '"maxTries":null,"maxExceptions":null,"failOnTimeout":false,"backoff":null,"timeout":null,"retryUntil":null,' +
  '"data":{"commandName":"App\\\\Jobs\\\\IssueCoupon","command":"O:20:\\"App\\\\Jobs\\\\IssueCoupon\\":1:{s:7:\\"orderId\\";i:42;}"}}';
const DB_PAYLOAD_UNICODE =
  '{"uuid":"3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d02","displayName":"App\\\\Jobs\\\\SendSms","job":"Illuminate\\\\Queue\\\\CallQueuedHandler@call",' +
  '"maxTries":3,"timeout":60,"retryUntil":null,"data":{"commandName":"App\\\\Jobs\\\\SendSms","command":"O:16:\\"App\\\\Jobs\\\\SendSms\\":1:{s:4:\\"text\\";s:6:\\"短信\\";}"}}';
const REDIS_PAYLOAD =
  '{"uuid":"3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d03","displayName":"App\\\\Jobs\\\\SendSms","job":"Illuminate\\\\Queue\\\\CallQueuedHandler@call",' +
  '"maxTries":5,"timeout":null,"retryUntil":null,"data":{"commandName":"App\\\\Jobs\\\\SendSms","command":"O:16:\\"App\\\\Jobs\\\\SendSms\\":0:{}"},' +
  '"id":"Kq3v9TnB0mYc1LwZ8pXe4RdU6sHa2GfJ","attempts":5}';

// What `php artisan queue:retry` pushes for each: json_encode(json_decode($payload, true)) with attempts reset.
const DB_PUSHED = DB_PAYLOAD;
const DB_PUSHED_UNICODE = DB_PAYLOAD_UNICODE.replace('短信', '\\u77ed\\u4fe1');
const REDIS_PUSHED = REDIS_PAYLOAD.replace('"attempts":5', '"attempts":0');

let redis: Redis;
const filePrefix = `tr_test_${randomBytes(4).toString('hex')}_`;

interface CompensateJson {
  matched: number;
  applied: number;
  skipped: number;
  refused: number;
  runId: string;
  results: Array<{ id: number; from: string | null; to: string; outcome: string; reason?: string }>;
}

beforeAll(() => {
  redis = new Redis('redis://127.0.0.1:6379/0');
});

afterAll(async () => {
  const keys = await redis.keys(`${filePrefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

// Laravel 8's own migrations for the database queue and the failed-job table, on each engine.
describe.each(TEST_ENGINES)(
  'retry of Laravel failed jobs, as php artisan queue:retry does it (%s)',
  (engine) => {
    let schema: EngineDb;
    let cwd: string;
    const prefix = `${filePrefix}${engine}_`;

    const rows = <T>(sql: string, params: unknown[] = []) => schema.rows<T>(sql, params);

    async function insertFailed(
      uuid: string,
      connection: string,
      queue: string,
      payload: string,
    ): Promise<number> {
      await schema.run(
        'INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) VALUES (?, ?, ?, ?, ?)',
        [
          uuid,
          connection,
          queue,
          payload,
          'Exception: coupon service said 500 in /var/www/app/Jobs/IssueCoupon.php:31\nStack trace:\n#0 {main}',
        ],
      );
      const [row] = await rows<{ id: number }>('SELECT id FROM failed_jobs WHERE uuid = ?', [uuid]);
      return Number(row?.id);
    }

    function config(redisUrl: string): string {
      return [
        `db: ${schema.dsn}`,
        'appTimeZone: "+08:00"',
        'sources:',
        '  failed:',
        '    profile: laravel-failed-jobs',
        '    default: true',
        '    queue:',
        '      connections:',
        '        database: { driver: database, table: jobs }',
        `        redis: { driver: redis, url: "${redisUrl}", prefix: "${prefix}" }`,
        '',
      ].join('\n');
    }

    beforeAll(async () => {
      schema = await createEngineDb(engine, 'laravel_retry', { timeZone: '+08:00' });
      for (const ddl of laravelTablesDdl(engine)) await schema.run(ddl);
      cwd = mkdtempSync(join(tmpdir(), 'taskrecon-laravel-'));
      writeFileSync(join(cwd, 'taskrecon.config.yaml'), config('redis://127.0.0.1:6379/0'));
      const init = await runCli(['init', '--audit-only'], { cwd });
      expect(init.code, init.stderr).toBe(0);
    });

    afterAll(async () => {
      await schema?.drop();
    });

    it('re-pushes into the database queue and the Redis queue byte for byte, deletes the failed rows, audits each', async () => {
      const dbId = await insertFailed('3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d01', 'database', 'high', DB_PAYLOAD);
      const dbUnicodeId = await insertFailed(
        '3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d02',
        'database',
        'default',
        DB_PAYLOAD_UNICODE,
      );
      const redisId = await insertFailed(
        '3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d03',
        'redis',
        'default',
        REDIS_PAYLOAD,
      );
      const { code, json } = await runJson<CompensateJson>(
        ['compensate', '--action', 'retry', '--reason', 'coupon service is back', '--yes'],
        {
          cwd,
          env: { TZ: 'America/New_York' },
        },
      );
      expect(code).toBe(0);
      assertMatchesSchema('compensate', json);
      expect(json.results).toEqual([
        { id: dbId, from: 'failed', to: 'pending', outcome: 'applied' },
        { id: dbUnicodeId, from: 'failed', to: 'pending', outcome: 'applied' },
        { id: redisId, from: 'failed', to: 'pending', outcome: 'applied' },
      ]);
      expect(await rows('SELECT id FROM failed_jobs')).toEqual([]);

      const jobs = await rows<{
        queue: string;
        payload: string;
        attempts: number;
        reserved_at: null;
        available_at: number;
        created_at: number;
        now: number;
      }>(
        `SELECT queue, payload, attempts, reserved_at, available_at, created_at, ${schema.epoch('now')} AS now FROM jobs ORDER BY id`,
      );
      expect(jobs.map((j) => [j.queue, j.payload, j.attempts, j.reserved_at])).toEqual([
        ['high', DB_PUSHED, 0, null],
        ['default', DB_PUSHED_UNICODE, 0, null],
      ]);
      for (const job of jobs) {
        expect(job.available_at).toBe(job.created_at);
        expect(Math.abs(job.now - job.available_at)).toBeLessThan(30);
      }
      // LuaScripts::push: the payload onto queues:{queue} and a notification onto queues:{queue}:notify.
      expect(await redis.lrange(`${prefix}queues:default`, 0, -1)).toEqual([REDIS_PUSHED]);
      expect(await redis.lrange(`${prefix}queues:default:notify`, 0, -1)).toEqual(['1']);

      const audit = await rows<{
        task_id: string;
        action: string;
        event_id: string;
        from_status: string;
        to_status: string;
        before_json: string;
        after_json: string;
        reason: string;
      }>('SELECT * FROM taskrecon_audit ORDER BY id');
      expect(
        audit.map((a) => [Number(a.task_id), a.action, a.event_id, a.from_status, a.to_status, a.reason]),
      ).toEqual([
        [
          dbId,
          'retry',
          '3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d01',
          'failed',
          'pending',
          'coupon service is back',
        ],
        [
          dbUnicodeId,
          'retry',
          '3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d02',
          'failed',
          'pending',
          'coupon service is back',
        ],
        [
          redisId,
          'retry',
          '3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d03',
          'failed',
          'pending',
          'coupon service is back',
        ],
      ]);
      expect(JSON.parse(audit[0]?.before_json as string)).toMatchObject({
        id: dbId,
        connection: 'database',
        queue: 'high',
        payload: DB_PAYLOAD,
      });
      expect(JSON.parse(audit[0]?.after_json as string)).toMatchObject({
        requeued: { driver: 'database', table: 'jobs', queue: 'high', payload: DB_PUSHED },
      });
      expect(JSON.parse(audit[2]?.after_json as string)).toMatchObject({
        requeued: { driver: 'redis', key: `${prefix}queues:default`, payload: REDIS_PUSHED },
      });
    });

    it('forgets a failed job: deleted, the audit keeps the whole row', async () => {
      const id = await insertFailed(
        '3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d04',
        'database',
        'default',
        DB_PAYLOAD,
      );
      const { code, json } = await runJson<CompensateJson>(
        ['compensate', String(id), '--action', 'forget', '--yes'],
        { cwd },
      );
      expect(code).toBe(0);
      expect(json.results).toEqual([{ id, from: 'failed', to: 'deleted', outcome: 'applied' }]);
      expect(await rows('SELECT id FROM failed_jobs WHERE id = ?', [id])).toEqual([]);
      const [entry] = await rows<{ before_json: string; after_json: null }>(
        "SELECT * FROM taskrecon_audit WHERE action = 'forget' AND task_id = ?",
        [String(id)],
      );
      expect(JSON.parse(entry?.before_json as string)).toMatchObject({
        id,
        uuid: '3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d04',
        payload: DB_PAYLOAD,
        exception: expect.stringContaining('Stack trace'),
      });
      expect(entry?.after_json).toBeNull();
    });

    it('refuses a job whose connection has no queue target, and keeps it', async () => {
      const id = await insertFailed('3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d05', 'sqs', 'default', DB_PAYLOAD);
      const { code, json, stderr } = await runJson<CompensateJson>(
        ['compensate', String(id), '--action', 'retry', '--yes'],
        { cwd },
      );
      expect(code).toBe(3);
      expect(stderr).toMatch(/nothing was changed/);
      expect(json.results[0]).toMatchObject({
        outcome: 'refused',
        reason: expect.stringMatching(
          /no queue target for connection 'sqs'.*sources\.failed\.queue\.connections\.sqs/,
        ),
      });
      expect(await rows('SELECT id FROM failed_jobs WHERE id = ?', [id])).toHaveLength(1);
      await schema.run('DELETE FROM failed_jobs WHERE id = ?', [id]);
    });

    it('rolls everything back when Redis cannot be reached: no push, the failed row kept, no audit row', async () => {
      const deadCwd = mkdtempSync(join(tmpdir(), 'taskrecon-laravel-dead-'));
      // A closed loopback port: connection refused.
      writeFileSync(join(deadCwd, 'taskrecon.config.yaml'), config('redis://127.0.0.1:1/0'));
      const dbId = await insertFailed(
        '3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d06',
        'database',
        'default',
        DB_PAYLOAD,
      );
      const redisId = await insertFailed(
        '3f1c7a52-4f8e-4d3b-9a53-3c1e0c6a9d07',
        'redis',
        'default',
        REDIS_PAYLOAD,
      );
      const before = await rows('SELECT COUNT(*) AS n FROM taskrecon_audit');
      const jobsBefore = await rows('SELECT COUNT(*) AS n FROM jobs');
      const result = await runCli(
        ['compensate', String(dbId), String(redisId), '--action', 'retry', '--yes'],
        {
          cwd: deadCwd,
        },
      );
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:1/);
      expect(await rows('SELECT id FROM failed_jobs WHERE id IN (?, ?)', [dbId, redisId])).toHaveLength(2);
      expect(await rows('SELECT COUNT(*) AS n FROM jobs')).toEqual(jobsBefore);
      expect(await rows('SELECT COUNT(*) AS n FROM taskrecon_audit')).toEqual(before);
      await schema.run('DELETE FROM failed_jobs WHERE id IN (?, ?)', [dbId, redisId]);
    });

    it('refuses actions a failed-job table cannot store', async () => {
      const result = await runCli(['compensate', '--action', 'mark-compensated', '--yes'], { cwd });
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/no status column.*--action forget/);
    });
  },
);

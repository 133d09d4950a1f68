import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { failedJobsConfig } from '../support/fixtures.js';
import { thinkphpFailedJobsDdl, thinkphpJobsDdl } from '../support/framework-tables.js';
import { assertMatchesSchema } from '../support/schemas.js';

// think-queue payloads: {job, maxTries, timeout, data} (+ id, attempts on Redis), written by json_encode.
const REDIS_PAYLOAD =
  '{"job":"app\\\\job\\\\IssueCouponJob","maxTries":null,"timeout":null,"data":{"order_sn":"SN2024\\/001","name":"\\u5f20\\u4e09"},"id":"q0Wm1Zr8VbXk2LdN7cTe4FsA9hJy3GuP","attempts":5}';
// A payload written by hand (raw slash and raw Chinese): PHP's round trip escapes both.
const DB_PAYLOAD =
  '{"job":"app\\\\job\\\\SendPaidSmsJob","maxTries":null,"timeout":null,"data":{"note":"a/b","name":"张三"},"attempts":2}';

const REDIS_PUSHED = REDIS_PAYLOAD.replace('"attempts":5', '"attempts":0');
const DB_PUSHED =
  '{"job":"app\\\\job\\\\SendPaidSmsJob","maxTries":null,"timeout":null,"data":{"note":"a\\/b","name":"\\u5f20\\u4e09"},"attempts":0}';

let redis: Redis;

beforeAll(() => {
  redis = new Redis('redis://127.0.0.1:6379/0');
});

afterAll(() => {
  redis.disconnect();
});

describe.each(TEST_ENGINES)(
  'retry of think-queue failed jobs, as php think queue:retry does it (%s)',
  (engine) => {
    let schema: EngineDb;
    let cwd: string;
    const queue = `high_${randomBytes(4).toString('hex')}_${engine}`;

    const rows = <T>(sql: string, params: unknown[] = []) => schema.rows<T>(sql, params);

    beforeAll(async () => {
      schema = await createEngineDb(engine, 'thinkphp_retry');
      for (const ddl of [...thinkphpFailedJobsDdl(engine), ...thinkphpJobsDdl(engine)]) await schema.run(ddl);
      cwd = mkdtempSync(join(tmpdir(), 'taskrecon-thinkphp-'));
      writeFileSync(
        join(cwd, 'taskrecon.config.yaml'),
        failedJobsConfig(schema.dsn, 'thinkphp-failed-jobs', [
          'database: { driver: database, table: jobs }',
          'redis: { driver: redis, url: "redis://127.0.0.1:6379/0" }',
        ]),
      );
      expect(
        (await runCli(['init', '--audit-only', '--profile', 'thinkphp-failed-jobs'], { cwd })).code,
      ).toBe(0);
    });

    afterAll(async () => {
      await redis.del(`{queues:${queue}}`);
      await schema?.drop();
    });

    it('RPUSHes onto {queues:NAME} and inserts into the jobs table with attempts reset, deleting the failed rows', async () => {
      await schema.run(
        'INSERT INTO failed_jobs (connection, queue, payload, exception) VALUES (?, ?, ?, ?), (?, ?, ?, ?)',
        [
          'redis',
          queue,
          REDIS_PAYLOAD,
          'think\\exception\\ErrorException: coupon service timeout',
          'database',
          'normal',
          DB_PAYLOAD,
          'RuntimeException: sms gateway 502',
        ],
      );
      const { code, json } = await runJson<{ applied: number; results: Array<{ outcome: string }> }>(
        [
          'compensate',
          '--action',
          'retry',
          '--biz-type',
          'app\\job\\IssueCouponJob',
          '--biz-type',
          'app\\job\\SendPaidSmsJob',
          '--yes',
        ],
        { cwd },
      );
      expect(code).toBe(0);
      assertMatchesSchema('compensate', json);
      expect(json.applied).toBe(2);
      expect(await rows('SELECT id FROM failed_jobs')).toEqual([]);
      expect(await redis.lrange(`{queues:${queue}}`, 0, -1)).toEqual([REDIS_PUSHED]);
      expect(await redis.exists(`{queues:${queue}}:notify`)).toBe(0);
      const jobs = await rows<{
        queue: string;
        payload: string;
        attempts: number;
        reserve_time: null;
        available_time: number;
        create_time: number;
        now: number;
      }>(
        `SELECT queue, payload, attempts, reserve_time, available_time, create_time, ${schema.epoch('now')} AS now FROM jobs`,
      );
      expect(jobs.map((j) => [j.queue, j.payload, j.attempts, j.reserve_time])).toEqual([
        ['normal', DB_PUSHED, 0, null],
      ]);
      expect(Math.abs((jobs[0]?.now ?? 0) - (jobs[0]?.available_time ?? 0))).toBeLessThan(30);
      expect(jobs[0]?.create_time).toBe(jobs[0]?.available_time);
      const audit = await rows<{ action: string; from_status: string; to_status: string }>(
        'SELECT action, from_status, to_status FROM taskrecon_audit',
      );
      expect(audit).toEqual([
        { action: 'retry', from_status: 'failed', to_status: 'pending' },
        { action: 'retry', from_status: 'failed', to_status: 'pending' },
      ]);
    });

    it('writes the `reserved` flag of older think-queue tables', async () => {
      const flag = engine === 'mysql' ? 'tinyint unsigned' : 'smallint';
      await schema.run(`ALTER TABLE jobs ADD COLUMN reserved ${flag} NOT NULL DEFAULT 1`);
      await schema.run(
        'INSERT INTO failed_jobs (connection, queue, payload, exception) VALUES (?, ?, ?, ?)',
        ['database', 'low', DB_PAYLOAD, 'x'],
      );
      const { code } = await runJson(['compensate', '--action', 'retry', '--queue', 'low', '--yes'], { cwd });
      expect(code).toBe(0);
      expect(await rows("SELECT reserved, attempts FROM jobs WHERE queue = 'low'")).toEqual([
        { reserved: 0, attempts: 0 },
      ]);
    });
  },
);

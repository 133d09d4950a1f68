import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { runCli, runJson } from '../support/cli.js';
import { createFixtureTable, failedJobsConfig } from '../support/fixtures.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { freePort, openTestRedis } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';

const PAYLOAD =
  '{"job":"app\\\\job\\\\IssueCouponJob","maxTries":null,"timeout":null,"data":{"order_sn":"SN1"},"attempts":3}';
const PUSHED = PAYLOAD.replace('"attempts":3', '"attempts":0');

/** A scratch DB index of the machine's Redis; every key written is under a random queue name. */
const REDIS_DB = 11;
const REDIS_URL = `redis://127.0.0.1:6379/${REDIS_DB}`;
const queue = `parity_${randomBytes(4).toString('hex')}`;

let schema: TestSchema;
let redis: Redis;
let closedPort: number;

interface CompensateJson {
  matched: number;
  applied: number;
  skipped: number;
  refused: number;
  wouldFail?: number;
  results: Array<{ id: number; outcome: string; reason?: string }>;
}

async function rows<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  const [result] = await schema.sql.query(sql, params);
  return result as T[];
}

/** A working directory whose config has the source `failed` with these queue connections. */
function workDir(connections: string[]): string {
  const cwd = mkdtempSync(join(tmpdir(), 'taskrecon-parity-write-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    failedJobsConfig(schema.dsn, 'thinkphp-failed-jobs', connections),
  );
  return cwd;
}

/** Failed rows with these ids, on `connection` and queue `q`. */
async function insertFailed(ids: number[], connection = 'database', q = queue): Promise<void> {
  for (const id of ids)
    await schema.sql.query(
      'INSERT INTO failed_jobs (id, connection, queue, payload, exception) VALUES (?, ?, ?, ?, ?)',
      [id, connection, q, PAYLOAD, 'RuntimeException: coupon service timeout'],
    );
}

const failedIds = async () =>
  (await rows<{ id: number }>('SELECT id FROM failed_jobs ORDER BY id')).map((r) => r.id);

beforeAll(async () => {
  schema = await createTestSchema('parity_write');
  await createFixtureTable(schema, 'thinkphp_failed_jobs');
  await createFixtureTable(schema, 'thinkphp_jobs');
  await schema.sql.query('CREATE TABLE not_a_queue (id int PRIMARY KEY, queue varchar(50)) ENGINE=InnoDB');
  const init = await runCli(['init', '--audit-only', '--profile', 'thinkphp-failed-jobs'], {
    cwd: workDir(['database: { driver: database, table: jobs }']),
  });
  expect(init.code, init.stderr).toBe(0);
  redis = await openTestRedis(REDIS_DB);
  closedPort = await freePort();
});

beforeEach(async () => {
  await schema.sql.query('DELETE FROM failed_jobs');
  await schema.sql.query('DELETE FROM jobs');
  await schema.sql.query('DELETE FROM taskrecon_audit');
  await redis.del(`queues:${queue}`, `{queues:${queue}}`);
});

afterAll(async () => {
  await redis?.del(`queues:${queue}`, `{queues:${queue}}`);
  redis?.disconnect();
  await schema?.drop();
});

describe('compensate id ranges, as queue:retry --range', () => {
  const db = ['database: { driver: database, table: jobs }'];

  it('retries the ids of inclusive ranges mixed with single ids, and no other row', async () => {
    await insertFailed([10, 11, 12, 13, 14, 15, 16]);
    const { code, json, stderr } = await runJson<CompensateJson>(
      ['compensate', '11-13', '15', '--action', 'retry', '--yes'],
      { cwd: workDir(db) },
    );
    expect(code, stderr).toBe(0);
    assertMatchesSchema('compensate', json);
    expect(json.results.map((r) => [r.id, r.outcome])).toEqual([
      [11, 'applied'],
      [12, 'applied'],
      [13, 'applied'],
      [15, 'applied'],
    ]);
    expect(await failedIds()).toEqual([10, 14, 16]);
    expect(await rows('SELECT queue, payload FROM jobs')).toHaveLength(4);
  });

  it('narrows a range with --queue, as a filter narrows the selection', async () => {
    await insertFailed([20, 22, 24]);
    await insertFailed([21, 23], 'database', 'other');
    const { code, json } = await runJson<CompensateJson>(
      ['compensate', '20-23', '--queue', queue, '--action', 'retry', '--yes'],
      { cwd: workDir(db) },
    );
    expect(code).toBe(0);
    expect(json.results.map((r) => r.id)).toEqual([20, 22]);
    expect(await failedIds()).toEqual([21, 23, 24]);
  });

  it('selects a huge range by BETWEEN in pages, keeping --limit', async () => {
    await insertFailed([5, 6, 7, 90_000_000_000]);
    const started = Date.now();
    const { code, json } = await runJson<CompensateJson>(
      ['compensate', '6-99999999999', '--action', 'retry', '--limit', '2', '--dry-run'],
      { cwd: workDir(db) },
    );
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(json.matched).toBe(2);
    expect(json.results.map((r) => [r.id, r.outcome])).toEqual([
      [6, 'would-apply'],
      [7, 'would-apply'],
    ]);
    const all = await runJson<CompensateJson>(
      ['compensate', '6-99999999999', '--action', 'retry', '--dry-run'],
      {
        cwd: workDir(db),
      },
    );
    expect(all.json.matched).toBe(3);
  });

  it.each([
    ['13-11', /'13-11' is a reversed id range: write it LO-HI/],
    ['11-', /'11-' is not an id range: write it LO-HI/],
    ['a-3', /'a-3' is not an id range: write it LO-HI/],
    ['11-13-15', /'11-13-15' is not an id range: write it LO-HI/],
  ])('refuses the id range %s (exit 3), naming it and the form LO-HI', async (bad, message) => {
    await insertFailed([11, 12, 13]);
    const { code, stderr } = await runCli(['compensate', '12', bad, '--action', 'retry', '--yes'], {
      cwd: workDir(db),
    });
    expect(code).toBe(3);
    expect(stderr).toMatch(message);
    expect(await failedIds()).toEqual([11, 12, 13]);
  });

  it('refuses an unknown single id given with a range (exit 3), changing nothing', async () => {
    await insertFailed([11, 12]);
    const { code, stderr } = await runCli(['compensate', '11-12', '77', '--action', 'retry', '--yes'], {
      cwd: workDir(db),
    });
    expect(code).toBe(3);
    expect(stderr).toMatch(/unknown task id 77/);
    expect(await failedIds()).toEqual([11, 12]);
  });
});

describe('compensate --dry-run of a failed-job retry checks each target queue', () => {
  it('says per row which target would fail (would-fail, exit 1) and writes nothing', async () => {
    await insertFailed([1], 'database');
    await insertFailed([2], 'redis');
    await insertFailed([3], 'redisdown');
    await insertFailed([4], 'missing');
    await insertFailed([5], 'notqueue');
    await insertFailed([6], 'sqs');
    await insertFailed([7], 'redisdown');
    const cwd = workDir([
      'database: { driver: database, table: jobs }',
      `redis: { driver: redis, url: "${REDIS_URL}" }`,
      `redisdown: { driver: redis, url: "redis://127.0.0.1:${closedPort}/0" }`,
      'missing: { driver: database, table: no_such_jobs }',
      'notqueue: { driver: database, table: not_a_queue }',
    ]);
    const { code, json, stderr } = await runJson<CompensateJson>(
      ['compensate', '--action', 'retry', '--dry-run'],
      { cwd },
    );
    expect(code, stderr).toBe(1);
    assertMatchesSchema('compensate', json);
    expect(json.wouldFail).toBe(4);
    const byId = new Map(json.results.map((r) => [r.id, r]));
    expect(byId.get(1)?.outcome).toBe('would-apply');
    expect(byId.get(2)?.outcome).toBe('would-apply');
    for (const id of [3, 7])
      expect(byId.get(id)).toMatchObject({
        outcome: 'would-fail',
        reason: `connection redisdown: Redis at redis://127.0.0.1:${closedPort}/0 refused the connection`,
      });
    expect(byId.get(4)).toMatchObject({
      outcome: 'would-fail',
      reason: expect.stringMatching(/^connection missing: the queue table 'no_such_jobs' does not exist/),
    });
    expect(byId.get(5)).toMatchObject({
      outcome: 'would-fail',
      reason: expect.stringMatching(
        /^connection notqueue: the queue table 'not_a_queue' lacks the think-queue column/,
      ),
    });
    expect(byId.get(6)).toMatchObject({
      outcome: 'refused',
      reason: expect.stringMatching(/no queue target for connection 'sqs'/),
    });
    expect(stderr).toMatch(/4 of the jobs would fail/);
    expect(await failedIds()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(await rows('SELECT id FROM jobs')).toEqual([]);
    expect(await rows('SELECT id FROM taskrecon_audit')).toEqual([]);
    expect(await redis.exists(`{queues:${queue}}`)).toBe(0);

    const human = await runCli(['compensate', '--action', 'retry', '--dry-run'], { cwd });
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/would fail 4/);
    expect(human.stdout).toMatch(
      /would-fail\s+connection redisdown: Redis at redis:\/\/127\.0\.0\.1:\d+\/0 refused/,
    );
  });

  it('exits 0 when every target would take its rows', async () => {
    await insertFailed([1], 'database');
    await insertFailed([2], 'redis');
    const { code, json } = await runJson<CompensateJson>(
      ['compensate', '1-2', '--action', 'retry', '--dry-run'],
      {
        cwd: workDir([
          'database: { driver: database, table: jobs }',
          `redis: { driver: redis, url: "${REDIS_URL}" }`,
        ]),
      },
    );
    expect(code).toBe(0);
    expect(json.wouldFail).toBe(0);
    expect(json.results.map((r) => r.outcome)).toEqual(['would-apply', 'would-apply']);
  });
});

describe('think-queue Redis key layout of a queue connection', () => {
  it('re-pushes onto queues:NAME (no braces) with layout: thinkphp-legacy', async () => {
    await insertFailed([31], 'redis');
    const { code, stderr } = await runJson(['compensate', '31', '--action', 'retry', '--yes'], {
      cwd: workDir([`redis: { driver: redis, url: "${REDIS_URL}", layout: thinkphp-legacy }`]),
    });
    expect(code, stderr).toBe(0);
    expect(await redis.lrange(`queues:${queue}`, 0, -1)).toEqual([PUSHED]);
    expect(await redis.exists(`{queues:${queue}}`)).toBe(0);
    const [audit] = await rows<{ after_json: string }>('SELECT after_json FROM taskrecon_audit');
    expect(JSON.parse(audit?.after_json ?? '{}')).toMatchObject({ requeued: { key: `queues:${queue}` } });
    expect(await failedIds()).toEqual([]);
  });

  it('re-pushes onto {queues:NAME} by default and with layout: thinkphp', async () => {
    await insertFailed([32], 'redis');
    const { code } = await runJson(['compensate', '32', '--action', 'retry', '--yes'], {
      cwd: workDir([`redis: { driver: redis, url: "${REDIS_URL}", layout: thinkphp }`]),
    });
    expect(code).toBe(0);
    expect(await redis.lrange(`{queues:${queue}}`, 0, -1)).toEqual([PUSHED]);
    expect(await redis.exists(`queues:${queue}`)).toBe(0);
  });

  it('refuses an unknown layout (exit 3) naming the allowed values, writing nothing', async () => {
    await insertFailed([33], 'redis');
    const { code, stderr } = await runCli(['compensate', '33', '--action', 'retry', '--yes'], {
      cwd: workDir([`redis: { driver: redis, url: "${REDIS_URL}", layout: sideways }`]),
    });
    expect(code).toBe(3);
    expect(stderr).toMatch(/queue\.connections\.redis\.layout/);
    expect(stderr).toMatch(/"thinkphp"\|"thinkphp-legacy"|thinkphp, thinkphp-legacy/);
    expect(await failedIds()).toEqual([33]);
  });

  it('refuses a layout on a database connection (exit 3), writing nothing', async () => {
    await insertFailed([34], 'database');
    const { code, stderr } = await runCli(['compensate', '34', '--action', 'retry', '--yes'], {
      cwd: workDir(['database: { driver: database, table: jobs, layout: thinkphp-legacy }']),
    });
    expect(code).toBe(3);
    expect(stderr).toMatch(
      /sources\.failed\.queue\.connections\.database\.layout: a layout is for redis connections/,
    );
    expect(await failedIds()).toEqual([34]);
    expect(await rows('SELECT id FROM jobs')).toEqual([]);
  });
});

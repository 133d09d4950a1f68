import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { perJob } from '../support/audit-jobs.js';
import { BIN, runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { dropPrefix, openTestRedis, laravelBrokerYaml } from '../support/redis.js';
import { assertMatchesSchema } from '../support/schemas.js';

// `queues move` and `queues recover` on Laravel's layout and on the classic List + delay ZSet, with
// the audit log in a throw-away MariaDB schema: exactly what they say moves, one audit row per job,
// --dry-run moves nothing, bad input moves nothing, Ctrl-C finishes the batch in hand.

const DB = 12;
const URL = `redis://127.0.0.1:6379/${DB}`;
const prefix = `tr_h2mv_${randomBytes(3).toString('hex')}_`;
const key = (queue: string, suffix = '') => `${prefix}queues:${queue}${suffix}`;
let redis: Redis;
let schema: TestSchema;
let cwd: string;
let now: number;

const job = (uuid: string, attempts = 0) =>
  JSON.stringify({ uuid, displayName: 'App\\Jobs\\Ship', attempts });

async function auditRows(runId: string): Promise<Array<Record<string, unknown>>> {
  const [rows] = await schema.sql.query(
    'SELECT action, source, task_table, task_id, from_status, to_status, before_json, after_json, reason FROM taskrecon_audit WHERE run_id = ? ORDER BY id',
    [runId],
  );
  return perJob(rows as Array<Record<string, unknown>>);
}

const move = (...args: string[]) =>
  runJson<Record<string, unknown>>(['queues', 'move', '--broker', 'app', ...args], { cwd });

async function seed(queue: string, n: number): Promise<void> {
  await redis.rpush(key(queue), ...Array.from({ length: n }, (_, i) => job(`${queue}-r${i}`)));
  await redis.rpush(key(queue, ':notify'), ...Array.from({ length: n }, () => 1));
  await redis.zadd(key(queue, ':delayed'), now - 100, job(`${queue}-d0`), now + 100, job(`${queue}-d1`));
  await redis.zadd(
    key(queue, ':reserved'),
    now - 50,
    job(`${queue}-x0`, 1),
    now + 500,
    job(`${queue}-x1`, 1),
  );
}

async function snapshot(): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const q of ['old', 'new']) {
    out[q] = await redis.lrange(key(q), 0, -1);
    out[`${q}:delayed`] = await redis.zrange(key(q, ':delayed'), 0, -1, 'WITHSCORES');
    out[`${q}:reserved`] = await redis.zrange(key(q, ':reserved'), 0, -1, 'WITHSCORES');
    out[`${q}:notify`] = await redis.lrange(key(q, ':notify'), 0, -1);
  }
  return out;
}

beforeAll(async () => {
  redis = await openTestRedis(DB);
  schema = await createTestSchema('queues_move');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-qmove-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'brokers:',
      ...laravelBrokerYaml('app', URL, prefix, ['new']),
      '  classic:',
      '    kind: redis',
      `    url: ${URL}`,
      '    framework: list',
      `    lists: { ready: ${prefix}async_queue, delayed: ${prefix}async_delay_queue }`,
      '',
    ].join('\n'),
  );
  const init = await runJson<{ created: string[] }>(['init'], { cwd });
  expect(init.code, init.stderr).toBe(0);
  // brokers and no task sources: only taskrecon's own tables
  expect(init.json.created.sort()).toEqual([
    'taskrecon_ack',
    'taskrecon_alert_claim',
    'taskrecon_audit',
    'taskrecon_intent',
    'taskrecon_notify',
    'taskrecon_push_marker',
    'taskrecon_queue_snapshot',
  ]);
});

beforeEach(async () => {
  await dropPrefix(redis, prefix);
  now = Math.floor(Date.now() / 1000);
});

afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis?.disconnect();
  await schema?.drop();
});

describe('queues move', () => {
  it('--dry-run counts what would move and moves and audits nothing', async () => {
    await seed('old', 5);
    const before = await snapshot();
    const { code, json } = await move('--from', 'old', '--to', 'new', '--what', 'all', '--dry-run');
    expect(code).toBe(0);
    assertMatchesSchema('queues-move', json);
    expect(json).toMatchObject({ from: 'old', to: 'new', what: 'all', dryRun: true, matched: 9, moved: 0 });
    expect(await snapshot()).toEqual(before);
    expect(await auditRows(String(json.runId))).toEqual([]);
  });

  it('moves ready jobs in worker order, notify elements with them, every job audited', async () => {
    await seed('old', 5);
    const { code, json } = await move(
      '--from',
      'old',
      '--to',
      'new',
      '--limit',
      '3',
      '--batch',
      '2',
      '--reason',
      'renamed',
      '--yes',
    );
    expect(code).toBe(0);
    expect(json).toMatchObject({ what: 'ready', matched: 3, moved: 3 });
    expect(await redis.lrange(key('new'), 0, -1)).toEqual([job('old-r0'), job('old-r1'), job('old-r2')]);
    expect(await redis.lrange(key('old'), 0, -1)).toEqual([job('old-r3'), job('old-r4')]);
    expect(await redis.llen(key('new', ':notify'))).toBe(3);
    expect(await redis.llen(key('old', ':notify'))).toBe(2);
    const rows = await auditRows(String(json.runId));
    expect(rows.map((r) => r.task_id)).toEqual(['old-r0', 'old-r1', 'old-r2']);
    expect(rows[0]).toMatchObject({
      action: 'queue-move',
      source: 'app',
      task_table: key('old'),
      from_status: 'ready',
      to_status: 'ready',
      reason: 'renamed',
    });
    expect(JSON.parse(String(rows[0]?.before_json))).toEqual({
      queue: key('old'),
      set: 'ready',
      sha1: createHash('sha1').update(job('old-r0')).digest('hex'),
      bytes: Buffer.byteLength(job('old-r0')),
    });
    expect(JSON.parse(String(rows[0]?.after_json))).toEqual({ queue: key('new'), set: 'ready' });
  });

  it('audits each batch as one row naming its jobs; `audit` lists them one entry per job', async () => {
    const members = [
      job('m-1'),
      JSON.stringify({ displayName: 'App\\Jobs\\Ship', uuid: 'm-2' }),
      'not a json payload',
    ];
    await redis.rpush(key('mix'), ...members);
    const { code, json } = await move(
      '--from',
      'mix',
      '--to',
      'new',
      '--batch',
      '2',
      '--reason',
      'mixed',
      '--yes',
    );
    expect(code).toBe(0);
    expect(json).toMatchObject({ moved: 3 });
    const runId = String(json.runId);
    const [raw] = await schema.sql.query('SELECT task_id FROM taskrecon_audit WHERE run_id = ? ORDER BY id', [
      runId,
    ]);
    expect(raw).toEqual([{ task_id: '(jobs)' }, { task_id: '(jobs)' }]);
    const ids = [
      'm-1',
      'm-2',
      `sha1:${createHash('sha1')
        .update(members[2] as string)
        .digest('hex')}`,
    ];
    const listed = await runJson<{ count: number; entries: Array<Record<string, unknown>> }>(
      ['audit', '--run', runId.slice(0, 8), '--json'],
      { cwd },
    );
    expect(listed.code).toBe(0);
    expect(listed.json.entries.map((e) => e.taskId)).toEqual(ids);
    listed.json.entries.forEach((entry, i) => {
      const member = members[i] as string;
      expect(entry).toMatchObject({
        action: 'queue-move',
        source: 'app',
        table: key('mix'),
        taskId: ids[i],
        eventId: ids[i],
        from: 'ready',
        to: 'ready',
        reason: 'mixed',
        runId,
        before: {
          queue: key('mix'),
          set: 'ready',
          sha1: createHash('sha1').update(member).digest('hex'),
          bytes: Buffer.byteLength(member),
        },
        after: { queue: key('new'), set: 'ready' },
      });
    });
    // The newest N entries are N jobs, not N rows; the streamed form lists every job too.
    const newest = await runJson<{ entries: Array<{ taskId: string }> }>(
      ['audit', '--run', runId, '--limit', '1', '--json'],
      { cwd },
    );
    expect(newest.json.entries.map((e) => e.taskId)).toEqual([ids[2]]);
    const streamed = await runCli(['audit', '--run', runId, '--limit', '0', '--format', 'ndjson'], { cwd });
    const lines = streamed.stdout.trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { taskId: string }).taskId)).toEqual(ids);
  });

  it('--what all moves delayed jobs and reservations with their scores, verbatim', async () => {
    await seed('old', 2);
    const { json } = await move('--from', 'old', '--to', 'new', '--what', 'all', '--yes');
    expect(json).toMatchObject({ matched: 6, moved: 6 });
    for (const suffix of ['', ':delayed', ':reserved', ':notify'])
      expect(await redis.exists(key('old', suffix))).toBe(0);
    expect(await redis.zrange(key('new', ':delayed'), 0, -1, 'WITHSCORES')).toEqual([
      job('old-d0'),
      String(now - 100),
      job('old-d1'),
      String(now + 100),
    ]);
    expect(await redis.zrange(key('new', ':reserved'), 0, -1, 'WITHSCORES')).toEqual([
      job('old-x0', 1),
      String(now - 50),
      job('old-x1', 1),
      String(now + 500),
    ]);
    const rows = await auditRows(String(json.runId));
    expect(rows.map((r) => `${r.task_id}:${r.from_status}`)).toEqual([
      'old-r0:ready',
      'old-r1:ready',
      'old-d0:delayed',
      'old-d1:delayed',
      'old-x0:reserved',
      'old-x1:reserved',
    ]);
  });

  it('refuses bad input with exit 3 and moves nothing', async () => {
    await seed('old', 2);
    const before = await snapshot();
    const countAudit = async () =>
      ((await schema.sql.query('SELECT COUNT(*) AS n FROM taskrecon_audit'))[0] as Array<{ n: number }>)[0]
        ?.n;
    const audited = await countAudit();
    const cases: Array<[string[], RegExp]> = [
      [['--from', 'old', '--to', 'old', '--yes'], /--to old is the queue the jobs come from/],
      [['--from', 'missing', '--to', 'new', '--yes'], /queue missing does not exist on broker app/],
      [['--from', 'old', '--to', 'new'], /without a confirmation: this is not a terminal/],
      [['--from', 'old', '--to', 'new', '--rate', 'fast', '--yes'], /--rate: 'fast' is not a rate/],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(['queues', 'move', '--broker', 'app', ...args], { cwd });
      expect(result.code, args.join(' ')).toBe(3);
      expect(result.stderr).toMatch(message);
    }
    const noDb = await runCli([
      'queues',
      'move',
      '--redis',
      URL,
      '--framework',
      'laravel',
      '--prefix',
      prefix,
      '--from',
      'old',
      '--to',
      'new',
      '--yes',
    ]);
    expect(noDb.code).toBe(3);
    expect(noDb.stderr).toContain('needs a database for the audit log');
    const wrongDb = await runCli([
      'queues',
      'move',
      '--redis',
      'redis://127.0.0.1:6379/99',
      '--from',
      'old',
      '--to',
      'new',
      '--yes',
      '--db',
      schema.dsn,
    ]);
    expect(wrongDb.code).toBe(3);
    expect(wrongDb.stderr).toContain('has no DB 99');
    expect(await snapshot()).toEqual(before);
    expect(await countAudit()).toBe(audited);
  });

  it('SIGINT finishes the batch in hand and stops: every moved job audited, none lost', async () => {
    await redis.rpush(key('old'), ...Array.from({ length: 3000 }, (_, i) => job(`big-${i}`)));
    const child = spawn(
      process.execPath,
      [
        BIN,
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        'old',
        '--to',
        'new',
        '--rate',
        '1000/s',
        '--batch',
        '100',
        '--yes',
        '--json',
      ],
      { cwd, env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    // Ctrl-C once the move is under way (the first batch has landed).
    const started = Date.now();
    while ((await redis.llen(key('new'))) === 0 && Date.now() - started < 30_000)
      await new Promise((resolve) => setTimeout(resolve, 20));
    child.kill('SIGINT');
    const code = await closed;
    expect(code, stderr).toBe(1);
    const result = JSON.parse(stdout) as { moved: number; matched: number; runId: string };
    expect(result.moved).toBeGreaterThan(0);
    expect(result.moved).toBeLessThan(3000);
    expect(result.moved % 100).toBe(0);
    expect(await redis.llen(key('new'))).toBe(result.moved);
    expect(await redis.llen(key('old'))).toBe(3000 - result.moved);
    expect((await auditRows(result.runId)).length).toBe(result.moved);
  });
});

describe('queues move settles the batches a killed run left open', () => {
  /** An intent as a killed run left it: committed, open, its batch's keys in detail. */
  async function openIntent(runId: string, from: string, to: string): Promise<number> {
    const [result] = await schema.sql.query(
      `INSERT INTO taskrecon_intent (run_id, kind, source, from_ref, to_ref, operator, host, action, reason, jobs, detail, state, opened_epoch)
       VALUES (?, 'redis-move', 'app', ?, ?, 'ops@host', 'host', 'queue-move', 'drain', '[]', ?, 'open', UNIX_TIMESTAMP())`,
      [runId, from, to, JSON.stringify({ from, to, fromSet: 'ready', toSet: 'ready' })],
    );
    return (result as { insertId: number }).insertId;
  }

  it('audits a landed batch under the run that moved it, and fences off and closes one that never ran', async () => {
    const killed = `killed-${randomBytes(4).toString('hex')}`;
    const early = `early-${randomBytes(4).toString('hex')}`;
    // The killed run's batch landed: its jobs are in the target, its marker lists them.
    const landed = await openIntent(killed, key('old'), key('new'));
    const moved = [job('k-1'), job('k-2')];
    await redis.rpush(key('new'), ...moved);
    await redis.rpush(`taskrecon:intent:${killed}:${landed}`, ...moved);
    // The other run was killed after committing its intent, before its script ran.
    const notLanded = await openIntent(early, key('old'), key('new'));
    await seed('old', 1);
    const { code, json, stderr } = await move('--from', 'old', '--to', 'new', '--yes');
    expect(code, stderr).toBe(0);
    assertMatchesSchema('queues-move', json);
    expect(json.settledIntents).toEqual([
      { id: landed, kind: 'redis-move', runId: killed, state: 'landed', jobs: 0, audited: 2 },
      { id: notLanded, kind: 'redis-move', runId: early, state: 'not-landed', jobs: 0, audited: 0 },
    ]);
    const rows = await auditRows(killed);
    expect(rows.map((r) => [r.task_id, r.action, r.task_table, r.reason])).toEqual([
      ['k-1', 'queue-move', key('old'), 'drain'],
      ['k-2', 'queue-move', key('old'), 'drain'],
    ]);
    expect(JSON.parse(String(rows[0]?.after_json))).toEqual({
      queue: key('new'),
      set: 'ready',
      settledBy: json.runId,
    });
    expect(await auditRows(early)).toEqual([]);
    // The landed batch's marker is gone; the other is fenced, so its script can never run now.
    expect(await redis.exists(`taskrecon:intent:${killed}:${landed}`)).toBe(0);
    expect(await redis.get(`taskrecon:intent:${early}:${notLanded}`)).toBe('fenced');
    await redis.del(`taskrecon:intent:${early}:${notLanded}`);
    const [states] = await schema.sql.query(
      'SELECT id, state, settled_run FROM taskrecon_intent WHERE id IN (?, ?) ORDER BY id',
      [landed, notLanded],
    );
    expect(states).toEqual([
      { id: landed, state: 'landed', settled_run: json.runId },
      { id: notLanded, state: 'not-landed', settled_run: json.runId },
    ]);
    // The run's own batches are settled too: nothing is left open.
    const [open] = await schema.sql.query("SELECT COUNT(*) AS n FROM taskrecon_intent WHERE state = 'open'");
    expect(open).toEqual([{ n: 0 }]);
  });
});

describe('queues recover', () => {
  it('laravel: moves exactly the due delayed jobs and expired reservations to ready, with notify, audited', async () => {
    await seed('new', 1);
    const dry = await runJson<Record<string, unknown>>(
      ['queues', 'recover', '--broker', 'app', '--dry-run'],
      { cwd },
    );
    assertMatchesSchema('queues-recover', dry.json);
    expect(dry.json).toMatchObject({ matched: 2, moved: 0 });
    const { code, json } = await runJson<{ moved: number; runId: string; results: unknown[] }>(
      ['queues', 'recover', '--broker', 'app', '--queue', 'new', '--yes', '--reason', 'workers down'],
      { cwd },
    );
    expect(code).toBe(0);
    expect(json.moved).toBe(2);
    expect(await redis.lrange(key('new'), 0, -1)).toEqual([job('new-r0'), job('new-d0'), job('new-x0', 1)]);
    expect(await redis.zrange(key('new', ':delayed'), 0, -1)).toEqual([job('new-d1')]);
    expect(await redis.zrange(key('new', ':reserved'), 0, -1)).toEqual([job('new-x1', 1)]);
    expect(await redis.llen(key('new', ':notify'))).toBe(3);
    const rows = await auditRows(json.runId);
    expect(rows.map((r) => `${r.action}:${r.task_id}:${r.from_status}>${r.to_status}`)).toEqual([
      'queue-recover:new-d0:delayed>ready',
      'queue-recover:new-x0:reserved>ready',
    ]);
  });

  it('recover --queue of a queue that does not exist: exit 3, nothing moved', async () => {
    await seed('new', 1);
    const result = await runCli(['queues', 'recover', '--broker', 'app', '--queue', 'nosuch', '--yes'], {
      cwd,
    });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('queue nosuch does not exist');
    expect(await redis.zcard(key('new', ':delayed'))).toBe(2);
  });

  it('list: the classic mover done atomically, LPUSHed so BRPOP takes the oldest due job first', async () => {
    const ready = `${prefix}async_queue`;
    const delayed = `${prefix}async_delay_queue`;
    await redis.lpush(ready, 'e0');
    await redis.zadd(delayed, now - 30, 'e1', now - 20, 'e2', now + 3600, 'e3');
    const shown = await runJson<{ brokers: Array<{ queues: unknown[] }> }>(
      ['queues', '--broker', 'classic'],
      { cwd },
    );
    expect(shown.json.brokers[0]?.queues).toEqual([
      expect.objectContaining({
        name: ready,
        ready: 1,
        delayed: 3,
        delayedOverdue: 2,
        reserved: null,
        reservedExpired: null,
      }),
    ]);
    const { json } = await runJson<{ moved: number }>(['queues', 'recover', '--broker', 'classic', '--yes'], {
      cwd,
    });
    expect(json.moved).toBe(2);
    expect(await redis.rpop(ready)).toBe('e0');
    expect(await redis.rpop(ready)).toBe('e1');
    expect(await redis.rpop(ready)).toBe('e2');
    expect(await redis.zrange(delayed, 0, -1)).toEqual(['e3']);
  });

  it('list: move keeps BRPOP order and refuses --what delayed', async () => {
    const ready = `${prefix}async_queue`;
    await redis.lpush(ready, 'a1', 'a2', 'a3');
    const other = `${prefix}async_queue2`;
    const { json } = await runJson<{ moved: number }>(
      ['queues', 'move', '--broker', 'classic', '--from', ready, '--to', other, '--yes'],
      { cwd },
    );
    expect(json.moved).toBe(3);
    expect([await redis.rpop(other), await redis.rpop(other), await redis.rpop(other)]).toEqual([
      'a1',
      'a2',
      'a3',
    ]);
    const refused = await runCli(
      ['queues', 'move', '--broker', 'classic', '--from', ready, '--to', other, '--what', 'delayed', '--yes'],
      { cwd },
    );
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('framework list');
  });
});

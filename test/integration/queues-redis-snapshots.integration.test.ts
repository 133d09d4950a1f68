import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { dropPrefix, openTestRedis, laravelBrokerYaml } from '../support/redis.js';

// stale-queue from snapshots kept between runs: in taskrecon_queue_snapshot (a database) and in a
// --state FILE (none). Raised when a non-empty queue kept its length since a snapshot at least
// staleAfter old; not when it moved, not when the snapshot is younger, not when it is empty.

const DB = 12;
const URL = `redis://127.0.0.1:6379/${DB}`;
const prefix = `tr_h2st_${randomBytes(3).toString('hex')}_`;
let redis: Redis;
let schema: TestSchema;
let cwd: string;

interface QueuesJson {
  findings: Array<{ code: string; queue: string | null; count: number | null }>;
}

const stale = (json: QueuesJson) => json.findings.filter((f) => f.code === 'stale-queue').map((f) => f.queue);

beforeAll(async () => {
  redis = await openTestRedis(DB);
  schema = await createTestSchema('queues_snap');
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-qsnap-'));
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'brokers:',
      ...laravelBrokerYaml('app', URL, prefix, ['still', 'busy', 'empty']),
      '    staleAfter: 1h',
      '',
    ].join('\n'),
  );
  expect((await runJson(['init'], { cwd })).code).toBe(0);
  await redis.rpush(`${prefix}queues:still`, 'a', 'b', 'c');
  await redis.rpush(`${prefix}queues:busy`, 'a', 'b');
});

afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis?.disconnect();
  await schema?.drop();
});

async function plant(queue: string, depth: number, ago: number): Promise<void> {
  await schema.sql.query(
    'INSERT INTO taskrecon_queue_snapshot (broker, queue, depth, ready, at_epoch) VALUES (?, ?, ?, ?, ?)',
    ['app', queue, depth, depth, Math.floor(Date.now() / 1000) - ago],
  );
}

describe('stale-queue from taskrecon_queue_snapshot', () => {
  it('the first run has no history: no stale-queue, and it writes one snapshot per queue', async () => {
    const { json } = await runJson<QueuesJson>(['queues'], { cwd });
    expect(stale(json)).toEqual([]);
    const [rows] = await schema.sql.query('SELECT queue, depth FROM taskrecon_queue_snapshot ORDER BY queue');
    expect(rows).toEqual([
      { queue: 'busy', depth: 2 },
      { queue: 'empty', depth: 0 },
      { queue: 'still', depth: 3 },
    ]);
  });

  it('raised for a queue unchanged since a snapshot 2h old, not for one that moved or a younger one', async () => {
    await plant('still', 3, 7200);
    await plant('busy', 5, 7200);
    await plant('empty', 0, 7200);
    const { json } = await runJson<QueuesJson>(['queues'], { cwd });
    expect(stale(json)).toEqual(['still']);
    expect(json.findings.find((f) => f.code === 'stale-queue')).toMatchObject({ count: 3 });
  });

  it('not raised when the length changed in between', async () => {
    await plant('still', 4, 1800);
    const { json } = await runJson<QueuesJson>(['queues'], { cwd });
    expect(stale(json)).toEqual([]);
  });
});

describe('stale-queue from a --state FILE', () => {
  it('keeps snapshots in the file and raises stale-queue from them', async () => {
    const state = join(cwd, 'state.json');
    const args = ['queues', '--redis', URL, '--framework', 'laravel', '--prefix', prefix, '--state', state];
    expect(stale((await runJson<QueuesJson>(args)).json)).toEqual([]);
    const saved = JSON.parse(readFileSync(state, 'utf8')) as {
      snapshots: Array<{ queue: string; atEpoch: number }>;
    };
    expect(saved.snapshots.map((s) => s.queue).sort()).toEqual(['busy', 'still']);
    // age the file's snapshots by two days: the default staleAfter is 24h
    for (const s of saved.snapshots) s.atEpoch -= 2 * 86400;
    writeFileSync(state, JSON.stringify(saved));
    expect(stale((await runJson<QueuesJson>(args)).json).sort()).toEqual(['busy', 'still']);
    await redis.lpop(`${prefix}queues:busy`);
    expect(stale((await runJson<QueuesJson>(args)).json)).toEqual(['still']);
  });

  it('a state file that is not one: exit 3', async () => {
    const bad = join(cwd, 'bad.json');
    writeFileSync(bad, '{"nope": 1}');
    const { code, json } = await runJson<{ error: { message: string } }>([
      'queues',
      '--redis',
      URL,
      '--framework',
      'laravel',
      '--prefix',
      prefix,
      '--state',
      bad,
    ]);
    expect(code).toBe(3);
    expect(json.error.message).toContain('is not a taskrecon state file');
  });
});

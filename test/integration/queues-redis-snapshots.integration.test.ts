import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { dropPrefix, openTestRedis, laravelBrokerYaml } from '../support/redis.js';

// stale-queue from snapshots kept between runs: in taskrecon_queue_snapshot (a database, on every
// engine) and in a --state FILE (none). Raised when a non-empty queue kept its length since a
// snapshot at least staleAfter old; not when it moved, not when the snapshot is younger, not when
// it is empty.

const DB = 12;
const URL = `redis://127.0.0.1:6379/${DB}`;
const run = randomBytes(3).toString('hex');
let redis: Redis;

interface QueuesJson {
  findings: Array<{ code: string; queue: string | null; count: number | null }>;
}

const stale = (json: QueuesJson) => json.findings.filter((f) => f.code === 'stale-queue').map((f) => f.queue);

beforeAll(async () => {
  redis = await openTestRedis(DB);
});

afterAll(async () => {
  await dropPrefix(redis, `tr_h2st_${run}_`);
  redis?.disconnect();
});

describe.each(TEST_ENGINES)('stale-queue from taskrecon_queue_snapshot on %s', (engine) => {
  // Each engine's queues under a key prefix of their own.
  const prefix = `tr_h2st_${run}_${engine}_`;
  let db: EngineDb;
  let cwd: string;

  beforeAll(async () => {
    db = await createEngineDb(engine, 'queues_snap');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-qsnap-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
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
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  async function plant(queue: string, depth: number, ago: number): Promise<void> {
    await db.run(
      'INSERT INTO taskrecon_queue_snapshot (broker, queue, depth, ready, at_epoch) VALUES (?, ?, ?, ?, ?)',
      ['app', queue, depth, depth, Math.floor(Date.now() / 1000) - ago],
    );
  }

  it('the first run has no history: no stale-queue, and it writes one snapshot per queue', async () => {
    const { code, json } = await runJson<QueuesJson>(['queues'], { cwd });
    expect(code).not.toBe(3);
    expect(stale(json)).toEqual([]);
    expect(await db.rows('SELECT queue, depth FROM taskrecon_queue_snapshot ORDER BY queue')).toEqual([
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

// No database at all: the snapshots live in the file, so this part runs once.
describe('stale-queue from a --state FILE', () => {
  const prefix = `tr_h2st_${run}_file_`;
  let cwd: string;

  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-qsnap-file-'));
    await redis.rpush(`${prefix}queues:still`, 'a', 'b', 'c');
    await redis.rpush(`${prefix}queues:busy`, 'a', 'b');
  });

  afterAll(() => {
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

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

// Over 300 lines: one throw-away cluster serves every check (counts, recover, move, kills, dispatcher, a master down), in the order the last one needs.
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRedisBroker } from '../../src/brokers/redis/index.js';
import { keySlot } from '../../src/brokers/redis/slots.js';
import { RedisQueueDispatcher } from '../../src/dispatch/redis-queue.js';
import { BIN, runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { freePort } from '../support/redis.js';
import { startRedisCluster, type RedisClusterHarness } from '../support/redis-cluster.js';
import { perJob } from '../support/audit-jobs.js';
import { frameworkTableDdl } from '../support/framework-tables.js';

// A local 3-master Redis Cluster started here: `queues` counts equal `redis-cli -c`, recover and a
// move within one hash slot are exact and audited, a move spanning slots is refused with nothing
// touched, 20 SIGKILLs during a cluster move lose and double nothing, the redis-list dispatcher
// pushes onto a cluster list, Laravel failed jobs re-pushed onto a `{default}` queue land once
// each through SIGKILLs (a cross-slot re-push refused), and a master down (or a closed port) is
// exit 3 naming it.

const THINK = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5'];
const LARAVEL = ['{a}:high', '{a}:low', '{b}', 'default', 'high', 'low'];
const P = 'tr_cl_';
const K = 'tr_kill_';
const KILL_JOBS = 3000;
const KILLS = 20;

let cluster: RedisClusterHarness;
let schema: TestSchema;
let cwd: string;
let now: number;
let dispatchList = 'tr_dispatch_0';
/** Laravel failed jobs re-pushed onto the cluster: their Redis prefix, config directory and URL's node. */
const FJ = 'tr_fj_';
const FJ_JOBS = 600;
const FJ_KILLS = 4;
let fjCwd: string;
let FJ_NODE = 0;

const lkey = (prefix: string, queue: string, part = '') => `${prefix}queues:${queue}${part}`;
const tkey = (queue: string, part = '') => `{queues:${queue}}${part}`;
const payload = (id: string, attempts = 0) =>
  JSON.stringify({ uuid: randomUUID(), id, displayName: 'App\\Jobs\\Ship', job: 'Ship', attempts });

/** The direct connection of the node serving `key` (by the server's own CLUSTER KEYSLOT). */
async function on(key: string): Promise<Redis> {
  return cluster.nodes[await cluster.nodeOf(key)] as Redis;
}

/** Seeds a queue: `n` ready, `n` delayed (half overdue), `n` reserved (half expired); returns the ids. */
async function plant(keyOf: (part: string) => string, n: number, tag: string, notify = false) {
  const ids: string[] = [];
  const make = () => {
    const id = `${tag}-${randomBytes(6).toString('hex')}`;
    ids.push(id);
    return payload(id);
  };
  const ready = Array.from({ length: n }, make);
  await (await on(keyOf(''))).rpush(keyOf(''), ...ready);
  if (notify) await (await on(keyOf(':notify'))).rpush(keyOf(':notify'), ...ready.map(() => '1'));
  for (const part of [':delayed', ':reserved']) {
    const args = Array.from({ length: n }, (_, i) => [now + (i % 2 ? 600 : -60 - i), make()]).flat();
    await (await on(keyOf(part))).zadd(keyOf(part), ...(args as [number, string]));
  }
  return ids;
}

/** Every key of every node matching `match`, with its members (lists and zsets). */
async function contents(match: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const node of cluster.nodes) {
    if (node.status !== 'ready') continue;
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) {
        const type = await node.type(k);
        if (type === 'list') out.set(k, await node.lrange(k, 0, -1));
        else if (type === 'zset') out.set(k, await node.zrange(k, 0, -1));
      }
    } while (cursor !== '0');
  }
  return out;
}

/** Where each expected job is: lost, doubled, and its key. */
async function census(match: string, ids: readonly string[]) {
  const seen = new Map<string, string[]>();
  /** Where each job is, by its payload uuid (the job id its audit rows carry). */
  const where = new Map<string, string>();
  for (const [k, members] of await contents(match)) {
    if (k.endsWith(':notify')) continue;
    for (const m of members) {
      const { id, uuid } = JSON.parse(m) as { id: string; uuid: string };
      seen.set(id, [...(seen.get(id) ?? []), k]);
      where.set(uuid, k);
    }
  }
  return {
    lost: ids.filter((id) => !seen.has(id)).length,
    doubled: [...seen.values()].filter((keys) => keys.length > 1).length,
    where,
  };
}

/** A digest of every key of every node (name, type, value) and of taskrecon's tables. */
async function digest(): Promise<string> {
  const hash = createHash('sha256');
  for (const [k, members] of [...(await contents('*'))].sort(([a], [b]) => a.localeCompare(b)))
    hash.update(`${k}\n${members.join('\n')}\n`);
  for (const table of ['taskrecon_audit', 'taskrecon_intent']) {
    const [rows] = await schema.sql.query(`SELECT COUNT(*) AS n FROM ${table}`);
    hash.update(`${table} ${(rows as Array<{ n: number }>)[0]?.n}\n`);
  }
  return hash.digest('hex');
}

const cli = (...args: string[]) => runJson<Record<string, unknown>>(args, { cwd });

interface QueuesJson {
  brokers: Array<{
    name: string;
    queues: Array<{ name: string; ready: number; delayed: number; reserved: number }>;
  }>;
}

beforeAll(async () => {
  cluster = await startRedisCluster();
  schema = await createTestSchema('redis_cluster');
  now = Math.floor(Date.now() / 1000);
  // The redis-list handler's list lives on another master than the node its URL names.
  for (let i = 1; (await cluster.nodeOf(dispatchList)) === 0; i++) dispatchList = `tr_dispatch_${i}`;
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-cluster-cfg-'));
  const quoted = (qs: string[]) => `[${qs.map((q) => `'${q}'`).join(', ')}]`;
  const broker = (name: string, node: number, lines: string[]) => [
    `  ${name}:`,
    '    kind: redis',
    `    url: ${cluster.url(node)}`,
    ...lines.map((l) => `    ${l}`),
  ];
  writeFileSync(
    join(cwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'brokers:',
      ...broker('lara', 0, ['framework: laravel', `prefix: ${P}`, `queues: ${quoted(LARAVEL)}`]),
      ...broker('think', 1, ['framework: thinkphp', `queues: ${quoted(THINK)}`]),
      ...broker('classic', 2, [
        'framework: list',
        "lists: { ready: '{jobs}:ready', delayed: '{jobs}:delayed' }",
      ]),
      ...broker('plain', 2, ['framework: list', 'lists: { ready: plain_ready, delayed: plain_delayed }']),
      ...broker('kill', 2, [
        'framework: laravel',
        `prefix: ${K}`,
        `queues: ${quoted(['{k}:alpha', '{k}:beta'])}`,
      ]),
      'handlers:',
      `  refund: { type: redis-list, url: '${cluster.url(0)}', list: '${dispatchList}' }`,
      '',
    ].join('\n'),
  );
  const init = await runCli(['init', '--profile', 'async-task'], { cwd });
  expect(init.code, init.stderr).toBe(0);
  // Laravel's failed_jobs in the same throw-away database, its redis connection on the cluster
  // through a master that does not serve the `{default}` queue's slot.
  for (const ddl of [
    ...frameworkTableDdl('mysql', 'laravel_failed_jobs'),
    ...frameworkTableDdl('mysql', 'thinkphp_failed_jobs', 'think_failed_jobs'),
  ])
    await schema.sql.query(ddl);
  FJ_NODE = ((await cluster.nodeOf(lkey(FJ, '{default}'))) + 1) % 3;
  fjCwd = mkdtempSync(join(tmpdir(), 'taskrecon-cluster-fj-'));
  writeFileSync(
    join(fjCwd, 'taskrecon.config.yaml'),
    [
      `db: ${schema.dsn}`,
      'sources:',
      '  fj:',
      '    profile: laravel-failed-jobs',
      '    queue:',
      '      connections:',
      `        redis: { driver: redis, url: "${cluster.url(FJ_NODE)}", prefix: "${FJ}" }`,
      // think-queue's failed jobs, re-pushed onto its `{queues:NAME}` lists (tagged by think-queue itself).
      '  tq:',
      '    profile: thinkphp-failed-jobs',
      '    table: think_failed_jobs',
      '    queue:',
      '      connections:',
      `        redis: { driver: redis, url: "${cluster.url(FJ_NODE)}", prefix: "${FJ}" }`,
      'sweeps:',
      "  - { name: tq-partner, match: { errorLike: 'cluster-sweep' }, action: retry, rate: 500 }",
      '',
    ].join('\n'),
  );
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  await schema?.drop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
  if (fjCwd) rmSync(fjCwd, { recursive: true, force: true });
});

/** Inserts `n` Laravel failed jobs of the redis connection on `queue`; their uuids. */
async function failed(n: number, queue: string): Promise<string[]> {
  const uuids = Array.from({ length: n }, () => randomUUID());
  for (let at = 0; at < n; at += 200) {
    const chunk = uuids.slice(at, at + 200);
    await schema.sql.query(
      `INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
      chunk.flatMap((uuid) => [
        uuid,
        'redis',
        queue,
        JSON.stringify({ uuid, displayName: 'App\\Jobs\\Ship', job: 'Ship', data: {}, attempts: 3 }),
        'Exception: partner down',
      ]),
    );
  }
  return uuids;
}

const fjRetry = (...more: string[]) => [
  'compensate',
  '--source',
  'fj',
  '--action',
  'retry',
  '--yes',
  '--batch',
  '20',
  ...more,
];

async function failedLeft(): Promise<number> {
  const [rows] = await schema.sql.query('SELECT COUNT(*) AS n FROM failed_jobs');
  return Number((rows as Array<{ n: number }>)[0]?.n);
}

/** Open re-push intents whose marker lists pushed rows: runs killed between a push and its commit. */
async function landedOpenMarkers(): Promise<number> {
  const [rows] = await schema.sql.query(
    "SELECT id, run_id FROM taskrecon_intent WHERE kind = 'failed-job-retry' AND state = 'open'",
  );
  let n = 0;
  for (const i of rows as Array<{ id: number; run_id: string }>) {
    const marker = `taskrecon:intent:{default}:${i.run_id}:${i.id}`;
    if ((await (await on(marker)).type(marker)) === 'list') n++;
  }
  return n;
}

/** How many times each job (by its payload's `field`) sits in `list`. */
async function countsIn(list: string, field: 'uuid' | 'id'): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const p of await (await on(list)).lrange(list, 0, -1)) {
    const id = (JSON.parse(p) as Record<string, string>)[field] as string;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/**
 * A paced retry (`args`, Laravel's by default) SIGKILLed at a random point within 300 ms of its
 * first push onto `list`, or, with `atMarker`, as soon as a push's marker shows in the `{default}`
 * slot; whether the kill hit.
 */
async function killedRetry(
  list: string,
  atMarker: boolean,
  args = fjRetry('--rate', '300/s'),
): Promise<boolean> {
  const node = await on(list);
  const before = await node.llen(list);
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: fjCwd,
    env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' },
    stdio: 'ignore',
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_c, s) => resolve(s)));
  let done = false;
  void exited.then(() => (done = true));
  while (!done && (await node.llen(list)) <= before) await new Promise((r) => setTimeout(r, 5));
  if (atMarker) {
    while (!done && (await node.keys('taskrecon:intent:{default}:*')).length === 0)
      await new Promise((r) => setTimeout(r, 2));
    child.kill('SIGKILL');
  } else setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * 300));
  return (await exited) === 'SIGKILL';
}

describe('Redis Cluster', () => {
  it('computes hash slots as the cluster does', async () => {
    const keys = [
      '{queues:q0}',
      'queues:default',
      'a{}b',
      '{a}{b}',
      '}{x}',
      '{user1000}.following',
      'plain',
      'ключ{τ}',
    ];
    for (const k of keys)
      expect([k, keySlot(k)]).toEqual([k, Number(await cluster.cli('CLUSTER', 'KEYSLOT', k))]);
    // Negative: keys with different tags land in different slots (the refusal below depends on it).
    expect(keySlot('{a}:high')).not.toBe(keySlot('{b}:high'));
  });

  it('counts every queue exactly as redis-cli -c does, whichever node the URL names', async () => {
    for (const q of THINK) await plant((part) => tkey(q, part), 3 + THINK.indexOf(q), q);
    for (const q of LARAVEL) await plant((part) => lkey(P, q, part), 2 + LARAVEL.indexOf(q), q, true);
    // The queues are spread over every master: one node's SCAN alone would miss some.
    const homes = new Set(
      await Promise.all(
        [...THINK.map((q) => tkey(q)), ...LARAVEL.map((q) => lkey(P, q))].map((k) => cluster.nodeOf(k)),
      ),
    );
    expect(homes.size).toBe(3);
    const seedKeys = Number(await cluster.nodes[0]?.dbsize());
    expect(seedKeys).toBeLessThan((await contents('*')).size);
    for (const [name, keyOf, queues] of [
      ['think', tkey, THINK],
      ['lara', (q: string, part = '') => lkey(P, q, part), LARAVEL],
    ] as const) {
      const { code, json, stderr } = await runJson<QueuesJson>(['queues', '--broker', name], { cwd });
      expect(code, stderr).not.toBe(3);
      const counted = json.brokers[0]?.queues ?? [];
      expect(counted.map((q) => q.name).sort()).toEqual([...queues].sort());
      for (const q of queues) {
        const truth = {
          name: q,
          ready: Number(await cluster.cli('LLEN', keyOf(q))),
          delayed: Number(await cluster.cli('ZCARD', keyOf(q, ':delayed'))),
          reserved: Number(await cluster.cli('ZCARD', keyOf(q, ':reserved'))),
        };
        const got = counted.find((c) => c.name === q);
        expect({
          name: got?.name,
          ready: got?.ready,
          delayed: got?.delayed,
          reserved: got?.reserved,
        }).toEqual(truth);
      }
    }
  });

  it('recovers a think-queue queue within its slot: every job once, audited', async () => {
    const ids = await plant((part) => tkey('r1', part), 40, 'r1');
    const { code, stderr } = await cli('queues', 'recover', '--broker', 'think', '--queue', 'r1', '--yes');
    expect(code, stderr).toBe(0);
    const after = await census('{queues:r1}*', ids);
    expect({ lost: after.lost, doubled: after.doubled }).toEqual({ lost: 0, doubled: 0 });
    // The due halves (20 delayed, 20 reserved) went back to ready; the rest stayed.
    expect(Number(await cluster.cli('LLEN', tkey('r1')))).toBe(80);
    const [rows] = await schema.sql.query(
      "SELECT task_id, before_json FROM taskrecon_audit WHERE action = 'queue-recover'",
    );
    expect(perJob(rows as Array<Record<string, unknown>>)).toHaveLength(40);
    // Intent markers were tagged into the queue's slot and removed once settled.
    expect([...(await contents('taskrecon:intent:*')).keys()]).toEqual([]);
  });

  it('recovers the classic list + delay set when both share a {tag}, and refuses them when not', async () => {
    const due = Array.from({ length: 25 }, (_, i) => [now - 10 - i, payload(`c${i}`)]).flat();
    const later = Array.from({ length: 5 }, (_, i) => [now + 600, payload(`l${i}`)]).flat();
    await (
      await on('{jobs}:delayed')
    ).zadd('{jobs}:delayed', ...(due as [number, string]), ...(later as [number, string]));
    const ok = await cli('queues', 'recover', '--broker', 'classic', '--yes');
    expect(ok.code, ok.stderr).toBe(0);
    expect(Number(await cluster.cli('LLEN', '{jobs}:ready'))).toBe(25);
    expect(Number(await cluster.cli('ZCARD', '{jobs}:delayed'))).toBe(5);
    // Negative: untagged names lie in two slots; nothing is touched.
    expect(keySlot('plain_ready')).not.toBe(keySlot('plain_delayed'));
    await (await on('plain_ready')).lpush('plain_ready', payload('p0'));
    await (await on('plain_delayed')).zadd('plain_delayed', now - 10, payload('p1'));
    const before = await digest();
    const refused = await cli('queues', 'recover', '--broker', 'plain', '--yes');
    expect(refused.code).toBe(3);
    expect(JSON.stringify(refused.json)).toMatch(/2 hash slots/);
    expect(await digest()).toBe(before);
  });

  it('refuses to recover a Laravel queue whose keys span slots, touching nothing', async () => {
    const before = await digest();
    const run = await cli('queues', 'recover', '--broker', 'lara', '--queue', 'default', '--yes');
    expect(run.code).toBe(3);
    expect(JSON.stringify(run.json)).toMatch(/hash slots[\s\S]*\{tag\}/);
    expect(await digest()).toBe(before);
  });

  it('moves between Laravel queues sharing a {tag}: exact, audited, notify kept in step', async () => {
    const ids = await plant((part) => lkey(P, '{m}:from', part), 30, 'mv', true);
    const { code, json, stderr } = await cli(
      'queues',
      'move',
      '--broker',
      'lara',
      '--from',
      '{m}:from',
      '--to',
      '{m}:to',
      '--what',
      'all',
      '--yes',
    );
    expect(code, stderr).toBe(0);
    expect(json.moved).toBe(90);
    const after = await census(`${P}queues:{m}:*`, ids);
    expect({ lost: after.lost, doubled: after.doubled }).toEqual({ lost: 0, doubled: 0 });
    expect([...after.where.values()].every((k) => k.startsWith(lkey(P, '{m}:to')))).toBe(true);
    expect(Number(await cluster.cli('LLEN', lkey(P, '{m}:to', ':notify')))).toBe(30);
    const [rows] = await schema.sql.query(
      'SELECT task_id, before_json FROM taskrecon_audit WHERE run_id = ?',
      [json.runId],
    );
    expect(perJob(rows as Array<Record<string, unknown>>)).toHaveLength(90);
  });

  it('refuses a move whose keys span slots with a hint, nothing moved or written', async () => {
    expect(keySlot(lkey(P, 'high'))).not.toBe(keySlot(lkey(P, 'low')));
    for (const [broker, from, to] of [
      ['lara', 'high', 'low'],
      ['lara', '{a}:high', '{b}'],
      ['think', 'q0', 'q1'],
    ] as const) {
      const before = await digest();
      const run = await cli(
        'queues',
        'move',
        '--broker',
        broker,
        '--from',
        from,
        '--to',
        to,
        '--what',
        'all',
        '--yes',
      );
      expect(run.code, `${from} → ${to}`).toBe(3);
      expect(JSON.stringify(run.json)).toMatch(/hash slots[\s\S]*common hash tag \{tag\}/);
      expect(await digest()).toBe(before);
    }
  });

  it('a slot moved after the run read the masters: exit 3 saying to run again', async () => {
    const from = '{moved}:a';
    const slot = keySlot(lkey(P, from));
    const owner = await cluster.nodeOf(lkey(P, from));
    const broker = await openRedisBroker('lara', {
      kind: 'redis',
      url: cluster.url(0),
      framework: 'laravel',
      prefix: P,
    });
    try {
      // The (empty) slot is handed to another master, as a resharding does.
      const target = cluster.nodes[(owner + 1) % 3] as Redis;
      const targetId = String(await target.call('CLUSTER', 'MYID'));
      for (const node of [target, ...cluster.nodes.filter((n) => n !== target)])
        await node.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
      const request = {
        from,
        to: '{moved}:b',
        what: 'ready' as const,
        batch: 10,
        dryRun: true,
        runId: 'moved',
        onBatch: async () => undefined,
        shouldStop: () => false,
      };
      await expect(broker.move(request)).rejects.toThrow(
        /slots changed or went down during the run \(MOVED \d+/,
      );
    } finally {
      await broker.close();
    }
    // A new run reads the masters anew and finds the slot where it is now.
    expect(await cluster.nodeOf(lkey(P, from))).toBe((owner + 1) % 3);
    const again = await cli(
      'queues',
      'move',
      '--broker',
      'lara',
      '--from',
      from,
      '--to',
      '{moved}:b',
      '--dry-run',
    );
    expect(JSON.stringify(again.json)).toMatch(/does not exist/);
  });

  it('doctor names the masters, and persistence is judged on every master', async () => {
    const persistence = async () => {
      const broker = await openRedisBroker('lara', {
        kind: 'redis',
        url: cluster.url(1),
        framework: 'laravel',
        prefix: P,
      });
      try {
        const checks = await broker.doctor();
        expect(checks.find((c) => c.name === 'lara: reachable')?.detail).toMatch(
          /a Redis Cluster of 3 masters/,
        );
        return checks.find((c) => c.name === 'lara: persistence')?.status;
      } finally {
        await broker.close();
      }
    };
    for (const node of cluster.nodes.slice(0, 2)) await node.config('SET', 'appendonly', 'yes');
    // Negative: the master the URL names, and one more, keep an AOF; the third does not.
    expect(await persistence()).toBe('warn');
    await cluster.nodes[2]?.config('SET', 'appendonly', 'yes');
    expect(await persistence()).toBe('ok');
    for (const node of cluster.nodes) await node.config('SET', 'appendonly', 'no');
  });

  it(`survives ${KILLS} SIGKILLs during a cluster move: nothing lost or doubled, every move audited`, async () => {
    const ids = await plant((part) => lkey(K, '{k}:alpha', part), KILL_JOBS / 3, 'k', true);
    const seeded = (await census(`${K}*`, ids)).where;
    const depth = async (queue: string) => {
      const node = await on(lkey(K, queue));
      const [ready, delayed, reserved] = await Promise.all([
        node.llen(lkey(K, queue)),
        node.zcard(lkey(K, queue, ':delayed')),
        node.zcard(lkey(K, queue, ':reserved')),
      ]);
      return ready + delayed + reserved;
    };
    // From the fuller queue to the other: a run killed late may have moved every job already.
    const direction = async (): Promise<[string, string]> =>
      (await depth('{k}:alpha')) >= (await depth('{k}:beta'))
        ? ['{k}:alpha', '{k}:beta']
        : ['{k}:beta', '{k}:alpha'];
    let kills = 0;
    for (let attempt = 0; kills < KILLS && attempt < KILLS + 10; attempt++) {
      const [from, to] = await direction();
      const before = await depth(from);
      const child = spawn(
        process.execPath,
        [
          BIN,
          'queues',
          'move',
          '--broker',
          'kill',
          '--from',
          from,
          '--to',
          to,
          '--what',
          'all',
          '--yes',
          '--rate',
          '3000',
        ],
        { cwd, env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' }, stdio: 'ignore' },
      );
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.on('close', (_c, s) => resolve(s)),
      );
      let done = false;
      void exited.then(() => (done = true));
      // The kill's timer starts once the first batch has moved, so start-up does not eat the window.
      while (!done && (await depth(from)) >= before) await new Promise((r) => setTimeout(r, 5));
      setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * 600));
      if ((await exited) === 'SIGKILL') kills++;
      const after = await census(`${K}*`, ids);
      expect({ attempt, lost: after.lost, doubled: after.doubled }).toEqual({ attempt, lost: 0, doubled: 0 });
    }
    expect(kills).toBe(KILLS);
    const [lastFrom, lastTo] = await direction();
    const last = await cli(
      'queues',
      'move',
      '--broker',
      'kill',
      '--from',
      lastFrom,
      '--to',
      lastTo,
      '--what',
      'all',
      '--yes',
    );
    expect(last.code, `${last.stderr}${JSON.stringify(last.json)}`).toBe(0);
    const final = await census(`${K}*`, ids);
    expect({ lost: final.lost, doubled: final.doubled }).toEqual({ lost: 0, doubled: 0 });
    // Replaying each job's audit rows from where it was seeded ends where it is.
    const [rows] = await schema.sql.query(
      "SELECT task_id, before_json, after_json FROM taskrecon_audit WHERE action = 'queue-move' AND task_table LIKE ? ORDER BY id",
      [`${K}%`],
    );
    type Row = { task_id: string; before_json: string; after_json: string };
    const replay = (audit: Row[]) => {
      const at = new Map(seeded);
      const broken = new Set<string>();
      for (const row of audit) {
        if (at.get(row.task_id) !== (JSON.parse(row.before_json) as { queue: string }).queue)
          broken.add(row.task_id);
        at.set(row.task_id, (JSON.parse(row.after_json) as { queue: string }).queue);
      }
      for (const [id, k] of final.where) if (at.get(id) !== k) broken.add(id);
      return broken.size;
    };
    const perJobRows = perJob(rows as Row[]);
    expect(perJobRows.length).toBeGreaterThanOrEqual(KILL_JOBS);
    // Negative: one move without its audit entry breaks the replay.
    expect(replay(perJobRows.slice(0, -1))).toBe(1);
    const broken = replay(perJobRows);
    const [open] = await schema.sql.query("SELECT COUNT(*) AS n FROM taskrecon_intent WHERE state = 'open'");
    expect({ broken, open: Number((open as Array<{ n: number }>)[0]?.n) }).toEqual({
      broken: 0,
      open: 0,
    });
  }, 120_000);

  it('redrive delivers through the redis-list dispatcher onto a list on another master', async () => {
    for (let n = 1; n <= 5; n++)
      await schema.sql.query(
        `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, created_at, updated_at)
         VALUES ('refund', ?, ?, '{"orderId":7}', 0, NOW() - INTERVAL 5 SECOND, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 1 HOUR)`,
        [`order-${n}`, `e${n}`],
      );
    const run = await runJson<{ claimed: number; delivered: number }>(
      ['redrive', '--pause', '0ms', '--lease', '60s'],
      { cwd, timeoutMs: 15_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ claimed: 5, delivered: 5 });
    expect(Number(await cluster.cli('LLEN', dispatchList))).toBe(5);
    const bodies = (await cluster.cli('LRANGE', dispatchList, '0', '-1')).split('\n');
    expect(bodies.map((b) => (JSON.parse(b) as { eventId: string }).eventId).sort()).toEqual([
      'e1',
      'e2',
      'e3',
      'e4',
      'e5',
    ]);
  });

  it('refuses a failed-job re-push whose keys span slots: exit 3, nothing pushed or written', async () => {
    // Laravel's `default` queue without a tag: its list and its notify list lie in two slots.
    expect(keySlot(lkey(FJ, 'default'))).not.toBe(keySlot(lkey(FJ, 'default', ':notify')));
    await failed(5, 'default');
    const before = await digest();
    const run = await runJson<Record<string, unknown>>(fjRetry(), { cwd: fjCwd });
    expect(run.code).toBe(3);
    expect(`${JSON.stringify(run.json)}${run.stderr}`).toMatch(/2 hash slots[\s\S]*\{tag\}/);
    expect(await digest()).toBe(before);
    expect(await failedLeft()).toBe(5);
    await schema.sql.query('DELETE FROM failed_jobs');
  });

  it(`re-pushes ${FJ_JOBS} Laravel failed jobs onto a {default} cluster queue through ${FJ_KILLS} SIGKILLs: each once, audited once`, async () => {
    const queue = '{default}';
    const list = lkey(FJ, queue);
    // The URL names a master that does not serve the queue's slot.
    expect(await cluster.nodeOf(list)).not.toBe(FJ_NODE);
    // Markers an earlier test's killed moves left (they expire) are not this test's.
    const earlier = new Set((await contents('taskrecon:intent:*')).keys());
    const ids = await failed(FJ_JOBS, queue);
    const inList = () => countsIn(list, 'uuid');
    const doubledIn = (counts: Map<string, number>) => [...counts.values()].filter((n) => n > 1).length;
    let kills = 0;
    let betweenPushAndCommit = 0;
    for (let attempt = 0; kills < FJ_KILLS && attempt < FJ_KILLS + 6; attempt++) {
      if (await killedRetry(list, attempt % 2 === 1)) kills++;
      betweenPushAndCommit += await landedOpenMarkers();
      expect({ attempt, doubled: doubledIn(await inList()) }).toEqual({ attempt, doubled: 0 });
    }
    console.log(`cluster re-push: ${kills} kills, ${betweenPushAndCommit} between a push and its commit`);
    expect(kills).toBe(FJ_KILLS);
    const last = await runJson<{ applied: number }>(fjRetry(), { cwd: fjCwd });
    expect(last.code, last.stderr).toBe(0);
    const counts = await inList();
    expect({
      missing: ids.filter((id) => !counts.has(id)).length,
      doubled: doubledIn(counts),
      foreign: [...counts.keys()].filter((id) => !ids.includes(id)).length,
      notify: Number(await cluster.cli('LLEN', lkey(FJ, queue, ':notify'))),
      failedLeft: await failedLeft(),
    }).toEqual({ missing: 0, doubled: 0, foreign: 0, notify: FJ_JOBS, failedLeft: 0 });
    const [audit] = await schema.sql.query(
      "SELECT COUNT(*) AS n, COUNT(DISTINCT task_id) AS ids FROM taskrecon_audit WHERE source = 'fj' AND action = 'retry'",
    );
    expect((audit as Array<{ n: number; ids: number }>).map((a) => [Number(a.n), Number(a.ids)])).toEqual([
      [FJ_JOBS, FJ_JOBS],
    ]);
    const [open] = await schema.sql.query(
      "SELECT COUNT(*) AS n FROM taskrecon_intent WHERE kind = 'failed-job-retry' AND state = 'open'",
    );
    expect(Number((open as Array<{ n: number }>)[0]?.n)).toBe(0);
    // Markers are tagged into the list's slot; one is left only by a kill after its batch
    // committed, before its removal (it expires).
    const markers = [...(await contents('taskrecon:intent:*')).keys()].filter((k) => !earlier.has(k));
    expect(markers.filter((k) => !k.startsWith('taskrecon:intent:{default}:'))).toEqual([]);
    expect(markers.length).toBeLessThanOrEqual(FJ_KILLS);
  }, 120_000);

  it('settles a killed re-push from its tagged marker on the cluster: not pushed again', async () => {
    // A run killed after its push, before its commit: its intent open, the job in the list, the
    // marker (tagged into the list's slot) listing the row. A rerun deletes and audits the row.
    const queue = '{default}';
    const list = lkey(FJ, queue);
    const [id] = await failed(1, queue);
    const [[row]] = (await schema.sql.query('SELECT id, payload FROM failed_jobs WHERE uuid = ?', [
      id,
    ])) as unknown as [Array<{ id: number; payload: string }>];
    const rowId = String(row?.id);
    await (await on(list)).rpush(list, String(row?.payload));
    const runId = randomUUID();
    const detail = {
      connection: 'redis',
      pushes: [{ id: rowId, queue, key: list }],
      markerTag: 'default',
    };
    const [inserted] = await schema.sql.query(
      `INSERT INTO taskrecon_intent (run_id, kind, source, from_ref, to_ref, operator, host, action, jobs, detail, state, opened_epoch)
       VALUES (?, 'failed-job-retry', 'fj', 'failed_jobs', ?, 'test', 'test', 'retry', ?, ?, 'open', UNIX_TIMESTAMP())`,
      [runId, `redis:${list}`, JSON.stringify([rowId]), JSON.stringify(detail)],
    );
    const intentId = (inserted as { insertId: number }).insertId;
    const marker = `taskrecon:intent:{default}:${runId}:${intentId}`;
    expect(keySlot(marker)).toBe(keySlot(list));
    await (await on(marker)).rpush(marker, rowId);
    const before = Number(await cluster.cli('LLEN', list));
    const run = await runJson<{ applied: number; settledIntents?: Array<{ id: number; state: string }> }>(
      fjRetry(),
      { cwd: fjCwd },
    );
    expect(run.code, run.stderr).toBe(0);
    expect((run.json.settledIntents ?? []).map((s) => [s.id, s.state])).toEqual([[intentId, 'landed']]);
    expect({
      list: Number(await cluster.cli('LLEN', list)),
      failedLeft: await failedLeft(),
      marker: await (await on(marker)).exists(marker),
    }).toEqual({ list: before, failedLeft: 0, marker: 0 });
    const [audit] = await schema.sql.query(
      'SELECT COUNT(*) AS n FROM taskrecon_audit WHERE task_id = ? AND run_id = ?',
      [rowId, runId],
    );
    expect(Number((audit as Array<{ n: number }>)[0]?.n)).toBe(1);
  });

  it('re-pushes think-queue failed jobs onto the cluster through SIGKILLs, and a sweep too: each once, audited once', async () => {
    const list = `${FJ}${tkey('default')}`;
    const earlier = new Set((await contents('taskrecon:intent:*')).keys());
    const thinkFailed = async (n: number, exception: string): Promise<string[]> => {
      const ids = Array.from({ length: n }, () => randomBytes(16).toString('hex'));
      await schema.sql.query(
        `INSERT INTO think_failed_jobs (connection, queue, payload, exception) VALUES ${ids.map(() => '(?, ?, ?, ?)').join(', ')}`,
        ids.flatMap((id) => [
          'redis',
          'default',
          JSON.stringify({
            job: 'app\\job\\SendSms',
            maxTries: null,
            timeout: null,
            data: {},
            id,
            attempts: 3,
          }),
          `Exception: ${exception}`,
        ]),
      );
      return ids;
    };
    const inList = () => countsIn(list, 'id');
    const once = (counts: Map<string, number>, ids: string[]) => ({
      missing: ids.filter((id) => !counts.has(id)).length,
      doubled: ids.filter((id) => (counts.get(id) ?? 0) > 1).length,
    });
    const thinkLeft = async () => {
      const [rows] = await schema.sql.query('SELECT COUNT(*) AS n FROM think_failed_jobs');
      return Number((rows as Array<{ n: number }>)[0]?.n);
    };
    const retry = ['compensate', '--source', 'tq', '--action', 'retry', '--yes', '--batch', '20'];
    const ids = await thinkFailed(300, 'cluster-compensate');
    let kills = 0;
    for (let attempt = 0; kills < 3 && attempt < 9; attempt++) {
      if (await killedRetry(list, false, [...retry, '--rate', '300/s'])) kills++;
      expect({ attempt, ...once(await inList(), ids) }).toMatchObject({ attempt, doubled: 0 });
    }
    expect(kills).toBe(3);
    const last = await runJson<{ applied: number }>(retry, { cwd: fjCwd });
    expect(last.code, last.stderr).toBe(0);
    expect({ ...once(await inList(), ids), left: await thinkLeft() }).toEqual({
      missing: 0,
      doubled: 0,
      left: 0,
    });
    // The markers of the re-push intents are tagged into the list's slot.
    const markers = [...(await contents('taskrecon:intent:*')).keys()].filter((k) => !earlier.has(k));
    expect(markers.filter((k) => keySlot(k) !== keySlot(list))).toEqual([]);
    // A sweep that matches other think-queue failures re-pushes them the same way.
    const swept = await thinkFailed(40, 'cluster-sweep');
    const sweep = await runJson<Record<string, unknown>>(['sweep', '--since', '1h'], { cwd: fjCwd });
    expect(sweep.code, sweep.stderr).toBe(0);
    expect({ ...once(await inList(), [...ids, ...swept]), left: await thinkLeft() }).toEqual({
      missing: 0,
      doubled: 0,
      left: 0,
    });
    const [audit] = await schema.sql.query(
      "SELECT action, COUNT(*) AS n, COUNT(DISTINCT task_id) AS ids FROM taskrecon_audit WHERE source = 'tq' GROUP BY action ORDER BY action",
    );
    expect(
      (audit as Array<{ action: string; n: number; ids: number }>).map((a) => [
        a.action,
        Number(a.n),
        Number(a.ids),
      ]),
    ).toEqual([
      ['retry', 300, 300],
      ['sweep-retry', 40, 40],
    ]);
  }, 120_000);

  it('a closed port, a DB index, and a master down: exit 3 naming what to fix, nothing written', async () => {
    const closed = await runCli(
      ['queues', '--redis', `redis://127.0.0.1:${await freePort()}`, '--framework', 'laravel'],
      { cwd },
    );
    expect(closed.code).toBe(3);
    expect(closed.stderr).toMatch(/cannot reach Redis/);
    const db = await runCli(['queues', '--redis', `${cluster.url(0)}/2`, '--framework', 'laravel'], { cwd });
    expect(db.code).toBe(3);
    expect(db.stderr).toMatch(/Redis Cluster, which has only DB 0/);
    const bullmq = await runCli(['queues', '--redis', cluster.url(0), '--framework', 'bullmq'], { cwd });
    expect(bullmq.code).toBe(3);
    expect(bullmq.stderr).toMatch(/reads BullMQ on one server only/);
    cluster.kill(2);
    const before = await digest();
    const down = new RegExp(
      `master 127\\.0\\.0\\.1:${cluster.ports[2]} \\(slots [\\d, -]+\\) of the Redis Cluster .* is down`,
    );
    const read = await runCli(['queues', '--broker', 'lara'], { cwd });
    expect(read.code).toBe(3);
    expect(read.stderr).toMatch(down);
    const moved = await runCli(
      ['queues', 'move', '--broker', 'lara', '--from', '{a}:high', '--to', '{a}:low', '--yes'],
      { cwd },
    );
    expect(moved.code).toBe(3);
    expect(moved.stderr).toMatch(down);
    expect(await digest()).toBe(before);
    const dispatcher = new RedisQueueDispatcher({ url: cluster.url(0), list: 'tr_dispatch_down' });
    const result = await dispatcher.dispatch({
      id: 9,
      bizType: null,
      bizId: null,
      eventId: 'e9',
      payload: null,
      payloadText: null,
      attempt: 1,
    });
    await dispatcher.close();
    expect(result.outcome).toBe('retryable');
    expect(JSON.stringify(result)).toMatch(down);
  });
});

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chooseBrokers, chooseOneBroker } from '../../src/brokers/index.js';
import { jobIdOf } from '../../src/brokers/redis/move.js';
import {
  keyFormatFindings,
  OVERDUE_GRACE_SECONDS,
  queueFindings,
  serverFindings,
} from '../../src/brokers/redis/findings.js';
import {
  belongsTo,
  globEscape,
  parseQueueKey,
  payloadIdentity,
  queueKeys,
} from '../../src/brokers/redis/layout.js';
import { evictsQueueKeys, type ServerSettings } from '../../src/brokers/redis/server.js';
import { displayRedisUrl, dbIndexOf } from '../../src/brokers/redis/connection.js';
import { historyOf, isGrowing, isStale, snapshotFindings } from '../../src/brokers/snapshots.js';
import type { BrokerReport, QueueStats } from '../../src/brokers/types.js';
import { auditRows } from '../../src/verbs/queues/move-audit.js';
import { renderQueues } from '../../src/render/queues.js';

const stats = (over: Partial<QueueStats>): QueueStats => ({
  name: 'default',
  ready: 0,
  delayed: 0,
  delayedOverdue: 0,
  oldestOverdueSeconds: null,
  reserved: 0,
  reservedExpired: 0,
  unacked: null,
  consumers: null,
  durable: null,
  arguments: null,
  deadLettered: null,
  ...over,
});

describe('key layouts', () => {
  it('names the keys each framework writes', () => {
    expect(queueKeys({ framework: 'laravel', prefix: 'laravel_database_' }, 'high')).toEqual({
      queue: 'high',
      ready: 'laravel_database_queues:high',
      delayed: 'laravel_database_queues:high:delayed',
      reserved: 'laravel_database_queues:high:reserved',
      notify: 'laravel_database_queues:high:notify',
    });
    expect(queueKeys({ framework: 'thinkphp', prefix: '' }, 'sms')).toMatchObject({
      ready: '{queues:sms}',
      delayed: '{queues:sms}:delayed',
      reserved: '{queues:sms}:reserved',
      notify: null,
    });
    expect(queueKeys({ framework: 'thinkphp-legacy', prefix: '' }, 'sms').ready).toBe('queues:sms');
    expect(
      queueKeys(
        { framework: 'list', prefix: '', lists: { ready: 'async_queue', delayed: 'async_delay_queue' } },
        'async_queue',
      ),
    ).toEqual({
      queue: 'async_queue',
      ready: 'async_queue',
      delayed: 'async_delay_queue',
      reserved: null,
      notify: null,
    });
  });

  it('reads a scanned key back as its layout, queue and part', () => {
    expect(parseQueueKey('{queues:sms}:reserved')).toEqual({
      layout: 'thinkphp',
      prefix: '',
      queue: 'sms',
      part: 'reserved',
    });
    expect(parseQueueKey('app_queues:default:notify')).toEqual({
      layout: 'prefixed',
      prefix: 'app_',
      queue: 'default',
      part: 'notify',
    });
    expect(parseQueueKey('queues:a:b')).toEqual({
      layout: 'prefixed',
      prefix: '',
      queue: 'a:b',
      part: 'ready',
    });
    expect(parseQueueKey('cache:user:1')).toBeNull();
    const laravel = { framework: 'laravel' as const, prefix: 'app_' };
    expect(belongsTo(laravel, parseQueueKey('app_queues:x') as never)).toBe(true);
    expect(belongsTo(laravel, parseQueueKey('other_queues:x') as never)).toBe(false);
    expect(
      belongsTo({ framework: 'thinkphp-legacy', prefix: '' }, parseQueueKey('{queues:x}') as never),
    ).toBe(false);
  });

  it('escapes glob characters of a prefix', () => {
    expect(globEscape('a*b?[c]\\')).toBe('a\\*b\\?\\[c\\]\\\\');
  });

  it("takes a job's id from Laravel's uuid, think-queue's id, else a fingerprint", () => {
    expect(payloadIdentity('{"uuid":"u-1","displayName":"App\\\\Jobs\\\\A","attempts":2}')).toEqual({
      id: 'u-1',
      name: 'App\\Jobs\\A',
      attempts: 2,
    });
    expect(jobIdOf('{"id":"abc","job":"app\\\\job\\\\X","attempts":0}')).toBe('abc');
    expect(jobIdOf('not json')).toMatch(/^sha1:[0-9a-f]{40}$/);
  });
});

describe('connection text', () => {
  it('masks the password and reads the DB index', () => {
    expect(displayRedisUrl('redis://:secret@127.0.0.5:6379/3')).toBe('redis://:***@127.0.0.5:6379/3');
    expect(displayRedisUrl('rediss://app:secret@h:6380/0')).toBe('rediss://app:***@h:6380/0');
    expect(dbIndexOf('redis://h:6379/7')).toBe(7);
    expect(dbIndexOf('redis://h:6379')).toBe(0);
  });
});

describe('queue findings', () => {
  const now = 1_800_000_000;
  it('delayed-overdue past the grace on a consumed queue, not within it', () => {
    const over = stats({ delayed: 2, delayedOverdue: 1, oldestOverdueSeconds: OVERDUE_GRACE_SECONDS });
    const under = stats({ delayed: 2, delayedOverdue: 1, oldestOverdueSeconds: OVERDUE_GRACE_SECONDS - 1 });
    const options = { configured: ['default'], nowEpoch: now, reservedOldestEpoch: null };
    expect(queueFindings('r', over, options).map((f) => f.code)).toEqual(['delayed-overdue']);
    expect(queueFindings('r', under, options)).toEqual([]);
  });

  it('a queue no configured queue names: unknown-queue, and any due job counts at once', () => {
    const q = stats({
      name: 'old',
      ready: 3,
      delayed: 1,
      delayedOverdue: 1,
      oldestOverdueSeconds: 1,
      reserved: 1,
      reservedExpired: 1,
    });
    const codes = queueFindings('r', q, {
      configured: ['new'],
      nowEpoch: now,
      reservedOldestEpoch: now - 1,
    }).map((f) => f.code);
    expect(codes).toEqual(['delayed-overdue', 'reservation-expired', 'unknown-queue']);
    expect(
      queueFindings('r', stats({ name: 'old' }), {
        configured: ['new'],
        nowEpoch: now,
        reservedOldestEpoch: null,
      }),
    ).toEqual([]);
  });

  it('no-persistence and evicting from the settings', () => {
    const s = (over: Partial<ServerSettings>): ServerSettings => ({
      via: 'config',
      appendonly: true,
      appendfsync: 'everysec',
      maxmemoryPolicy: 'noeviction',
      version: '7.0.0',
      ...over,
    });
    expect(serverFindings('r', s({}), false)).toEqual([]);
    expect(serverFindings('r', s({ appendfsync: 'always' }), false)).toEqual([]);
    expect(serverFindings('r', s({ appendonly: false }), false).map((f) => f.code)).toEqual([
      'no-persistence',
    ]);
    expect(serverFindings('r', s({ appendfsync: 'no' }), false).map((f) => f.code)).toEqual([
      'no-persistence',
    ]);
    expect(serverFindings('r', s({ via: 'info', appendfsync: null }), false)).toEqual([]);
    expect(serverFindings('r', s({ maxmemoryPolicy: 'allkeys-random' }), false)).toEqual([
      expect.objectContaining({ code: 'evicting', level: 'crit' }),
    ]);
    expect(evictsQueueKeys('volatile-ttl', false)).toBe(false);
    expect(evictsQueueKeys('volatile-ttl', true)).toBe(true);
  });

  it('key-format only for the other think-queue layout', () => {
    const legacy = parseQueueKey('queues:sms') as never;
    const braced = parseQueueKey('{queues:sms}') as never;
    expect(keyFormatFindings('r', 'thinkphp', [legacy]).map((f) => f.code)).toEqual(['key-format']);
    expect(keyFormatFindings('r', 'thinkphp', [braced])).toEqual([]);
    expect(keyFormatFindings('r', 'thinkphp-legacy', [braced]).map((f) => f.code)).toEqual(['key-format']);
    expect(keyFormatFindings('r', 'laravel', [legacy, braced])).toEqual([]);
  });
});

describe('snapshots', () => {
  it('stale: non-empty, equal at the anchor and at every snapshot since', () => {
    expect(isStale(3, { anchor: { depth: 3, atEpoch: 0 }, after: null, recentReady: [] })).toBe(true);
    expect(isStale(3, { anchor: { depth: 3, atEpoch: 0 }, after: { lo: 3, hi: 3 }, recentReady: [] })).toBe(
      true,
    );
    expect(isStale(3, { anchor: { depth: 3, atEpoch: 0 }, after: { lo: 2, hi: 3 }, recentReady: [] })).toBe(
      false,
    );
    expect(isStale(3, { anchor: { depth: 4, atEpoch: 0 }, after: null, recentReady: [] })).toBe(false);
    expect(isStale(0, { anchor: { depth: 0, atEpoch: 0 }, after: null, recentReady: [] })).toBe(false);
    expect(isStale(3, { anchor: null, after: { lo: 3, hi: 3 }, recentReady: [] })).toBe(false);
  });

  it('history from snapshots: the newest one at or before the cutoff is the anchor', () => {
    const snap = (depth: number, atEpoch: number) => ({
      broker: 'b',
      queue: 'q',
      depth,
      ready: depth,
      atEpoch,
    });
    expect(historyOf([snap(5, 100), snap(3, 200), snap(3, 300), snap(3, 400)], 250)).toEqual({
      anchor: { depth: 3, atEpoch: 200 },
      after: { lo: 3, hi: 3 },
      recentReady: [3, 3, 3],
    });
  });

  it('growing: ready rose at each of the last runs', () => {
    expect(isGrowing(30, [20, 10])).toBe(true);
    expect(isGrowing(30, [20, 20])).toBe(false);
    expect(isGrowing(30, [20])).toBe(false);
  });

  it('stale-queue for Redis, backlog-growing for RabbitMQ', () => {
    const report = (kind: 'redis' | 'rabbitmq'): BrokerReport => ({
      name: 'b',
      kind,
      framework: null,
      url: 'x',
      queues: [stats({ name: 'q', ready: 30 })],
    });
    const history = new Map([
      ['q', { anchor: { depth: 30, atEpoch: 0 }, after: null, recentReady: [20, 10] }],
    ]);
    expect(snapshotFindings(report('redis'), history, 86400).map((f) => f.code)).toEqual(['stale-queue']);
    expect(snapshotFindings(report('rabbitmq'), history, 86400).map((f) => f.code)).toEqual([
      'backlog-growing',
    ]);
  });
});

describe('choosing brokers', () => {
  const configured = {
    a: { kind: 'redis' as const, url: 'redis://h/0', framework: 'laravel' as const },
    b: { kind: 'redis' as const, url: 'redis://h/1', framework: 'thinkphp' as const, default: true },
  };
  it('every configured one, one by name, an inline one, the default for a move', () => {
    expect(chooseBrokers({}, configured).map((b) => b.name)).toEqual(['a', 'b']);
    expect(chooseBrokers({ broker: 'a' }, configured).map((b) => b.name)).toEqual(['a']);
    expect(
      chooseBrokers({ redis: 'redis://x/2', framework: 'thinkphp' }, undefined)[0]?.config,
    ).toMatchObject({
      kind: 'redis',
      framework: 'thinkphp',
    });
    expect(chooseOneBroker({}, configured).name).toBe('b');
  });
  it('refuses what it cannot use, with a hint', () => {
    expect(() => chooseBrokers({ broker: 'c' }, configured)).toThrow(/unknown broker 'c'/);
    expect(() => chooseBrokers({}, undefined)).toThrow(/no broker given/);
    expect(() => chooseBrokers({ redis: 'redis://x', framework: 'sidekiq' }, undefined)).toThrow(
      /not a Redis key layout/,
    );
    expect(() => chooseBrokers({ framework: 'laravel' }, configured)).toThrow(/--redis URL/);
    expect(() => chooseBrokers({ redis: 'redis://x', lists: 'one' }, undefined)).toThrow(/READY,DELAYED/);
  });
});

describe('audit rows of a move', () => {
  it('one row per job: id, queue key and set, the payload digest before', () => {
    const rows = auditRows(
      [
        {
          jobId: 'u1',
          from: 'p_queues:a',
          to: 'p_queues:b',
          fromSet: 'delayed',
          toSet: 'delayed',
          payload: '{"uuid":"u1"}',
        },
      ],
      { operator: 'me@h', host: 'h', action: 'queue-move', broker: 'redis', reason: null, runId: 'run' },
    );
    expect(rows).toEqual([
      {
        operator: 'me@h',
        host: 'h',
        action: 'queue-move',
        source: 'redis',
        taskTable: 'p_queues:a',
        taskId: 'u1',
        eventId: 'u1',
        fromStatus: 'delayed',
        toStatus: 'delayed',
        beforeJson: JSON.stringify({
          queue: 'p_queues:a',
          set: 'delayed',
          sha1: createHash('sha1').update('{"uuid":"u1"}').digest('hex'),
          bytes: 13,
        }),
        afterJson: JSON.stringify({ queue: 'p_queues:b', set: 'delayed' }),
        reason: null,
        runId: 'run',
      },
    ]);
  });
});

describe('the queues table', () => {
  const result = {
    now: '2026-12-01T00:00:00.000Z',
    brokers: [
      {
        name: 'r',
        kind: 'redis' as const,
        framework: 'laravel',
        url: 'redis://h/0',
        queues: [
          stats({ name: 'high', ready: 3, delayed: 2, delayedOverdue: 1, oldestOverdueSeconds: 5400 }),
        ],
      },
    ],
    findings: [],
  };
  it('shows only the columns that apply to Redis', () => {
    const text = renderQueues(result, 200);
    expect(text).toContain('queue\tready\tdelayed\toverdue\toldest\treserved\texpired\n');
    expect(text).toContain('high\t3\t2\t1\t90m\t0\t0');
    expect(text).not.toContain('consumers');
  });
  it('drops the least needed columns on a narrow terminal', () => {
    const text = renderQueues(result, 45);
    expect(text).toContain('queue\tready\tdelayed\treserved\n');
  });
});

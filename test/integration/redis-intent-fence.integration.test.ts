import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { markerKey } from '../../src/brokers/redis/intents.js';
import { moveJobs } from '../../src/brokers/redis/move.js';
import type { MovedJob, MoveJournal, MoveRequest } from '../../src/brokers/types.js';
import { RedisLists } from '../../src/dispatch/redis-list.js';
import { dropPrefix, openTestRedis } from '../support/redis.js';

// The fence of a write-ahead intent in Redis: a run that settles another run's open intent as not
// landed sets its marker, and the batch's script (a move) or MULTI (a failed-job re-push) then
// refuses to run — so a slow run can never land a batch that was already closed as not landed,
// which would be a move or a push nobody audits. And a batch that ran lists what it moved there.

const DB = 11;
const run = `fence-${randomBytes(4).toString('hex')}`;
const prefix = `tr_fence_${randomBytes(4).toString('hex')}_`;
const list = (q: string) => `${prefix}${q}`;
let redis: Redis;
let nextIntent = 1;

/** A journal that records what it was told, with intent ids of its own. */
function journal(settled: Array<{ id: number; moved: readonly MovedJob[] }>): MoveJournal {
  return {
    open: async () => nextIntent++,
    settle: async (id, moved) => {
      settled.push({ id, moved });
    },
  };
}

function request(j: MoveJournal): MoveRequest {
  return {
    from: 'a',
    to: 'b',
    what: 'ready',
    batch: 2,
    dryRun: false,
    runId: run,
    onBatch: async () => undefined,
    journal: j,
    shouldStop: () => false,
  };
}

const target = () => ({ client: redis, layout: { framework: 'laravel' as const, prefix }, broker: 'test' });

beforeAll(async () => {
  redis = await openTestRedis(DB);
});

afterAll(async () => {
  await dropPrefix(redis, prefix);
  await dropPrefix(redis, `taskrecon:intent:${run}:`);
  redis?.disconnect();
});

describe('the Redis side of a write-ahead intent', () => {
  it('a move lists what each batch moved in its marker, and moves nothing once the marker is fenced', async () => {
    await redis.rpush(list('queues:a'), 'j1', 'j2', 'j3');
    const settled: Array<{ id: number; moved: readonly MovedJob[] }> = [];
    // Fence the second batch's marker before the move reaches it.
    const second = nextIntent + 1;
    await redis.set(markerKey(run, second), 'fenced');
    await expect(moveJobs(target(), { ...request(journal(settled)), limit: 3 })).rejects.toThrow(
      'another run settled this batch as not moved',
    );
    // The first batch moved and was settled with its two jobs; the fenced one moved nothing and is
    // left to the run that fenced it; the intent opened ahead for a third batch is closed unmoved.
    const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
    expect(settled.map((s) => [s.id, s.moved.map((m) => [m.jobId, m.digest])])).toEqual([
      [
        second - 1,
        [
          [`sha1:${sha1('j1')}`, { sha1: sha1('j1'), bytes: 2 }],
          [`sha1:${sha1('j2')}`, { sha1: sha1('j2'), bytes: 2 }],
        ],
      ],
      [second + 1, []],
    ]);
    expect(await redis.lrange(list('queues:a'), 0, -1)).toEqual(['j3']);
    expect(await redis.lrange(list('queues:b'), 0, -1)).toEqual(['j1', 'j2']);
    expect(await redis.get(markerKey(run, second))).toBe('fenced');
  });

  it('batches overlap without loosening the journal: a failed settlement stops the move, nothing unaccounted', async () => {
    await redis.rpush(list('queues:c'), 'k1', 'k2', 'k3', 'k4', 'k5', 'k6');
    const events: string[] = [];
    const first = nextIntent;
    const failing: MoveJournal = {
      open: async () => {
        const id = nextIntent++;
        events.push(`open ${id - first}`);
        return id;
      },
      settle: async (id, moved) => {
        // The script of a batch ran only after its intent was opened.
        events.push(`settle ${id - first}: ${moved.length}`);
        if (id === first) throw new Error('the database went away');
      },
    };
    await expect(moveJobs(target(), { ...request(failing), from: 'c', to: 'd', limit: 6 })).rejects.toThrow(
      'the database went away',
    );
    // Batch 0 failed to settle while batch 1's script ran: batch 1 is settled, then the move stops;
    // the intent opened ahead for batch 2 is closed as not moved. Batch 0 keeps its marker (the
    // next run settles it by looking); batch 1's marker is removed once settled.
    expect(events).toEqual(['open 0', 'open 1', 'settle 0: 2', 'open 2', 'settle 1: 2', 'settle 2: 0']);
    expect(await redis.lrange(list('queues:c'), 0, -1)).toEqual(['k5', 'k6']);
    expect(await redis.lrange(list('queues:d'), 0, -1)).toEqual(['k1', 'k2', 'k3', 'k4']);
    expect(await redis.lrange(markerKey(run, first), 0, -1)).toEqual(['k1', 'k2']);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await redis.exists(markerKey(run, first + 1))).toBe(0);
  });

  it('a failed-job push writes its marker in the same MULTI, and pushes nothing once the marker is fenced', async () => {
    const lists = new RedisLists(`redis://127.0.0.1:6379/${DB}`);
    try {
      const first = markerKey(run, 1000);
      await lists.pushAll([{ kind: 'rpush', key: list('q'), value: 'job-1' }], { key: first, ids: ['41'] });
      expect(await redis.lrange(list('q'), 0, -1)).toEqual(['job-1']);
      expect(await lists.lookMarker(first)).toEqual(['41']);
      const fenced = markerKey(run, 1001);
      // A later run looked first: nothing was pushed, so the look fences the marker.
      expect(await lists.lookMarker(fenced)).toBeNull();
      await expect(
        lists.pushAll([{ kind: 'rpush', key: list('q'), value: 'job-2' }], { key: fenced, ids: ['42'] }),
      ).rejects.toThrow('another run settled this batch as not pushed');
      expect(await redis.lrange(list('q'), 0, -1)).toEqual(['job-1']);
    } finally {
      await lists.close();
    }
  });
});

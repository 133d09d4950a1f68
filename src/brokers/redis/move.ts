// Over 300 lines: the batched moves and recovers of every Redis key layout, each batch through its journal.
import type { Redis } from 'ioredis';
import { Pacer, pacing } from '../../core/pacer.js';
import { TaskreconError, usageError } from '../../errors.js';
import type { MovedJob, MoveRequest, MoveResult, MoveWhat } from '../types.js';
import { redisNow } from './inspect.js';
import { throughPipe } from './intents.js';
import { jobIdOf, jobsOfDigests } from './job-id.js';
import { pushEnd, queueKeys, type QueueKeys, type RedisLayout } from './layout.js';
import { MIGRATE_DUE, MOVE_READY, MOVE_ZSET } from './scripts.js';

export { jobIdOf };

/**
 * `queues move` and `queues recover` on Redis: one Lua script per batch (see scripts.ts), each
 * batch's intent committed through the journal before its script runs and settled (with the audit)
 * after it, the next batch's script running while the one before settles (BatchPipe),
 * `shouldStop` checked between batches (SIGINT finishes the batch in hand), `--rate` kept by
 * sleeping between batches.
 */

export interface MoveTarget {
  /** The server of the keys moved (on a cluster: the master of their one slot). */
  client: Redis;
  layout: RedisLayout;
  broker: string;
  /** A Redis Cluster: intent markers carry the hash tag of the batch's source key. */
  cluster?: boolean;
}

type Part = 'ready' | 'delayed' | 'reserved';

/** A batch small enough that `rate` jobs/s are about five batches a second. */
function batchFor(request: Pick<MoveRequest, 'batch' | 'ratePerSecond'>): number {
  return pacing(request.ratePerSecond, request.batch).batch;
}

/** What a move or recover may still take, what it took, and the pace it keeps across queues and parts. */
interface Budget {
  left: number;
  done: number;
  pacer: Pacer;
}

function partKey(keys: QueueKeys, part: Part): string | null {
  return part === 'ready' ? keys.ready : part === 'delayed' ? keys.delayed : keys.reserved;
}

function partsOf(layout: RedisLayout, what: MoveWhat): Part[] {
  if (layout.framework === 'list') {
    if (what !== 'ready') {
      throw usageError(
        `framework list: --what ${what} cannot be moved between lists (the delay set belongs to its ready list)`,
        'Move --what ready; due delayed jobs go back to their ready list with `taskrecon queues recover`.',
      );
    }
    return ['ready'];
  }
  if (what === 'failed') {
    throw usageError(
      `framework ${layout.framework}: --what failed needs a failed set, which only BullMQ keeps`,
      'Move --what ready, delayed, reserved or all.',
    );
  }
  return what === 'all' ? ['ready', 'delayed', 'reserved'] : [what];
}

async function sizeOf(client: Redis, key: string, part: Part): Promise<number> {
  return part === 'ready' ? client.llen(key) : client.zcard(key);
}

/** Checks the request against what is in Redis before anything moves; exit 3 when it cannot run. */
/** How many jobs each part of the queue holds. */
async function sourceSizes(target: MoveTarget, queue: string, parts: Part[]): Promise<Map<Part, number>> {
  const from = queueKeys(target.layout, queue);
  const sizes = new Map<Part, number>();
  for (const part of parts) {
    const key = partKey(from, part);
    if (key) sizes.set(part, await sizeOf(target.client, key, part));
  }
  return sizes;
}

async function checkMove(
  target: MoveTarget,
  request: MoveRequest,
  parts: Part[],
): Promise<Map<Part, number>> {
  if (!request.to) throw usageError('--to is required', 'Name the queue the jobs go to: --to QUEUE.');
  if (request.to === request.from) {
    throw usageError(`--to ${request.to} is the queue the jobs come from`, 'Name another queue with --to.');
  }
  const from = queueKeys(target.layout, request.from);
  const sizes = await sourceSizes(target, request.from, parts);
  const exists = await target.client.exists(
    ...[from.ready, from.delayed, from.reserved].filter((k): k is string => !!k),
  );
  if (exists === 0) {
    throw new TaskreconError(
      `queue ${request.from} does not exist on broker ${target.broker}: none of its keys (${from.ready}, …) is in Redis`,
      {
        code: 'USAGE',
        hint: 'Run `taskrecon queues` to list the queues found; check --prefix / --framework and the DB index of the URL. Nothing was moved.',
      },
    );
  }
  return sizes;
}

/** Moves one part of a queue in batches; returns how many moved. */
async function movePart(
  target: MoveTarget,
  request: MoveRequest,
  part: Part,
  budget: Budget,
): Promise<number> {
  const from = queueKeys(target.layout, request.from);
  const to = queueKeys(target.layout, request.to as string);
  const fromKey = partKey(from, part) as string;
  const toKey = partKey(to, part) as string;
  const takeEnd = pushEnd(target.layout.framework) === 'right' ? 'left' : 'right';
  const batch = { from: fromKey, to: toKey, fromSet: part, toSet: part };
  const jobOf = (m: string): MovedJob => ({ jobId: jobIdOf(m), ...batch, payload: m });
  const notify = part === 'ready' && from.notify && to.notify ? [from.notify, to.notify] : [];
  return throughPipe(target, request, batch, async (pipe) => {
    let moved = 0;
    let skipped = 0;
    while (budget.left > 0 && !request.shouldStop()) {
      const n = Math.min(batchFor(request), budget.left);
      let jobs: MovedJob[];
      if (part === 'ready') {
        ({ moved: jobs } = await pipe.step(
          async (marker, ttl) =>
            (await target.client.eval(
              MOVE_READY,
              3 + notify.length,
              fromKey,
              toKey,
              ...notify,
              marker,
              String(n),
              takeEnd,
              notify.length ? '1' : '0',
              ttl,
            )) as (string | number)[],
          (reply) => jobsOfDigests(reply, batch),
        ));
        if (jobs.length === 0) break;
      } else {
        const done = await pipe.step(
          async (marker, ttl) =>
            (await target.client.eval(
              MOVE_ZSET,
              3,
              fromKey,
              toKey,
              marker,
              String(n),
              String(skipped),
              ttl,
            )) as string[],
          (r) => zsetMembers(r).map(jobOf),
        );
        const skippedNow = Number(done.reply[done.reply.length - 1]);
        skipped += skippedNow;
        jobs = done.moved;
        if (jobs.length === 0 && skippedNow === 0) break;
      }
      moved += jobs.length;
      budget.left -= jobs.length;
      budget.done += jobs.length;
      await budget.pacer.wait(budget.done);
    }
    return moved;
  });
}

/** The members of MOVE_ZSET's reply { member1, score1, …, skippedNow }. */
function zsetMembers(reply: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < reply.length - 1; i += 2) out.push(reply[i] as string);
  return out;
}

export async function moveJobs(target: MoveTarget, request: MoveRequest): Promise<MoveResult> {
  const parts = partsOf(target.layout, request.what);
  const sizes = await checkMove(target, request, parts);
  const limit = request.limit ?? Number.POSITIVE_INFINITY;
  const available = [...sizes.values()].reduce((a, b) => a + b, 0);
  const matched = Math.min(available, limit);
  const result: MoveResult = {
    broker: target.broker,
    from: request.from,
    to: request.to as string,
    what: request.what,
    dryRun: request.dryRun,
    matched,
    moved: 0,
    runId: request.runId,
  };
  if (request.dryRun) return result;
  const budget: Budget = { left: limit, done: 0, pacer: new Pacer(request.ratePerSecond, request.clock) };
  for (const part of parts) {
    if (request.shouldStop() || budget.left <= 0) break;
    result.moved += await movePart(target, request, part, budget);
  }
  // Not stopped: what neither moved nor is still there was taken by another move or the workers.
  if (!request.shouldStop()) {
    const left = [...(await sourceSizes(target, request.from, parts)).values()].reduce((a, b) => a + b, 0);
    result.matched = Math.min(result.matched, result.moved + left);
  }
  return result;
}

/** One queue's due jobs of one set back onto its ready list. */
async function migrate(
  target: MoveTarget,
  request: RecoverRequest,
  keys: QueueKeys,
  part: 'delayed' | 'reserved',
  budget: Budget,
): Promise<MoveResult> {
  const fromKey = partKey(keys, part) as string;
  const result: MoveResult = {
    broker: target.broker,
    from: keys.queue,
    to: keys.queue,
    what: part,
    dryRun: request.dryRun,
    matched: 0,
    moved: 0,
    runId: request.runId,
  };
  const now = await redisNow(target.client);
  result.matched = Math.min(
    await target.client.zcount(fromKey, '-inf', String(Math.floor(now))),
    budget.left,
  );
  if (request.dryRun) {
    budget.left -= result.matched;
    return result;
  }
  const end = pushEnd(target.layout.framework);
  const notify = keys.notify ? [keys.notify] : [];
  const batch = { from: fromKey, to: keys.ready, fromSet: part, toSet: 'ready' };
  await throughPipe(target, request, batch, async (pipe) => {
    while (budget.left > 0 && !request.shouldStop()) {
      const n = Math.min(batchFor(request), budget.left);
      const nowEpoch = Math.floor(await redisNow(target.client));
      const { moved: members } = await pipe.step(
        async (marker, ttl) =>
          (await target.client.eval(
            MIGRATE_DUE,
            3 + notify.length,
            fromKey,
            keys.ready,
            ...notify,
            marker,
            String(nowEpoch),
            String(n),
            end,
            notify.length ? '1' : '0',
            ttl,
          )) as string[],
        (reply) => reply.map((m) => ({ jobId: jobIdOf(m), ...batch, payload: m })),
      );
      if (members.length === 0) break;
      result.moved += members.length;
      budget.left -= members.length;
      budget.done += members.length;
      await budget.pacer.wait(budget.done);
    }
  });
  result.matched = Math.max(result.matched, result.moved);
  return result;
}

export type RecoverRequest = Omit<MoveRequest, 'from'> & { from?: string };

/** `queues recover`: due delayed jobs and expired reservations of each queue back to ready. */
export async function recoverJobs(
  target: MoveTarget,
  request: RecoverRequest,
  queues: readonly string[],
  route: (keys: QueueKeys) => MoveTarget = () => target,
): Promise<MoveResult[]> {
  const budget: Budget = {
    left: request.limit ?? Number.POSITIVE_INFINITY,
    done: 0,
    pacer: new Pacer(request.ratePerSecond, request.clock),
  };
  const results: MoveResult[] = [];
  for (const queue of queues) {
    const keys = queueKeys(target.layout, queue);
    for (const part of keys.reserved ? (['delayed', 'reserved'] as const) : (['delayed'] as const)) {
      if (request.shouldStop()) break;
      results.push(await migrate(route(keys), request, keys, part, budget));
    }
  }
  return results;
}

import { setTimeout as sleep } from 'node:timers/promises';
import { TaskreconError, usageError } from '../../../errors.js';
import type { MovedJob, MoveRequest, MoveResult } from '../../types.js';
import { stalledIds } from './inspect.js';
import type { BullmqTarget } from './move.js';
import { bullmqQueueNames, openQueue, requireQueue } from './queues.js';
import { nameRun } from './run.js';

/**
 * `queues recover` on BullMQ: its own stalled check (the moveStalledJobsToWait script a worker runs
 * every `stalledInterval`), run where no worker runs it. The check is two-phase — one run marks
 * the active jobs, the next moves those still without a lock to wait (a job stalled more than
 * `maxStalledCount` times is failed by the worker that takes it) — so it is run until no stalled
 * job is left. A running worker's check in the last interval makes the script a no-op: its workers
 * are handling the queue. Each check run goes through a write-ahead intent naming the stalled jobs
 * it may move (active, without a lock), committed before the script and settled with the audit rows
 * of the jobs it moved after.
 */

/** BullMQ's default maxStalledCount. */
const MAX_STALLED_COUNT = 1;
/** How long each check keeps the others off (BullMQ's `stalled-check` key): only this run's. */
const CHECK_INTERVAL_MS = 1;
/** The longest a check window of a worker is waited out (BullMQ's default stalledInterval is 30 s). */
const WAIT_FOR_CHECK_MS = 60_000;
/** Mark, then move: two runs; one more in case a job lost its lock between them. */
const CHECK_RUNS = 3;

export type BullmqRecoverRequest = Omit<MoveRequest, 'from'> & { from?: string };

async function recoverQueue(
  target: BullmqTarget,
  request: BullmqRecoverRequest,
  queue: string,
  maxStalledCount: number,
): Promise<MoveResult> {
  const stalled = await stalledIds(target.client, target.prefix, queue);
  const result: MoveResult = {
    broker: target.broker,
    from: queue,
    to: queue,
    what: 'reserved',
    dryRun: request.dryRun,
    matched: stalled.length,
    moved: 0,
    runId: request.runId,
  };
  if (request.dryRun || stalled.length === 0) return result;
  // A worker's check ran within its stalledInterval: BullMQ runs the next one only after it, so
  // does recover (a worker killed mid-job leaves that window open until it expires).
  const window = await target.client.pttl(`${target.prefix}:${queue}:stalled-check`);
  if (window > WAIT_FOR_CHECK_MS) {
    throw new TaskreconError(
      `queue ${queue}: a BullMQ worker ran its stalled check and set the next one ${Math.ceil(window / 1000)}s from now`,
      {
        code: 'USAGE',
        hint: "Its stalledInterval is longer than a minute; run recover again after that (BullMQ's own workers wait for it too). Nothing was moved.",
      },
    );
  }
  if (window > 0) await sleep(window + 10);
  const q = openQueue(target.client, target.prefix, queue, {
    maxStalledCount,
    stalledInterval: CHECK_INTERVAL_MS,
  });
  try {
    for (let run = 0; run < CHECK_RUNS && !request.shouldStop(); run++) {
      result.moved += await checkOnce(target, request, queue, () => q.scripts.moveStalledJobsToWait());
      if ((await stalledIds(target.client, target.prefix, queue)).length === 0) break;
      await sleep(CHECK_INTERVAL_MS * 5);
    }
  } finally {
    await q.close();
  }
  result.matched = Math.max(result.matched, result.moved);
  return result;
}

/** One stalled check through the journal (when there is one). Out: how many jobs it moved to wait. */
async function checkOnce(
  target: BullmqTarget,
  request: BullmqRecoverRequest,
  queue: string,
  check: () => Promise<Array<string | number>>,
): Promise<number> {
  const asMoved = (id: string): MovedJob => ({
    jobId: id,
    from: queue,
    to: queue,
    fromSet: 'active',
    toSet: 'wait',
  });
  const journal = request.jobJournal;
  const picked = journal ? await stalledIds(target.client, target.prefix, queue) : [];
  const intentId = journal
    ? await journal.open(
        queue,
        queue,
        picked.map((id) => ({ ...asMoved(id), finishedOn: null })),
      )
    : undefined;
  const moved = (await check()).map((id) => asMoved(String(id)));
  if (journal && intentId !== undefined)
    await journal.settle(intentId, moved, Math.max(picked.length, moved.length));
  else if (moved.length) await request.onBatch(moved);
  return moved.length;
}

export async function recoverStalled(
  target: BullmqTarget,
  request: BullmqRecoverRequest,
  maxStalledCount = MAX_STALLED_COUNT,
): Promise<MoveResult[]> {
  if (request.limit !== undefined) {
    throw usageError(
      'framework bullmq: --limit does not apply to recover',
      "BullMQ's stalled check returns every stalled job of a queue at once; leave --limit out (--dry-run counts them).",
    );
  }
  if (!request.dryRun && request.jobJournal) await nameRun(target.client, request.runId);
  let queues: string[];
  if (request.from !== undefined) {
    await requireQueue(target.client, target.prefix, target.broker, request.from);
    queues = [request.from];
  } else queues = await bullmqQueueNames(target.client, target.prefix);
  const results: MoveResult[] = [];
  for (const queue of queues) {
    if (request.shouldStop()) break;
    results.push(await recoverQueue(target, request, queue, maxStalledCount));
  }
  return results;
}

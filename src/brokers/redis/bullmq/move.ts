import { Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { Pacer, pacing } from '../../../core/pacer.js';
import { TaskreconError, usageError } from '../../../errors.js';
import type {
  FailedJobRef,
  FailedRetryOutcome,
  JobWhere,
  MovedJob,
  MoveRequest,
  MoveResult,
  PickedJob,
} from '../../types.js';
import { openQueue, requireQueue } from './queues.js';
import { nameRun } from './run.js';

/**
 * `queues move --what failed` on BullMQ, through its API only: in place, `Job.retry('failed')` (its
 * reprocessJob script: failed set → wait, attempts reset, marker and event written); with `--to`,
 * `Queue.add` to the other queue with the job's name, data and options, then `Job.remove` from the
 * failed set. Each batch goes through a write-ahead intent naming its jobs (`request.jobJournal`):
 * committed before BullMQ is asked, settled with the batch's audit rows after. The job added to the
 * other queue gets an id made of where it came from, so a move a killed run left half done adds it
 * once however often it is run again.
 */

export interface BullmqTarget {
  client: Redis;
  prefix: string;
  broker: string;
}

/** The job's options as `Queue.add` takes them again (its own bookkeeping left out). */
function addOptions(job: Job): Record<string, unknown> {
  const { repeat: _repeat, ...opts } = job.opts as Record<string, unknown>;
  return opts;
}

/**
 * The id a job moved with `--to` gets in the other queue: its own custom id, else one made of the
 * queue, id and creation time it had (BullMQ refuses integer and most `:` ids).
 */
export function targetJobId(from: string, job: Job): string {
  const custom = (job.opts as { jobId?: unknown }).jobId;
  if (typeof custom === 'string' && custom !== '') return custom;
  return `moved-${from.replace(/:/g, '_')}-${String(job.id)}-${job.timestamp}`;
}

/** One failed job to wait (in place) or to the other queue, through BullMQ's API. */
async function moveOne(job: Job, to: Queue | undefined, targetId: string | undefined): Promise<void> {
  if (to) {
    await to.add(job.name, job.data, { ...addOptions(job), jobId: targetId });
    await job.remove();
  } else await job.retry('failed');
}

/**
 * One batch: its intent committed (when there is a journal), each job moved, the intent settled with
 * the jobs that moved — also when one of them failed (those before it are audited all the same).
 * Without a journal (no audit database) `onBatch` gets them. Out: the jobs moved.
 */
async function moveBatch(
  jobs: readonly Job[],
  to: Queue | undefined,
  request: MoveRequest,
): Promise<MovedJob[]> {
  const picked: PickedJob[] = jobs.map((job) => ({
    ...movedJob(job, request),
    finishedOn: job.finishedOn ?? null,
    ...(to ? { targetId: targetJobId(request.from, job) } : {}),
  }));
  const journal = request.jobJournal;
  const intentId = journal ? await journal.open(request.from, request.to ?? request.from, picked) : undefined;
  const moved: MovedJob[] = [];
  try {
    for (const [i, job] of jobs.entries()) {
      const one = picked[i] as PickedJob;
      await moveOne(job, to, one.targetId);
      moved.push(one);
    }
  } finally {
    if (journal && intentId !== undefined) await journal.settle(intentId, moved, picked.length);
    else if (moved.length) await request.onBatch(moved);
  }
  return moved;
}

function movedJob(job: Job, request: MoveRequest): MovedJob {
  return {
    jobId: String(job.id),
    from: request.from,
    to: request.to ?? request.from,
    fromSet: 'failed',
    toSet: 'wait',
    payload: JSON.stringify({ name: job.name, data: job.data as unknown }),
  };
}

/** `--job ID …`: every named job must be in the failed set before any moves (exit 3, nothing written). */
async function moveNamed(
  from: Queue,
  to: Queue | undefined,
  request: MoveRequest,
  result: MoveResult,
): Promise<MoveResult> {
  const ids = [...new Set(request.jobIds)];
  const jobs: Job[] = [];
  const missing: string[] = [];
  for (const id of ids) {
    const job = await Job.fromId(from, id);
    const state = job ? await job.getState() : 'missing';
    if (job && state === 'failed') jobs.push(job);
    else missing.push(`${id} (${state})`);
  }
  if (missing.length) {
    throw new TaskreconError(`queue ${request.from}: BullMQ holds no failed job ${missing.join(', ')}`, {
      code: 'USAGE',
      hint: 'Another client retried or removed it, or the id is wrong; `taskrecon queues --peek N` lists failed jobs. Nothing was moved.',
    });
  }
  const limited = jobs.slice(0, request.limit ?? jobs.length);
  result.matched = limited.length;
  if (request.dryRun) return result;
  for (let i = 0; i < limited.length && !request.shouldStop(); i += request.batch)
    result.moved += (await moveBatch(limited.slice(i, i + request.batch), to, request)).length;
  return result;
}

export async function moveFailed(target: BullmqTarget, request: MoveRequest): Promise<MoveResult> {
  if (request.what !== 'failed') {
    throw usageError(
      `framework bullmq: --what ${request.what} is not moved by taskrecon (BullMQ's own scripts keep those sets)`,
      'Move --what failed (retried through BullMQ), or use `taskrecon queues recover` for stalled jobs.',
    );
  }
  if (request.to === request.from) {
    throw usageError(
      `--to ${request.to} is the queue the jobs come from`,
      'Leave --to out to retry failed jobs in place.',
    );
  }
  await requireQueue(target.client, target.prefix, target.broker, request.from);
  if (request.to !== undefined) await requireQueue(target.client, target.prefix, target.broker, request.to);
  const from = openQueue(target.client, target.prefix, request.from);
  const to = request.to !== undefined ? openQueue(target.client, target.prefix, request.to) : undefined;
  try {
    const limit = request.limit ?? Number.POSITIVE_INFINITY;
    const failed = (await from.getJobCounts('failed')).failed ?? 0;
    const result: MoveResult = {
      broker: target.broker,
      from: request.from,
      to: request.to ?? request.from,
      what: 'failed',
      dryRun: request.dryRun,
      matched: Math.min(failed, limit),
      moved: 0,
      runId: request.runId,
    };
    if (!request.dryRun && request.jobJournal) await nameRun(target.client, request.runId);
    if (request.jobIds?.length) return await moveNamed(from, to, request, result);
    if (request.dryRun) return result;
    const { batch } = pacing(request.ratePerSecond, request.batch);
    const pacer = new Pacer(request.ratePerSecond, request.clock);
    let left = limit;
    while (left > 0 && !request.shouldStop()) {
      const jobs = await from.getFailed(0, Math.min(batch, left) - 1);
      if (jobs.length === 0) break;
      const moved = await moveBatch(jobs as Job[], to, request);
      result.moved += moved.length;
      left -= moved.length;
      await pacer.wait(result.moved);
    }
    return result;
  } catch (error) {
    if (error instanceof TaskreconError) throw error;
    const message = (error as Error).message ?? String(error);
    if (/not in the failed state|Missing key for job/i.test(message)) {
      throw new TaskreconError(
        `queue ${request.from}: BullMQ no longer holds a failed job being moved: ${message}`,
        {
          code: 'USAGE',
          hint: 'Another client retried or removed it meanwhile; run `taskrecon queues` and move again. Jobs moved before are audited.',
          cause: error,
        },
      );
    }
    throw error;
  } finally {
    await from.close();
    await to?.close();
  }
}

/** BullMQ's refusals of a retry of a job it no longer holds as failed (its reprocessJob script's codes). */
const NOT_FAILED = /not in the failed state|Missing key for job/i;

/**
 * One failed job back to wait through `Job.retry('failed')`, only while it is still the failure
 * that was read: held as failed with the same `finishedOn`. A job another client retried meanwhile
 * (waiting, active, completed, or failed again since) is left alone, and so is one BullMQ's own
 * script refuses because it left the failed set between the look and the retry.
 */
export async function retryIfStillFailed(
  target: BullmqTarget,
  queue: string,
  ref: FailedJobRef,
): Promise<FailedRetryOutcome> {
  const q = openQueue(target.client, target.prefix, queue);
  try {
    const job = await Job.fromId(q, ref.jobId);
    if (!job) return { retried: false, reason: `BullMQ no longer holds job ${ref.jobId} (removed)` };
    const state = await job.getState();
    if (state !== 'failed')
      return {
        retried: false,
        reason: `BullMQ holds job ${ref.jobId} as ${state}: it was retried meanwhile`,
      };
    if ((job.finishedOn ?? null) !== ref.finishedOn)
      return { retried: false, reason: `job ${ref.jobId} was retried and failed again since it was read` };
    await job.retry('failed');
    return { retried: true };
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    if (NOT_FAILED.test(message)) return { retried: false, reason: `BullMQ refused the retry: ${message}` };
    throw error;
  } finally {
    await q.close();
  }
}

/**
 * Where a job is now: its state, `finishedOn`, and for an active job whether a worker holds its lock;
 * null when BullMQ no longer holds it. Reads only.
 */
export async function jobState(target: BullmqTarget, queue: string, jobId: string): Promise<JobWhere | null> {
  const q = openQueue(target.client, target.prefix, queue);
  try {
    const job = await Job.fromId(q, jobId);
    if (!job) return null;
    const state = await job.getState();
    const finishedOn = job.finishedOn ?? null;
    if (state !== 'active') return { state, finishedOn };
    const locked = (await target.client.exists(`${target.prefix}:${queue}:${jobId}:lock`)) === 1;
    return { state, finishedOn, locked };
  } finally {
    await q.close();
  }
}

import { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { nameRun as nameClients, runAlive as aliveOn } from '../run-name.js';
import type { BullmqTarget } from './move.js';
import { openQueue } from './queues.js';

/**
 * What a later run needs to settle a BullMQ move a killed run left open: whether that run is still
 * connected (a move names its connection after its run; the kernel closes a killed process's socket,
 * and Redis drops the name with it), and the last step of a `--to` move left half done.
 */

/** Names the broker's connection after the run, for as long as it stays open. */
export async function nameRun(client: Redis, runId: string): Promise<void> {
  await nameClients([client], runId);
}

/** Whether a connection named after the run is open; undefined when CLIENT LIST is refused. */
export function runAlive(client: Redis, runId: string): Promise<boolean | undefined> {
  return aliveOn(client, runId);
}

/**
 * Removes the job from the failed set of `queue` through BullMQ (`Job.remove`) while it is still the
 * failure the move read (same `finishedOn`): the other queue holds its copy already.
 */
export async function finishMove(
  target: BullmqTarget,
  queue: string,
  jobId: string,
  finishedOn: number | null,
): Promise<void> {
  const q = openQueue(target.client, target.prefix, queue);
  try {
    const job = await Job.fromId(q, jobId);
    if (!job || (job.finishedOn ?? null) !== finishedOn) return;
    if ((await job.getState()) === 'failed') await job.remove();
  } finally {
    await q.close();
  }
}

import { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { nameRun as nameClients } from '../run-name.js';
import type { BullmqTarget } from './move.js';
import { openQueue } from './queues.js';

/**
 * What a later run needs to settle a BullMQ move a killed run left open: the move's connection named
 * after its run (whether the run is still connected is asked through `run-name.ts`, as for every
 * Redis run), and the last step of a `--to` move left half done.
 */

/** Names the broker's connection after the run, for as long as it stays open. */
export async function nameRun(client: Redis, runId: string): Promise<void> {
  await nameClients([client], runId);
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

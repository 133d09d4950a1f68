import type { Redis } from 'ioredis';
import {
  finding,
  type BullmqCounts,
  type FailedJobDetail,
  type QueueFinding,
  type QueueStats,
} from '../../types.js';
import { openQueue } from './queues.js';

/**
 * Read-only counts of one BullMQ queue: `Queue.getJobCounts` (its own count script) for each state,
 * the stalled jobs (active jobs whose `<prefix>:Q:<id>:lock` key is gone: their worker died
 * mid-job), and with `peek` the first failed jobs with their payload and error.
 */

const STATES = ['wait', 'active', 'delayed', 'prioritized', 'paused', 'failed', 'completed'] as const;

/** Active job ids whose lock key is gone (EXISTS only). */
export async function stalledIds(client: Redis, prefix: string, queue: string): Promise<string[]> {
  const active = await client.lrange(`${prefix}:${queue}:active`, 0, -1);
  if (active.length === 0) return [];
  const pipeline = client.pipeline(active.map((id) => ['exists', `${prefix}:${queue}:${id}:lock`]));
  const replies = (await pipeline.exec()) ?? [];
  return active.filter((_, i) => {
    const [error, value] = replies[i] ?? [null, 1];
    if (error) throw error;
    return Number(value) === 0;
  });
}

/** The first `count` failed jobs, newest first, with what they carried and why they failed. */
export async function failedDetail(
  client: Redis,
  prefix: string,
  queue: string,
  count: number,
): Promise<FailedJobDetail[]> {
  return failedPage(client, prefix, queue, 0, count);
}

/** `count` failed jobs from `start` (0: the newest), newest first: a page of the failed set. */
export async function failedPage(
  client: Redis,
  prefix: string,
  queue: string,
  start: number,
  count: number,
): Promise<FailedJobDetail[]> {
  if (count <= 0) return [];
  const q = openQueue(client, prefix, queue);
  try {
    const jobs = await q.getFailed(start, start + count - 1);
    return jobs.map((job) => ({
      jobId: String(job.id),
      name: job.name,
      data: job.data as unknown,
      failedReason: job.failedReason ?? null,
      stacktrace: job.stacktrace ?? [],
      attemptsMade: job.attemptsMade,
      finishedOn: job.finishedOn ?? null,
    }));
  } finally {
    await q.close();
  }
}

export async function bullmqQueueStats(
  client: Redis,
  prefix: string,
  queue: string,
  peek: number,
): Promise<QueueStats> {
  const q = openQueue(client, prefix, queue);
  let counts: Record<string, number>;
  try {
    counts = await q.getJobCounts(...STATES);
  } finally {
    await q.close();
  }
  const stalled = await stalledIds(client, prefix, queue);
  const bullmq: BullmqCounts = {
    wait: counts.wait ?? 0,
    active: counts.active ?? 0,
    delayed: counts.delayed ?? 0,
    prioritized: counts.prioritized ?? 0,
    paused: counts.paused ?? 0,
    failed: counts.failed ?? 0,
    completed: counts.completed ?? 0,
    stalled: stalled.length,
    stalledIds: stalled.slice(0, 100),
  };
  const stats: QueueStats = {
    name: queue,
    ready: bullmq.wait + bullmq.prioritized + bullmq.paused,
    delayed: bullmq.delayed,
    delayedOverdue: null,
    oldestOverdueSeconds: null,
    reserved: bullmq.active,
    reservedExpired: bullmq.stalled,
    unacked: null,
    consumers: null,
    durable: null,
    arguments: null,
    deadLettered: null,
    deliveries: null,
    bullmq,
  };
  if (peek > 0) stats.failedJobs = await failedDetail(client, prefix, queue, peek);
  return stats;
}

/** stalled-jobs: active jobs with no lock, which only a stalled check (a worker's, or recover) returns. */
export function bullmqFindings(broker: string, stats: QueueStats): QueueFinding[] {
  const stalled = stats.bullmq?.stalled ?? 0;
  if (stalled === 0) return [];
  const q = stats.name;
  return [
    finding(
      'stalled-jobs',
      broker,
      q,
      stalled,
      `${stalled} active job(s) of ${q} have lost their lock (${stats.bullmq?.stalledIds.slice(0, 5).join(', ')}): their worker died mid-job`,
      `A running BullMQ worker of ${q} returns them at its next stalled check; without one, \`taskrecon queues recover --queue ${q}\` runs that check.`,
    ),
  ];
}

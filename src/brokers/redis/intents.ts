import type { Redis } from 'ioredis';
import { TaskreconError } from '../../errors.js';
import type { BatchLanding, MovedJob, MoveJournal, MoveRequest } from '../types.js';
import { jobIdOf } from './job-id.js';
import type { RedisNodes } from './cluster.js';
import { FENCED, LOOK_MARKER } from './scripts.js';
import { tagForSameSlot } from './slots.js';

/**
 * The Redis side of a batch's write-ahead intent: the marker key its script leaves (the members it
 * moved), read by a later run that finds the intent open, and removed once the intent is settled.
 */

/**
 * How long a marker outlives a batch whose run was killed before it settled: a rerun within this
 * time audits the batch as moved; `doctor` reports intents left open meanwhile.
 */
export const MARKER_TTL_SECONDS = 30 * 24 * 3600;

/**
 * The marker of one intent (the run id keeps two databases sharing a Redis apart). On a Redis
 * Cluster it carries a hash tag (`taskrecon:intent:{tag}:run:id`) that puts it in the slot of the
 * batch's source key, so the batch's script may touch it.
 */
export function markerKey(runId: string, intentId: number, tag?: string): string {
  return tag === undefined
    ? `taskrecon:intent:${runId}:${intentId}`
    : `taskrecon:intent:{${tag}}:${runId}:${intentId}`;
}

/** The marker of a batch moved from `sourceKey`: tagged into its slot on a cluster. */
export function batchMarker(runId: string, intentId: number, sourceKey: string, cluster: boolean): string {
  return markerKey(runId, intentId, cluster ? tagForSameSlot(sourceKey) : undefined);
}

/** A script found its batch fenced off: a run that settled the intent meanwhile said it never landed. */
export function fencedError(error: unknown): TaskreconError | undefined {
  if (!(error instanceof Error) || !error.message.includes(FENCED)) return undefined;
  return new TaskreconError('another run settled this batch as not moved before it ran; nothing was moved', {
    code: 'GUARD',
    hint: 'Another taskrecon run settled this run’s open batch; run the command again: it moves what is left.',
  });
}

/** Where a batch went: the jobs it moved, or null (then fenced: it never will move). */
export async function lookBatch(nodes: RedisNodes, batch: BatchLanding): Promise<MovedJob[] | null> {
  const members = (await nodes
    .forKey(batch.from)
    .eval(
      LOOK_MARKER,
      1,
      batchMarker(batch.runId, batch.intentId, batch.from, nodes.cluster),
      String(MARKER_TTL_SECONDS),
    )) as string[] | null;
  if (!members) return null;
  return members.map((m) => ({
    jobId: jobIdOf(m),
    from: batch.from,
    to: batch.to,
    fromSet: batch.fromSet,
    toSet: batch.toSet,
    payload: m,
  }));
}

export async function forgetBatch(nodes: RedisNodes, batch: BatchLanding): Promise<void> {
  await nodes.forKey(batch.from).del(batchMarker(batch.runId, batch.intentId, batch.from, nodes.cluster));
}

function journalOf(request: Pick<MoveRequest, 'journal'>): MoveJournal {
  if (!request.journal) throw new Error('a Redis move writes through a journal, and none was given');
  return request.journal;
}

/**
 * One batch through the journal: the intent committed, the script run with the intent's marker as
 * its last key, the intent settled with what moved; the marker is removed after (pipelined).
 */
export async function journaled<T>(
  target: { client: Redis; cluster?: boolean },
  request: Pick<MoveRequest, 'journal' | 'runId'>,
  batch: { from: string; to: string; fromSet: string; toSet: string },
  run: (marker: string, ttl: string) => Promise<T>,
  movedOf: (reply: T) => MovedJob[],
): Promise<{ reply: T; moved: MovedJob[] }> {
  const journal = journalOf(request);
  const intentId = await journal.open(batch);
  const marker = batchMarker(request.runId, intentId, batch.from, target.cluster === true);
  let reply: T;
  try {
    reply = await run(marker, String(MARKER_TTL_SECONDS));
  } catch (error) {
    throw fencedError(error) ?? error;
  }
  const moved = movedOf(reply);
  await journal.settle(intentId, moved);
  target.client.del(marker).catch(() => undefined);
  return { reply, moved };
}

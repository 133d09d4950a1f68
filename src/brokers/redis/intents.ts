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

type BatchKeys = { from: string; to: string; fromSet: string; toSet: string };

/** A promise whose rejection is seen where it is awaited, not reported as unhandled meanwhile. */
function held<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/**
 * The batches of one part of a move through the journal, one after another, overlapped: while a
 * batch's script runs, the next batch's intent is committed; while the next script runs, the batch
 * before is settled (its audit and intent in one transaction, its marker removed after). Each
 * script still runs only once its own intent is committed, and each intent is settled only after
 * Redis answered its script. At most one settlement is in flight: a failed one stops the move at the
 * next batch. `end()` waits for the last settlement and closes the intent opened ahead for a batch
 * that never ran (as not landed: its script never touched Redis).
 */
export class BatchPipe {
  private ahead: Promise<number> | undefined;
  private settling: Promise<void> | undefined;
  private readonly journal: MoveJournal;

  constructor(
    private readonly target: { client: Redis; cluster?: boolean },
    private readonly request: Pick<MoveRequest, 'journal' | 'runId'>,
    private readonly batch: BatchKeys,
  ) {
    this.journal = journalOf(request);
  }

  /** One batch: `run` gets the marker of its committed intent; out: the reply and the jobs it moved. */
  async step<T>(
    run: (marker: string, ttl: string) => Promise<T>,
    movedOf: (reply: T) => MovedJob[],
  ): Promise<{ reply: T; moved: MovedJob[] }> {
    const intentId = await (this.ahead ?? this.journal.open(this.batch));
    this.ahead = held(this.journal.open(this.batch));
    const marker = batchMarker(this.request.runId, intentId, this.batch.from, this.target.cluster === true);
    let reply: T;
    try {
      reply = await run(marker, String(MARKER_TTL_SECONDS));
    } catch (error) {
      throw fencedError(error) ?? error;
    }
    const moved = movedOf(reply);
    const { client } = this.target;
    const settle = () =>
      this.journal.settle(intentId, moved).then(() => {
        client.del(marker).catch(() => undefined);
      });
    try {
      await this.settling;
    } catch (error) {
      // The batch before could not be settled: this one is, then the move stops.
      this.settling = undefined;
      await settle().catch(() => undefined);
      throw error;
    }
    this.settling = held(settle());
    return { reply, moved };
  }

  /** After the last batch (or a failed one): the last settlement waited for, the unused intent closed. */
  async end(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = undefined;
    try {
      await this.settling;
    } finally {
      const unused = await ahead?.catch(() => undefined);
      // Its script never ran: nothing of it is in Redis. Left open, the next run settles it alike.
      if (unused !== undefined) await this.journal.settle(unused, []).catch(() => undefined);
    }
  }
}

/** Runs `each` with a pipe for `batch`, ending the pipe however `each` ends. */
export async function throughPipe<R>(
  target: { client: Redis; cluster?: boolean },
  request: Pick<MoveRequest, 'journal' | 'runId'>,
  batch: BatchKeys,
  each: (pipe: BatchPipe) => Promise<R>,
): Promise<R> {
  const pipe = new BatchPipe(target, request, batch);
  let result: R;
  try {
    result = await each(pipe);
  } catch (error) {
    await pipe.end().catch(() => undefined);
    throw error;
  }
  await pipe.end();
  return result;
}

import type { Finding } from '../../../core/diff.js';
import { store } from '../../../db/port/index.js';
import type { Db, Queryable } from '../../../db/types.js';
import type { SameServerPlan } from '../plan.js';

/**
 * What every strategy's walk is run with, and the worker pool of the same-server strategies:
 * walks hand out chunks, a small pool of workers (`parallel` connections, each in its own
 * read-only transaction) takes them one at a time. Memory holds one chunk's findings per worker.
 */
export interface WalkOptions {
  chunkTimeMs: number;
  emit: (finding: Finding) => void | Promise<void>;
  progress: (text: string) => void;
  /** Connections the same-server walks share (default 2; SQLite always uses its one connection). */
  parallel?: number;
}

/** Connections of the same-server pool unless `parallel` says otherwise. */
export const DEFAULT_PARALLEL = 2;

/** One chunk's statements, run on the connection of the worker that took it. */
export type Chunk = (q: Queryable) => Promise<void>;

/** A walk hands out its chunks one at a time (undefined once exhausted), never the same one twice. */
export interface Walk {
  next: (q: Queryable) => Promise<Chunk | undefined>;
}

/** Serializes calls of `fn`: a call starts once the previous one has settled (a promise lock). */
export function serialized<A extends unknown[], T>(
  fn: (...args: A) => Promise<T>,
): (...args: A) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (...args) => {
    const result = tail.then(() => fn(...args));
    tail = result.catch(() => undefined);
    return result;
  };
}

/** A walk of one chunk. */
export function single(chunk: Chunk): Walk {
  let taken = false;
  return {
    next: async () => {
      if (taken) return undefined;
      taken = true;
      return chunk;
    },
  };
}

/** One progress line from both walks' latest texts. */
export function progressLine(
  progress: (text: string) => void,
): (part: 'tasks' | 'business') => (text: string) => void {
  const texts = { tasks: '', business: '' };
  return (part) => (text) => {
    texts[part] = text;
    progress([texts.tasks, texts.business].filter(Boolean).join(' · '));
  };
}

/**
 * The pools the workers take their connections from: alternately the task source's and the
 * business table's (the same server, often the same pool). SQLite has one connection: one worker.
 */
export function workerDbs(plan: SameServerPlan, parallel: number): Db[] {
  if (!plan.source.db.dialect.parallelReads) return [plan.source.db];
  return Array.from({ length: Math.max(1, Math.trunc(parallel)) }, (_, i) =>
    i % 2 === 0 ? plan.source.db : plan.businessDb,
  );
}

/**
 * Runs the walks to their end on one worker per pool entry, each in its own read-only
 * transaction; worker i starts on walk i (mod the number of walks) and then helps with the
 * others. After a failure no worker takes another chunk; the first error is rethrown once every
 * worker has stopped.
 */
export async function runWorkers(dbs: Db[], walks: Walk[]): Promise<void> {
  const state = { failed: false };
  const results = await Promise.allSettled(
    dbs.map((db, i) => {
      const start = i % walks.length;
      const order = [...walks.slice(start), ...walks.slice(0, start)];
      return store.diff.withReadOnly(db, (q) => work(q, order, state));
    }),
  );
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}

/** One worker: chunk after chunk of each walk in turn, on its connection, until all are exhausted. */
async function work(q: Queryable, walks: Walk[], state: { failed: boolean }): Promise<void> {
  try {
    for (const walk of walks) {
      for (;;) {
        if (state.failed) return;
        const chunk = await walk.next(q);
        if (!chunk) break;
        await chunk(q);
      }
    }
  } catch (error) {
    state.failed = true;
    throw error;
  }
}

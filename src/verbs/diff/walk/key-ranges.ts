import { FIRST_CHUNK_SPAN, nextChunkSpan } from '../../../core/diff.js';
import { store } from '../../../db/port/index.js';
import type { Queryable } from '../../../db/types.js';
import type { SameServerPlan } from '../plan.js';
import { serialized, type Chunk, type Walk, type WalkOptions } from './workers.js';
import { grouped } from '../../../core/grouped.js';

/** A range of business keys, (after, upTo] (open ends when undefined); the last one runs to the end. */
export interface KeyRange {
  after: unknown;
  upTo: unknown;
  last: boolean;
}

/**
 * A walk over the business key index in ranges that end on a key (so a key never spans two),
 * sized toward `chunkTimeMs` (at most `maxSpan` rows); `run` does a range's work on the
 * connection of the worker that took it.
 */
export function businessKeyRanges(
  plan: SameServerPlan,
  options: WalkOptions,
  progress: (text: string) => void,
  run: (q: Queryable, range: KeyRange) => Promise<void>,
  maxSpan = Number.POSITIVE_INFINITY,
): Walk {
  const cursor = { after: undefined as unknown, span: FIRST_CHUNK_SPAN, exhausted: false, seen: 0 };
  const next = serialized(async (q: Queryable): Promise<Chunk | undefined> => {
    if (cursor.exhausted) return undefined;
    const started = performance.now();
    const after = cursor.after;
    const span = cursor.span;
    const bound = await store.diff.businessKeyBound(q, plan.business, after, span - 1);
    const boundMs = performance.now() - started;
    if (bound) cursor.after = bound.key;
    else cursor.exhausted = true;
    return async (cq) => {
      const chunkStarted = performance.now();
      await run(cq, { after, upTo: bound?.key, last: !bound });
      const elapsed = boundMs + performance.now() - chunkStarted;
      cursor.span = Math.min(maxSpan, nextChunkSpan(span, elapsed, options.chunkTimeMs));
      cursor.seen += span;
      progress(`business keys: ~${grouped(cursor.seen)}`);
    };
  });
  return { next };
}

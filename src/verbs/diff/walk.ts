import { classifyTask, FIRST_CHUNK_SPAN, nextChunkSpan, type Finding } from '../../core/diff.js';
import { normalizeKey } from '../../core/diff-keys.js';
import { businessKeyBound, keySiblings, type CandidateRow } from '../../db/sql/diff.js';
import type { Queryable } from '../../db/types.js';
import type { PreparedRule } from './prepare.js';
import { taskFinding } from './findings.js';

/**
 * What the same-server walks (diff-same-server.ts, diff-merge-walk.ts) are made of: walks that
 * hand out chunks to the workers, the walk over business-key ranges, and the classification of
 * tasks whose verdict depends on the other tasks of their key.
 */
export interface WalkOptions {
  chunkTimeMs: number;
  emit: (finding: Finding) => void | Promise<void>;
  progress: (text: string) => void;
  /** Connections the same-server walks share (default 2; SQLite always uses its one connection). */
  parallel?: number;
}

/** Keys per IN list (sibling lookups, tasks of duplicated keys): bound parameters of one statement. */
export const KEYS_PER_LOOKUP = 500;

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
  p: PreparedRule,
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
    const bound = await businessKeyBound(q, p.business, after, span - 1);
    const boundMs = performance.now() - started;
    if (bound) cursor.after = bound.key;
    else cursor.exhausted = true;
    return async (cq) => {
      const chunkStarted = performance.now();
      await run(cq, { after, upTo: bound?.key, last: !bound });
      const elapsed = boundMs + performance.now() - chunkStarted;
      cursor.span = Math.min(maxSpan, nextChunkSpan(span, elapsed, options.chunkTimeMs));
      cursor.seen += span;
      progress(`business keys: ~${cursor.seen.toLocaleString('en-US')}`);
    };
  });
  return { next };
}

/**
 * Classifies tasks with business rows (open ones, or done ones with several rows), looking up
 * the other tasks of their keys (any status, any time): whether one is a finding depends on them.
 */
export async function emitClassified(
  q: Queryable,
  p: PreparedRule,
  role: 'done' | 'open',
  candidates: CandidateRow[],
  options: WalkOptions,
): Promise<void> {
  if (candidates.length === 0) return;
  const siblings = await siblingsOf(q, p, candidates);
  for (const c of candidates) {
    const rows = Number(c.n);
    const sib = c.k === null ? undefined : siblings.get(normalizeKey(c.k, p.taskSemantics) as string);
    const kind = classifyTask(
      role,
      { rows, tasks: sib?.tasks ?? 1, doneTasks: sib?.done ?? (role === 'done' ? 1 : 0) },
      p.rule.business.expect,
    );
    if (kind) await options.emit(taskFinding(p, kind, c, rows));
  }
}

/** The rule's tasks per key of `candidates` (normal form), and the done ones among them. */
async function siblingsOf(
  q: Queryable,
  p: PreparedRule,
  candidates: CandidateRow[],
): Promise<Map<string, { tasks: number; done: number }>> {
  const siblings = new Map<string, { tasks: number; done: number }>();
  const keyed = candidates.filter((c) => c.k !== null);
  const keys = [...new Map(keyed.map((c) => [normalizeKey(c.k, p.taskSemantics) as string, c.k])).values()];
  for (let i = 0; i < keys.length; i += KEYS_PER_LOOKUP) {
    for (const row of await keySiblings(q, p.task, keys.slice(i, i + KEYS_PER_LOOKUP))) {
      siblings.set(normalizeKey(row.k, p.taskSemantics) as string, {
        tasks: Number(row.tasks),
        done: Number(row.done),
      });
    }
  }
  return siblings;
}

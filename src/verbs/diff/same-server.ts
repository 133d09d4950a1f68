import { FIRST_CHUNK_SPAN, nextChunkSpan, type TaskRole } from '../../core/diff.js';
import {
  countChunkTasks,
  duplicateCandidates,
  duplicateKeys,
  missingChunk,
  nextTaskId,
  nullKeyBusinessRows,
  orphanChunk,
  ROLE_DONE,
  ROLE_OPEN,
  taskIdRange,
  unsettledCandidates,
  type IdRange,
} from '../../db/sql/diff.js';
import { withReadOnly } from '../../db/sql/diff-readonly.js';
import type { Db, Queryable } from '../../db/types.js';
import type { PreparedRule } from './prepare.js';
import { orphanFinding, taskFinding } from './findings.js';
import { mergeWalk, type MergeTally } from './merge-walk.js';
import {
  businessKeyRanges,
  emitClassified,
  KEYS_PER_LOOKUP,
  serialized,
  type Chunk,
  type Walk,
  type WalkOptions,
} from './walk.js';

/**
 * The same-server diff. When the rule's keys can be merged (PreparedRule.merge), the merge walk
 * (diff-merge-walk.ts) finds missing, orphan and duplicated keys from the two key indexes, and
 * the task walk below only looks for unsettled tasks. Otherwise the database joins, in two walks
 * cut into chunks sized toward `chunkTimeMs`:
 * - the task walk reads the task table by primary-key ranges: done tasks without a business row
 *   (missing), open tasks with one (unsettled candidates);
 * - the business walk reads the business table in key order: keys without a task (orphans), and
 *   keys with several rows, whose tasks are then looked up (duplicates).
 * A small pool of workers (`parallel` connections, each in its own read-only transaction) shares
 * both walks: a worker takes the next chunk of its walk and, once that walk is exhausted, helps
 * with the other. Memory holds one chunk's findings per worker at a time.
 */
export const DEFAULT_PARALLEL = 2;

export function roleOfCode(code: unknown): TaskRole {
  const n = Number(code);
  return n === ROLE_DONE ? 'done' : n === ROLE_OPEN ? 'open' : 'other';
}

export async function runSameServer(
  p: PreparedRule,
  options: WalkOptions,
): Promise<{ tasksChecked: number }> {
  const line = progressLine(options.progress);
  const parallel = options.parallel ?? DEFAULT_PARALLEL;
  if (p.merge) {
    // The merge walk reads every task of the rule's biz type; without a time window that count is the answer.
    const { expect, orphans } = p.rule.business;
    const countMerged = p.task.window.sql === '1=1' && (expect !== 'at-most-one' || orphans);
    const tally: MergeTally = { tasks: 0 };
    const tasks = await taskWalk(p, options, line('tasks'), { missing: false, count: !countMerged });
    const merge = mergeWalk(p, p.merge.space, options, line('business'), tally);
    // Each worker may hold a second connection for its stream: two of them fit the pool.
    await runWorkers(workerDbs(p, Math.min(parallel, DEFAULT_PARALLEL)), [tasks.walk, merge]);
    return { tasksChecked: countMerged ? tally.tasks : await tasks.tasksChecked() };
  }
  const tasks = await taskWalk(p, options, line('tasks'), { missing: true, count: true });
  const business = businessWalk(p, options, line('business'));
  await runWorkers(workerDbs(p, parallel), [tasks.walk, ...(business ? [business] : [])]);
  return { tasksChecked: await tasks.tasksChecked() };
}

/** One progress line from both walks' latest texts. */
function progressLine(
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
function workerDbs(p: PreparedRule, parallel: number): Db[] {
  if (!p.source.db.dialect.parallelReads) return [p.source.db];
  return Array.from({ length: Math.max(1, Math.trunc(parallel)) }, (_, i) =>
    i % 2 === 0 ? p.source.db : p.businessDb,
  );
}

/**
 * Runs the walks to their end on one worker per pool entry, each in its own read-only
 * transaction; worker i starts on walk i (mod the number of walks) and then helps with the
 * others. After a failure no worker takes another chunk; the first error is rethrown once every
 * worker has stopped.
 */
async function runWorkers(dbs: Db[], walks: Walk[]): Promise<void> {
  const state = { failed: false };
  const results = await Promise.allSettled(
    dbs.map((db, i) => {
      const start = i % walks.length;
      const order = [...walks.slice(start), ...walks.slice(0, start)];
      return withReadOnly(db, (q) => work(q, order, state));
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

/** A walk of one chunk. */
function single(chunk: Chunk): Walk {
  let taken = false;
  return {
    next: async () => {
      if (taken) return undefined;
      taken = true;
      return chunk;
    },
  };
}

/** What the task walk does besides unsettled tasks: missing ones (unless the merge walk finds them), the count. */
interface TaskParts {
  missing: boolean;
  count: boolean;
}

interface TaskWalk {
  walk: Walk;
  /** The rule's tasks in the window, once the walk is done. */
  tasksChecked: () => Promise<number>;
}

/**
 * The task walk: primary-key ranges from the smallest id to the largest one at the start (rows
 * inserted during the run are not looked at), a chunk never starting inside a gap.
 */
async function taskWalk(
  p: PreparedRule,
  options: WalkOptions,
  progress: (text: string) => void,
  parts: TaskParts,
): Promise<TaskWalk> {
  if (!chunkableIds(p)) {
    // Ids that are not integers cannot be ranged by arithmetic: one pass (still only findings come back).
    let checked = 0;
    const walk = single(async (q) => {
      await taskChunk(q, p, undefined, options, parts);
      if (parts.count) checked = await countChunkTasks(q, p.task, undefined);
    });
    return { walk, tasksChecked: async () => checked };
  }
  const range = await withReadOnly(p.source.db, (q) => taskIdRange(q, p.task));
  if (!range) return { walk: { next: async () => undefined }, tasksChecked: async () => 0 };
  const [min, max] = range;
  // Without a time window the rule's tasks are counted once from the (biz type, key) index; with
  // one, each chunk counts its own (the window's column is in the rows just read).
  const perChunkCount = parts.count && p.task.window.sql !== '1=1';
  // The count reads another index than the walk: on its own connection it runs alongside.
  const counted =
    perChunkCount || !parts.count
      ? undefined
      : withReadOnly(p.source.db, (q) => countChunkTasks(q, p.task, { lo: min, hi: max }));
  counted?.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
  const cursor = { lo: min as number | undefined, span: FIRST_CHUNK_SPAN, through: min - 1, checked: 0 };
  const next = serialized(async (q: Queryable): Promise<Chunk | undefined> => {
    if (cursor.lo === undefined) return undefined;
    const chunk = { lo: cursor.lo, hi: Math.min(max, cursor.lo + cursor.span - 1) };
    const span = cursor.span;
    const following = chunk.hi >= max ? undefined : await nextTaskId(q, p.task, chunk.hi + 1);
    cursor.lo = following === undefined || following > max ? undefined : following;
    return async (cq) => {
      const started = performance.now();
      await taskChunk(cq, p, chunk, options, parts);
      const inChunk = perChunkCount ? await countChunkTasks(cq, p.task, chunk) : 0;
      cursor.checked += inChunk; // not `+= await`: that adds to a total read before another chunk added
      cursor.span = nextChunkSpan(span, performance.now() - started, options.chunkTimeMs);
      cursor.through = Math.max(cursor.through, chunk.hi);
      progress(
        `tasks: id ${cursor.through.toLocaleString('en-US')} of ${max.toLocaleString('en-US')} (${Math.floor(((cursor.through - min + 1) / (max - min + 1)) * 100)}%)`,
      );
    };
  });
  return { walk: { next }, tasksChecked: async () => (counted ? counted : cursor.checked) };
}

/** Whether the task ids are integers (ranged by arithmetic); an unknown id column is assumed so. */
function chunkableIds(p: PreparedRule): boolean {
  const idColumn = p.source.columns.find((c) => p.task.id === p.source.db.dialect.quoteId(c.name));
  return !idColumn || /int/.test(idColumn.dataType);
}

/**
 * One chunk of the task walk: its missing tasks (a done task without a business row is missing
 * whatever its siblings), then its open tasks with business rows, classified against the done
 * tasks sharing their key.
 */
async function taskChunk(
  q: Queryable,
  p: PreparedRule,
  range: IdRange,
  options: WalkOptions,
  parts: TaskParts,
): Promise<void> {
  if (parts.missing && p.rule.business.expect !== 'at-most-one') {
    for (const row of await missingChunk(q, p.task, p.business, range)) {
      await options.emit(taskFinding(p, 'missing', row, 0));
    }
  }
  await emitClassified(q, p, 'open', await unsettledCandidates(q, p.task, p.business, range), options);
}

/**
 * The business walk: business keys in order, chunks ending on a key (so a key never spans two),
 * for orphans (unless the rule leaves them out) and duplicates (unless it expects at least one).
 * A business key without an index is read in one pass.
 */
function businessWalk(
  p: PreparedRule,
  options: WalkOptions,
  progress: (text: string) => void,
): Walk | undefined {
  if (!p.rule.business.orphans && p.rule.business.expect === 'at-least-one') return undefined;
  if (!p.businessKeyIndexed) return single((q) => businessChunk(q, p, undefined, undefined, true, options));
  return businessKeyRanges(p, options, progress, (q, r) =>
    businessChunk(q, p, r.after, r.upTo, r.last, options),
  );
}

/**
 * One chunk of the business walk, keys in (after, upTo]: its orphans, the done tasks with
 * several rows of its duplicated keys classified (only duplicates come from here: missing and
 * unsettled tasks are the task walk's), and — in the last chunk — the business rows with a NULL
 * key (orphans).
 */
async function businessChunk(
  q: Queryable,
  p: PreparedRule,
  after: unknown,
  upTo: unknown,
  last: boolean,
  options: WalkOptions,
): Promise<void> {
  if (p.rule.business.orphans) {
    for (const row of await orphanChunk(q, p.task, p.business, after, upTo)) {
      await options.emit(orphanFinding(p, row.k, Number(row.n)));
    }
    const nullRows = last ? await nullKeyBusinessRows(q, p.business) : 0;
    if (nullRows > 0) await options.emit(orphanFinding(p, null, nullRows));
  }
  if (p.rule.business.expect !== 'at-least-one') {
    const keys = await duplicateKeys(q, p.business, after, upTo);
    for (let i = 0; i < keys.length; i += KEYS_PER_LOOKUP) {
      const batch = keys.slice(i, i + KEYS_PER_LOOKUP);
      await emitClassified(q, p, 'done', await duplicateCandidates(q, p.task, p.business, batch), options);
    }
  }
}

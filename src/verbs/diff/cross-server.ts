// Over 300 lines: the cross-server walk (levels, bisection, fetch of the segments left) reads as one algorithm.
import { classifyTask, isOrphan } from '../../core/diff.js';
import {
  BINARY_KEYS,
  childWidth,
  emptyDigest,
  HASH_SPACE,
  HASH_SUM_MODULUS,
  keyHash,
  normalizeKey,
  segmentConsistent,
  type KeySemantics,
  type SegmentDigest,
} from '../../core/diff-keys.js';
import {
  DENSE_FANOUT,
  DENSE_LEAF_ROWS,
  denseMismatches,
  type DenseDigests,
  type SegmentMismatch,
} from '../../core/dense-digests.js';
import {
  businessDigests,
  businessHashStream,
  businessRows,
  countTasks,
  notDoneHashes,
  nullKeyTasks,
  taskDigests,
  taskHashStream,
  taskRows,
  restrictingParents,
  type DigestRow,
  type HashKind,
  type LevelQuery,
} from '../../db/sql/diff-checksum.js';
import { nullKeyBusinessRows } from '../../db/sql/diff.js';
import { withReadOnly } from '../../db/sql/diff-readonly.js';
import type { Queryable } from '../../db/types.js';
import type { PreparedRule } from './prepare.js';
import { denseDigests, streamsHashes } from './cross-dense.js';
import { orphanFinding, taskFinding } from './findings.js';
import { roleOfCode } from './same-server.js';
import type { WalkOptions } from './walk.js';

/**
 * The cross-server diff (data-diff's idea over a hash space, as Cassandra's repair trees do):
 * both sides reduce their keys to digests of segments of the CRC32 space of the normal-form key;
 * equal segments are done with, mismatching ones are split into children of about LEAF_ROWS rows
 * and compared again, and the small ones left are read row by row and classified with the same
 * pure functions as the same-server walk. Keys are never held for a whole table: digests are a
 * few thousand numbers, and row-level reads come in batches of at most ROW_BATCH rows.
 */

/** A segment this small is read row by row rather than split again. */
export const LEAF_ROWS = 64;
/**
 * Children per split at most (one GROUP BY of this many groups per level): large enough that 2M
 * rows reach leaf-sized segments in one split, so a run with a few differences costs the
 * whole-table digests, one grouped digest and one row-level read per side.
 */
export const MAX_FANOUT = 65_536;
/** Rows per row-level batch on each side (bounds the memory of a run). */
export const ROW_BATCH = 64_000;
/**
 * Mismatching segments holding this many rows in all are read row by row rather than split again:
 * a further level costs a scan of each side, as a row-level batch does.
 */
export const ROW_LEVEL_ROWS = 2 * ROW_BATCH;
/**
 * Up to this many tasks not done are listed by their hashes (4 bytes each), so digests read only
 * the key index; beyond it the digests read each task's status instead.
 */
export const NOT_DONE_LISTED = 1_000_000;

type Digests = Map<number, SegmentDigest>;

/** One side's digests at a level: MariaDB/MySQL computes them, SQLite streams and the client does. */
interface Side {
  /** Digests of a level; `notDone` counts the tasks not done in each segment (0 on the business side). */
  digests(level: LevelQuery, kind: HashKind): Promise<Digests>;
  /**
   * A dense level of the whole hash space (normal-form hashes streamed to the client, see
   * core/dense-digests.ts), where the side can give one; `available` tells.
   */
  dense?: { available(): Promise<boolean>; digests(width: number): Promise<DenseDigests> };
  rows(width: number, ids: readonly number[]): Promise<Iterable<unknown> | AsyncIterable<unknown>>;
}

function digestMap(rows: DigestRow[]): Digests {
  const map: Digests = new Map();
  for (const r of rows)
    map.set(Number(r.g), { rows: Number(r.n), hashSum: Number(r.s), notDone: Number(r.nd) });
  return map;
}

/** The parents a level asks for, as a set; none when every hash is in one. */
function parentSet(level: LevelQuery): Set<number> | undefined {
  const parents = restrictingParents(level);
  return parents ? new Set(parents) : undefined;
}

/** The segment of `level` a hash falls in, or undefined when its parent is not asked for. */
function segmentOf(h: number, level: LevelQuery, parents: Set<number> | undefined): number | undefined {
  if (parents && !parents.has(Math.floor(h / (level.parentWidth as number)))) return undefined;
  return Math.floor(h / level.width);
}

/** Aggregates digests in the client from a stream of rows with a key `k` (and a role `r` on the task side). */
async function clientDigests(
  stream: AsyncIterable<unknown>,
  semantics: KeySemantics,
  level: LevelQuery,
  isTask: boolean,
): Promise<Digests> {
  const map: Digests = new Map();
  const parents = parentSet(level);
  for await (const raw of stream) {
    const row = raw as Record<string, unknown>;
    const nk = normalizeKey(row.k, semantics);
    if (nk === null) continue;
    const h = keyHash(nk);
    const g = segmentOf(h, level, parents);
    if (g === undefined) continue;
    const d = map.get(g) ?? emptyDigest();
    d.rows++;
    d.hashSum = (d.hashSum + h) % HASH_SUM_MODULUS;
    if (isTask && Number(row.r) !== 1) d.notDone++;
    map.set(g, d);
  }
  return map;
}

/** The key semantics of a hash kind: `exact` hashes keys as stored. */
function semanticsOf(p: PreparedRule, kind: HashKind): KeySemantics {
  return kind === 'exact' ? BINARY_KEYS : p.crossSemantics;
}

/**
 * The MariaDB/MySQL task side. Digests read the (biz type, key) index only; the tasks not done
 * are counted apart (whole table) or listed by hash once and placed in their segments here —
 * unless there are more than NOT_DONE_LISTED of them, when each digest reads the statuses.
 */
function mysqlTaskSide(p: PreparedRule, q: Queryable): Side {
  const t = p.crossTask;
  let notDone: Promise<number> | undefined;
  let listed: Promise<Uint32Array | undefined> | undefined;
  const count = () => (notDone ??= countTasks(q, t, t.notDone));
  const list = () =>
    (listed ??= count().then(async (n) => {
      if (n > NOT_DONE_LISTED) return undefined;
      const hashes = new Uint32Array(n);
      let i = 0;
      for await (const row of notDoneHashes(p.source.db, t, p.crossSemantics))
        if (i < n) hashes[i++] = Number((row as { h: unknown }).h);
      return hashes.subarray(0, i);
    }));
  return {
    digests: async (level, kind) => {
      const semantics = semanticsOf(p, kind);
      if (level.width >= HASH_SPACE) {
        const map = digestMap(
          await taskDigests(q, t, semantics, { width: HASH_SPACE }, { kind, withRole: false }),
        );
        const n = await count();
        const whole = map.get(0);
        if (whole) whole.notDone = n;
        return map;
      }
      const hashes = await list();
      if (!hashes) return digestMap(await taskDigests(q, t, semantics, level, { kind, withRole: true }));
      const map = digestMap(await taskDigests(q, t, semantics, level, { kind, withRole: false }));
      const parents = parentSet(level);
      for (const h of hashes) {
        const g = segmentOf(h, level, parents);
        const d = g === undefined ? undefined : map.get(g);
        if (d) d.notDone++;
      }
      return map;
    },
    dense: {
      // The tasks not done are placed by their listed hashes; beyond NOT_DONE_LISTED, no dense level.
      available: async () => streamsHashes(p.source.db) && (await list()) !== undefined,
      digests: async (width) => {
        const digests = await denseDigests(p.source.db, taskHashStream(t, p.crossSemantics), width);
        for (const h of (await list()) ?? []) digests.addNotDone(h);
        return digests;
      },
    },
    rows: (width, ids) => taskRows(p.source.db, t, p.crossSemantics, { width, ids }),
  };
}

function taskSide(p: PreparedRule, q: Queryable): Side {
  const db = p.source.db;
  if (db.dialect.serverHashing) return mysqlTaskSide(p, q);
  return {
    digests: async (level, kind) =>
      clientDigests(
        (await taskRows(db, p.crossTask, p.crossSemantics)) as AsyncIterable<unknown>,
        semanticsOf(p, kind),
        level,
        true,
      ),
    rows: () => taskRows(db, p.crossTask, p.crossSemantics),
  };
}

function businessSide(p: PreparedRule, q: Queryable): Side {
  const db = p.businessDb;
  if (db.dialect.serverHashing) {
    return {
      digests: async (level, kind) =>
        digestMap(await businessDigests(q, p.business, semanticsOf(p, kind), level, kind)),
      // A rule's `where` runs only inside the read-only transaction: such a side is not streamed.
      dense: {
        available: async () => streamsHashes(db) && !p.business.where,
        digests: (width) => denseDigests(db, businessHashStream(p.business, p.crossSemantics), width),
      },
      rows: (width, ids) => businessRows(db, q, p.business, p.crossSemantics, { width, ids }),
    };
  }
  return {
    digests: async (level, kind) =>
      clientDigests(
        (await businessRows(db, q, p.business, p.crossSemantics)) as AsyncIterable<unknown>,
        semanticsOf(p, kind),
        level,
        false,
      ),
    rows: () => businessRows(db, q, p.business, p.crossSemantics),
  };
}

export interface CrossStats {
  tasksChecked: number;
  /** Segments compared at each level, and how many mismatched; the first level compares keys as stored. */
  levels: Array<{ width: number; segments: number; mismatched: number; hash: HashKind }>;
  rowsCompared: number;
}

export async function runCrossServer(p: PreparedRule, options: WalkOptions): Promise<CrossStats> {
  return withReadOnly(p.source.db, (tq) =>
    withReadOnly(p.businessDb, (bq) => crossDiff(p, taskSide(p, tq), businessSide(p, bq), tq, bq, options)),
  );
}

/** Compares one level's digests of both sides: the segments that need a closer look. */
function mismatches(t: Digests, b: Digests): { segments: number; mismatched: SegmentMismatch[] } {
  const ids = new Set([...t.keys(), ...b.keys()]);
  const mismatched: SegmentMismatch[] = [];
  for (const id of ids) {
    const td = t.get(id) ?? emptyDigest();
    const bd = b.get(id) ?? emptyDigest();
    if (!segmentConsistent(td, bd)) mismatched.push({ id, rows: Math.max(td.rows, bd.rows) });
  }
  return { segments: ids.size, mismatched };
}

type Dense = NonNullable<Side['dense']>;

/** Both sides' dense levels (see Side.dense), when both can give one. */
async function denseOnBothSides(tasks: Side, business: Side): Promise<[Dense, Dense] | undefined> {
  if (!tasks.dense || !business.dense) return undefined;
  const [t, b] = await Promise.all([tasks.dense.available(), business.dense.available()]);
  return t && b ? [tasks.dense, business.dense] : undefined;
}

/** A level restricted to the children of mismatching parents, digested by each side as it can. */
async function sparseLevel(
  tasks: Side,
  business: Side,
  level: LevelQuery,
): Promise<ReturnType<typeof mismatches>> {
  const [t, b] = await Promise.all([tasks.digests(level, 'normal'), business.digests(level, 'normal')]);
  return mismatches(t, b);
}

async function crossDiff(
  p: PreparedRule,
  tasks: Side,
  business: Side,
  tq: Queryable,
  bq: Queryable,
  options: WalkOptions,
): Promise<CrossStats> {
  const stats: CrossStats = { tasksChecked: 0, levels: [], rowsCompared: 0 };
  const windowed = p.crossTask.window.sql !== '1=1';
  // The window's tasks are counted apart (the digests read no time column); it runs alongside.
  const counted = windowed ? countTasks(tq, p.crossTask, p.crossTask.window) : undefined;
  counted?.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
  options.progress('checksums: whole table, keys as stored');
  const whole = { width: HASH_SPACE };
  const [te, be] = await Promise.all([tasks.digests(whole, 'exact'), business.digests(whole, 'exact')]);
  const record = (width: number, found: ReturnType<typeof mismatches>, hash: HashKind) =>
    stats.levels.push({ width, segments: found.segments, mismatched: found.mismatched.length, hash });
  const first = mismatches(te, be);
  record(HASH_SPACE, first, 'exact');
  stats.tasksChecked = counted ? await counted : (te.get(0)?.rows ?? 0);
  let width = HASH_SPACE;
  let mismatched = first.mismatched;
  while (mismatched.length > 0 && width > 1) {
    // A few rows left are read rather than split again.
    if (mismatched.reduce((sum, m) => sum + m.rows, 0) <= ROW_LEVEL_ROWS) break;
    const largest = mismatched.reduce((max, m) => Math.max(max, m.rows), 0);
    options.progress(`checksums: level ${stats.levels.length} (${mismatched.length} segments split)`);
    // The first split is dense where both sides can stream their hashes; deeper ones are grouped.
    const dense = width >= HASH_SPACE ? await denseOnBothSides(tasks, business) : undefined;
    const next = dense
      ? childWidth(width, largest, DENSE_LEAF_ROWS, DENSE_FANOUT)
      : childWidth(width, largest, LEAF_ROWS, MAX_FANOUT);
    const found = dense
      ? denseMismatches(...(await Promise.all([dense[0].digests(next), dense[1].digests(next)])))
      : await sparseLevel(tasks, business, {
          width: next,
          parentWidth: width,
          parents: mismatched.map((m) => m.id),
        });
    record(next, found, 'normal');
    width = next;
    mismatched = found.mismatched;
  }
  // Row level: batches of mismatching segments, each read once per side.
  let batch: number[] = [];
  let batchRows = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    stats.rowsCompared += await compareRows(p, tasks, business, width, batch, options);
    options.progress(`rows: ${stats.rowsCompared.toLocaleString('en-US')} compared`);
    batch = [];
    batchRows = 0;
  };
  for (const m of mismatched.sort((a, b) => a.id - b.id)) {
    if (batchRows + m.rows > ROW_BATCH) await flush();
    batch.push(m.id);
    batchRows += m.rows;
  }
  await flush();
  stats.tasksChecked += await nullKeys(p, tq, bq, options);
  return stats;
}

interface KeyGroup {
  /** The key as the side that met it first spelled it (an orphan's is the business row's). */
  rawKey: unknown;
  rows: number;
  tasks: Array<{ id: unknown; e: unknown; s: unknown; r: unknown; w: unknown; k: unknown }>;
}

/** Reads one batch of segments from both sides and classifies every task and key in it. */
async function compareRows(
  p: PreparedRule,
  tasks: Side,
  business: Side,
  width: number,
  ids: number[],
  options: WalkOptions,
): Promise<number> {
  const wanted = new Set(ids);
  const groups = new Map<string, KeyGroup>();
  const group = (nk: string, rawKey: unknown): KeyGroup => {
    let g = groups.get(nk);
    if (!g) groups.set(nk, (g = { rawKey, rows: 0, tasks: [] }));
    return g;
  };
  const inBatch = (nk: string) => wanted.has(Math.floor(keyHash(nk) / width));
  let compared = 0;
  // Both sides are read at once; a group is classified only when both are done.
  const readTasks = async () => {
    for await (const raw of await tasks.rows(width, ids)) {
      const r = raw as KeyGroup['tasks'][number];
      const nk = normalizeKey(r.k, p.crossSemantics);
      if (nk === null || !inBatch(nk)) continue;
      group(nk, r.k).tasks.push(r);
      compared++;
    }
  };
  const readBusiness = async () => {
    for await (const raw of await business.rows(width, ids)) {
      const r = raw as { k: unknown };
      const nk = normalizeKey(r.k, p.crossSemantics);
      if (nk === null || !inBatch(nk)) continue;
      group(nk, r.k).rows++;
      compared++;
    }
  };
  await Promise.all([readTasks(), readBusiness()]);
  const expect = p.rule.business.expect;
  for (const g of groups.values()) {
    if (isOrphan(g.tasks.length, g.rows)) {
      if (!p.rule.business.orphans) continue;
      await options.emit(orphanFinding(p, g.rawKey, g.rows));
      continue;
    }
    const doneTasks = g.tasks.filter((t) => roleOfCode(t.r) === 'done').length;
    for (const t of g.tasks) {
      if (Number(t.w) !== 1) continue;
      const kind = classifyTask(roleOfCode(t.r), { rows: g.rows, tasks: g.tasks.length, doneTasks }, expect);
      if (kind) await options.emit(taskFinding(p, kind, t, g.rows));
    }
  }
  return compared;
}

/**
 * NULL keys match nothing: a done task with one is missing, a business row with one is an orphan.
 * Returns how many tasks with a NULL key are in the window (they count as checked).
 */
async function nullKeys(
  p: PreparedRule,
  tq: Queryable,
  bq: Queryable,
  options: WalkOptions,
): Promise<number> {
  let checked = 0;
  for (const t of await nullKeyTasks(tq, p.crossTask)) {
    if (Number(t.w) !== 1) continue;
    checked++;
    const kind = classifyTask(roleOfCode(t.r), { rows: 0, tasks: 1, doneTasks: 0 }, p.rule.business.expect);
    if (kind) await options.emit(taskFinding(p, kind, { ...t, k: null }, 0));
  }
  const rows = p.rule.business.orphans ? await nullKeyBusinessRows(bq, p.business) : 0;
  if (rows > 0) await options.emit(orphanFinding(p, null, rows));
  return checked;
}

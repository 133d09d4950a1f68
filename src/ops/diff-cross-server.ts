import { classifyTask, isOrphan, type Finding } from '../core/diff.js';
import {
  childWidth,
  emptyDigest,
  HASH_SUM_MODULUS,
  keyHash,
  normalizeKey,
  segmentConsistent,
  type KeySemantics,
  type SegmentDigest,
} from '../core/diff-keys.js';
import {
  businessDigests,
  businessRows,
  nullKeyTasks,
  taskDigests,
  taskRows,
  WHOLE,
  type DigestRow,
  type LevelQuery,
} from '../db/sql/diff-checksum.js';
import { nullKeyBusinessRows } from '../db/sql/diff.js';
import { withReadOnly } from '../db/sql/diff-readonly.js';
import { toId, toText } from '../db/task-sql.js';
import type { Queryable } from '../db/types.js';
import type { PreparedRule } from './diff-prepare.js';
import { roleOfCode, type WalkOptions } from './diff-same-server.js';

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
 * whole-table digest, one grouped digest and one row-level read per side.
 */
export const MAX_FANOUT = 65_536;
/** Rows per row-level batch on each side (bounds the memory of a run). */
export const ROW_BATCH = 30_000;

type Digests = Map<number, SegmentDigest & { inWindow: number }>;

/** One side's digests at a level: MariaDB/MySQL computes them, SQLite streams and the client does. */
interface Side {
  digests(level: LevelQuery): Promise<Digests>;
  rows(width: number, ids: readonly number[]): Promise<Iterable<unknown> | AsyncIterable<unknown>>;
}

function digestMap(rows: DigestRow[]): Digests {
  const map: Digests = new Map();
  for (const r of rows)
    map.set(Number(r.g), {
      rows: Number(r.n),
      hashSum: Number(r.s),
      notDone: Number(r.nd),
      inWindow: Number(r.w),
    });
  return map;
}

/** Aggregates digests in the client from a stream of [hash-input key, role, inWindow] rows. */
async function clientDigests(
  stream: AsyncIterable<unknown>,
  keyOf: (row: Record<string, unknown>) => unknown,
  semantics: KeySemantics,
  level: LevelQuery,
  isTask: boolean,
): Promise<Digests> {
  const map: Digests = new Map();
  const parents = level.parents ? new Set(level.parents) : undefined;
  for await (const raw of stream) {
    const row = raw as Record<string, unknown>;
    const nk = normalizeKey(keyOf(row), semantics);
    if (nk === null) continue;
    const h = keyHash(nk);
    if (parents && !parents.has(Math.floor(h / (level.parentWidth as number)))) continue;
    const g = Math.floor(h / level.width);
    const d = map.get(g) ?? { ...emptyDigest(), inWindow: 0 };
    d.rows++;
    d.hashSum = (d.hashSum + h) % HASH_SUM_MODULUS;
    if (isTask) {
      if (Number(row.r) !== 1) d.notDone++;
      d.inWindow += Number(row.w);
    }
    map.set(g, d);
  }
  return map;
}

function taskSide(p: PreparedRule, q: Queryable): Side {
  const db = p.source.db;
  if (db.dialect.name === 'mysql') {
    return {
      digests: async (level) => digestMap(await taskDigests(q, p.crossTask, p.crossSemantics, level)),
      rows: (width, ids) => taskRows(db, p.crossTask, p.crossSemantics, { width, ids }),
    };
  }
  return {
    digests: async (level) =>
      clientDigests(
        (await taskRows(db, p.crossTask, p.crossSemantics)) as AsyncIterable<unknown>,
        (r) => r.k,
        p.crossSemantics,
        level,
        true,
      ),
    rows: () => taskRows(db, p.crossTask, p.crossSemantics),
  };
}

function businessSide(p: PreparedRule, q: Queryable): Side {
  const db = p.businessDb;
  if (db.dialect.name === 'mysql') {
    return {
      digests: async (level) => digestMap(await businessDigests(q, p.business, p.crossSemantics, level)),
      rows: (width, ids) => businessRows(db, q, p.business, p.crossSemantics, { width, ids }),
    };
  }
  return {
    digests: async (level) =>
      clientDigests(
        (await businessRows(db, q, p.business, p.crossSemantics)) as AsyncIterable<unknown>,
        (r) => r.k,
        p.crossSemantics,
        level,
        false,
      ),
    rows: () => businessRows(db, q, p.business, p.crossSemantics),
  };
}

export interface CrossStats {
  tasksChecked: number;
  /** Segments compared at each level, and how many mismatched. */
  levels: Array<{ width: number; segments: number; mismatched: number }>;
  rowsCompared: number;
}

export async function runCrossServer(p: PreparedRule, options: WalkOptions): Promise<CrossStats> {
  return withReadOnly(p.source.db, (tq) =>
    withReadOnly(p.businessDb, (bq) => crossDiff(p, taskSide(p, tq), businessSide(p, bq), tq, bq, options)),
  );
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
  let level: LevelQuery = { width: WHOLE };
  let mismatched: Array<{ id: number; rows: number }> = [];
  for (;;) {
    options.progress(
      `checksums: level ${stats.levels.length} (${level.parents ? `${level.parents.length} segments split` : 'whole table'})`,
    );
    const [t, b] = await Promise.all([tasks.digests(level), business.digests(level)]);
    if (stats.levels.length === 0)
      stats.tasksChecked = [...t.values()].reduce((sum, d) => sum + d.inWindow, 0);
    const ids = new Set([...t.keys(), ...b.keys()]);
    mismatched = [];
    for (const id of ids) {
      const td = t.get(id) ?? { ...emptyDigest(), inWindow: 0 };
      const bd = b.get(id) ?? { ...emptyDigest(), inWindow: 0 };
      if (!segmentConsistent(td, bd)) mismatched.push({ id, rows: Math.max(td.rows, bd.rows) });
    }
    stats.levels.push({ width: level.width, segments: ids.size, mismatched: mismatched.length });
    const largest = Math.max(0, ...mismatched.map((m) => m.rows));
    if (mismatched.length === 0 || largest <= LEAF_ROWS || level.width <= 1) break;
    const width = childWidth(level.width, largest, LEAF_ROWS, MAX_FANOUT);
    level = { width, parentWidth: level.width, parents: mismatched.map((m) => m.id) };
  }
  // Row level: batches of mismatching segments, each read once per side.
  let batch: number[] = [];
  let batchRows = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    stats.rowsCompared += await compareRows(p, tasks, business, level.width, batch, options);
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
  for await (const raw of await tasks.rows(width, ids)) {
    const r = raw as KeyGroup['tasks'][number];
    const nk = normalizeKey(r.k, p.crossSemantics);
    if (nk === null || !inBatch(nk)) continue;
    group(nk, r.k).tasks.push(r);
    compared++;
  }
  for await (const raw of await business.rows(width, ids)) {
    const r = raw as { k: unknown };
    const nk = normalizeKey(r.k, p.crossSemantics);
    if (nk === null || !inBatch(nk)) continue;
    const g = group(nk, r.k);
    if (g.tasks.length === 0 && g.rows === 0) g.rawKey = r.k;
    g.rows++;
    compared++;
  }
  const expect = p.rule.business.expect;
  for (const g of groups.values()) {
    if (isOrphan(g.tasks.length, g.rows)) {
      if (!p.rule.business.orphans) continue;
      await options.emit({
        kind: 'orphan',
        rule: p.rule.name,
        taskId: null,
        key: toText(g.rawKey),
        bizId: null,
        eventId: null,
        status: null,
        businessRows: g.rows,
      });
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

function taskFinding(
  p: PreparedRule,
  kind: Finding['kind'],
  t: { id: unknown; e: unknown; s: unknown; k: unknown },
  rows: number,
): Finding {
  const key = toText(t.k);
  return {
    kind,
    rule: p.rule.name,
    taskId: toId(t.id),
    key,
    bizId: p.rule.taskKey === 'bizId' ? key : null,
    eventId: toText(t.e),
    status: p.source.sql.logicalStatus(t.s),
    businessRows: rows,
  };
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
  if (rows > 0)
    await options.emit({
      kind: 'orphan',
      rule: p.rule.name,
      taskId: null,
      key: null,
      bizId: null,
      eventId: null,
      status: null,
      businessRows: rows,
    });
  return checked;
}

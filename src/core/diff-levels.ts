import {
  DENSE_FANOUT,
  DENSE_LEAF_ROWS,
  denseMismatches,
  type DenseDigests,
  type SegmentMismatch,
} from './dense-digests.js';
import { childWidth, emptyDigest, HASH_SPACE, segmentConsistent, type SegmentDigest } from './diff-keys.js';

/**
 * The levels of a checksum diff (data-diff's idea over a hash space, as Cassandra's repair trees
 * do): both sides reduce their keys to digests of segments of the 32-bit hash space
 * (core/diff-keys.ts: CRC32, or MD5's first bytes). The whole table is
 * compared first with the keys as stored; equal segments are done with, mismatching ones are
 * split into children of about LEAF_ROWS rows and compared again (keys in their normal form),
 * until the rows left in mismatching segments are few enough to be read row by row. Pure: the
 * digests come from the two DigestSources, whatever computes them.
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

/** How keys are hashed: `exact` as stored, `normal` in the normal form of the key semantics. */
export type HashKind = 'exact' | 'normal';

/**
 * The segments of one level: `width` hash values each; with `parents`, only the children of
 * those segments of `parentWidth` (a split of mismatching segments).
 */
export interface LevelQuery {
  width: number;
  parentWidth?: number;
  parents?: readonly number[];
}

/** The parents a level is restricted to, or undefined when every hash is in one. */
export function restrictingParents(level: LevelQuery): readonly number[] | undefined {
  return level.parents && (level.parentWidth ?? HASH_SPACE) < HASH_SPACE ? level.parents : undefined;
}

/** One side's digests of a level, by segment. */
export type Digests = Map<number, SegmentDigest>;

/** A dense level of the whole hash space (see dense-digests.ts), where a side can give one. */
export interface DenseSource {
  available(): Promise<boolean>;
  digests(width: number): Promise<DenseDigests>;
}

/** What one side (tasks or business rows) can say about its keys. */
export interface DigestSource {
  /** Digests of a level; `notDone` counts the tasks not done in each segment (0 on the business side). */
  digests(level: LevelQuery, kind: HashKind): Promise<Digests>;
  dense?: DenseSource;
}

/** One level compared: its segment width, the segments holding a key, how many mismatched. */
export interface LevelRecord {
  width: number;
  segments: number;
  mismatched: number;
  hash: HashKind;
}

/** Where the bisection stops; the defaults are the constants above and of dense-digests.ts. */
export interface LevelLimits {
  leafRows: number;
  maxFanout: number;
  rowLevelRows: number;
  denseLeafRows: number;
  denseFanout: number;
}

export const DEFAULT_LEVEL_LIMITS: LevelLimits = {
  leafRows: LEAF_ROWS,
  maxFanout: MAX_FANOUT,
  rowLevelRows: ROW_LEVEL_ROWS,
  denseLeafRows: DENSE_LEAF_ROWS,
  denseFanout: DENSE_FANOUT,
};

export interface LevelsOutcome {
  /** Every level compared, the whole table (keys as stored) first. */
  levels: LevelRecord[];
  /** The segment width of the last level. */
  width: number;
  /** The segments of the last level left to read row by row, in hash order. */
  mismatched: SegmentMismatch[];
  /** The task side's keys (not NULL) in the whole table, as the first level counted them. */
  taskKeys: number;
}

/** Compares one level's digests of both sides: the segments that need a closer look. */
export function levelMismatches(
  tasks: Digests,
  business: Digests,
): { segments: number; mismatched: SegmentMismatch[] } {
  const ids = new Set([...tasks.keys(), ...business.keys()]);
  const mismatched: SegmentMismatch[] = [];
  for (const id of ids) {
    const taskDigest = tasks.get(id) ?? emptyDigest();
    const businessDigest = business.get(id) ?? emptyDigest();
    if (!segmentConsistent(taskDigest, businessDigest)) {
      mismatched.push({ id, rows: Math.max(taskDigest.rows, businessDigest.rows) });
    }
  }
  return { segments: ids.size, mismatched };
}

/** Both sides' dense sources, when both can give a dense level. */
async function denseOnBothSides(
  tasks: DigestSource,
  business: DigestSource,
): Promise<[DenseSource, DenseSource] | undefined> {
  if (!tasks.dense || !business.dense) return undefined;
  const [taskDense, businessDense] = await Promise.all([tasks.dense.available(), business.dense.available()]);
  return taskDense && businessDense ? [tasks.dense, business.dense] : undefined;
}

/**
 * The levels: whole-table digests of the keys as stored, then splits of the mismatching segments
 * (normal form) until they hold at most `rowLevelRows` rows in all or are one hash wide. The first
 * split is dense where both sides can give one; deeper ones are restricted to the children of
 * mismatching parents. `progress` hears of each level as it starts.
 */
export async function bisectDigests(
  tasks: DigestSource,
  business: DigestSource,
  progress: (text: string) => void = () => undefined,
  limits: LevelLimits = DEFAULT_LEVEL_LIMITS,
): Promise<LevelsOutcome> {
  const levels: LevelRecord[] = [];
  const record = (width: number, found: ReturnType<typeof levelMismatches>, hash: HashKind) =>
    levels.push({ width, segments: found.segments, mismatched: found.mismatched.length, hash });
  progress('checksums: whole table, keys as stored');
  const whole = { width: HASH_SPACE };
  const [taskWhole, businessWhole] = await Promise.all([
    tasks.digests(whole, 'exact'),
    business.digests(whole, 'exact'),
  ]);
  const first = levelMismatches(taskWhole, businessWhole);
  record(HASH_SPACE, first, 'exact');
  let width = HASH_SPACE;
  let mismatched = first.mismatched;
  while (mismatched.length > 0 && width > 1) {
    // A few rows left are read rather than split again.
    if (mismatched.reduce((sum, segment) => sum + segment.rows, 0) <= limits.rowLevelRows) break;
    const largest = mismatched.reduce((max, segment) => Math.max(max, segment.rows), 0);
    progress(`checksums: level ${levels.length} (${mismatched.length} segments split)`);
    const dense = width >= HASH_SPACE ? await denseOnBothSides(tasks, business) : undefined;
    const next = dense
      ? childWidth(width, largest, limits.denseLeafRows, limits.denseFanout)
      : childWidth(width, largest, limits.leafRows, limits.maxFanout);
    let found: ReturnType<typeof levelMismatches>;
    if (dense) {
      const [taskDense, businessDense] = await Promise.all([dense[0].digests(next), dense[1].digests(next)]);
      found = denseMismatches(taskDense, businessDense);
    } else {
      const level = { width: next, parentWidth: width, parents: mismatched.map((segment) => segment.id) };
      const [taskLevel, businessLevel] = await Promise.all([
        tasks.digests(level, 'normal'),
        business.digests(level, 'normal'),
      ]);
      found = levelMismatches(taskLevel, businessLevel);
    }
    record(next, found, 'normal');
    width = next;
    mismatched = found.mismatched;
  }
  return {
    levels,
    width,
    mismatched: mismatched.sort((a, b) => a.id - b.id),
    taskKeys: taskWhole.get(0)?.rows ?? 0,
  };
}

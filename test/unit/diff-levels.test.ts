import { describe, expect, it } from 'vitest';
import { DenseDigests } from '../../src/core/dense-digests.js';
import {
  BINARY_KEYS,
  HASH_SPACE,
  HASH_SUM_MODULUS,
  keyHash,
  normalizeKey,
  type KeySemantics,
} from '../../src/core/diff-keys.js';
import {
  bisectDigests,
  DEFAULT_LEVEL_LIMITS,
  restrictingParents,
  type DigestSource,
  type Digests,
  type LevelLimits,
  type LevelQuery,
} from '../../src/core/diff-levels.js';

/** Small limits, so a few thousand keys take several levels to reach the row level. */
const SMALL: LevelLimits = { leafRows: 4, maxFanout: 16, rowLevelRows: 8, denseLeafRows: 2, denseFanout: 64 };
const CASE_INSENSITIVE: KeySemantics = { caseInsensitive: true, padSpace: true };

const KEYS = Array.from({ length: 5000 }, (_, i) => `key-${String(i).padStart(5, '0')}`);

interface MemorySide {
  keys: string[];
  /** Task side: the keys whose task is not done. */
  notDone?: string[];
  dense?: boolean;
}

/** A side held in memory: digests computed from its keys as a database would, every call recorded. */
function memorySource(side: MemorySide, semantics: KeySemantics = BINARY_KEYS) {
  const calls = { grouped: [] as Array<{ level: LevelQuery; kind: string }>, dense: [] as number[] };
  const notDone = new Set(side.notDone ?? []);
  const hashOf = (key: string, keySemantics: KeySemantics) =>
    keyHash(normalizeKey(key, keySemantics) as string);
  const source: DigestSource = {
    digests: async (level, kind) => {
      calls.grouped.push({ level, kind });
      const parents = restrictingParents(level);
      const digests: Digests = new Map();
      for (const key of side.keys) {
        const hash = hashOf(key, kind === 'exact' ? BINARY_KEYS : semantics);
        if (parents && !parents.includes(Math.floor(hash / (level.parentWidth as number)))) continue;
        const segment = Math.floor(hash / level.width);
        const digest = digests.get(segment) ?? { rows: 0, hashSum: 0, notDone: 0 };
        digest.rows++;
        digest.hashSum = (digest.hashSum + hash) % HASH_SUM_MODULUS;
        if (notDone.has(key)) digest.notDone++;
        digests.set(segment, digest);
      }
      return digests;
    },
    ...(side.dense === undefined
      ? {}
      : {
          dense: {
            available: async () => side.dense as boolean,
            digests: async (width: number) => {
              calls.dense.push(width);
              const digests = new DenseDigests(width);
              for (const key of side.keys) digests.add(hashOf(key, semantics));
              for (const key of notDone) digests.addNotDone(hashOf(key, semantics));
              return digests;
            },
          },
        }),
  };
  return { source, calls };
}

/** The segments of `width` that hold one of `keys`, in hash order. */
function segmentsOf(keys: string[], width: number): number[] {
  return [...new Set(keys.map((key) => Math.floor(keyHash(key) / width)))].sort((a, b) => a - b);
}

/** The planted differences: a missing business row, an orphan, a duplicate row, a task not done. */
const MISSING_KEY = 'key-01234';
const ORPHAN_KEY = 'orphan-1';
const DUPLICATED_KEY = 'key-04000';
const NOT_DONE_KEY = 'key-03000';
const PLANTED = [MISSING_KEY, ORPHAN_KEY, DUPLICATED_KEY, NOT_DONE_KEY];

function plantedSides(dense?: { tasks: boolean; business: boolean }) {
  const tasks = memorySource({ keys: KEYS, notDone: [NOT_DONE_KEY], dense: dense?.tasks });
  const business = memorySource({
    keys: [...KEYS.filter((key) => key !== MISSING_KEY), ORPHAN_KEY, DUPLICATED_KEY],
    dense: dense?.business,
  });
  return { tasks, business };
}

describe('the levels of a checksum diff', () => {
  it('ends after the whole-table digests of the keys as stored when both sides hold the same keys', async () => {
    const tasks = memorySource({ keys: KEYS, dense: true });
    const business = memorySource({ keys: [...KEYS].reverse(), dense: true });
    const outcome = await bisectDigests(tasks.source, business.source, undefined, SMALL);
    expect(outcome.levels).toEqual([{ width: HASH_SPACE, segments: 1, mismatched: 0, hash: 'exact' }]);
    expect(outcome.mismatched).toEqual([]);
    expect(outcome.taskKeys).toBe(KEYS.length);
    expect(tasks.calls.grouped).toEqual([{ level: { width: HASH_SPACE }, kind: 'exact' }]);
    expect(tasks.calls.dense).toEqual([]);
  });

  it('splits until exactly the segments holding a planted difference are left, few enough to read', async () => {
    const { tasks, business } = plantedSides();
    const outcome = await bisectDigests(tasks.source, business.source, undefined, SMALL);
    expect(outcome.mismatched.map((m) => m.id)).toEqual(segmentsOf(PLANTED, outcome.width));
    expect(outcome.mismatched.reduce((sum, m) => sum + m.rows, 0)).toBeLessThanOrEqual(SMALL.rowLevelRows);
    expect(outcome.taskKeys).toBe(KEYS.length);
  });

  it('records each level: the whole table as stored, then splits of the mismatching segments in normal form', async () => {
    const { tasks, business } = plantedSides();
    const outcome = await bisectDigests(tasks.source, business.source, undefined, SMALL);
    expect(outcome.levels.length).toBeGreaterThan(2);
    expect(outcome.levels[0]).toEqual({ width: HASH_SPACE, segments: 1, mismatched: 1, hash: 'exact' });
    const allKeys = [...KEYS, ORPHAN_KEY];
    for (let i = 1; i < outcome.levels.length; i++) {
      const level = outcome.levels[i]!;
      const parentWidth = outcome.levels[i - 1]!.width;
      const parents = new Set(segmentsOf(PLANTED, parentWidth));
      const inParents = allKeys.filter((key) => parents.has(Math.floor(keyHash(key) / parentWidth)));
      expect(level).toEqual({
        width: level.width,
        segments: segmentsOf(inParents, level.width).length,
        mismatched: segmentsOf(PLANTED, level.width).length,
        hash: 'normal',
      });
      expect(level.width).toBeLessThan(parentWidth);
    }
    expect(outcome.width).toBe(outcome.levels.at(-1)!.width);
    // Each split below the first asks only for the children of the parents that mismatched.
    const deeper = tasks.calls.grouped.slice(2);
    expect(deeper.map((call) => [...(call.level.parents ?? [])].sort((a, b) => a - b))).toEqual(
      outcome.levels.slice(1, -1).map((level) => segmentsOf(PLANTED, level.width)),
    );
  });

  it('makes the first split dense when both sides can, and the deeper ones grouped', async () => {
    const { tasks, business } = plantedSides({ tasks: true, business: true });
    const outcome = await bisectDigests(tasks.source, business.source, undefined, SMALL);
    const firstSplit = outcome.levels[1]!;
    expect(tasks.calls.dense).toEqual([firstSplit.width]);
    expect(business.calls.dense).toEqual([firstSplit.width]);
    // A dense level counts every segment of the whole space that holds a key.
    expect(firstSplit.segments).toBe(segmentsOf([...KEYS, ORPHAN_KEY], firstSplit.width).length);
    expect(firstSplit.width).toBe(Math.ceil(HASH_SPACE / SMALL.denseFanout));
    expect(tasks.calls.grouped.length).toBe(1 + (outcome.levels.length - 2));
    expect(outcome.mismatched.map((m) => m.id)).toEqual(segmentsOf(PLANTED, outcome.width));
  });

  it('groups the first split when only one side can give a dense level', async () => {
    const { tasks, business } = plantedSides({ tasks: true, business: false });
    const outcome = await bisectDigests(tasks.source, business.source, undefined, SMALL);
    expect(tasks.calls.dense).toEqual([]);
    expect(outcome.levels[1]!.width).toBe(Math.ceil(HASH_SPACE / SMALL.maxFanout));
    expect(outcome.mismatched.map((m) => m.id)).toEqual(segmentsOf(PLANTED, outcome.width));
  });

  it('leaves nothing to read when the keys differ only as stored, not under the key semantics', async () => {
    const tasks = memorySource({ keys: KEYS }, CASE_INSENSITIVE);
    const business = memorySource({ keys: KEYS.map((key) => `${key.toUpperCase()} `) }, CASE_INSENSITIVE);
    const outcome = await bisectDigests(tasks.source, business.source, undefined, SMALL);
    expect(outcome.levels.map((level) => [level.hash, level.mismatched])).toEqual([
      ['exact', 1],
      ['normal', 0],
    ]);
    expect(outcome.mismatched).toEqual([]);
  });

  it('reads a mismatching table row by row without splitting when it holds few rows (default limits)', async () => {
    const { tasks, business } = plantedSides({ tasks: true, business: true });
    const outcome = await bisectDigests(tasks.source, business.source, undefined, DEFAULT_LEVEL_LIMITS);
    expect(outcome.levels).toEqual([{ width: HASH_SPACE, segments: 1, mismatched: 1, hash: 'exact' }]);
    expect(outcome.mismatched).toEqual([{ id: 0, rows: KEYS.length + 1 }]);
    expect(tasks.calls.dense).toEqual([]);
  });

  it('tells progress of the whole table and of each split', async () => {
    const { tasks, business } = plantedSides();
    const heard: string[] = [];
    const outcome = await bisectDigests(tasks.source, business.source, (text) => heard.push(text), SMALL);
    expect(heard[0]).toBe('checksums: whole table, keys as stored');
    expect(heard.length).toBe(outcome.levels.length);
    expect(heard[1]).toBe('checksums: level 1 (1 segments split)');
  });
});

import {
  BINARY_KEYS,
  emptyDigest,
  HASH_SPACE,
  HASH_SUM_MODULUS,
  keyHash,
  normalizeKey,
  type KeyHashFunction,
  type KeySemantics,
} from '../../../core/diff-keys.js';
import {
  restrictingParents,
  type DigestSource,
  type Digests,
  type HashKind,
  type LevelQuery,
} from '../../../core/diff-levels.js';
import { hashesInSql } from '../../../db/dialect.js';
import { store, type DigestRow } from '../../../db/port/index.js';
import type { Queryable } from '../../../db/types.js';
import type { ChecksumPlan } from '../plan.js';
import { denseDigests, streamsHashes } from './dense-hashes.js';

/**
 * The two sides of a checksum diff as digest sources (core/diff-levels.ts) that can also read the
 * rows of some segments: MariaDB/MySQL and PostgreSQL compute digests on the server, SQLite
 * streams its keys and the client hashes them.
 */
export interface ChecksumSide extends DigestSource {
  /** The rows of the segments `ids` of `width` (SQLite: every row; the caller filters). */
  rows(width: number, ids: readonly number[]): Promise<Iterable<unknown> | AsyncIterable<unknown>>;
}

/**
 * Up to this many tasks not done are listed by their hashes (4 bytes each), so digests read only
 * the key index; beyond it the digests read each task's status instead.
 */
export const NOT_DONE_LISTED = 1_000_000;

function digestMap(rows: DigestRow[]): Digests {
  const map: Digests = new Map();
  for (const row of rows) {
    map.set(Number(row.g), { rows: Number(row.n), hashSum: Number(row.s), notDone: Number(row.nd) });
  }
  return map;
}

/** The parents a level asks for, as a set; none when every hash is in one. */
function parentSet(level: LevelQuery): Set<number> | undefined {
  const parents = restrictingParents(level);
  return parents ? new Set(parents) : undefined;
}

/** The segment of `level` a hash falls in, or undefined when its parent is not asked for. */
function segmentOf(hash: number, level: LevelQuery, parents: Set<number> | undefined): number | undefined {
  if (parents && !parents.has(Math.floor(hash / (level.parentWidth as number)))) return undefined;
  return Math.floor(hash / level.width);
}

/** Aggregates digests in the client from a stream of rows with a key `k` (and a role `r` on the task side). */
async function clientDigests(
  stream: AsyncIterable<unknown>,
  hash: KeyHashFunction,
  semantics: KeySemantics,
  level: LevelQuery,
  isTask: boolean,
): Promise<Digests> {
  const map: Digests = new Map();
  const parents = parentSet(level);
  for await (const raw of stream) {
    const row = raw as Record<string, unknown>;
    const normal = normalizeKey(row.k, semantics);
    if (normal === null) continue;
    const h = keyHash(normal, hash);
    const segment = segmentOf(h, level, parents);
    if (segment === undefined) continue;
    const digest = map.get(segment) ?? emptyDigest();
    digest.rows++;
    digest.hashSum = (digest.hashSum + h) % HASH_SUM_MODULUS;
    if (isTask && Number(row.r) !== 1) digest.notDone++;
    map.set(segment, digest);
  }
  return map;
}

/** The key semantics of a hash kind: `exact` hashes keys as stored. */
function semanticsOf(plan: ChecksumPlan, kind: HashKind): KeySemantics {
  return kind === 'exact' ? BINARY_KEYS : plan.keySemantics;
}

/**
 * The task side on a server that hashes (MariaDB/MySQL, PostgreSQL). Digests read the (biz type,
 * key) index only; the tasks not done are counted apart (whole table) or listed by hash once and
 * placed in their segments here — unless there are more than NOT_DONE_LISTED of them, when each
 * digest reads the statuses.
 */
function serverTaskSide(plan: ChecksumPlan, q: Queryable): ChecksumSide {
  const { task } = plan;
  let notDone: Promise<number> | undefined;
  let listed: Promise<Uint32Array | undefined> | undefined;
  const count = () => (notDone ??= store.diff.countTasks(q, task, task.notDone));
  const list = () =>
    (listed ??= count().then(async (n) => {
      if (n > NOT_DONE_LISTED) return undefined;
      const hashes = new Uint32Array(n);
      let i = 0;
      for await (const row of store.diff.notDoneHashes(plan.source.db, task, plan.keySemantics))
        if (i < n) hashes[i++] = Number((row as { h: unknown }).h);
      return hashes.subarray(0, i);
    }));
  return {
    digests: async (level, kind) => {
      const semantics = semanticsOf(plan, kind);
      if (level.width >= HASH_SPACE) {
        const map = digestMap(
          await store.diff.taskDigests(q, task, semantics, { width: HASH_SPACE }, { kind, withRole: false }),
        );
        const n = await count();
        const whole = map.get(0);
        if (whole) whole.notDone = n;
        return map;
      }
      const hashes = await list();
      if (!hashes)
        return digestMap(await store.diff.taskDigests(q, task, semantics, level, { kind, withRole: true }));
      const map = digestMap(
        await store.diff.taskDigests(q, task, semantics, level, { kind, withRole: false }),
      );
      const parents = parentSet(level);
      for (const hash of hashes) {
        const segment = segmentOf(hash, level, parents);
        const digest = segment === undefined ? undefined : map.get(segment);
        if (digest) digest.notDone++;
      }
      return map;
    },
    dense: {
      // The tasks not done are placed by their listed hashes; beyond NOT_DONE_LISTED, no dense level.
      available: async () => streamsHashes(plan.source.db) && (await list()) !== undefined,
      digests: async (width) => {
        const digests = await denseDigests(
          plan.source.db,
          store.diff.taskHashStream(task, plan.keySemantics),
          width,
        );
        for (const hash of (await list()) ?? []) digests.addNotDone(hash);
        return digests;
      },
    },
    rows: (width, ids) => store.diff.taskRows(plan.source.db, task, plan.keySemantics, { width, ids }),
  };
}

/** The task side of a checksum plan, on the connection `q` of its read-only transaction. */
export function taskSource(plan: ChecksumPlan, q: Queryable): ChecksumSide {
  const db = plan.source.db;
  if (hashesInSql(db.dialect)) return serverTaskSide(plan, q);
  return {
    digests: async (level, kind) =>
      clientDigests(
        (await store.diff.taskRows(db, plan.task, plan.keySemantics)) as AsyncIterable<unknown>,
        plan.task.hash,
        semanticsOf(plan, kind),
        level,
        true,
      ),
    rows: () => store.diff.taskRows(db, plan.task, plan.keySemantics),
  };
}

/** The business side of a checksum plan, on the connection `q` of its read-only transaction. */
export function businessSource(plan: ChecksumPlan, q: Queryable): ChecksumSide {
  const db = plan.businessDb;
  if (hashesInSql(db.dialect)) {
    return {
      digests: async (level, kind) =>
        digestMap(await store.diff.businessDigests(q, plan.business, semanticsOf(plan, kind), level, kind)),
      // A rule's `where` runs only inside the read-only transaction: such a side is not streamed.
      dense: {
        available: async () => streamsHashes(db) && !plan.business.where,
        digests: (width) =>
          denseDigests(db, store.diff.businessHashStream(plan.business, plan.keySemantics), width),
      },
      rows: (width, ids) => store.diff.businessRows(db, q, plan.business, plan.keySemantics, { width, ids }),
    };
  }
  return {
    digests: async (level, kind) =>
      clientDigests(
        (await store.diff.businessRows(db, q, plan.business, plan.keySemantics)) as AsyncIterable<unknown>,
        plan.task.hash,
        semanticsOf(plan, kind),
        level,
        false,
      ),
    rows: () => store.diff.businessRows(db, q, plan.business, plan.keySemantics),
  };
}

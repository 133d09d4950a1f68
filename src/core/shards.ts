import { configError, usageError } from './errors.js';

/**
 * A sharded source: one task table split over several tables on several servers, each table one
 * shard. Pure: the shard list a config entry expands to, how an id names its shard, and the
 * merges that make N shards' answers one answer.
 */

/** One `shards:` entry of a source, as the config file gives it. */
export interface ShardEntry {
  db: string;
  /** One table, or a range: `async_task_{0..3}`, `async_task_{00..15}` (leading zeros kept). */
  table: string;
  name?: string;
}

/** One shard: a table on one server, by the name every row and message uses. */
export interface ShardSpec {
  name: string;
  db: string;
  table: string;
}

const RANGE = /^(.*)\{(\d+)\.\.(\d+)\}(.*)$/;

/** The tables a `table:` pattern names, in order; a plain name is itself. */
export function expandTables(pattern: string, where: string): string[] {
  const m = RANGE.exec(pattern);
  if (!m) {
    if (/[{}]/.test(pattern))
      throw configError(
        `${where}: '${pattern}' is not a table range`,
        'Write a range as name_{FIRST..LAST}, e.g. async_task_{0..3} or async_task_{00..15}.',
      );
    return [pattern];
  }
  const [, head, from, to, tail] = m as unknown as [string, string, string, string, string];
  const first = Number(from);
  const last = Number(to);
  if (last < first)
    throw configError(
      `${where}: the range {${from}..${to}} in '${pattern}' is empty`,
      `Write the lower number first: {${to}..${from}}.`,
    );
  const width = from.length > 1 && from.startsWith('0') ? from.length : 0;
  const out: string[] = [];
  for (let i = first; i <= last; i++) out.push(`${head}${String(i).padStart(width, '0')}${tail}`);
  return out;
}

/**
 * Every shard of a source, in config order. A shard is `<database>.<table>` unless `name:` says
 * otherwise (a range with a name gives `<name>.<table>`). Two shards with one name, or one table
 * of one database listed twice, are refused: a shard counted twice would double every figure.
 */
export function expandShards(
  entries: readonly ShardEntry[],
  databaseOf: (dsn: string) => string,
  where: string,
): ShardSpec[] {
  if (entries.length === 0)
    throw configError(`${where}.shards is empty`, 'List at least one shard, or use `table:` and `db:`.');
  const shards: ShardSpec[] = [];
  const byName = new Map<string, number>();
  const byTable = new Map<string, number>();
  entries.forEach((entry, i) => {
    const at = `${where}.shards[${i}]`;
    const tables = expandTables(entry.table, at);
    for (const table of tables) {
      const database = databaseOf(entry.db);
      const name =
        entry.name === undefined
          ? `${database}.${table}`
          : tables.length === 1
            ? entry.name
            : `${entry.name}.${table}`;
      const key = `${database}|${entry.db}|${table}`;
      const sameName = byName.get(name);
      if (sameName !== undefined)
        throw configError(
          `${at}: shard '${name}' is listed twice (also in shards[${sameName}])`,
          'Each shard must be listed once: a table counted twice doubles every figure. Remove one, or give them distinct `name:`s.',
        );
      const sameTable = byTable.get(key);
      if (sameTable !== undefined)
        throw configError(
          `${at}: table ${database}.${table} on ${entry.db.replace(/\/\/[^@/]*@/, '//')} is listed twice (also in shards[${sameTable}])`,
          'Each table must be one shard: remove the duplicate entry.',
        );
      byName.set(name, i);
      byTable.set(key, i);
      shards.push({ name, db: entry.db, table });
    }
  });
  return shards;
}

/** `shard:id` → the shard's name and the id within it; undefined when the text names no shard. */
export function splitShardId(text: string, names: readonly string[]): { shard: string; id: string } {
  const cut = text.lastIndexOf(':');
  const shard = cut > 0 ? text.slice(0, cut) : '';
  if (!shard || !names.includes(shard))
    throw usageError(
      cut > 0 ? `unknown shard '${shard}' in '${text}'` : `'${text}' names no shard`,
      `On a sharded source an id is SHARD:ID, e.g. ${names[0] ?? 'shop_0.async_task_0'}:42. Shards: ${names.slice(0, 6).join(', ')}${names.length > 6 ? ', …' : ''}.`,
    );
  return { shard, id: text.slice(cut + 1) };
}

/** Runs `fn` over every item with at most `limit` at once; results in input order. */
export async function boundedAll<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  });
  await Promise.all(lanes);
  return out;
}

/**
 * Merges lists that are each sorted by `compare` into one, keeping the first `limit` (0: all).
 * Each shard returns its own first `limit`, so the merged first `limit` is exact.
 */
export function mergeSorted<T>(lists: readonly T[][], compare: (a: T, b: T) => number, limit: number): T[] {
  const all = lists.flat().sort(compare);
  return limit > 0 ? all.slice(0, limit) : all;
}

/**
 * The latency histogram: a latency of v whole seconds falls in bucket ⌊100·ln(v + 1)⌋, so a
 * bucket's upper edge is at most e^0.01 ≈ 1.01005 times its lower edge (plus one second).
 * Buckets of N shards add; a percentile read from them is the largest latency seen in the bucket
 * that holds the nearest rank: never below the true value and at most 1.0051·(v + 1) − 1 above it.
 */
export const HISTOGRAM_SCALE = 100;

export interface HistogramBucket {
  bucket: number;
  count: number;
  /** The largest latency in the bucket (a measured value). */
  max: number;
}

/** Buckets of several shards as one histogram, by bucket. */
export function mergeHistograms(parts: readonly HistogramBucket[][]): HistogramBucket[] {
  const byBucket = new Map<number, HistogramBucket>();
  for (const part of parts)
    for (const b of part) {
      const seen = byBucket.get(b.bucket);
      if (seen) {
        seen.count += b.count;
        seen.max = Math.max(seen.max, b.max);
      } else byBucket.set(b.bucket, { ...b });
    }
  return [...byBucket.values()].sort((a, b) => a.bucket - b.bucket);
}

/** The nearest-rank percentile of a histogram (see HISTOGRAM_SCALE for its error); null when empty. */
export function histogramPercentile(buckets: readonly HistogramBucket[], percentile: number): number | null {
  const n = buckets.reduce((sum, b) => sum + b.count, 0);
  if (n === 0) return null;
  const rank = Math.max(1, Math.ceil((percentile * n) / 100));
  let seen = 0;
  for (const b of buckets) {
    seen += b.count;
    if (seen >= rank) return b.max;
  }
  return buckets[buckets.length - 1]?.max ?? null;
}

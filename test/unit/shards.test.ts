import { describe, expect, it } from 'vitest';
import {
  boundedAll,
  expandShards,
  expandTables,
  histogramPercentile,
  HISTOGRAM_SCALE,
  mergeHistograms,
  mergeSorted,
  splitShardId,
  type HistogramBucket,
} from '../../src/core/shards.js';
import { mergeShardReportRows } from '../../src/core/report-shards.js';
import { schemaDrift } from '../../src/ops/shards/drift.js';
import type { ColumnInfo } from '../../src/db/types.js';

const db = (name: string) => name;

describe('shard lists', () => {
  it('expands a table range, keeping leading zeros', () => {
    expect(expandTables('async_task_{0..3}', 'x')).toEqual([
      'async_task_0',
      'async_task_1',
      'async_task_2',
      'async_task_3',
    ]);
    expect(expandTables('t_{08..11}_v2', 'x')).toEqual(['t_08_v2', 't_09_v2', 't_10_v2', 't_11_v2']);
    expect(expandTables('async_task', 'x')).toEqual(['async_task']);
  });

  it('refuses an empty range and a malformed one, naming the entry', () => {
    expect(() => expandTables('async_task_{4..1}', 'sources.t.shards[1]')).toThrow(
      /sources\.t\.shards\[1\]: the range \{4\.\.1\} .* is empty/,
    );
    expect(() => expandTables('async_task_{a..b}', 'w')).toThrow(/not a table range/);
    expect(() => expandShards([], db, 'sources.t')).toThrow(/shards is empty/);
  });

  it('names shards database.table, or by name:', () => {
    const shards = expandShards(
      [
        { db: 'shop_0', table: 'async_task_{0..1}' },
        { db: 'shop_1', table: 'async_task_2', name: 'eu' },
        { db: 'shop_2', table: 'async_task_{3..4}', name: 'us' },
      ],
      db,
      'sources.t',
    );
    expect(shards.map((s) => s.name)).toEqual([
      'shop_0.async_task_0',
      'shop_0.async_task_1',
      'eu',
      'us.async_task_3',
      'us.async_task_4',
    ]);
  });

  it('refuses a shard listed twice, by table and by name', () => {
    expect(() =>
      expandShards(
        [
          { db: 'shop_0', table: 'async_task_{0..3}' },
          { db: 'shop_0', table: 'async_task_3' },
        ],
        db,
        'sources.t',
      ),
    ).toThrow(/shard 'shop_0\.async_task_3' is listed twice/);
    expect(() =>
      expandShards(
        [
          { db: 'a', table: 't1', name: 'x' },
          { db: 'b', table: 't2', name: 'x' },
        ],
        db,
        'sources.t',
      ),
    ).toThrow(/shard 'x' is listed twice/);
  });

  it('reads SHARD:ID and refuses an id without a known shard', () => {
    const names = ['shop_0.async_task_0', 'shop_0.async_task_1'];
    expect(splitShardId('shop_0.async_task_1:42', names)).toEqual({ shard: 'shop_0.async_task_1', id: '42' });
    expect(() => splitShardId('42', names)).toThrow(/names no shard/);
    expect(() => splitShardId('shop_9.async_task_1:42', names)).toThrow(
      /unknown shard 'shop_9\.async_task_1'/,
    );
  });

  it('runs at most `limit` at once, results in order', async () => {
    let running = 0;
    let peak = 0;
    const out = await boundedAll([5, 1, 4, 2, 3, 0], 2, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, n));
      running--;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30, 0]);
    expect(peak).toBe(2);
  });

  it('merges sorted lists and keeps the first limit of all', () => {
    const cmp = (a: number, b: number) => a - b;
    expect(
      mergeSorted(
        [
          [1, 4, 9],
          [2, 3],
          [0, 10],
        ],
        cmp,
        4,
      ),
    ).toEqual([0, 1, 2, 3]);
    expect(mergeSorted([[1, 4], [2]], cmp, 0)).toEqual([1, 2, 4]);
  });
});

/** A deterministic spread of latencies (seconds), long-tailed. */
function latencies(n: number, seed: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    const u = x / 2147483648;
    return Math.floor(Math.exp(u * 11)); // 1 s … ~16 h
  });
}

function histogramOf(values: number[]): HistogramBucket[] {
  const out = new Map<number, HistogramBucket>();
  for (const v of values) {
    const bucket = Math.floor(HISTOGRAM_SCALE * Math.log(Math.max(0, v) + 1));
    const b = out.get(bucket) ?? { bucket, count: 0, max: 0 };
    b.count++;
    b.max = Math.max(b.max, v);
    out.set(bucket, b);
  }
  return [...out.values()];
}

const nearestRank = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil((p * sorted.length) / 100)) - 1] as number;
};

describe('the latency histogram', () => {
  it('merges shards into a percentile within its documented bound', () => {
    const shards = [latencies(5000, 1), latencies(300, 7), latencies(12000, 99)];
    const merged = mergeHistograms(shards.map(histogramOf));
    for (const p of [50, 95, 99]) {
      const exact = nearestRank(shards.flat(), p);
      const read = histogramPercentile(merged, p) as number;
      expect(read).toBeGreaterThanOrEqual(exact);
      expect(read).toBeLessThanOrEqual(Math.exp(1 / HISTOGRAM_SCALE) * (exact + 1) - 1 + 1e-9);
    }
    expect(merged.reduce((s, b) => s + b.count, 0)).toBe(17300);
  });

  it('is not the p95 of one shard (can fail: a merge that kept one shard would)', () => {
    const small = latencies(200, 3).map((v) => v + 50_000);
    const big = latencies(5000, 5);
    const merged = histogramPercentile(mergeHistograms([histogramOf(small), histogramOf(big)]), 95);
    expect(merged).not.toBe(histogramPercentile(histogramOf(small), 95));
    expect(histogramPercentile([], 95)).toBeNull();
  });
});

describe('report rows of several shards', () => {
  it('adds counts per biz type and states each oldest due on its own clock', () => {
    const merged = mergeShardReportRows(
      [
        {
          nowEpoch: 1000,
          window: [
            {
              bizType: 'a',
              created: 3,
              succeeded: 2,
              failed: 1,
              latencySum: 10,
              latencyCount: 2,
              latencyP95: 6,
              latencyP95All: 6,
            },
          ],
          due: [{ bizType: 'a', count: 2, oldestEpoch: 900 }],
          stuck: [],
          failedOpen: [{ bizType: 'a', count: 1 }],
          histogram: [{ bizType: 'a', bucket: 194, count: 2, max: 6 }],
        },
        {
          // This server's clock runs 50 s ahead: its oldest due (age 300 s) is the oldest of all.
          nowEpoch: 1050,
          window: [
            {
              bizType: 'a',
              created: 1,
              succeeded: 1,
              failed: 0,
              latencySum: 30,
              latencyCount: 1,
              latencyP95: 30,
              latencyP95All: 30,
            },
            {
              bizType: 'b',
              created: 5,
              succeeded: 5,
              failed: 0,
              latencySum: 5,
              latencyCount: 5,
              latencyP95: 1,
              latencyP95All: null,
            },
          ],
          due: [{ bizType: 'a', count: 4, oldestEpoch: 750 }],
          stuck: [{ bizType: 'b', count: 1 }],
          failedOpen: [{ bizType: 'a', count: 2 }],
          histogram: [
            { bizType: 'a', bucket: 343, count: 1, max: 30 },
            { bizType: 'b', bucket: 69, count: 5, max: 1 },
          ],
        },
      ],
      1050,
    );
    const a = merged.window.find((w) => w.bizType === 'a');
    expect(a).toMatchObject({
      created: 4,
      succeeded: 3,
      failed: 1,
      latencySum: 40,
      latencyCount: 3,
      latencyP95: 30,
    });
    expect(merged.due).toEqual([{ bizType: 'a', count: 6, oldestEpoch: 750 }]);
    expect(merged.failedOpen).toEqual([{ bizType: 'a', count: 3, oldestEpoch: null }]);
    expect(merged.window.filter((w) => w.latencyP95All !== null)).toHaveLength(1);
  });
});

const col = (name: string, columnType: string, nullable = false): ColumnInfo => ({
  name,
  dataType: columnType.replace(/\(.*/, ''),
  columnType,
  maxLength: null,
  nullable,
});

describe('schema drift between shards', () => {
  const base = [
    col('id', 'bigint(20)'),
    col('status', 'tinyint(4)'),
    col('last_error', 'varchar(512)', true),
  ];
  it('finds a missing column and a changed type on one engine', () => {
    const drift = schemaDrift([
      { name: 's0', columns: base, engine: 'mysql' },
      { name: 's1', columns: base, engine: 'mysql' },
      { name: 's2', columns: [base[0] as ColumnInfo, col('status', 'int(11)')], engine: 'mysql' },
    ]);
    expect(drift.map((d) => d.column)).toEqual(['last_error', 'status']);
    expect(drift[0]?.differing).toEqual([{ shard: 's2', form: 'missing' }]);
  });
  it('finds nothing on equal shards, and compares only names across engines', () => {
    expect(
      schemaDrift([
        { name: 's0', columns: base },
        { name: 's1', columns: base },
      ]),
    ).toEqual([]);
    const pg = [
      col('id', 'bigint'),
      col('status', 'smallint'),
      col('last_error', 'character varying(512)', true),
    ];
    expect(
      schemaDrift([
        { name: 'm', columns: base, engine: 'mysql' },
        { name: 'p', columns: pg, engine: 'pg' },
      ]),
    ).toEqual([]);
    expect(
      schemaDrift([
        { name: 'm', columns: base, engine: 'mysql' },
        { name: 'p', columns: pg.slice(0, 2), engine: 'pg' },
      ]).map((d) => d.column),
    ).toEqual(['last_error']);
  });
});

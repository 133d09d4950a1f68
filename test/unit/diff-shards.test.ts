import { describe, expect, it } from 'vitest';
import type { Finding } from '../../src/core/diff.js';
import type { DiffPlan } from '../../src/verbs/diff/plan.js';
import type { DiffResult, RuleResult } from '../../src/verbs/diff/diff.js';
import { mergeShardDiffs } from '../../src/verbs/diff/shards/merge.js';
import { ShardOrphans } from '../../src/verbs/diff/shards/orphans.js';

/** A plan as the orphan pool reads it: the rule's name and business table (no lookups are run here). */
const plan = (db?: string) =>
  ({
    kind: 'join',
    rule: { name: 'r', business: { table: 'biz', ...(db ? { db } : {}) } },
  }) as unknown as DiffPlan;

const orphan = (key: string | null, rows = 1): Finding => ({
  kind: 'orphan',
  rule: 'r',
  taskId: null,
  key,
  bizId: null,
  eventId: null,
  status: null,
  businessRows: rows,
});

describe('orphans across shards', () => {
  it('keeps a key only when every shard compared with the same business table lacks its task', async () => {
    const pool = new ShardOrphans();
    const shared = plan('mysql://biz/b');
    for (const s of ['s1', 's2', 's3']) pool.plan(s, `mysql://h/${s}`, shared);
    for (const s of ['s1', 's2', 's3']) pool.hold(s, `mysql://h/${s}`, orphan('k-everywhere'), shared);
    // k-on-s3 has its task on s3: s3 does not name it.
    for (const s of ['s1', 's2']) pool.hold(s, `mysql://h/${s}`, orphan('k-on-s3'), shared);
    for (const s of ['s1', 's2', 's3']) pool.hold(s, `mysql://h/${s}`, orphan(null, 2), shared);
    const [found] = await pool.resolve(['r']);
    expect(found?.orphans.map((o) => [o.key, o.businessRows, o.shard])).toEqual([
      ['k-everywhere', 1, null],
      [null, 2, null],
    ]);
  });

  it('groups shards by business table: a rule without business.db is each database of its own', async () => {
    const pool = new ShardOrphans();
    const own = plan();
    pool.plan('a0', 'mysql://h/a', own);
    pool.plan('a1', 'mysql://h/a', own);
    pool.hold('a0', 'mysql://h/a', orphan('x'), own);
    // Only one of database a's two shards lacks y: y is no orphan.
    pool.hold('a1', 'mysql://h/a', orphan('x'), own);
    pool.hold('a1', 'mysql://h/a', orphan('y'), own);
    const found = await pool.resolve(['r']);
    expect(found.map((f) => f.orphans.map((o) => o.key))).toEqual([['x']]);
  });
});

describe('merging shard diffs', () => {
  const counts = (missing: number) => ({ missing, duplicate: 0, orphan: 0, unsettled: 0 });
  const rule = (missing: number, samples: Finding[]): RuleResult =>
    ({
      name: 'r',
      bizType: 'b',
      source: 's',
      table: 't',
      business: { table: 'biz', key: 'k', expect: 'exactly-one', db: 'db', where: null, orphans: true },
      mode: 'same-server',
      walk: 'join',
      tasksChecked: 10,
      findings: counts(missing),
      samples,
      warnings: ['slow'],
      durationMs: 5,
    }) as RuleResult;
  const missing = (id: number, shard: string): Finding => ({
    ...orphan(`m${id}`),
    kind: 'missing',
    taskId: id,
    shard,
  });

  it('adds counts, adds the orphans once, keeps samples per kind with their shard', () => {
    const parts = [
      {
        shard: 'a',
        result: {
          rules: [rule(2, [missing(1, 'a'), missing(2, 'a')])],
          total: counts(2),
          enqueue: null,
        } as DiffResult,
      },
      {
        shard: 'b',
        result: { rules: [rule(1, [missing(3, 'b')])], total: counts(1), enqueue: null } as DiffResult,
      },
    ];
    const merged = mergeShardDiffs(parts, new Map([['r', [{ ...orphan('o', 3), shard: null }]]]), {
      source: 'tasks',
      table: '2 shards',
      samplesPerKind: 2,
      enqueue: null,
    });
    expect(merged.total).toEqual({ missing: 3, duplicate: 0, orphan: 3, unsettled: 0 });
    expect(merged.rules[0]?.tasksChecked).toBe(20);
    expect(merged.rules[0]?.samples.map((s) => [s.kind, s.shard])).toEqual([
      ['missing', 'a'],
      ['missing', 'a'],
      ['orphan', null],
    ]);
    expect(merged.rules[0]?.warnings).toEqual(['shard a: slow', 'shard b: slow']);
    expect(merged.shards.map((s) => [s.name, s.findings?.missing])).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
  });
});

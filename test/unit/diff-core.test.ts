import { describe, expect, it } from 'vitest';
import {
  classifyTask,
  FindingTally,
  isOrphan,
  needsSiblings,
  nextChunkSpan,
  normalizeRule,
  roleOf,
  type ExpectMode,
} from '../../src/core/diff.js';
import {
  childWidth,
  commonKeyHash,
  keyHash,
  normalizeKey,
  segmentConsistent,
  semanticsOfCollation,
} from '../../src/core/diff-keys.js';
import { TaskreconError } from '../../src/errors.js';

const one = { tasks: 1, doneTasks: 1 };

describe('classifyTask', () => {
  const table: Array<[ExpectMode, number, string | undefined]> = [
    ['exactly-one', 0, 'missing'],
    ['exactly-one', 1, undefined],
    ['exactly-one', 2, 'duplicate'],
    ['at-least-one', 0, 'missing'],
    ['at-least-one', 1, undefined],
    ['at-least-one', 5, undefined],
    ['at-most-one', 0, undefined],
    ['at-most-one', 1, undefined],
    ['at-most-one', 2, 'duplicate'],
  ];
  it.each(table)('a done task under %s with %i business rows is %s', (mode, rows, kind) => {
    expect(classifyTask('done', { rows, ...one }, mode)).toBe(kind);
  });

  it('an open (failed/pending) task with an effect is unsettled, without one is nothing', () => {
    expect(classifyTask('open', { rows: 1, tasks: 1, doneTasks: 0 }, 'exactly-one')).toBe('unsettled');
    expect(classifyTask('open', { rows: 0, tasks: 1, doneTasks: 0 }, 'exactly-one')).toBeUndefined();
    // A failed attempt next to a done task of the same key: the one row is the done task's.
    expect(classifyTask('open', { rows: 1, tasks: 2, doneTasks: 1 }, 'exactly-one')).toBeUndefined();
    expect(classifyTask('open', { rows: 2, tasks: 2, doneTasks: 1 }, 'exactly-one')).toBe('unsettled');
  });

  it('processing and compensated tasks are never findings', () => {
    for (const rows of [0, 1, 3])
      expect(classifyTask('other', { rows, tasks: 1, doneTasks: 0 }, 'exactly-one')).toBeUndefined();
  });

  it('two done tasks sharing a key expect a row each', () => {
    expect(classifyTask('done', { rows: 2, tasks: 2, doneTasks: 2 }, 'exactly-one')).toBeUndefined();
    expect(classifyTask('done', { rows: 3, tasks: 2, doneTasks: 2 }, 'exactly-one')).toBe('duplicate');
  });

  it('roles follow taskStatus', () => {
    expect(roleOf('success', ['success'])).toBe('done');
    expect(roleOf('compensated', ['success', 'compensated'])).toBe('done');
    expect(roleOf('failed', ['success'])).toBe('open');
    expect(roleOf('pending', ['success'])).toBe('open');
    expect(roleOf('processing', ['success'])).toBe('other');
    expect(roleOf('compensated', ['success'])).toBe('other');
  });

  it('siblings are looked up only where they can change the answer', () => {
    expect(needsSiblings('done', 0, 'exactly-one')).toBe(false);
    expect(needsSiblings('done', 1, 'exactly-one')).toBe(false);
    expect(needsSiblings('done', 2, 'exactly-one')).toBe(true);
    expect(needsSiblings('done', 2, 'at-least-one')).toBe(false);
    expect(needsSiblings('open', 1, 'exactly-one')).toBe(true);
  });

  it('orphans are business keys with rows and no task', () => {
    expect(isOrphan(0, 1)).toBe(true);
    expect(isOrphan(1, 1)).toBe(false);
    expect(isOrphan(0, 0)).toBe(false);
  });
});

describe('normalizeRule', () => {
  const base = { name: 'r', bizType: 'coupon', business: { table: 'user_coupon', key: 'order_id' } };
  it('applies the defaults', () => {
    expect(normalizeRule(base, 0)).toMatchObject({
      taskStatus: ['success'],
      taskKey: 'bizId',
      business: { expect: 'exactly-one' },
    });
  });
  it.each([
    [{ expect: 'exactly-once' }, /unknown expect mode 'exactly-once'/],
    [{ where: "status = 'x'; DROP TABLE user_coupon" }, /contains ';'/],
    [{ where: 'status = 1 -- and more' }, /comment/],
  ])('refuses %o with a config error (exit 3)', (business, message) => {
    let error: unknown;
    try {
      normalizeRule({ ...base, business: { ...base.business, ...business } }, 0);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TaskreconError);
    expect((error as TaskreconError).exit).toBe(3);
    expect((error as TaskreconError).message).toMatch(message);
  });
  it('keeps a where whose quoted text holds what would otherwise be refused', () => {
    expect(
      normalizeRule({ ...base, business: { ...base.business, where: "note <> '--x#'" } }, 0).business.where,
    ).toBe("note <> '--x#'");
  });
});

describe('chunk sizing toward --chunk-time', () => {
  it('grows a fast chunk at most 4× and shrinks a slow one at most to a quarter', () => {
    expect(nextChunkSpan(1000, 100, 500)).toBe(4000);
    expect(nextChunkSpan(1000, 250, 500)).toBe(2000);
    expect(nextChunkSpan(1000, 500, 500)).toBe(1000);
    expect(nextChunkSpan(1000, 10_000, 500)).toBe(250);
    expect(nextChunkSpan(1000, 0, 500)).toBe(4000);
  });
});

describe('cross-server keys', () => {
  it('reads case and trailing-space semantics off the collation', () => {
    expect(semanticsOfCollation('utf8mb4_general_ci')).toEqual({ caseInsensitive: true, padSpace: true });
    expect(semanticsOfCollation('utf8mb4_bin')).toEqual({ caseInsensitive: false, padSpace: true });
    expect(semanticsOfCollation('utf8mb4_nopad_bin')).toEqual({ caseInsensitive: false, padSpace: false });
    expect(semanticsOfCollation('utf8mb4_0900_ai_ci')).toEqual({ caseInsensitive: true, padSpace: false });
    expect(semanticsOfCollation(null)).toEqual({ caseInsensitive: false, padSpace: false });
  });
  it('normalises keys as the collation compares them; integers as their decimal text', () => {
    const ci = semanticsOfCollation('utf8mb4_general_ci');
    expect(normalizeKey('ABC  ', ci)).toBe('abc');
    expect(normalizeKey('ABC  ', semanticsOfCollation('utf8mb4_nopad_bin'))).toBe('ABC  ');
    expect(normalizeKey(42, ci)).toBe('42');
    expect(normalizeKey(null, ci)).toBeNull();
  });
  it("hashes like MariaDB's CRC32()", () => {
    // SELECT CRC32('ord-1') → 576472767 on MariaDB 10.11
    expect(keyHash('ord-1')).toBe(576472767);
  });
  it("hashes like MD5's first 4 bytes, as PostgreSQL and MariaDB compute it in SQL", () => {
    // SELECT ('x' || left(md5('ord-1'), 8))::bit(32)::bigint → 3139977987 on PostgreSQL 15, and
    // CAST(CONV(LEFT(MD5('ord-1'), 8), 16, 10) AS UNSIGNED) on MariaDB 10.11.
    expect(keyHash('ord-1', 'md5')).toBe(3139977987);
    expect(keyHash('ord-1', 'md5')).not.toBe(keyHash('ord-1', 'crc32'));
  });
  it('picks the first hash every side hashing in SQL has: CRC32 between MariaDB servers, MD5 with PostgreSQL', () => {
    const maria = ['crc32', 'md5'] as const;
    const postgres = ['md5'] as const;
    expect(commonKeyHash(maria, maria)).toBe('crc32');
    expect(commonKeyHash(maria, 'client')).toBe('crc32');
    expect(commonKeyHash(maria, postgres)).toBe('md5');
    expect(commonKeyHash(postgres, postgres)).toBe('md5');
    expect(commonKeyHash('client', postgres)).toBe('md5');
    expect(commonKeyHash(['crc32'], postgres)).toBeUndefined();
  });
  it('a segment is consistent only when both sides hold the same keys and every task is done', () => {
    expect(
      segmentConsistent({ rows: 2, hashSum: 10, notDone: 0 }, { rows: 2, hashSum: 10, notDone: 0 }),
    ).toBe(true);
    expect(
      segmentConsistent({ rows: 2, hashSum: 10, notDone: 1 }, { rows: 2, hashSum: 10, notDone: 0 }),
    ).toBe(false);
    expect(
      segmentConsistent({ rows: 2, hashSum: 10, notDone: 0 }, { rows: 2, hashSum: 11, notDone: 0 }),
    ).toBe(false);
    expect(
      segmentConsistent({ rows: 2, hashSum: 10, notDone: 0 }, { rows: 3, hashSum: 10, notDone: 0 }),
    ).toBe(false);
  });
  it('splits a mismatching segment into leaf-sized children, bounded by the fan-out', () => {
    expect(childWidth(2 ** 32, 640, 64, 4096)).toBe(Math.ceil(2 ** 32 / 10));
    expect(childWidth(2 ** 32, 10_000_000, 64, 4096)).toBe(2 ** 32 / 4096);
    expect(childWidth(2, 1000, 64, 4096)).toBe(1);
  });
});

describe('FindingTally', () => {
  it('counts every finding, orphans by business rows, and keeps the first samples of each kind', () => {
    const tally = new FindingTally(1);
    const f = {
      rule: 'r',
      taskId: 1,
      key: 'k',
      bizId: 'k',
      eventId: null,
      status: 'success' as const,
      businessRows: 0,
    };
    tally.add({ ...f, kind: 'missing' });
    tally.add({ ...f, kind: 'missing', taskId: 2 });
    tally.add({ ...f, kind: 'orphan', taskId: null, status: null, businessRows: 3 });
    expect(tally.counts).toEqual({ missing: 2, duplicate: 0, orphan: 3, unsettled: 0 });
    expect(tally.samples().map((s) => s.taskId)).toEqual([1, null]);
  });
});

import { describe, expect, it } from 'vitest';
import { groupErrors, normaliseError } from '../../src/core/error-groups.js';

describe('error groups', () => {
  it('takes ids, long numbers, uuids and quoted values out, keeps short codes such as HTTP statuses', () => {
    expect(normaliseError('order 100234 failed: HTTP 503 from partner')).toBe(
      'order # failed: HTTP 503 from partner',
    );
    expect(normaliseError('event 5f0c2d3e-1a2b-4c5d-8e9f-0a1b2c3d4e5f rejected')).toBe(
      'event <uuid> rejected',
    );
    expect(normaliseError("Duplicate entry 'PAY2026112900042' for key 'uniq_pay'\n  at line 2")).toBe(
      "Duplicate entry '…' for key '…'",
    );
    expect(normaliseError(null)).toBe('(no error text)');
    expect(normaliseError('  ')).toBe('(no error text)');
  });

  it('merges errors that differ only in what varies, largest group first, with a text every member contains', () => {
    const groups = groupErrors([
      { error: 'coupon 1001 timed out after 3000 ms', count: 2 },
      { error: 'HTTP 503 from partner', count: 4 },
      { error: 'coupon 1002 timed out after 3000 ms', count: 3 },
      { error: null, count: 1 },
    ]);
    expect(groups.map((g) => [g.pattern, g.count])).toEqual([
      ['coupon # timed out after # ms', 5],
      ['HTTP 503 from partner', 4],
      ['(no error text)', 1],
    ]);
    expect(groups[0]?.contains).toBe('timed out after');
    expect(groups[0]?.example).toBe('coupon 1001 timed out after 3000 ms');
    expect(groups[2]?.contains).toBe('');
  });
});

import { describe, expect, it } from 'vitest';
import { grouped } from '../../src/core/grouped.js';

describe('grouped counts', () => {
  it('writes integers as toLocaleString("en-US") does', () => {
    const values = [0, 1, -1, 9, 10, 99, 100, 999, 1000, -1000, 9999, 12_345, 123_456, 1_234_567, -7_654_321];
    for (let digits = 1; digits <= 16; digits++)
      values.push(10 ** digits - 1, 10 ** digits, -(10 ** digits) + 1);
    let seed = 7;
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      values.push((seed % 2 === 0 ? 1 : -1) * Math.floor((seed / 2 ** 31) * 10 ** (1 + (i % 15))));
    }
    values.push(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER);
    for (const n of values) expect(grouped(n), String(n)).toBe(n.toLocaleString('en-US'));
  });

  it('leaves fractions, unsafe integers and non-numbers to toLocaleString', () => {
    for (const n of [0.5, -1234.5678, 1e21, 2 ** 60, Number.NaN, Number.POSITIVE_INFINITY, -0])
      expect(grouped(n)).toBe(n.toLocaleString('en-US'));
  });
});

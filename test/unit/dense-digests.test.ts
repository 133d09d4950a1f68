import { describe, expect, it } from 'vitest';
import { DenseDigests, denseMismatches } from '../../src/core/dense-digests.js';

const WIDTH = 2 ** 22; // 1024 segments

function digestsOf(hashes: number[], notDone: number[] = []): DenseDigests {
  const d = new DenseDigests(WIDTH);
  for (const h of hashes) d.add(h);
  for (const h of notDone) d.addNotDone(h);
  return d;
}

describe('dense digests', () => {
  it('puts each hash in its segment, counting rows and summing hashes', () => {
    const d = digestsOf([5, 7, WIDTH + 1, 2 ** 32 - 1]);
    expect(d.segments).toBe(1024);
    expect(d.digest(0)).toEqual({ rows: 2, hashSum: 12, notDone: 0 });
    expect(d.digest(1)).toEqual({ rows: 1, hashSum: WIDTH + 1, notDone: 0 });
    expect(d.digest(1023)).toEqual({ rows: 1, hashSum: 2 ** 32 - 1, notDone: 0 });
    expect(d.empty(2)).toBe(true);
  });

  it('keeps the hash sum mod 2^32, exact, however many keys a segment holds', () => {
    const d = new DenseDigests(2 ** 32);
    const h = 2 ** 32 - 1;
    const n = 70_000; // n·h > 2^48
    for (let i = 0; i < n; i++) d.add(h);
    expect(d.digest(0).hashSum).toBe(Number((BigInt(n) * BigInt(h)) % 2n ** 32n));
  });

  it('finds exactly the segments whose keys or statuses differ', () => {
    const tasks = digestsOf([1, 2, WIDTH * 3, WIDTH * 5, WIDTH * 7 + 9], [WIDTH * 5]);
    const business = digestsOf([1, 2, WIDTH * 3 + 1, WIDTH * 5, WIDTH * 9]);
    const found = denseMismatches(tasks, business);
    // 0 agrees; 3 differs by its hash, 5 by a task not done, 7 and 9 by a missing side.
    expect(found.mismatched.map((m) => m.id)).toEqual([3, 5, 7, 9]);
    expect(found.segments).toBe(5);
    expect(found.mismatched.find((m) => m.id === 7)?.rows).toBe(1);
  });

  it('refuses to compare levels of different widths', () => {
    expect(() => denseMismatches(new DenseDigests(WIDTH), new DenseDigests(WIDTH * 2))).toThrow(/widths/);
  });
});

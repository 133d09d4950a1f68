import { describe, expect, it } from 'vitest';
import { KeyRuns, mergeableCollation, padsSpaces, trimmedEnd } from '../../src/core/diff-weights.js';

/** utf8mb4_general_ci-like weights: two bytes per character (the upper-cased code unit). */
const SPACE = Buffer.from([0x00, 0x20]);
const weight = (key: string): Buffer =>
  Buffer.concat([...key.toUpperCase()].map((c) => Buffer.from([0x00, c.charCodeAt(0)])));

/** One wire row as the merge walk sees it: weight then key, in one buffer. */
function row(key: string): [Buffer, number, number, number, number] {
  const w = weight(key);
  const k = Buffer.from(key, 'utf8');
  return [Buffer.concat([w, k]), 0, w.length, w.length, w.length + k.length];
}

function runsOf(keys: string[], space: Buffer | null = SPACE): KeyRuns {
  const runs = new KeyRuns(space);
  for (const key of keys) runs.add(...row(key));
  runs.seal();
  return runs;
}

const matches = (runs: KeyRuns, key: string): boolean => {
  const w = weight(key);
  return runs.match(w, 0, w.length);
};

describe('trimmedEnd', () => {
  it('cuts whole trailing space weights only', () => {
    const w = weight('ab  ');
    expect(trimmedEnd(w, 0, w.length, SPACE)).toBe(4);
    expect(trimmedEnd(w, 0, w.length, null)).toBe(8);
    const odd = Buffer.from([0x00, 0x41, 0x20]);
    expect(trimmedEnd(odd, 0, 3, SPACE)).toBe(3);
    const spaces = weight('   ');
    expect(trimmedEnd(spaces, 0, spaces.length, SPACE)).toBe(0);
  });
});

describe('KeyRuns', () => {
  it('groups the rows of one key, trailing spaces and case included, and keeps the first key as sent', () => {
    const runs = runsOf(['a', 'b', 'B ', 'b', 'c']);
    expect(runs.runs).toBe(3);
    expect([...runs.repeated()]).toEqual(['b']);
  });

  it('with NO PAD, a trailing space makes another key', () => {
    const runs = runsOf(['b', 'b '], null);
    expect(runs.runs).toBe(2);
    expect([...runs.repeated()]).toEqual([]);
  });

  it('matches tasks in order, several per key, and reports the keys no task matched', () => {
    const runs = runsOf(['a', 'c', 'e', 'g']);
    expect(['a', 'a', 'b', 'c', 'f', 'g', 'h'].map((k) => matches(runs, k))).toEqual([
      true,
      true,
      false,
      true,
      false,
      true,
      false,
    ]);
    expect([...runs.unmatched()]).toEqual(['e']);
  });

  it('never matches a task out of order by mistake: it is reported, for the server to check', () => {
    const runs = runsOf(['a', 'c', 'e']);
    expect(matches(runs, 'e')).toBe(true);
    // Behind the cursor: not found by the forward pass, so unmatched (never matched to another key).
    expect(matches(runs, 'c')).toBe(false);
    expect(matches(runs, 'd')).toBe(false);
    expect([...runs.unmatched()]).toEqual(['a', 'c']);
  });

  it('starts empty again after reset, with the matches of the last chunk forgotten', () => {
    const runs = runsOf(['a', 'b']);
    expect(matches(runs, 'a')).toBe(true);
    runs.reset();
    for (const key of ['x', 'x']) runs.add(...row(key));
    runs.seal();
    expect(runs.runs).toBe(1);
    expect([...runs.unmatched()]).toEqual(['x']);
    expect([...runs.repeated()]).toEqual(['x']);
  });
});

describe('mergeableCollation and padsSpaces', () => {
  it('takes single-level collations only', () => {
    for (const c of [
      'utf8mb4_general_ci',
      'utf8mb4_bin',
      'utf8mb4_nopad_bin',
      'latin1_swedish_ci',
      'utf8mb4_0900_ai_ci',
    ]) {
      expect(mergeableCollation(c)).toBe(true);
    }
    for (const c of ['utf8mb4_uca1400_as_cs', 'utf8mb4_0900_as_cs', 'binary', null, undefined]) {
      expect(mergeableCollation(c)).toBe(false);
    }
  });

  it('knows which collations ignore trailing spaces', () => {
    expect(padsSpaces('utf8mb4_general_ci')).toBe(true);
    expect(padsSpaces('utf8mb4_bin')).toBe(true);
    expect(padsSpaces('utf8mb4_nopad_bin')).toBe(false);
    expect(padsSpaces('utf8mb4_0900_ai_ci')).toBe(false);
  });
});

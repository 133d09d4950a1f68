import { describe, expect, it } from 'vitest';
import { formatSeconds, parseDuration } from '../../src/core/duration.js';

describe('durations', () => {
  it('parses every unit', () => {
    expect(parseDuration('100ms', 'x')).toBe(100);
    expect(parseDuration('3s', 'x')).toBe(3000);
    expect(parseDuration('10m', 'x')).toBe(600_000);
    expect(parseDuration('2h', 'x')).toBe(7_200_000);
    expect(parseDuration('1d', 'x')).toBe(86_400_000);
    expect(parseDuration('1.5s', 'x')).toBe(1500);
    expect(parseDuration('45', 'x')).toBe(45_000);
  });

  it('names the flag when the value is not a duration', () => {
    expect(() => parseDuration('5x', '--stuck-after')).toThrow("--stuck-after: '5x' is not a duration");
    expect(() => parseDuration('-1s', '--pause')).toThrow('--pause');
  });

  it('formats seconds for operators', () => {
    expect(formatSeconds(45)).toBe('45s');
    expect(formatSeconds(600)).toBe('10m');
    expect(formatSeconds(3 * 3600 + 600)).toBe('3h10m');
    expect(formatSeconds(null)).toBe('n/a');
  });
});

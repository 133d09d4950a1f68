import { describe, expect, it } from 'vitest';
import { displayWidth, fitTable, fitWidths, pipedCell, pipedTable, truncate } from '../../src/render/fit.js';

const head = ['id', 'biz type', 'status', 'last error'];
const rows = [
  [
    1,
    'coupon',
    'failed',
    'HTTP 503 Service Unavailable from coupon-service: upstream connect error or disconnect',
  ],
  [1227, 'points', 'failed', '积分服务超时 (timeout after 3000ms)'],
];

describe('tables on a terminal fit its width', () => {
  it('cuts the widest column with … so that every line fits, with one rule and none under the rows', () => {
    const text = fitTable(head, rows, 60);
    const lines = text.split('\n');
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(60);
    expect(lines).toHaveLength(4); // header, one rule, two rows
    expect(lines[1]).toMatch(/^─+/);
    expect(lines[2]).toContain('…');
    expect(lines[2]?.startsWith('1 ')).toBe(true);
  });

  it('shows everything with no limit (--wide), and counts CJK characters as two cells', () => {
    const text = fitTable(head, rows, Number.POSITIVE_INFINITY);
    expect(text).toContain('upstream connect error or disconnect');
    expect(displayWidth('积分')).toBe(4);
    expect(displayWidth(truncate('积分服务超时', 7))).toBeLessThanOrEqual(7);
  });

  it('never cuts a column below its minimum', () => {
    expect(fitWidths([2, 30, 40], [2, 6, 6], 10)).toEqual([2, 6, 6]);
  });
});

describe('piped text is machine-safe', () => {
  it('writes plain integers, escapes TAB and newline, and keeps values in full', () => {
    expect(pipedCell('1,227')).toBe('1227');
    expect(pipedCell('-12,345,678')).toBe('-12345678');
    expect(pipedCell('a\tb\nc\\d')).toBe('a\\tb\\nc\\d');
    const text = pipedTable(['n', 'error'], [['1,227', 'line one\nline two\twith tab']]);
    expect(text.split('\n')).toEqual(['n\terror', '1227\tline one\\nline two\\twith tab']);
    expect(text.split('\n')[1]?.split('\t')).toHaveLength(2);
  });

  /** How a program reads a piped value back: \\ \t \r \n are escapes, any other backslash is itself. */
  const unescape = (cell: string) =>
    cell.replace(/\\([\\tnr])/g, (_m, c: string) => ({ '\\': '\\', t: '\t', n: '\n', r: '\r' })[c] as string);

  it('prints class names with single backslashes, doubling one only where it would read as an escape', () => {
    expect(pipedCell('app\\job\\SendPaidSmsJob')).toBe('app\\job\\SendPaidSmsJob');
    expect(pipedCell('think\\queue\\CallQueuedHandler@call')).toBe('think\\queue\\CallQueuedHandler@call');
    expect(pipedCell('app\\tasks\\Notify')).toBe('app\\\\tasks\\Notify');
    for (const value of [
      'app\\job\\Send',
      'app\\tasks\\new\\run',
      'C:\\\\share\\',
      'a\\\tb',
      'a\\\nb\\\\',
      '\\\\\\',
      'x\\r\\n\\t',
      'end\\',
    ]) {
      const piped = pipedCell(value);
      expect(piped).not.toMatch(/[\t\n\r]/);
      expect(unescape(piped), JSON.stringify(value)).toBe(value);
    }
  });
});

import { describe, expect, it } from 'vitest';
import {
  displayWidth,
  fitTable,
  fitWidths,
  hangingIndent,
  pipedCell,
  pipedTable,
  truncate,
  wrapWords,
} from '../../src/render/fit.js';

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
    // Headings stacked on two lines (never cut), one rule, two rows.
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(/^id\s+biz\s+status\s+last error$/);
    expect(lines[1]).toMatch(/^\s+type$/);
    expect(lines[2]).toMatch(/^─+/);
    expect(lines[3]).toContain('…');
    expect(lines[3]?.startsWith('1 ')).toBe(true);
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

describe('at 80 columns ids, times and headings stay whole', () => {
  const taskHead = [
    { title: 'id', fit: 'whole' as const },
    'biz type',
    { title: 'biz id', fit: 'whole' as const },
    { title: 'status', drop: 1 },
    { title: 'attempts', drop: 2 },
    { title: 'next retry', drop: 3 },
    'updated',
    'last error',
  ];
  const taskRows = [
    [
      '1307',
      'coupon',
      'PAY202612051307',
      'processing',
      '0',
      '2026-12-05T12:58:24Z',
      '2026-12-05T17:53:38Z',
      'cURL error 28: Operation timed out after 3000 milliseconds with 0 bytes received',
    ],
    ['2', 'points', 'PAY202612050002', 'failed', '7', '2026-12-05T18:50:39Z', '2026-12-05T18:50:39Z', null],
  ];

  it('leaves out the low-value columns first, says which, and cuts only the free text', () => {
    const text = fitTable(taskHead, taskRows, 80);
    const lines = text.split('\n');
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(80);
    expect(text).toContain('PAY202612051307');
    expect(text).toContain('PAY202612050002');
    expect(text).toContain('2026-12-05T17:53:38Z');
    expect(text).not.toMatch(/\d…/);
    expect(lines.find((l) => l.startsWith('1307'))).toMatch(/cURL error 28: Operation.*…$/);
    // status goes first, then attempts; next retry stays once the rest fits.
    expect(lines.at(-1)).toBe(
      '(left out to fit 80 columns: status, attempts, next retry; --wide shows them)',
    );
    expect(fitTable(taskHead, taskRows, 100).split('\n').at(-1)).toBe(
      '(left out to fit 100 columns: status, attempts; --wide shows them)',
    );
  });

  it('--wide shows every column in full on one heading line', () => {
    const text = fitTable(taskHead, taskRows, Number.POSITIVE_INFINITY);
    expect(text).toContain('processing');
    expect(text).toContain('with 0 bytes received');
    expect(text).not.toContain('left out');
    expect(text.split('\n')[1]).toMatch(/^─/);
  });

  it('stacks headings wider than their values instead of cutting them (report: latency avg, latency p95)', () => {
    const head = ['biz type', 'created', 'succeeded', 'failed', 'failure rate', 'latency avg', 'latency p95'];
    const row = ['coupon', '1,227', '985', '87', '7.1%', '1h46m', '3h2m'];
    expect(fitTable(head, [row], 80).split('\n')[1]).toMatch(/^─/);
    const text = fitTable(head, [row, ['points', '1,187', '980', '73', '6.2%', '58s', '28m43s']], 70);
    const lines = text.split('\n');
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(70);
    expect(text).not.toContain('…');
    expect(lines[0]).toMatch(/latency\s+latency/);
    expect(lines[1]).toMatch(/avg\s+p95/);
    expect(lines[4]).toContain('28m43s');
  });

  it('takes a column of numbers, durations or times as whole without being told', () => {
    const text = fitTable(['when', 'note'], [['2026-12-05T17:53:38Z', 'x'.repeat(100)]], 30);
    expect(text).toContain('2026-12-05T17:53:38Z');
    expect(text).toContain('x…');
  });
});

describe('long lines on a terminal wrap under themselves', () => {
  const message =
    'profile async-task maps id→id, bizType→biz_type, bizId→biz_id, eventId→event_id, payload→payload';

  it('breaks between words, indents each further line to where the text began', () => {
    const text = hangingIndent('ok    columns            ', message, 60);
    const lines = text.split('\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(60);
    for (const line of lines.slice(1)) expect(line).toMatch(/^ {25}\S/);
    expect(text.replace(/\n +/g, ' ')).toBe(`ok    columns            ${message}`);
  });

  it('keeps a word longer than the line whole, and leaves the text alone when piped (no width)', () => {
    expect(wrapWords('connected to sqlite:/a/very/long/path/to/the/sandbox.sqlite in 3 ms', 20)).toEqual([
      'connected to',
      'sqlite:/a/very/long/path/to/the/sandbox.sqlite',
      'in 3 ms',
    ]);
    expect(hangingIndent('ok  ', message, Number.POSITIVE_INFINITY)).toBe(`ok  ${message}`);
  });

  it('moves the text under a prefix that leaves no room, at the indent asked for', () => {
    const prefix = 'WARN unknown-queue redis/notifications_high_priority_v1_before_deploy: ';
    const lines = hangingIndent(prefix, 'queue holds 1 job(s) and no configured queue names it', 80, 5).split(
      '\n',
    );
    expect(lines[0]).toBe(prefix.trimEnd());
    expect(lines[1]).toBe('     queue holds 1 job(s) and no configured queue names it');
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

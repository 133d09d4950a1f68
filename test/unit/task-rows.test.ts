import { describe, expect, it } from 'vitest';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import { TaskSql } from '../../src/db/task-sql.js';
import { NdjsonWireEncoder } from '../../src/render/ndjson-wire.js';
import { TASK_FIELDS } from '../support/task-fields.js';
import { CSV_HEADER, isoWriter, jsonId, rowSerializer } from '../../src/render/task-rows.js';

const sql = new TaskSql(mysqlDialect, asyncTask, {
  nextRetryAt: 'datetime',
  createdAt: 'datetime',
  updatedAt: 'datetime',
});
const FIELDS = TASK_FIELDS;

/** What a line must mean: the task object of the JSON output, cut to the NDJSON fields. */
function expected(list: string, row: unknown[]): Record<string, unknown> {
  const task = sql.toTask(row) as unknown as Record<string, unknown>;
  return { list, ...Object.fromEntries(FIELDS.map((f) => [f, task[f]])) };
}

function row(overrides: Record<number, unknown> = {}): unknown[] {
  const r: unknown[] = [
    42,
    'coupon',
    'ORD1',
    'evt-1',
    0,
    3,
    1764403200,
    'HTTP 503',
    1764399600,
    1764403199,
    null,
    null,
    null,
  ];
  for (const [i, v] of Object.entries(overrides)) r[Number(i)] = v;
  return r;
}

// Strings that need escaping, or that tempt a fast path to skip it.
const NASTY = [
  'say "hi"',
  'back\\slash',
  'line\nbreak\tand tab\r',
  'nul \u0000 bell \u0007 esc \u001b del \u007f',
  '积分余额不足 — emoji 🎉',
  'lone surrogate \ud800 here',
  '\u2028 and \u2029 separators',
  '',
  '</script>',
];

describe('the NDJSON row serializer', () => {
  const s = rowSerializer(sql);

  it('writes exactly the fields and values of the task object, in order', () => {
    const line = s.ndjson('due', row());
    expect(line.endsWith('\n')).toBe(true);
    expect(line.split('\n')).toHaveLength(2);
    expect(Object.keys(JSON.parse(line))).toEqual(['list', ...FIELDS]);
    expect(JSON.parse(line)).toEqual(expected('due', row()));
    expect(JSON.parse(line)).toMatchObject({
      status: 'pending',
      nextRetryAt: '2025-11-29T08:00:00Z',
      createdAt: '2025-11-29T07:00:00Z',
      updatedAt: '2025-11-29T07:59:59Z',
    });
  });

  it.each(NASTY)('escapes %j so the line stays one valid JSON line', (text) => {
    const r = row({ 1: text, 2: text, 3: text, 7: text });
    const line = s.ndjson('failed', r);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(JSON.parse(line)).toEqual(expected('failed', r));
    expect(JSON.parse(line).lastError).toBe(text);
  });

  it('writes SQL NULLs as null, not as "null" or 0', () => {
    const r = row({ 1: null, 2: null, 3: null, 5: null, 6: null, 7: null, 8: null, 9: null });
    const parsed = JSON.parse(s.ndjson('stuck', r));
    expect(parsed).toEqual(expected('stuck', r));
    for (const f of [
      'bizType',
      'bizId',
      'eventId',
      'attempts',
      'nextRetryAt',
      'lastError',
      'createdAt',
      'updatedAt',
    ])
      expect(parsed[f]).toBeNull();
  });

  it('decodes binary values as UTF-8 with U+FFFD for invalid bytes, never a crash', () => {
    const binary = Buffer.from([0x48, 0x69, 0xff, 0xfe, 0x00, 0x22, 0xe4, 0xb8]);
    const r = row({ 7: binary, 2: Buffer.from('ORD-9', 'utf8') });
    const parsed = JSON.parse(s.ndjson('failed', r));
    expect(parsed).toEqual(expected('failed', r));
    expect(parsed.lastError).toBe('Hi\ufffd\ufffd\u0000"\ufffd');
    expect(parsed.bizId).toBe('ORD-9');
  });

  it('keeps ids as toId() does: safe integers as numbers, big or non-numeric ids as strings', () => {
    expect(jsonId(7)).toBe('7');
    expect(jsonId('123456789012345')).toBe('123456789012345');
    expect(jsonId('18446744073709551615')).toBe('"18446744073709551615"');
    expect(jsonId('007')).toBe('7');
    expect(jsonId('a"b')).toBe('"a\\"b"');
    expect(jsonId(18446744073709551615n)).toBe('"18446744073709551615"');
    for (const id of [7, '18446744073709551615', '007', 'uuid-1'])
      expect(JSON.parse(s.ndjson('due', row({ 0: id })))).toEqual(expected('due', row({ 0: id })));
  });

  it('maps stored statuses to logical ones, whether the driver gives numbers or strings', () => {
    expect(JSON.parse(s.ndjson('due', row({ 4: '1' }))).status).toBe('processing');
    expect(JSON.parse(s.ndjson('due', row({ 4: 3 }))).status).toBe('failed');
    expect(JSON.parse(s.ndjson('due', row({ 4: 9 }))).status).toBe('unknown');
  });

  it('writes integers from strings and garbage as null, as toInt() does', () => {
    expect(JSON.parse(s.ndjson('due', row({ 5: '4' }))).attempts).toBe(4);
    expect(JSON.parse(s.ndjson('due', row({ 5: 'n/a' }))).attempts).toBeNull();
    expect(JSON.parse(s.ndjson('due', row({ 5: 2.7 }))).attempts).toBe(2);
  });

  it('serialises a batch as the concatenation of its lines', () => {
    const rows = [row(), row({ 0: 43, 7: 'x"y' }), row({ 0: 44, 6: null })];
    expect(s.ndjsonBatch('due', rows)).toBe(rows.map((r) => s.ndjson('due', r)).join(''));
    expect(s.csvBatch('due', rows)).toBe(rows.map((r) => s.csv('due', r)).join(''));
    expect(s.ndjsonBatch('due', [])).toBe('');
  });
});

describe('epoch seconds to ISO-8601', () => {
  it('agrees with Date.toISOString for whole seconds across days, leap days and far dates', () => {
    const iso = isoWriter();
    const samples = [
      0, 1, 59, 60, 3599, 3600, 86_399, 86_400, 951_782_400, 1_709_164_799, 1_709_164_800, 4_102_444_799,
      253_402_300_799, -1, -86_401,
    ];
    for (let i = 0; i < 2000; i++) samples.push(Math.floor(Math.sin(i) * 4e9));
    for (const seconds of samples) {
      const want = new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
      expect(iso(seconds), String(seconds)).toBe(JSON.stringify(want));
      expect(iso(String(seconds)), String(seconds)).toBe(JSON.stringify(want));
    }
  });

  it('keeps milliseconds of fractional seconds and turns garbage into null', () => {
    const iso = isoWriter();
    expect(iso(1764403200.25)).toBe('"2025-11-29T08:00:00.250Z"');
    expect(iso('1764403200.5')).toBe('"2025-11-29T08:00:00.500Z"');
    expect(iso(null)).toBe('null');
    expect(iso('not a time')).toBe('null');
    expect(iso(Number.NaN)).toBe('null');
    expect(iso(Number.POSITIVE_INFINITY)).toBe('null');
  });

  it('does not return a stale value after the same-value cache', () => {
    const iso = isoWriter();
    expect(iso(0)).toBe('"1970-01-01T00:00:00Z"');
    expect(iso(0)).toBe('"1970-01-01T00:00:00Z"');
    expect(iso(1)).toBe('"1970-01-01T00:00:01Z"');
    expect(iso(86_400 * 365)).toBe('"1971-01-01T00:00:00Z"');
    expect(iso(2)).toBe('"1970-01-01T00:00:02Z"');
  });
});

describe('the CSV row serializer', () => {
  const s = rowSerializer(sql);

  it('quotes text cells, doubles quotes, leaves numbers bare and NULLs empty', () => {
    expect(CSV_HEADER.trim().split(',')).toEqual(['list', ...FIELDS]);
    const line = s.csv('failed', row({ 7: 'say "hi", then\nleave', 6: null }));
    expect(line).toBe(
      'failed,42,"coupon","ORD1","evt-1","pending",3,,"say ""hi"", then\nleave","2025-11-29T07:00:00Z","2025-11-29T07:59:59Z",,\n',
    );
    expect(s.csv('failed', row({ 10: 'sms', 12: 'redis' }))).toMatch(/,"sms","redis"\n$/);
  });
});

/** A row as the server sends it in the text protocol: each column's text as UTF-8 bytes (or raw bytes), NULL as null. */
function wire(columns: Array<string | Buffer | null>): { buf: Buffer; starts: Int32Array; ends: Int32Array } {
  const parts: Buffer[] = [Buffer.from('junk-before')];
  let at = parts[0]!.length;
  const starts = new Int32Array(columns.length);
  const ends = new Int32Array(columns.length);
  columns.forEach((c, i) => {
    if (c === null) {
      starts[i] = -1;
      ends[i] = -1;
      return;
    }
    const b = Buffer.isBuffer(c) ? c : Buffer.from(c, 'utf8');
    parts.push(b);
    starts[i] = at;
    at += b.length;
    ends[i] = at;
  });
  parts.push(Buffer.from('junk-after'));
  return { buf: Buffer.concat(parts), starts, ends };
}

/** The same row as mysql2 would give it (text decoded, numbers parsed where the column is numeric). */
function decoded(columns: Array<string | Buffer | null>): unknown[] {
  return columns.map((c, i) => {
    if (c === null || Buffer.isBuffer(c)) return c;
    if (
      [0, 4, 5, 6, 8, 9].includes(i) &&
      /^-?\d+(\.\d+)?$/.test(c) &&
      Number.isSafeInteger(Math.trunc(Number(c)))
    )
      return Number(c);
    return Buffer.from(c, 'utf8').toString('utf8'); // what survives the trip through UTF-8
  });
}

describe('the wire NDJSON encoder', () => {
  const base = [
    '42',
    'coupon',
    'ORD1',
    'evt-1',
    '0',
    '3',
    '1764403200',
    'HTTP 503',
    '1764399600',
    '1764403199',
    null,
    null,
    null,
    // The page key a list selects last (TaskSql.listSelect()): the exact next-retry time, never printed.
    '2025-11-29 08:00:00.25+00',
  ];
  const variants: Array<Record<number, string | Buffer | null>> = [
    {},
    ...NASTY.map((t) => ({ 1: t, 2: t, 3: t, 7: t })),
    { 1: null, 2: null, 3: null, 5: null, 6: null, 7: null, 8: null, 9: null },
    // A failed job's queue and connection (columns 10 and 12; 11 is maxAttempts, not written).
    { 10: 'sms', 11: '3', 12: 'redis' },
    { 10: 'say "hi"\n', 12: '积分 🎉' },
    { 7: Buffer.from([0x48, 0x69, 0xff, 0xfe, 0x00, 0x22, 0xe4, 0xb8]) },
    { 1: Array.from({ length: 128 }, (_, c) => String.fromCharCode(c)).join(''), 7: '\u2028\u2029' },
    // Well-formed and broken UTF-8: 2-, 3- and 4-byte sequences, then each kind of ill-formed one.
    { 7: Buffer.from('é 中 🎉 \u007f \u0080 \u07ff \u0800 \uffff \u{10ffff}', 'utf8') },
    ...[
      [0xc0, 0xaf],
      [0xc1, 0xbf],
      [0xe0, 0x80, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xf0, 0x80, 0x80, 0xaf],
      [0xf4, 0x90, 0x80, 0x80],
      [0xf5, 0x80],
      [0x80],
      [0xe4, 0xb8],
      [0xf0, 0x9f, 0x8e],
    ].map((bytes) => ({ 7: Buffer.concat([Buffer.from('a"'), Buffer.from(bytes), Buffer.from('\n中')]) })),
    { 0: '18446744073709551615' },
    { 0: '007' },
    { 0: '0' },
    { 0: 'uuid-"1"' },
    { 4: '3' },
    { 4: '9' },
    { 4: null },
    { 4: Buffer.from([0xff]) },
    { 4: 'pending' },
    { 5: '-2' },
    { 5: '0' },
    { 5: '05' },
    { 5: 'n/a' },
    { 6: '0', 8: '86399', 9: '951782400' },
    { 6: '1764403200.250000', 8: '-1', 9: '253402300799' },
    { 6: '999999999999', 8: 'x', 9: '' },
  ];

  it.each(variants.map((v, i) => [i, v] as const))(
    'writes variant %i byte for byte as the string serializer does',
    (_i, v) => {
      const columns = base.map((c, i) => (i in v ? v[i]! : c));
      const encoder = new NdjsonWireEncoder(sql, 'due');
      const { buf, starts, ends } = wire(columns);
      encoder.encode(buf, starts, ends);
      const want = rowSerializer(sql).ndjson('due', decoded(columns));
      expect(encoder.take().equals(Buffer.from(want, 'utf8')), want).toBe(true);
    },
  );

  it('escapes every ASCII byte wherever it falls in the text, in a word read whole or in the bytes after', () => {
    // Text is read four bytes at a time while none needs an escape: each byte at each place of
    // two words and the bytes after them, in one stream of rows (one wire buffer per row).
    const encoder = new NdjsonWireEncoder(sql, 'due');
    const serializer = rowSerializer(sql);
    let want = '';
    for (let byte = 0; byte < 0x80; byte++)
      for (let at = 0; at < 10; at++) {
        const text = 'abcdefghij'.slice(0, at) + String.fromCharCode(byte) + 'klmnopq'.slice(0, 10 - at);
        const columns = base.map((c, i) => (i === 2 ? text : i === 7 ? `中${text}` : c));
        const { buf, starts, ends } = wire(columns);
        encoder.encode(buf, starts, ends);
        want += serializer.ndjson('due', decoded(columns));
      }
    expect(encoder.take().toString('utf8')).toBe(want);
  });

  it('writes times byte for byte as the string serializer does while its columns go back and forth between days', () => {
    // Seconds at the edges of a day and of its hours, on days alternating across midnight, then
    // more days than the encoder keeps (its day cache starts over), in one stream of rows.
    const day = 20_421;
    const edges = [0, 1, 59, 60, 3599, 3600, 43_199, 86_399];
    const times: number[] = [];
    for (let k = 0; k < 40; k++)
      for (const s of edges) times.push((day + (k % 2)) * 86_400 + s, (day - k) * 86_400 + s);
    for (let d = 0; d < 1200; d++) times.push((day - 600 + d * 7) * 86_400 + ((d * 3_607) % 86_400));
    const encoder = new NdjsonWireEncoder(sql, 'due');
    const serializer = rowSerializer(sql);
    let want = '';
    times.forEach((t, i) => {
      const columns = base.map((c, j) =>
        j === 6
          ? String(t)
          : j === 8
            ? String(times[(i * 7) % times.length])
            : j === 9
              ? String(t - 86_399)
              : c,
      );
      const { buf, starts, ends } = wire(columns);
      encoder.encode(buf, starts, ends);
      want += serializer.ndjson('due', decoded(columns));
    });
    expect(encoder.take().toString('utf8')).toBe(want);
  });

  it('keeps count, the last row key and the list name across chunks', () => {
    const encoder = new NdjsonWireEncoder(sql, 'stuck', 64);
    const a = wire(base);
    encoder.encode(a.buf, a.starts, a.ends);
    encoder.setList('failed');
    const b = wire(
      base.map((c, i) =>
        i === 0 ? '43' : i === 6 ? '1764403300' : i === 13 ? '2025-11-29 08:01:40.123456+00' : c,
      ),
    );
    encoder.encode(b.buf, b.starts, b.ends);
    expect(encoder.rows).toBe(2);
    // The key is the exact time column, not the whole-second epoch the line prints.
    expect(encoder.lastRowKey()).toEqual({ id: '43', nextRetry: '2025-11-29 08:01:40.123456+00' });
    const lines = encoder
      .take()
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { list: string; id: number });
    expect(lines.map((l) => `${l.list}:${l.id}`)).toEqual(['stuck:42', 'failed:43']);
    expect(encoder.pending).toBe(0);
  });

  it('writes the next chunk into a chunk handed back once written, and never into one still out', () => {
    const encoder = new NdjsonWireEncoder(sql, 'due', 64);
    const r = wire(base);
    const line = rowSerializer(sql).ndjson('due', decoded(base));
    encoder.encode(r.buf, r.starts, r.ends);
    const first = encoder.take();
    expect(first.toString('utf8')).toBe(line);
    encoder.encode(r.buf, r.starts, r.ends);
    const second = encoder.take();
    // The first is still out (not handed back): the second has memory of its own.
    expect(second.buffer).not.toBe(first.buffer);
    expect(first.toString('utf8')).toBe(line);
    encoder.recycle(first);
    // The chunk being filled when it came back is taken, then the next is written into it.
    encoder.encode(r.buf, r.starts, r.ends);
    const third = encoder.take();
    expect(third.buffer).not.toBe(first.buffer);
    encoder.encode(r.buf, r.starts, r.ends);
    encoder.encode(r.buf, r.starts, r.ends);
    const fourth = encoder.take();
    expect(fourth.buffer).toBe(first.buffer);
    expect(fourth.toString('utf8')).toBe(line + line);
    expect(second.toString('utf8')).toBe(line);
    expect(third.toString('utf8')).toBe(line);
  });

  it('grows its buffer for a row bigger than a chunk', () => {
    const encoder = new NdjsonWireEncoder(sql, 'due', 16);
    const huge = '\u0001'.repeat(5000);
    const r = wire(base.map((c, i) => (i === 7 ? huge : c)));
    encoder.encode(r.buf, r.starts, r.ends);
    expect(JSON.parse(encoder.take().toString('utf8')).lastError).toBe(huge);
  });
});

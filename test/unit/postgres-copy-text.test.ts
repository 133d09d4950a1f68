import { describe, expect, it } from 'vitest';
import { CopyTextRows, sqlLiteral } from '../../src/db/engines/postgres/copy.js';
import { inlinePlaceholders } from '../../src/db/engines/postgres/placeholders.js';
import type { RowEncoder } from '../../src/db/types.js';

/** Collects the first `columns` columns of each row as text (null for SQL NULL). */
function collector(columns: number): RowEncoder & { rows: (string | null)[][] } {
  const rows: (string | null)[][] = [];
  return {
    rows,
    pending: 0,
    encode(buf, starts, ends) {
      const row: (string | null)[] = [];
      for (let i = 0; i < columns; i++)
        row.push((starts[i] as number) < 0 ? null : buf.toString('utf8', starts[i], ends[i]));
      rows.push(row);
    },
    take: () => Buffer.alloc(0),
  };
}

describe('COPY text rows', () => {
  it('decodes escapes and NULL, whatever the chunk boundaries', () => {
    const text = 'a\\tb\t\\N\tC:\\\\x\\n\\r\\b\\f\\v\t\\101\\x41\\q\\\\N\n1\t2\t\t券\n';
    const bytes = Buffer.from(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const encoder = collector(4);
      const rows = new CopyTextRows(encoder);
      rows.push(bytes.subarray(0, cut));
      rows.push(bytes.subarray(cut));
      rows.end();
      expect(encoder.rows).toEqual([
        ['a\tb', null, 'C:\\x\n\r\b\f\v', 'AAq\\N'],
        ['1', '2', '', '券'],
      ]);
    }
  });

  it('refuses a row with another column count, and data cut inside a row', () => {
    const rows = new CopyTextRows(collector(2));
    expect(() => rows.push(Buffer.from('1\t2\n1\n'))).toThrow(/has 1 columns, the first row had 2/);
    const cut = new CopyTextRows(collector(2));
    cut.push(Buffer.from('1\t2\n3\t'));
    expect(() => cut.end()).toThrow(/middle of a row/);
  });
});

describe('parameters inlined into a COPY statement', () => {
  it('quotes text (backslashes in an E string), parenthesises negatives, leaves quoted ? alone', () => {
    const sql = inlinePlaceholders(
      "SELECT '?' AS q, x - ?, ?, ?, ? FROM t WHERE a = ? AND b IS ?",
      [-5, "it's", "C:\\x'", 12, true, null],
      sqlLiteral,
    );
    expect(sql).toBe(
      "SELECT '?' AS q, x - (-5), 'it''s', E'C:\\\\x''', 12 FROM t WHERE a = TRUE AND b IS NULL",
    );
    expect(() => sqlLiteral(Number.NaN)).toThrow();
    expect(() => inlinePlaceholders('SELECT ?, ?', [1], sqlLiteral)).toThrow(/more placeholders/);
  });
});

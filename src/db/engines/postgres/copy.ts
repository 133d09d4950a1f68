import type { Pool } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { statementSite } from '../../statement-limit.js';
import type { RowEncoder } from '../../types.js';
import { inlinePlaceholders } from './placeholders.js';

/** Output bytes per chunk of copyEncoded(), as MySQL's wire path hands them out. */
const CHUNK_BYTES = 256 * 1024;

const TAB = 0x09;
const NEWLINE = 0x0a;
const BACKSLASH = 0x5c;

/** What a failed statement becomes (the connection's own error mapping); `timed` when the read limit applies. */
export type StatementFailure = (error: unknown, timed?: { site: { stack?: string }; ms: number }) => unknown;

/**
 * A value as an SQL literal, for COPY, which runs as a simple query and takes no parameters. Only
 * what taskrecon binds: numbers (negative ones parenthesised, so `- ?` never becomes a comment),
 * bigints, booleans, text and NULL. Text goes as an E'' string with backslashes doubled, which
 * reads the same whatever `standard_conforming_strings` is.
 */
export function sqlLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`cannot bind ${value} in a COPY statement`);
    return value < 0 || Object.is(value, -0) ? `(${value})` : String(value);
  }
  if (typeof value === 'bigint') return value < 0n ? `(${value})` : String(value);
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw new Error('cannot bind text holding NUL in a PostgreSQL statement');
    return value.includes('\\')
      ? `E'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`
      : `'${value.replace(/'/g, "''")}'`;
  }
  throw new Error(`cannot bind a ${typeof value} in a COPY statement`);
}

/**
 * Splits COPY's text format into rows and hands each to `encoder` as the bytes of its columns:
 * rows end with a newline, columns are separated by tabs, `\N` is NULL, and a backslash escapes
 * (`\\`, `\t`, `\n`, `\r`, `\b`, `\f`, `\v`, octal `\ddd`, hex `\xhh`; any other character stands
 * for itself). A row without a backslash is passed on as it arrived; a row with one is decoded into
 * a buffer of its own first. Every row must have as many columns as the first one.
 */
export class CopyTextRows {
  /** Rows decoded so far. */
  rows = 0;
  private columns = -1;
  private starts = new Int32Array(16);
  private ends = new Int32Array(16);
  private rest: Buffer | undefined;
  private scratch = Buffer.allocUnsafe(4096);

  constructor(private readonly encoder: RowEncoder) {}

  push(chunk: Buffer): void {
    let buf = chunk;
    if (this.rest) {
      buf = Buffer.concat([this.rest, chunk]);
      this.rest = undefined;
    }
    // One pass over the bytes: tabs end columns, a newline ends the row; a column that is exactly
    // `\N` is NULL, any other backslash marks the row as one to decode.
    const length = buf.length;
    let rowStart = 0;
    let from = 0;
    let n = 0;
    let escaped = false;
    let isNull = false;
    for (let i = 0; i < length; i++) {
      const b = buf[i] as number;
      if (b > BACKSLASH || (b !== TAB && b !== NEWLINE && b !== BACKSLASH)) continue;
      if (b === BACKSLASH) {
        const after = buf[i + 2];
        if (i === from && buf[i + 1] === 0x4e && (after === TAB || after === NEWLINE)) {
          isNull = true;
          i++;
        } else {
          escaped = true;
          i++; // the escaped byte is never a separator
        }
        continue;
      }
      if (n === this.starts.length) this.widen();
      this.starts[n] = isNull ? -1 : from;
      this.ends[n] = isNull ? -1 : i;
      n++;
      from = i + 1;
      isNull = false;
      if (b === NEWLINE) {
        this.row(buf, rowStart, i, n, escaped);
        rowStart = from;
        n = 0;
        escaped = false;
      }
    }
    if (rowStart < length) this.rest = Buffer.from(buf.subarray(rowStart));
  }

  /** Checks that the data ended at the end of a row. */
  end(): void {
    if (this.rest && this.rest.length > 0) throw new Error('COPY data ended in the middle of a row');
  }

  private row(buf: Buffer, start: number, end: number, n: number, escaped: boolean): void {
    if (this.columns < 0) this.columns = n;
    else if (n !== this.columns)
      throw new Error(`COPY row ${this.rows + 1} has ${n} columns, the first row had ${this.columns}`);
    this.rows++;
    if (!escaped) {
      this.encoder.encode(buf, this.starts, this.ends);
      return;
    }
    this.encoder.encode(this.unescape(buf, start, end, n), this.starts, this.ends);
  }

  /**
   * The row's columns decoded into the scratch buffer (decoded text is never longer than escaped
   * text). The encoder reads a row before the next one is decoded, so one buffer serves them all.
   */
  private unescape(buf: Buffer, start: number, end: number, n: number): Buffer {
    if (this.scratch.length < end - start)
      this.scratch = Buffer.allocUnsafe(Math.max(end - start, this.scratch.length * 2));
    const out = this.scratch;
    let at = 0;
    for (let c = 0; c < n; c++) {
      const from = this.starts[c] as number;
      const to = this.ends[c] as number;
      if (from < 0) continue; // NULL
      this.starts[c] = at;
      let i = from;
      while (i < to) {
        const b = buf[i] as number;
        if (b !== BACKSLASH || i + 1 >= to) {
          out[at++] = b;
          i++;
          continue;
        }
        const e = buf[i + 1] as number;
        i += 2;
        if (e >= 0x30 && e <= 0x37) {
          // \d, \dd or \ddd: an octal byte.
          let value = e - 0x30;
          for (let k = 0; k < 2 && i < to && (buf[i] as number) >= 0x30 && (buf[i] as number) <= 0x37; k++)
            value = value * 8 + ((buf[i++] as number) - 0x30);
          out[at++] = value & 0xff;
        } else if (e === 0x78 && i < to && isHex(buf[i] as number)) {
          // \xh or \xhh: a hex byte.
          let value = hexValue(buf[i++] as number);
          if (i < to && isHex(buf[i] as number)) value = value * 16 + hexValue(buf[i++] as number);
          out[at++] = value;
        } else {
          out[at++] = ESCAPED[e] ?? e;
        }
      }
      this.ends[c] = at;
    }
    return out;
  }

  private widen(): void {
    const starts = new Int32Array(this.starts.length * 2);
    const ends = new Int32Array(this.ends.length * 2);
    starts.set(this.starts);
    ends.set(this.ends);
    this.starts = starts;
    this.ends = ends;
  }
}

/** The byte each one-letter escape stands for. */
const ESCAPED: Record<number, number> = {
  0x62: 0x08, // \b
  0x66: 0x0c, // \f
  0x6e: 0x0a, // \n
  0x72: 0x0d, // \r
  0x74: 0x09, // \t
  0x76: 0x0b, // \v
};

const isHex = (b: number): boolean =>
  (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);
const hexValue = (b: number): number => (b <= 0x39 ? b - 0x30 : (b | 0x20) - 0x61 + 10);

/**
 * A read's rows through `encoder`, straight from `COPY (statement) TO STDOUT` (pg-copy-streams):
 * the server writes each value as text and no JS value is made per column. Parameters are
 * inlined as literals (COPY takes none). It runs in its own transaction under the statement time
 * limit, as the cursor does; a fired limit or any error ends the iteration with `fail`'s error.
 * Leaving early, or failing, closes the session (the server then drops the COPY).
 */
export async function* copyEncoded(
  pool: Pool,
  sql: string,
  params: readonly unknown[],
  encoder: RowEncoder,
  limitMs: number,
  begin: string,
  fail: StatementFailure,
): AsyncGenerator<Buffer> {
  const site = statementSite();
  const text = `COPY (${inlinePlaceholders(sql, params, sqlLiteral)}) TO STDOUT`;
  const client = await pool.connect().catch((error: unknown) => {
    throw fail(error);
  });
  let clean = false;
  let stream: ReturnType<typeof copyTo> | undefined;
  try {
    await client.query(
      limitMs > 0 ? `${begin}; SET LOCAL statement_timeout = ${Math.trunc(limitMs)}` : begin,
    );
    const rows = new CopyTextRows(encoder);
    stream = client.query(copyTo(text));
    const chunks = stream[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = (await chunks.next()) as IteratorResult<Buffer>;
        if (next.done) rows.end();
        else rows.push(next.value);
      } catch (error) {
        throw fail(error, { site, ms: limitMs });
      }
      if (next.done) break;
      if (encoder.pending >= CHUNK_BYTES) yield encoder.take();
    }
    if (encoder.pending > 0) yield encoder.take();
    await client.query('COMMIT');
    clean = true;
  } finally {
    // A COPY left half-read cannot be stopped on the session: close it (and the stream) instead.
    if (!clean) stream?.destroy();
    client.release(clean ? undefined : true);
  }
}

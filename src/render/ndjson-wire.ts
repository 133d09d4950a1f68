// Over 300 lines: one hot-path encoder writing every column byte by byte; split, each row would cost calls across modules.
import { isUtf8 } from 'node:buffer';
import { LIST_PAGE_KEY, type TaskSql } from '../db/task-sql.js';
import type { RowEncoder } from '../db/types.js';
import { isoWriter, jsonId, jsonInt, jsonText } from './task-rows.js';

/**
 * NDJSON lines written byte by byte from the wire form of list rows (TaskSql.taskSelect() order),
 * the fastest path of `scan --format ndjson`: no JS value per column, no string per line. Each
 * line is byte-identical to what rowSerializer().ndjson() writes for the same row; the common
 * cases (ASCII text with nothing to escape, plain digits, whole epoch seconds) are copied or
 * formatted in place, anything else goes through the same functions as the string serializer.
 */
export class NdjsonWireEncoder implements RowEncoder {
  /** Rows encoded since the encoder was made. */
  rows = 0;
  private out: Buffer;
  /** `out` seen as a DataView: constant text is written four bytes at a time. */
  private view: DataView;
  private at = 0;
  private head: Constant;
  private readonly statusCache = new Map<string, Constant>();
  private readonly oneByteStatus: Array<Constant | undefined> = [];
  private readonly isoDays = [new DayCache(), new DayCache(), new DayCache()];
  /** `"YYYY-MM-DDT` by day since the epoch, for every time column (shared with forks). */
  private dayPrefixes = new Map<number, Constant>();
  private lastBuf: Buffer | undefined;
  /** The wire buffer of the last row, and it seen as a DataView: text is read four bytes at a time. */
  private inBuf: Buffer | undefined;
  private inView: DataView = viewOf(Buffer.alloc(0));
  /** Chunks handed back once written, written into again instead of new memory (shared with forks). */
  private spare: Buffer[] = [];
  private readonly lastKey = new Int32Array(4);
  /** The columns written: a text id column's ids are written as the text they are (TaskSql.textId). */
  private readonly columns: readonly Column[];

  constructor(
    private readonly sql: TaskSql,
    list: string,
    private readonly chunkBytes = 256 * 1024,
  ) {
    this.columns = sql.textId ? TEXT_ID_COLUMNS : COLUMNS;
    this.out = Buffer.allocUnsafe(chunkBytes + CHUNK_HEADROOM);
    this.view = viewOf(this.out);
    this.head = constantOf(`{"list":${JSON.stringify(list)},"id":`);
  }

  /** The list the next lines belong to. */
  setList(list: string): void {
    this.head = constantOf(`{"list":${JSON.stringify(list)},"id":`);
  }

  /**
   * An encoder of the same lines for a page read apart (its chunks come from this one's spares, its
   * days' text from this one's).
   */
  fork(): NdjsonWireEncoder {
    const fork = new NdjsonWireEncoder(this.sql, '', this.chunkBytes);
    fork.head = this.head;
    fork.spare = this.spare;
    fork.dayPrefixes = this.dayPrefixes;
    return fork;
  }

  /** Counts a fork's lines as this encoder's, once they are out. */
  absorb(fork: { readonly rows: number }): void {
    this.rows += fork.rows;
  }

  get pending(): number {
    return this.at;
  }

  /** The lines encoded so far; the encoder does not touch them again unless they are handed back by recycle(). */
  take(): Buffer {
    const chunk = this.out.subarray(0, this.at);
    this.out = this.spare.pop() ?? Buffer.allocUnsafe(this.chunkBytes + CHUNK_HEADROOM);
    this.view = viewOf(this.out);
    this.at = 0;
    return chunk;
  }

  /**
   * Hands back a chunk of take() once it is written (nothing reads it any more): the next chunks
   * are written into its memory, so a long stream touches a few chunks' worth of memory, not all
   * of its output's.
   */
  recycle(chunk: Buffer): void {
    const size = this.chunkBytes + CHUNK_HEADROOM;
    if (chunk.byteOffset !== 0 || chunk.buffer.byteLength !== size || this.spare.length >= MAX_SPARE) return;
    this.spare.push(Buffer.from(chunk.buffer, 0, size));
  }

  /** The id and exact next-retry key of the last row (as text), for the next page's keyset predicate. */
  lastRowKey(): { id: string | null; nextRetry: string | null } | undefined {
    const buf = this.lastBuf;
    if (!buf) return undefined;
    const k = this.lastKey;
    return {
      id: (k[0] as number) < 0 ? null : buf.toString('latin1', k[0], k[1]),
      nextRetry: (k[2] as number) < 0 ? null : buf.toString('latin1', k[2], k[3]),
    };
  }

  encode(buf: Buffer, starts: Int32Array, ends: Int32Array): void {
    // Worst case: every byte escaped as \u00XX (6 bytes), plus the keys and punctuation.
    let need = 400;
    for (let i = 0; i < 13; i++)
      if ((starts[i] as number) >= 0) need += 6 * ((ends[i] as number) - (starts[i] as number));
    if (this.at + need > this.out.length) this.grow(need);
    this.rows++;
    this.lastBuf = buf;
    this.lastKey[0] = starts[0] as number;
    this.lastKey[1] = ends[0] as number;
    this.lastKey[2] = starts[LIST_PAGE_KEY] as number;
    this.lastKey[3] = ends[LIST_PAGE_KEY] as number;
    if (buf !== this.inBuf) {
      this.inBuf = buf;
      this.inView = viewOf(buf);
    }
    // One loop over the columns with the output's position in a local: the common cases are
    // written here, in place; only the rare ones (a new day, digits that are not plain, a status
    // of more than one byte) go through a method, which takes and gives back the position.
    const input = this.inView;
    const o = this.out;
    const view = this.view;
    let at = this.at;
    const columns = this.columns;
    for (let c = 0; c < columns.length; c++) {
      const column = columns[c] as Column;
      at = writeConstant(view, at, c === 0 ? this.head : column.key);
      const start = starts[column.index] as number;
      const end = ends[column.index] as number;
      const kind = column.kind;
      if (start < 0 && (kind === TEXT || kind === TIME || kind === INT)) {
        view.setInt32(at, NULL_WORD, true);
        at += 4;
      } else if (kind === TEXT) {
        // A JSON string, escaped as JSON.stringify escapes it: `"` `\\` and control characters
        // get escapes, valid UTF-8 is copied as it is. Four bytes at a time while none needs an
        // escape (bytes from 0x80 up are copied and the whole text checked as UTF-8 once, at the
        // end); text that is not valid UTF-8 is decoded (to U+FFFD, as the driver would) and
        // escaped by jsonText().
        const from = at;
        o[at++] = 0x22;
        let i = start;
        let high = 0;
        while (i + 4 <= end) {
          const w = input.getInt32(i, true);
          if (needsEscape(w)) break;
          high |= w;
          view.setInt32(at, w, true);
          at += 4;
          i += 4;
        }
        while (i < end) {
          const byte = buf[i++] as number;
          if (byte >= 0x80) high = 0x80;
          if (PLAIN[byte] === 1 || byte >= 0x80) o[at++] = byte;
          else {
            const escape = ESCAPES[byte] as Uint8Array;
            for (let k = 0; k < escape.length; k++) o[at++] = escape[k] as number;
          }
        }
        if ((high & 0x80808080) !== 0 && !isUtf8(buf.subarray(start, end))) {
          at = from + o.write(jsonText(buf.toString('utf8', start, end)), from, 'utf8');
        } else o[at++] = 0x22;
      } else if (kind === TIME) {
        // Whole epoch seconds (plain digits) on the day this column's last time fell on are
        // formatted here; anything else by iso().
        const seconds = epochSeconds(buf, start, end);
        const day = Math.floor(seconds / 86_400);
        const cache = this.isoDays[column.day] as DayCache;
        if (seconds < 0 || day !== cache.day) {
          this.at = at;
          this.iso(column.day, buf, start, end);
          at = this.at;
          continue;
        }
        at = writeClock(o, view, writeConstant(view, at, cache.prefix), seconds - day * 86_400);
      } else if (kind === STATUS) {
        const one = end - start === 1 ? this.oneByteStatus[buf[start] as number] : undefined;
        if (one === undefined) {
          this.at = at;
          this.status(buf, start, end);
          at = this.at;
          continue;
        }
        at = writeConstant(view, at, one);
      } else if (isPlainNumber(buf, start, end)) {
        for (let i = start; i < end; i++) o[at++] = buf[i] as number;
      } else {
        this.at = at;
        if (kind === ID) this.id(buf, start, end);
        else this.int(buf, start, end);
        at = this.at;
      }
    }
    o[at] = 0x7d; // }
    o[at + 1] = 0x0a; // \n
    this.at = at + 2;
  }

  private grow(need: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.at + need));
    this.out.copy(bigger, 0, 0, this.at);
    this.out = bigger;
    this.view = viewOf(bigger);
  }

  private ascii(text: string): void {
    this.at += this.out.write(text, this.at, 'latin1');
  }

  private constant(c: Constant): void {
    this.at = writeConstant(this.view, this.at, c);
  }

  /** An id that is not plain digits (or is NULL), as toId() gives it. */
  private id(buf: Buffer, start: number, end: number): void {
    if (start < 0) return this.ascii(jsonId(null));
    this.at += this.out.write(jsonId(buf.toString('utf8', start, end)), this.at, 'utf8');
  }

  /** Signs, fractions, leading zeros and garbage, as toInt() reads them. */
  private int(buf: Buffer, start: number, end: number): void {
    this.ascii(jsonInt(buf.toString('utf8', start, end)));
  }

  private status(buf: Buffer, start: number, end: number): void {
    if (end - start === 1 && (buf[start] as number) < 0x80) {
      // One-byte statuses (tinyint 0..9) are the common case: a table by byte, no string.
      const byte = buf[start] as number;
      let one = this.oneByteStatus[byte];
      if (!one) {
        one = constantOf(JSON.stringify(this.sql.logicalStatus(String.fromCharCode(byte))));
        this.oneByteStatus[byte] = one;
      }
      return this.constant(one);
    }
    const raw = start < 0 ? '\u0000null' : buf.toString('utf8', start, end);
    let encoded = this.statusCache.get(raw);
    if (!encoded) {
      encoded = constantOf(JSON.stringify(this.sql.logicalStatus(start < 0 ? null : raw)));
      this.statusCache.set(raw, encoded);
    }
    this.constant(encoded);
  }

  /**
   * A time that encode() does not write itself: whole epoch seconds on another day than the
   * column's last (the day's text is looked up or made, then kept), or anything else, as
   * isoWriter() writes it.
   */
  private iso(column: number, buf: Buffer, start: number, end: number): void {
    const seconds = epochSeconds(buf, start, end);
    if (seconds < 0) {
      this.ascii(isoWriter()(buf.toString('latin1', start, end)));
      return;
    }
    const day = Math.floor(seconds / 86_400);
    // Times a column holds fall on few days, and a column can go back and forth between two
    // (next_retry_time around midnight in primary-key order): each day's text is made once.
    let prefix = this.dayPrefixes.get(day);
    if (!prefix) {
      const iso = new Date(day * 86_400_000).toISOString();
      if (iso.length !== 24) {
        this.ascii(isoWriter()(seconds));
        return;
      }
      if (this.dayPrefixes.size >= MAX_DAYS) this.dayPrefixes.clear();
      prefix = constantOf(`"${iso.slice(0, 10)}T`);
      this.dayPrefixes.set(day, prefix);
    }
    const cache = this.isoDays[column] as DayCache;
    cache.day = day;
    cache.prefix = prefix;
    this.constant(prefix);
    this.at = writeClock(this.out, this.view, this.at, seconds - day * 86_400);
  }
}

/** Chunks kept for reuse (more come back only when the writer fell behind the reader). */
const MAX_SPARE = 16;

/** Room past a full chunk for the row that fills it (bigger rows grow the buffer). */
const CHUNK_HEADROOM = 64 * 1024;

/**
 * Text written the same on every line, as little-endian 32-bit words (the last one padded with
 * zeros, written whole and then written over: every chunk has headroom past its rows) and its length.
 */
interface Constant {
  readonly words: Int32Array;
  readonly length: number;
}

/** `text` (already JSON) in UTF-8, as a Constant. */
function constantOf(text: string): Constant {
  const bytes = Buffer.alloc((Buffer.byteLength(text) + 3) & ~3);
  const length = bytes.write(text);
  return {
    words: Int32Array.from({ length: bytes.length >> 2 }, (_, i) => bytes.readInt32LE(i * 4)),
    length,
  };
}

/** `c` written at `at` (its last word whole); returns the position after its text. */
function writeConstant(view: DataView, at: number, c: Constant): number {
  const words = c.words;
  for (let i = 0; i < words.length; i++) view.setInt32(at + 4 * i, words[i] as number, true);
  return at + c.length;
}

function viewOf(buf: Buffer): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** 1 for each byte JSON.stringify leaves as it is: ASCII from space up, but `"` and `\\`. */
const PLAIN = Uint8Array.from({ length: 256 }, (_, c) =>
  c >= 0x20 && c < 0x80 && c !== 0x22 && c !== 0x5c ? 1 : 0,
);

/** The escape JSON.stringify writes for each ASCII byte that needs one. */
const ESCAPES: Uint8Array[] = Array.from({ length: 128 }, (_, c) =>
  Buffer.from(JSON.stringify(String.fromCharCode(c)).slice(1, -1), 'latin1'),
);

/**
 * Whether any of the four bytes of `w` needs a JSON escape: a control character (below 0x20),
 * `"` or `\\`. Bytes from 0x80 up do not. Each test is the "has a byte less than n" and "has a
 * zero byte" bit trick, exact for any byte below 0x80 and never set by one from 0x80 up.
 */
function needsEscape(w: number): boolean {
  const quote = w ^ 0x22222222;
  const backslash = w ^ 0x5c5c5c5c;
  return (
    ((((w - 0x20202020) & ~w) | ((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash)) &
      0x80808080) !==
    0
  );
}

/** Days whose text an encoder keeps (a year and more; past it the cache starts over). */
const MAX_DAYS = 512;

/** 00 to 99 as two ASCII digits, read as a little-endian 16-bit word. */
const TWO_DIGITS = Uint16Array.from(
  { length: 100 },
  (_, n) => (0x30 + Math.floor(n / 10)) | ((0x30 + (n % 10)) << 8),
);

class DayCache {
  day = Number.NaN;
  prefix = constantOf('');
}

/**
 * Whole epoch seconds written as 1 to 11 plain digits (well inside a double's integers), read and
 * checked in one pass; -1 for anything else (a sign, a fraction, garbage, nothing).
 */
function epochSeconds(buf: Buffer, start: number, end: number): number {
  if (end <= start || end - start > 11) return -1;
  let seconds = 0;
  for (let i = start; i < end; i++) {
    const digit = (buf[i] as number) - 0x30;
    if (digit < 0 || digit > 9) return -1;
    seconds = seconds * 10 + digit;
  }
  return seconds;
}

/** Plain digits without a leading zero, 1 to 15 of them: a safe integer, written as it is. */
function isPlainNumber(buf: Buffer, start: number, end: number): boolean {
  const length = end - start;
  if (start < 0 || length <= 0 || length > 15 || (buf[start] === 0x30 && length > 1)) return false;
  for (let i = start; i < end; i++) {
    const c = buf[i] as number;
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** `hh:mm:ss"` of `s` seconds into a day (0–86,399), written at `at`; returns the position after it. */
function writeClock(o: Buffer, view: DataView, at: number, s: number): number {
  // Within the day every quotient fits 32 bits.
  const h = (s / 3600) | 0;
  s -= h * 3600;
  const m = (s / 60) | 0;
  s -= m * 60;
  view.setUint16(at, TWO_DIGITS[h] as number, true);
  view.setUint16(at + 3, TWO_DIGITS[m] as number, true);
  view.setUint16(at + 6, TWO_DIGITS[s] as number, true);
  o[at + 2] = 0x3a; // :
  o[at + 5] = 0x3a;
  o[at + 8] = 0x5a; // Z
  o[at + 9] = 0x22; // "
  return at + 10;
}

/** What encode() writes for each column after its key: a column of the list select (TaskSql.taskSelect()). */
const TEXT = 0;
const TIME = 1;
const STATUS = 2;
const ID = 3;
const INT = 4;

interface Column {
  /** The column's place in the row. */
  readonly index: number;
  readonly kind: typeof TEXT | typeof TIME | typeof STATUS | typeof ID | typeof INT;
  /** `,"name":` (the first column's key is the line's head instead). */
  readonly key: Constant;
  /** For a time: which of the encoder's day caches it keeps its last day in. */
  readonly day: number;
}

/** `null` as a little-endian word. */
const NULL_WORD = 0x6c6c756e;

const column = (index: number, kind: Column['kind'], name: string, day = 0): Column => ({
  index,
  kind,
  key: constantOf(name === '' ? '' : `,"${name}":`),
  day,
});

/** The line's columns in order; 11 (a failed job's max attempts) and 13 (the page key) are not written. */
const COLUMNS: readonly Column[] = [
  column(0, ID, ''),
  column(1, TEXT, 'bizType'),
  column(2, TEXT, 'bizId'),
  column(3, TEXT, 'eventId'),
  column(4, STATUS, 'status'),
  column(5, INT, 'attempts'),
  column(6, TIME, 'nextRetryAt', 0),
  column(7, TEXT, 'lastError'),
  column(8, TIME, 'createdAt', 1),
  column(9, TIME, 'updatedAt', 2),
  column(10, TEXT, 'queue'),
  column(12, TEXT, 'connection'),
];

/** The same for a table whose id column holds text: ids are JSON strings, digits or not. */
const TEXT_ID_COLUMNS: readonly Column[] = [column(0, TEXT, ''), ...COLUMNS.slice(1)];

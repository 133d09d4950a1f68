// Over 300 lines: one hot-path encoder writing every column byte by byte; split, each row would cost calls across modules.
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
  /** Chunks handed back once written, written into again instead of new memory (shared with forks). */
  private spare: Buffer[] = [];
  private readonly lastKey = new Int32Array(4);

  constructor(
    private readonly sql: TaskSql,
    list: string,
    private readonly chunkBytes = 256 * 1024,
  ) {
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
    this.constant(this.head);
    this.id(buf, starts[0] as number, ends[0] as number);
    this.constant(KEY.bizType);
    this.text(buf, starts[1] as number, ends[1] as number);
    this.constant(KEY.bizId);
    this.text(buf, starts[2] as number, ends[2] as number);
    this.constant(KEY.eventId);
    this.text(buf, starts[3] as number, ends[3] as number);
    this.constant(KEY.status);
    this.status(buf, starts[4] as number, ends[4] as number);
    this.constant(KEY.attempts);
    this.int(buf, starts[5] as number, ends[5] as number);
    this.constant(KEY.nextRetryAt);
    this.iso(0, buf, starts[6] as number, ends[6] as number);
    this.constant(KEY.lastError);
    this.text(buf, starts[7] as number, ends[7] as number);
    this.constant(KEY.createdAt);
    this.iso(1, buf, starts[8] as number, ends[8] as number);
    this.constant(KEY.updatedAt);
    this.iso(2, buf, starts[9] as number, ends[9] as number);
    this.constant(KEY.queue);
    this.text(buf, starts[10] as number, ends[10] as number);
    this.constant(KEY.connection);
    this.text(buf, starts[12] as number, ends[12] as number);
    this.out[this.at++] = 0x7d; // }
    this.out[this.at++] = 0x0a; // \n
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
    const view = this.view;
    let at = this.at;
    const words = c.words;
    for (let i = 0; i < words.length; i++) {
      view.setUint32(at, words[i] as number, true);
      at += 4;
    }
    const o = this.out;
    const tail = c.tail;
    for (let i = 0; i < tail.length; i++) o[at++] = tail[i] as number;
    this.at = at;
  }

  private null(): void {
    const o = this.out;
    o[this.at] = 0x6e; // n
    o[this.at + 1] = 0x75; // u
    o[this.at + 2] = 0x6c; // l
    o[this.at + 3] = 0x6c; // l
    this.at += 4;
  }

  /**
   * A JSON string, escaped as JSON.stringify escapes it: `"` `\\` and control characters get
   * escapes, valid UTF-8 is copied as it is. Only text that is not valid UTF-8 is decoded (to
   * U+FFFD, as the driver would) and escaped by jsonText().
   */
  private text(buf: Buffer, start: number, end: number): void {
    if (start < 0) return this.null();
    const o = this.out;
    let at = this.at;
    o[at++] = 0x22;
    let i = start;
    // Four plain bytes at a time while they last, then byte by byte.
    while (i + 4 <= end) {
      const c0 = buf[i] as number;
      const c1 = buf[i + 1] as number;
      const c2 = buf[i + 2] as number;
      const c3 = buf[i + 3] as number;
      if (
        ((PLAIN[c0] as number) & (PLAIN[c1] as number) & (PLAIN[c2] as number) & (PLAIN[c3] as number)) ===
        0
      )
        break;
      o[at] = c0;
      o[at + 1] = c1;
      o[at + 2] = c2;
      o[at + 3] = c3;
      at += 4;
      i += 4;
    }
    while (i < end) {
      const c = buf[i] as number;
      if (PLAIN[c] === 1) {
        o[at++] = c;
        i++;
      } else if (c < 0x80) {
        const escape = ESCAPES[c] as Uint8Array;
        for (let k = 0; k < escape.length; k++) o[at++] = escape[k] as number;
        i++;
      } else {
        const length = utf8Length(buf, i, end);
        if (length === 0) {
          this.at += o.write(jsonText(buf.toString('utf8', start, end)), this.at, 'utf8');
          return;
        }
        for (let k = 0; k < length; k++) o[at++] = buf[i + k] as number;
        i += length;
      }
    }
    o[at++] = 0x22;
    this.at = at;
  }

  /** Plain digits without a leading zero and up to 15 long are a safe integer: copied. */
  private id(buf: Buffer, start: number, end: number): void {
    if (start < 0) return this.ascii(jsonId(null));
    const length = end - start;
    if (length > 0 && length <= 15 && (buf[start] !== 0x30 || length === 1) && isDigits(buf, start, end))
      return this.copy(buf, start, end);
    this.at += this.out.write(jsonId(buf.toString('utf8', start, end)), this.at, 'utf8');
  }

  /** Plain digits without a leading zero are copied; signs, fractions and garbage go through jsonInt(). */
  private int(buf: Buffer, start: number, end: number): void {
    if (start < 0) return this.null();
    const length = end - start;
    if (length > 0 && length <= 15 && (buf[start] !== 0x30 || length === 1) && isDigits(buf, start, end))
      return this.copy(buf, start, end);
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

  /** Whole epoch seconds (plain digits) are formatted in place; anything else as isoWriter() does. */
  private iso(column: number, buf: Buffer, start: number, end: number): void {
    if (start < 0) return this.null();
    // The digits read and checked in one pass; up to 11 of them is well inside a double's integers.
    let seconds = 0;
    let plain = end > start && end - start <= 11;
    for (let i = start; plain && i < end; i++) {
      const digit = (buf[i] as number) - 0x30;
      if (digit < 0 || digit > 9) plain = false;
      else seconds = seconds * 10 + digit;
    }
    if (!plain) {
      this.ascii(isoWriter()(buf.toString('latin1', start, end)));
      return;
    }
    const day = Math.floor(seconds / 86_400);
    const cache = this.isoDays[column] as DayCache;
    if (day !== cache.day) {
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
      cache.day = day;
      cache.prefix = prefix;
    }
    this.constant(cache.prefix);
    // Within the day every quotient fits 32 bits.
    let s = seconds - day * 86_400;
    const h = (s / 3600) | 0;
    s -= h * 3600;
    const m = (s / 60) | 0;
    s -= m * 60;
    const view = this.view;
    const at = this.at;
    view.setUint16(at, TWO_DIGITS[h] as number, true);
    view.setUint16(at + 3, TWO_DIGITS[m] as number, true);
    view.setUint16(at + 6, TWO_DIGITS[s] as number, true);
    const o = this.out;
    o[at + 2] = 0x3a; // :
    o[at + 5] = 0x3a;
    o[at + 8] = 0x5a; // Z
    o[at + 9] = 0x22; // "
    this.at = at + 10;
  }

  private copy(buf: Buffer, start: number, end: number): void {
    const o = this.out;
    let at = this.at;
    for (let i = start; i < end; i++) o[at++] = buf[i] as number;
    this.at = at;
  }
}

/** Chunks kept for reuse (more come back only when the writer fell behind the reader). */
const MAX_SPARE = 16;

/** Room past a full chunk for the row that fills it (bigger rows grow the buffer). */
const CHUNK_HEADROOM = 64 * 1024;

/** Text written the same on every line, as little-endian 32-bit words and the bytes after the last. */
interface Constant {
  readonly words: Uint32Array;
  readonly tail: Uint8Array;
}

/** `text` (already JSON) in UTF-8, as a Constant. */
function constantOf(text: string): Constant {
  const bytes = Buffer.from(text);
  const whole = bytes.length >> 2;
  return {
    words: Uint32Array.from({ length: whole }, (_, i) => bytes.readUInt32LE(i * 4)),
    tail: Uint8Array.from(bytes.subarray(whole * 4)),
  };
}

function viewOf(buf: Buffer): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

const key = (name: string): Constant => constantOf(`,"${name}":`);
const KEY = {
  bizType: key('bizType'),
  bizId: key('bizId'),
  eventId: key('eventId'),
  status: key('status'),
  attempts: key('attempts'),
  nextRetryAt: key('nextRetryAt'),
  lastError: key('lastError'),
  createdAt: key('createdAt'),
  updatedAt: key('updatedAt'),
  queue: key('queue'),
  connection: key('connection'),
};

/** 1 for each byte JSON.stringify leaves as it is: ASCII from space up, but `"` and `\\`. */
const PLAIN = Uint8Array.from({ length: 256 }, (_, c) =>
  c >= 0x20 && c < 0x80 && c !== 0x22 && c !== 0x5c ? 1 : 0,
);

/** The escape JSON.stringify writes for each ASCII byte that needs one. */
const ESCAPES: Uint8Array[] = Array.from({ length: 128 }, (_, c) =>
  Buffer.from(JSON.stringify(String.fromCharCode(c)).slice(1, -1), 'latin1'),
);

/**
 * The length (2–4) of the well-formed UTF-8 sequence that starts at `i`, or 0 when it is not one
 * (stray continuation, overlong form, surrogate, beyond U+10FFFF, or cut short).
 */
function utf8Length(buf: Buffer, i: number, end: number): number {
  const c = buf[i] as number;
  const length = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (length === 0 || i + length > end) return 0;
  // The second byte's range narrows after E0 (no overlong form), ED (no surrogate), F0 (no
  // overlong form) and F4 (nothing beyond U+10FFFF); the other bytes are continuations.
  const second = buf[i + 1] as number;
  const low = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
  const high = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
  if (second < low || second > high) return 0;
  for (let k = 2; k < length; k++) if (((buf[i + k] as number) & 0xc0) !== 0x80) return 0;
  return length;
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

function isDigits(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = buf[i] as number;
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

import type { TaskSql } from '../db/task-sql.js';

/**
 * Serialises list rows (arrays in TaskSql.taskSelect() order) straight to NDJSON or CSV lines,
 * without building task objects: this is the hot path of `scan --format ndjson` on millions of
 * rows. Each line means exactly what `toTask()` + `JSON.stringify` would give for the same row
 * (same fields, same values), but every column has its own serialiser and a batch of rows becomes
 * one string, so the stream does one write per batch.
 */
export interface RowSerializer {
  ndjson(list: string, row: readonly unknown[]): string;
  csv(list: string, row: readonly unknown[]): string;
  /** Many rows of one list as one string of lines. */
  ndjsonBatch(list: string, rows: readonly (readonly unknown[])[]): string;
  csvBatch(list: string, rows: readonly (readonly unknown[])[]): string;
}

export const CSV_HEADER =
  'list,id,bizType,bizId,eventId,status,attempts,nextRetryAt,lastError,createdAt,updatedAt,queue,connection\n';

const SECONDS_PER_DAY = 86_400;
/** '00' … '59', for hours, minutes and seconds. */
const TWO_DIGITS = Array.from({ length: 60 }, (_, i) => (i < 10 ? `0${i}` : String(i)));
const DIGITS = /^\d+$/;

/**
 * Epoch seconds → `"YYYY-MM-DDTHH:MM:SSZ"` (quoted) or `null`, as toIso() would give. Whole
 * seconds take a fast path: the date part is cached per day and the time of day is built from
 * a table, so the common case costs no Date object. Each column gets its own instance, so a value
 * repeated from the previous row (common in index order) is not converted again.
 */
export function isoWriter(): (value: unknown) => string {
  let lastIn: unknown;
  let lastOut = 'null';
  let lastDay = Number.NaN;
  let dayPrefix = '';
  return (value) => {
    if (value === lastIn) return lastOut;
    lastIn = value;
    if (value === null || value === undefined) return (lastOut = 'null');
    const seconds = typeof value === 'number' ? value : Number(value);
    if (!Number.isFinite(seconds)) return (lastOut = 'null');
    if (Number.isInteger(seconds) && Math.abs(seconds) < 8.64e12) {
      const day = Math.floor(seconds / SECONDS_PER_DAY);
      if (day !== lastDay) {
        const iso = new Date(day * SECONDS_PER_DAY * 1000).toISOString();
        // Years outside 0000–9999 print with a sign (±YYYYYY): leave those to toISOString.
        if (iso.length !== 24) return (lastOut = slowIso(seconds));
        lastDay = day;
        dayPrefix = `"${iso.slice(0, 10)}`;
      }
      return (lastOut = `${dayPrefix}${isoTime(seconds - day * SECONDS_PER_DAY)}"`);
    }
    return (lastOut = slowIso(seconds));
  };
}

function slowIso(seconds: number): string {
  return `"${new Date(Math.round(seconds * 1000)).toISOString().replace('.000Z', 'Z')}"`;
}

function isoTime(secondOfDay: number): string {
  const h = Math.floor(secondOfDay / 3600);
  const m = Math.floor((secondOfDay % 3600) / 60);
  return `T${TWO_DIGITS[h]}:${TWO_DIGITS[m]}:${TWO_DIGITS[secondOfDay % 60]}Z`;
}

/** A text column as a JSON string (binary as UTF-8, invalid bytes as U+FFFD), or `null`. */
export function jsonText(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null || value === undefined) return 'null';
  return JSON.stringify(Buffer.isBuffer(value) ? value.toString('utf8') : String(value));
}

/** The id as toId() gives it: a JSON number when it is a safe integer, else a string. */
export function jsonId(value: unknown): string {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? String(value) : `"${value}"`;
  const text = typeof value === 'string' ? value : String(value);
  if (DIGITS.test(text)) {
    const n = Number(text);
    if (Number.isSafeInteger(n)) return String(n);
  }
  return JSON.stringify(text);
}

/** An integer column as a JSON number, or `null` (also for garbage, as toInt()). */
export function jsonInt(value: unknown): string {
  if (typeof value === 'number') return Number.isFinite(value) ? String(Math.trunc(value)) : 'null';
  if (value === null || value === undefined || value === '') return 'null';
  const n = Number(value);
  return Number.isFinite(n) ? String(Math.trunc(n)) : 'null';
}

/** A JSON value (as printed by the writers above) as a CSV cell: strings quoted, null empty. */
function csvCell(json: string): string {
  if (json === 'null') return '';
  if (json.charCodeAt(0) !== 34) return json;
  const text = JSON.parse(json) as string;
  return `"${text.includes('"') ? text.replace(/"/g, '""') : text}"`;
}

/** `shard`: every line names it (the rows of one shard of a sharded source). */
export function rowSerializer(sql: TaskSql, shard?: string): RowSerializer {
  const shardField = shard === undefined ? '' : `"shard":${JSON.stringify(shard)},`;
  const shardCell = shard === undefined ? '' : `${csvCell(JSON.stringify(shard))},`;
  const statusCache = new Map<unknown, string>();
  const status = (raw: unknown): string => {
    let s = statusCache.get(raw);
    if (s === undefined) {
      s = JSON.stringify(sql.logicalStatus(raw));
      statusCache.set(raw, s);
    }
    return s;
  };
  const nextRetryAt = isoWriter();
  const createdAt = isoWriter();
  const updatedAt = isoWriter();
  // A text id column's ids are the text they are ("0838" is not 838), as TaskSql.id() reads them.
  const id = sql.textId ? jsonText : jsonId;
  const listKey = new Map<string, string>();
  const prefix = (list: string): string => {
    let p = listKey.get(list);
    if (p === undefined) {
      p = `{"list":${JSON.stringify(list)},${shardField}"id":`;
      listKey.set(list, p);
    }
    return p;
  };
  const line = (head: string, r: readonly unknown[]): string =>
    `${head}${id(r[0])},"bizType":${jsonText(r[1])},"bizId":${jsonText(r[2])},"eventId":${jsonText(r[3])},"status":${status(r[4])},"attempts":${jsonInt(r[5])},"nextRetryAt":${nextRetryAt(r[6])},"lastError":${jsonText(r[7])},"createdAt":${createdAt(r[8])},"updatedAt":${updatedAt(r[9])},"queue":${jsonText(r[10])},"connection":${jsonText(r[12])}}\n`;
  const csvLine = (list: string, r: readonly unknown[]): string =>
    `${list},${shardCell}${[id(r[0]), jsonText(r[1]), jsonText(r[2]), jsonText(r[3]), status(r[4]), jsonInt(r[5]), nextRetryAt(r[6]), jsonText(r[7]), createdAt(r[8]), updatedAt(r[9]), jsonText(r[10]), jsonText(r[12])].map(csvCell).join(',')}\n`;
  return {
    ndjson: (list, row) => line(prefix(list), row),
    csv: csvLine,
    ndjsonBatch(list, rows) {
      const head = prefix(list);
      let out = '';
      for (let i = 0; i < rows.length; i++) out += line(head, rows[i] as readonly unknown[]);
      return out;
    },
    csvBatch(list, rows) {
      let out = '';
      for (let i = 0; i < rows.length; i++) out += csvLine(list, rows[i] as readonly unknown[]);
      return out;
    },
  };
}

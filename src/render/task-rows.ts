import type { TaskSql } from '../db/task-sql.js';

/**
 * Serialises list rows (arrays in TaskSql.taskSelect() order) straight to NDJSON or CSV lines,
 * without building task objects: this is the hot path of `scan --format ndjson` on millions of rows.
 */
export interface RowSerializer {
  ndjson(list: string, row: readonly unknown[]): string;
  csv(list: string, row: readonly unknown[]): string;
}

export const CSV_HEADER = 'list,id,bizType,bizId,eventId,status,attempts,nextRetryAt,lastError,createdAt,updatedAt\n';

export function rowSerializer(sql: TaskSql): RowSerializer {
  const statusCache = new Map<unknown, string>();
  const status = (raw: unknown): string => {
    let s = statusCache.get(raw);
    if (s === undefined) {
      s = sql.logicalStatus(raw);
      statusCache.set(raw, s);
    }
    return s;
  };
  // Consecutive rows often share a second: remember the last conversion of each time column.
  const iso = () => {
    let lastIn: unknown;
    let lastOut = 'null';
    return (value: unknown): string => {
      if (value === lastIn) return lastOut;
      lastIn = value;
      if (value === null || value === undefined) return (lastOut = 'null');
      const n = Number(value);
      lastOut = Number.isFinite(n) ? `"${new Date(Math.round(n * 1000)).toISOString().replace('.000Z', 'Z')}"` : 'null';
      return lastOut;
    };
  };
  const nrtIso = iso();
  const createdIso = iso();
  const updatedIso = iso();
  const str = (v: unknown): string => (v === null || v === undefined ? 'null' : JSON.stringify(Buffer.isBuffer(v) ? v.toString('utf8') : String(v)));
  const id = (v: unknown): string => (typeof v === 'number' ? String(v) : /^\d{1,15}$/.test(String(v)) ? String(v) : JSON.stringify(String(v)));
  const int = (v: unknown): string => (v === null || v === undefined || v === '' ? 'null' : String(Math.trunc(Number(v))));
  const csvCell = (v: string): string => (v === 'null' ? '' : v.startsWith('"') ? `"${JSON.parse(v).replace(/"/g, '""')}"` : v);
  return {
    ndjson(list, r) {
      return `{"list":"${list}","id":${id(r[0])},"bizType":${str(r[1])},"bizId":${str(r[2])},"eventId":${str(r[3])},"status":"${status(r[4])}","attempts":${int(r[5])},"nextRetryAt":${nrtIso(r[6])},"lastError":${str(r[7])},"createdAt":${createdIso(r[8])},"updatedAt":${updatedIso(r[9])}}\n`;
    },
    csv(list, r) {
      const cells = [id(r[0]), str(r[1]), str(r[2]), str(r[3]), `"${status(r[4])}"`, int(r[5]), nrtIso(r[6]), str(r[7]), createdIso(r[8]), updatedIso(r[9])];
      return `${list},${cells.map(csvCell).join(',')}\n`;
    },
  };
}

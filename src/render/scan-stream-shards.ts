import { toIso } from '../db/task-sql.js';
import type { OpenShard } from '../ops/shards/set.js';
import { ALL_LISTS, streamList, type ScanOptions } from '../verbs/scan/index.js';
import { startProgress } from './progress.js';
import { CSV_HEADER, rowSerializer } from './task-rows.js';
import { writeOut } from './terminal.js';
import { grouped } from '../core/grouped.js';

/** One shard's stream of one list, with the row it holds next. */
interface Lane {
  shard: string;
  rows: AsyncGenerator<unknown[]>;
  head: unknown[] | undefined;
  line: (row: readonly unknown[]) => string;
}

const FLUSH_BYTES = 64 * 1024;
/** Rows per page of each shard: every shard holds one page while the merge reads, so memory stays small. */
const SHARD_PAGE_SIZE = 5_000;

/** Where a raw list row sorts: no next-retry time first, then by it (epoch seconds), then id, then shard. */
function rowBefore(a: Lane, b: Lane, byId: boolean): boolean {
  const ra = a.head as unknown[];
  const rb = b.head as unknown[];
  if (!byId && ra[6] !== rb[6]) {
    if (ra[6] === null) return true;
    if (rb[6] === null) return false;
    return Number(ra[6]) < Number(rb[6]);
  }
  const ia = ra[0];
  const ib = rb[0];
  if (ia !== ib) {
    const na = Number(ia);
    const nb = Number(ib);
    return Number.isFinite(na) && Number.isFinite(nb) ? na < nb : String(ia) < String(ib);
  }
  return a.shard < b.shard;
}

/**
 * NDJSON or CSV of a sharded source: every list of every shard merged in the list's order (each
 * shard read in its own order, a page at a time, so memory stays flat), each line naming its
 * shard, the first `--limit` of all kept. Returns the summary line for stderr.
 */
export async function streamShardRows(
  shards: readonly { shard: OpenShard; options: ScanOptions }[],
  format: 'ndjson' | 'csv',
  limit: number,
): Promise<string> {
  const progress = startProgress('streaming');
  const byId = shards[0]?.options.order === 'id';
  let count = 0;
  try {
    if (format === 'csv') await writeOut(CSV_HEADER.replace('list,', 'list,shard,'));
    for (const kind of shards[0]?.options.lists ?? ALL_LISTS) {
      const lanes: Lane[] = [];
      for (const { shard, options } of shards) {
        const rows = streamList(shard.source, kind, { ...options, pageSize: SHARD_PAGE_SIZE });
        if (!rows) continue;
        const serializer = rowSerializer(shard.source.sql, shard.spec.name);
        const line =
          format === 'ndjson'
            ? (row: readonly unknown[]) => serializer.ndjson(kind, row)
            : (row: readonly unknown[]) => serializer.csv(kind, row);
        lanes.push({ shard: shard.spec.name, rows, head: undefined, line });
      }
      await Promise.all(
        lanes.map(async (l) => (l.head = (await l.rows.next()).value as unknown[] | undefined)),
      );
      let out = '';
      let written = 0;
      for (;;) {
        let next: Lane | undefined;
        for (const l of lanes) if (l.head && (!next || rowBefore(l, next, byId))) next = l;
        if (!next || (limit > 0 && written >= limit)) break;
        out += next.line(next.head as unknown[]);
        written++;
        next.head = (await next.rows.next()).value as unknown[] | undefined;
        if (out.length >= FLUSH_BYTES) {
          await writeOut(out);
          out = '';
          progress.update(`${grouped(count + written)} rows`);
        }
      }
      if (out) await writeOut(out);
      await Promise.all(lanes.map((l) => l.rows.return(undefined)));
      count += written;
    }
  } finally {
    progress.stop();
  }
  const now = shards[0] ? toIso(shards[0].options.nowEpoch) : '';
  return `${grouped(count)} rows from ${shards.length} shards as of ${now}`;
}

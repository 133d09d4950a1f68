import type { BoundSource } from '../../src/db/bind-source.js';
import type { Db, RowEncoder } from '../../src/db/types.js';
import { NdjsonWireEncoder } from '../../src/render/ndjson-wire.js';
import { streamListEncoded, type ScanOptions } from '../../src/verbs/scan/index.js';

/** A Db that records its statements, the rows of each page read out and how many encoded streams are open at once. */
export function recording(db: Db): {
  db: Db;
  queries: Array<{ sql: string; params: readonly unknown[] }>;
  pages: string[];
  pageParams: Array<readonly unknown[]>;
  pageRows: number[];
  maxOpen: () => number;
  openNow: () => number;
} {
  const queries: Array<{ sql: string; params: readonly unknown[] }> = [];
  const pages: string[] = [];
  const pageParams: Array<readonly unknown[]> = [];
  const pageRows: number[] = [];
  let open = 0;
  let max = 0;
  const wrap =
    (
      fn:
        ((sql: string, params: readonly unknown[], encoder: RowEncoder) => AsyncIterable<Buffer>) | undefined,
    ) =>
    (sql: string, params: readonly unknown[], encoder: RowEncoder) =>
      (async function* () {
        pages.push(sql);
        pageParams.push(params);
        open++;
        max = Math.max(max, open);
        // In the order the pages start (pages read ahead may end before the one streaming out).
        const page = pageRows.push(0) - 1;
        try {
          yield* fn!.call(db, sql, params, encoder);
          pageRows[page] = (encoder as unknown as { rows: number }).rows;
        } finally {
          open--;
        }
      })();
  const recorder = Object.create(db, {
    query: {
      value: (sql: string, params: readonly unknown[] = []) => {
        queries.push({ sql, params });
        return db.query(sql, params);
      },
    },
    streamEncoded: { value: db.streamEncoded && wrap(db.streamEncoded) },
    streamTextEncoded: { value: db.streamTextEncoded && wrap(db.streamTextEncoded) },
  }) as Db;
  return { db: recorder, queries, pages, pageParams, pageRows, maxOpen: () => max, openNow: () => open };
}

/** The due list's NDJSON lines, read through a recording of `source.db`, and that recording. */
export async function readRecorded(
  source: BoundSource,
  options: ScanOptions,
): Promise<{ text: string; rec: ReturnType<typeof recording> }> {
  const rec = recording(source.db);
  const encoder = new NdjsonWireEncoder(source.sql, 'due');
  const chunks: Buffer[] = [];
  for await (const chunk of streamListEncoded({ ...source, db: rec.db }, 'due', options, encoder) ?? [])
    chunks.push(Buffer.from(chunk));
  return { text: Buffer.concat(chunks).toString('utf8'), rec };
}

import type { BoundSource } from '../db/bind-source.js';
import { toIso } from '../db/task-sql.js';
import {
  ALL_LISTS,
  sourceInfo,
  streamListBatches,
  streamListEncoded,
  wireEncodable,
  type ScanOptions,
} from '../verbs/scan/index.js';
import { NdjsonWireEncoder } from './ndjson-wire.js';
import { startProgress } from './progress.js';
import { CSV_HEADER, rowSerializer } from './task-rows.js';
import { writeOut } from './terminal.js';
import { grouped } from '../core/grouped.js';
import { holdYoungGeneration } from '../core/young-generation.js';

const PROGRESS_EVERY_ROWS = 65_536;

/**
 * NDJSON or CSV: one line per listed task, streamed to stdout in constant memory. Returns the
 * summary line for stderr.
 */
export async function streamScanRows(
  source: BoundSource,
  options: ScanOptions,
  format: 'ndjson' | 'csv',
): Promise<string> {
  const progress = startProgress('streaming');
  let count = 0;
  let nextProgress = PROGRESS_EVERY_ROWS;
  const counted = (total: number) => {
    count = total;
    if (count < nextProgress) return;
    nextProgress += PROGRESS_EVERY_ROWS;
    progress.update(`${grouped(count)} rows`);
  };
  try {
    if (
      format === 'ndjson' &&
      (source.db.streamEncoded || source.db.streamTextEncoded) &&
      wireEncodable(source)
    ) {
      // The fast path: NDJSON written from the wire bytes (MariaDB/MySQL's text protocol,
      // PostgreSQL's COPY), one write per chunk.
      holdYoungGeneration();
      const encoder = new NdjsonWireEncoder(source.sql, 'stuck');
      for (const kind of options.lists ?? ALL_LISTS) {
        encoder.setList(kind);
        const chunks = streamListEncoded(source, kind, options, encoder);
        if (!chunks) continue;
        for await (const chunk of chunks) {
          // Once written, the chunk's memory takes the next lines.
          await writeOut(chunk, () => encoder.recycle(chunk));
          counted(encoder.rows);
        }
      }
      count = encoder.rows;
    } else {
      const serializer = rowSerializer(source.sql);
      if (format === 'csv') await writeOut(CSV_HEADER);
      for (const kind of options.lists ?? ALL_LISTS) {
        const batches = streamListBatches(source, kind, options);
        if (!batches) continue;
        for await (const rows of batches) {
          await writeOut(
            format === 'ndjson' ? serializer.ndjsonBatch(kind, rows) : serializer.csvBatch(kind, rows),
          );
          counted(count + rows.length);
        }
      }
    }
  } finally {
    progress.stop();
  }
  return `${grouped(count)} rows from ${sourceInfo(source).name} as of ${toIso(options.nowEpoch)}`;
}

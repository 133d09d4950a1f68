import type { Fragment } from './fragment.js';
import type { Db, RowEncoder } from './types.js';

/**
 * Runs `statement` with its rows encoded by `encoder` and reads it to the end, handing each chunk
 * the encoder emits to `each`; an encoder that folds the rows into state of its own needs none.
 * MariaDB/MySQL encode straight from the wire; other engines' rows are laid out as the wire would
 * give them (see encodeValues).
 */
export async function drainEncoded(
  db: Db,
  statement: Fragment,
  encoder: RowEncoder,
  each?: (chunk: Buffer) => Promise<void>,
): Promise<void> {
  const chunks = db.streamEncoded
    ? db.streamEncoded(statement.sql, statement.params, encoder)
    : encodeValues(db, statement, encoder);
  for await (const chunk of chunks) {
    if (each) await each(chunk);
  }
}

/** Output bytes an encoder may hold before they are handed on. */
const CHUNK_BYTES = 1 << 16;

/** A value as the text protocol sends it: bytes as they are, text as UTF-8, numbers as decimal digits. */
function wireBytes(value: unknown): Buffer | null {
  if (value === null || value === undefined) return null;
  if (Buffer.isBuffer(value)) return value;
  if (typeof value === 'boolean') return Buffer.from(value ? '1' : '0');
  return Buffer.from(typeof value === 'string' ? value : String(value), 'utf8');
}

/**
 * The rows of `statement` (arrays, in batches where the engine gives them) into `encoder`: each
 * batch's columns copied into one buffer, which the encoder may keep (nothing writes into it
 * again), and each row encoded from its byte ranges there.
 */
async function* encodeValues(db: Db, statement: Fragment, encoder: RowEncoder): AsyncIterable<Buffer> {
  const batches = db.streamBatches
    ? db.streamBatches(statement.sql, statement.params, { rowsAsArray: true })
    : singleRows(db.stream(statement.sql, statement.params, { rowsAsArray: true }));
  for await (const batch of batches) {
    const rows = batch as unknown[][];
    const values = rows.map((row) => row.map(wireBytes));
    const buf = Buffer.allocUnsafe(
      values.reduce((n, row) => n + row.reduce((m, v) => m + (v?.length ?? 0), 0), 0),
    );
    let at = 0;
    for (const row of values) {
      const starts = new Int32Array(row.length);
      const ends = new Int32Array(row.length);
      for (const [i, value] of row.entries()) {
        if (value === null) {
          starts[i] = ends[i] = -1;
          continue;
        }
        starts[i] = at;
        at += value.copy(buf, at);
        ends[i] = at;
      }
      encoder.encode(buf, starts, ends);
      if (encoder.pending >= CHUNK_BYTES) yield encoder.take();
    }
  }
  if (encoder.pending > 0) yield encoder.take();
}

async function* singleRows(rows: AsyncIterable<unknown>): AsyncIterable<unknown[]> {
  for await (const row of rows) yield [row];
}

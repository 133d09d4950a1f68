import { DenseDigests } from '../../../core/dense-digests.js';
import { drainEncoded } from '../../../db/encoded-stream.js';
import type { Fragment } from '../../../db/fragment.js';
import { hashesInSql } from '../../../db/dialect.js';
import type { Db, RowEncoder } from '../../../db/types.js';

/**
 * Aggregates a stream of key hashes into a dense level: each row's first column, a 32-bit hash as
 * its big-endian bytes (taskHashStream, businessHashStream), is read from the wire buffer and
 * counted, with no JS value per row. Nothing comes out.
 */
class HashesIn implements RowEncoder {
  readonly pending = 0;
  constructor(private readonly digests: DenseDigests) {}
  encode(buf: Buffer, starts: Int32Array, ends: Int32Array): void {
    const start = starts[0] as number;
    if (start < 0) return;
    const end = ends[0] as number;
    let h = 0;
    for (let i = start; i < end; i++) h = h * 256 + (buf[i] as number);
    this.digests.add(h);
  }
  take(): Buffer {
    return Buffer.alloc(0);
  }
}

/** Whether `db` can stream rows to an encoder (MariaDB/MySQL). */
export function streamsHashes(db: Db): boolean {
  return hashesInSql(db.dialect) && typeof db.streamEncoded === 'function';
}

/**
 * One dense level of a side: `statement` (one column, the key's hash) streamed and counted in
 * segments of `width`. In: database, statement, width. Out: the level's digests.
 */
export async function denseDigests(db: Db, statement: Fragment, width: number): Promise<DenseDigests> {
  const digests = new DenseDigests(width);
  await drainEncoded(db, statement, new HashesIn(digests));
  return digests;
}

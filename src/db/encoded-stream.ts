import type { Fragment } from './fragment.js';
import type { Db, RowEncoder } from './types.js';

/**
 * Runs `statement` with its rows encoded straight from the wire by `encoder` (MariaDB/MySQL) and
 * reads it to the end, handing each chunk the encoder emits to `each`; an encoder that folds the
 * rows into state of its own needs none.
 */
export async function drainEncoded(
  db: Db,
  statement: Fragment,
  encoder: RowEncoder,
  each?: (chunk: Buffer) => Promise<void>,
): Promise<void> {
  if (!db.streamEncoded) throw new Error(`${db.display}: rows encoded from the wire need MariaDB/MySQL`);
  for await (const chunk of db.streamEncoded(statement.sql, statement.params, encoder)) {
    if (each) await each(chunk);
  }
}

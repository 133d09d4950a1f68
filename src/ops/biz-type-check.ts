import { bizTypeWarnings } from '../core/filter-warnings.js';
import { closest } from '../config/suggest.js';
import type { BoundSource } from '../db/bind-source.js';
import { store } from '../db/port/index.js';

/** How many known biz types a warning lists at most. */
const KNOWN_LIMIT = 50;

/**
 * Warnings for `--biz-type` values no row has, each with the table's biz types as suggestions
 * (the closest one first). Empty when every requested biz type has rows, or none was requested.
 */
export async function unknownBizTypeWarnings(
  source: BoundSource,
  requested: readonly string[] | undefined,
): Promise<string[]> {
  if (!requested?.length || !source.sql.has('bizType')) return [];
  const present = new Set<string>();
  for (const bizType of requested)
    if (await store.tasks.bizTypeExists(source.db, source.sql, bizType)) present.add(bizType);
  if (present.size === requested.length) return [];
  const known = await store.tasks.selectBizTypes(source.db, source.sql, KNOWN_LIMIT);
  return requested
    .filter((b) => !present.has(b))
    .flatMap((b) => {
      const guess = closest(b, known);
      const ordered = guess ? [guess, ...known.filter((k) => k !== guess)] : known;
      return bizTypeWarnings([b], present, ordered).map((w) => (guess ? `${w} (did you mean ${guess}?)` : w));
    });
}

import type { BoundSource } from '../../db/bind-source.js';
import type { IndexInfo } from '../../db/types.js';
import { createIndexSql, FULL_SCAN_FREE_ROWS, indexServes, recommendedIndexes } from '../../ops/full-scan.js';
import { check, type DoctorCheck } from './check.js';
import { grouped } from '../../core/grouped.js';

/**
 * The indexes that let scan's summary and report answer from indexes instead of reading the whole
 * table: each one present, or its CREATE INDEX and why. A missing one warns only on a table large
 * enough (FULL_SCAN_FREE_ROWS) for scan and report to hold its figures back.
 */
export function summaryIndexCheck(
  source: BoundSource,
  indexes: IndexInfo[],
  estimatedRows: number,
): DoctorCheck {
  const name = 'summary indexes';
  const wanted = recommendedIndexes(source);
  if (wanted.length === 0)
    return check(name, 'ok', `${source.profile.name} has no column an index could serve the summary with`);
  const present: string[] = [];
  const missing = wanted.filter((w) => {
    const found = indexes.find((i) => indexServes(i, w.columns, w.anyOrder));
    if (found) present.push(`${found.name} (${found.columns.join(', ')})`);
    return !found;
  });
  if (missing.length === 0)
    return check(name, 'ok', `${present.join(' and ')} serve scan's summary and report's window`);
  const large = estimatedRows >= FULL_SCAN_FREE_ROWS;
  const why = missing.map((m) => `(${m.columns.join(', ')}): ${m.why}`).join('; ');
  return check(
    name,
    large ? 'warn' : 'ok',
    large
      ? `missing on ~${grouped(estimatedRows)} rows, so scan and report skip the figures they serve (--full-scan reads the whole table instead) — ${why}`
      : `not needed yet below ${grouped(FULL_SCAN_FREE_ROWS)} rows; add them before the table grows — ${why}`,
    missing.map((m) => createIndexSql(source, m)).join(' '),
  );
}

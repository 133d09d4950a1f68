import { store } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { usageError } from '../../errors.js';
import { requireAuditTable } from './audit.js';

/** A run id is a UUID: anything shorter is a prefix, such as the 8 characters `audit` displays. */
const FULL_RUN_ID_CHARS = 36;

/** The full run id for `audit --run`: the value itself, or the one run whose id starts with it. */
export async function resolveRunId(db: Db, value: string): Promise<string> {
  const prefix = value.trim();
  if (prefix.length >= FULL_RUN_ID_CHARS) return prefix;
  if (prefix.length < 4)
    throw usageError(
      `--run: '${value}' is too short to name a run`,
      'Give at least 4 characters of the run id.',
    );
  await requireAuditTable(db);
  const runs = await store.audit.selectRunIdsByPrefix(db, db.dialect, prefix, 6);
  if (runs.length === 1) return runs[0] as string;
  if (runs.length === 0)
    throw usageError(
      `--run: no audited run id starts with '${prefix}'`,
      'List recent runs with `taskrecon audit`.',
    );
  throw usageError(
    `--run: '${prefix}' is the start of ${runs.length > 5 ? 'more than 5' : runs.length} run ids (${runs.slice(0, 5).join(', ')})`,
    'Give more characters of the run id.',
  );
}

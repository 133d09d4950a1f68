import type { BoundSource } from '../db/bind-source.js';
import type { ScanFilter } from '../db/fragment.js';
import { usageError } from '../errors.js';

/** The flags that narrow a selection by last error and queue (scan and compensate take both). */
export interface TextAndQueueFlags {
  'error-like'?: string;
  queue?: string[];
}

/**
 * `--error-like` and `--queue` as a filter, checked against the profile: each needs its column
 * (a filter the table cannot apply would silently select every row). Exit 3 naming the flag.
 */
export function errorAndQueueFilter(
  source: BoundSource,
  flags: TextAndQueueFlags,
): Pick<ScanFilter, 'errorLike' | 'queues'> {
  const { profile, sql } = source;
  if (flags.queue?.length && !sql.has('queue')) {
    throw usageError(
      `--queue needs a queue column, and profile ${profile.name} (table ${profile.table}) has none`,
      "It filters failed jobs and Laravel's jobs by queue; on a task table use --biz-type, or map queue to a column under `columns:` in the source.",
    );
  }
  const errorLike = flags['error-like'];
  if (errorLike !== undefined && !sql.has('lastError')) {
    throw usageError(
      `--error-like needs a last-error column, and profile ${profile.name} (table ${profile.table}) has none`,
      'Map lastError to a column under `columns:` in the source.',
    );
  }
  if (errorLike === '')
    throw usageError(
      '--error-like is empty',
      'Give the text the last error contains, e.g. --error-like timeout.',
    );
  return { errorLike, queues: flags.queue?.length ? flags.queue : undefined };
}

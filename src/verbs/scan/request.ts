import type { LogicalStatus } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { windowField } from '../../db/fragment.js';
import type { ListKind } from '../../db/port/index.js';
import { usageError } from '../../errors.js';
import { resolveTime } from '../../flags.js';
import { errorAndQueueFilter, type TextAndQueueFlags } from '../../ops/text-filters.js';
import type { ListOrder } from '../../ops/task-lists.js';
import { ALL_LISTS, type ScanOptions } from './scan.js';

/** Which lists a --status asks for: processing is stuck, pending is due, failed is failed. */
const LISTS_OF_STATUS: Record<LogicalStatus, ListKind[]> = {
  processing: ['stuck'],
  pending: ['due'],
  failed: ['failed'],
  success: [],
  compensated: [],
};

type TimeInput = { ago: number } | { epoch: number };

/** The flags of `scan` that shape what it reads. */
export interface ScanFlags extends TextAndQueueFlags {
  'biz-type'?: string[];
  status?: string[];
  since?: TimeInput;
  until?: TimeInput;
  'stuck-after'?: number;
  limit: number;
  'full-scan'?: boolean;
  /** `next-retry` or `id`; `cheapest` lets the server's cheaper read decide (streamed whole lists). */
  order?: string;
}

/**
 * The scan a command line asks for, checked against the profile: --since/--until need a time
 * column, --biz-type a biz type column, --queue a queue column, --error-like a last-error column. `now` is the database's, read once here.
 */
export async function scanRequest(
  source: BoundSource,
  flags: ScanFlags,
  defaultStuckAfterMs: number,
): Promise<ScanOptions> {
  const nowEpoch = await source.db.nowEpoch();
  if ((flags.since || flags.until) && !windowField(source.sql)) {
    throw usageError(
      `--since/--until need a created or updated time, and profile ${source.profile.name} has neither`,
    );
  }
  const statuses = flags.status as LogicalStatus[] | undefined;
  const options: ScanOptions = {
    nowEpoch,
    stuckAfterMs: flags['stuck-after'] ?? defaultStuckAfterMs,
    limit: flags.limit,
    fullScan: flags['full-scan'] ?? false,
    ...(flags.order ? { order: flags.order as ListOrder } : {}),
    bizTypes: flags['biz-type'],
    sinceEpoch: resolveTime(flags.since, nowEpoch),
    untilEpoch: resolveTime(flags.until, nowEpoch),
    ...errorAndQueueFilter(source, flags),
    lists: statuses
      ? ALL_LISTS.filter((k) => statuses.some((s) => LISTS_OF_STATUS[s].includes(k)))
      : ALL_LISTS,
  };
  if ((options.bizTypes?.length ?? 0) > 0 && !source.sql.has('bizType')) {
    throw usageError(`--biz-type needs a biz type, and profile ${source.profile.name} has none`);
  }
  return options;
}

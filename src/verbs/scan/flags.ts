import { Flags } from '../../core/oclif.js';
import {
  countFlag,
  durationFlag,
  errorLikeFlag,
  FORMATS,
  queueFlag,
  shardFlags,
  statusFlag,
  timeFlag,
} from '../../flags.js';
import { LIST_ORDERS } from '../../ops/task-lists.js';

/** The flags of `scan`. */
export const SCAN_FLAGS = {
  ...shardFlags,
  'biz-type': Flags.string({ summary: 'Only these biz types.', multiple: true }),
  status: statusFlag,
  since: timeFlag({
    summary: 'Only tasks created at or after this time (ISO date-time, or a duration ago like 2h).',
  }),
  until: timeFlag({ summary: 'Only tasks created before this time.' }),
  queue: queueFlag,
  'error-like': errorLikeFlag,
  'stuck-after': durationFlag({
    summary: "A processing task untouched this long is stuck (default: the profile's lease, 10m).",
  }),
  limit: countFlag(0)({
    summary: 'Rows per list; 0 lists every row (stream it with --format ndjson).',
    default: 20,
  }),
  format: Flags.string({ summary: 'Output format.', options: [...FORMATS] }),
  order: Flags.string({
    summary: 'Order of each list: next-retry (next_retry_time, then id) or id (primary key).',
    description:
      'Default: next-retry. With --format ndjson --limit 0 and no --order, each list streams in the order the server reads faster: primary-key order when the list is a quarter or more of a table of 100,000 rows or more (MySQL/MariaDB), list order otherwise.',
    options: [...LIST_ORDERS],
  }),
  'full-scan': Flags.boolean({
    summary: 'On a large table, also compute the figures no index serves, reading the whole table for them.',
    description:
      'Without it, a figure that would read the whole table (no index serves it, ≥ 100,000 rows) is skipped and a note names the index that would serve it (taskrecon doctor prints the CREATE INDEX).',
  }),
  'second-failures': Flags.boolean({
    summary: 'Also list second failures: jobs the `sweeps:` rules retried maxSweeps times that failed again.',
  }),
};

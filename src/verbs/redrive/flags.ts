import { Flags } from '../../core/oclif.js';
import { countFlag, durationFlag, shardFlags } from '../../flags.js';
import {
  DEFAULT_BATCH,
  DEFAULT_CONCURRENCY,
  DEFAULT_LEASE_SECONDS,
  DEFAULT_PAUSE_MS,
} from '../../ops/redrive/redrive.js';

/** The flags of `redrive`; --lease is checked by redriveLeaseMs(). */
export const REDRIVE_FLAGS = {
  ...shardFlags,
  batch: countFlag(1)({ summary: 'Rows claimed per transaction.', default: DEFAULT_BATCH }),
  pause: durationFlag({
    summary: 'Rest between batches.',
    default: DEFAULT_PAUSE_MS,
    defaultHelp: async () => `${DEFAULT_PAUSE_MS}ms`,
  }),
  concurrency: countFlag(1)({
    summary: 'Tasks dispatched at once by this process.',
    default: DEFAULT_CONCURRENCY,
  }),
  'max-tasks': countFlag(1)({ summary: 'Stop after claiming this many tasks.' }),
  lease: durationFlag({
    summary:
      'How long a claim is held before another worker may take it over (≥ 1s; longer than the slowest handler).',
    defaultHelp: async () => `${DEFAULT_LEASE_SECONDS / 60}m`,
  }),
  'stuck-after': durationFlag({
    summary:
      "A processing task untouched this long (and past its lease) is recovered (default: the source's, 10m).",
  }),
  'biz-type': Flags.string({ summary: 'Only these biz types.', multiple: true }),
  'dry-run': Flags.boolean({ summary: 'Count what would be claimed; claim, dispatch and write nothing.' }),
  heartbeat: Flags.boolean({
    summary:
      "Extend running claims' leases while their handlers run. --no-heartbeat is a test and diagnostic switch only: a handler slower than --lease may then run twice.",
    default: true,
    allowNo: true,
    hidden: true,
  }),
  'log-format': Flags.string({
    summary: 'Per-attempt log lines on stderr: none for text, one JSON object per line for json.',
    options: ['text', 'json'],
    default: 'text',
  }),
  'log-file': Flags.string({
    summary: 'Append the --log-format json lines to this file instead of stderr (errors still print).',
  }),
};

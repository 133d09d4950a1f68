import { Flags } from '../../core/oclif.js';
import { DEFAULT_CHUNK_TIME_MS } from '../../core/diff.js';
import { countFlag, durationFlag, FORMATS, shardFlags, timeFlag } from '../../flags.js';
import { WALK_CHOICES } from './prepare.js';

/** The flags of `diff`; their combinations are checked by checkDiffFlags(). */
export const DIFF_FLAGS = {
  rule: Flags.string({ summary: 'Only this rule (by name); repeatable.', multiple: true }),
  since: timeFlag({
    summary: 'Only tasks created at or after this time (ISO date-time, or a duration ago like 24h).',
  }),
  until: timeFlag({ summary: 'Only tasks created before this time.' }),
  'chunk-time': durationFlag({
    summary: 'Aim each chunk of the table walk at this long (like pt-table-checksum).',
    default: DEFAULT_CHUNK_TIME_MS,
    defaultHelp: async () => `${DEFAULT_CHUNK_TIME_MS}ms`,
  }),
  walk: Flags.string({
    summary:
      'On one server: merge the two key indexes (text keys of one collation), join row by row, or auto.',
    options: [...WALK_CHOICES],
    default: 'auto',
  }),
  samples: countFlag(0)({ summary: 'Findings kept as samples per kind and rule.', default: 10 }),
  format: Flags.string({
    summary: 'Output format (ndjson and csv stream every finding).',
    options: [...FORMATS],
  }),
  enqueue: Flags.boolean({
    summary: 'Send tasks whose effect is missing back to pending, due now, for redrive (audited).',
  }),
  'dry-run': Flags.boolean({
    summary: 'With --enqueue or --create-missing: show what would be written; write nothing.',
  }),
  'create-missing': Flags.boolean({
    summary:
      'Create the task of each orphan business row of rules with `create:` (event id <rule>:<key>; audited).',
  }),
  yes: Flags.boolean({
    char: 'y',
    summary: 'With --enqueue or --create-missing: do not ask (needed when not on a terminal).',
  }),
  operator: Flags.string({
    summary:
      'Who is acting, for the audit of --enqueue (default: TASKRECON_OPERATOR, else config operator, else OS user@host).',
  }),
  reason: Flags.string({ summary: 'Why, for the audit of --enqueue.' }),
  'into-shard': Flags.string({
    summary: 'On a sharded source, with --create-missing: the shard (by name) the created tasks go to.',
  }),
  ...shardFlags,
};

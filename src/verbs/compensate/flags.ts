import { Args, Flags } from '../../core/oclif.js';
import { countFlag, errorLikeFlag, queueFlag, shardFlags, statusFlag, timeFlag } from '../../flags.js';
import { COMPENSATE_ACTIONS } from '../../core/compensate-plan.js';

/** The positional arguments of `compensate` (parsed by parseIdArgs). */
export const COMPENSATE_IDS_ARG = Args.string({
  description:
    'Task ids and inclusive id ranges LO-HI (space or comma separated), e.g. 11-13 15; without ids the filters select (with a range they narrow it).',
});

/** The flags of `compensate`; their combinations are checked by compensateRequest(). */
export const COMPENSATE_FLAGS = {
  action: Flags.string({
    summary: 'What to do (asked for on a terminal when omitted).',
    options: [...COMPENSATE_ACTIONS],
  }),
  status: statusFlag,
  'biz-type': Flags.string({
    summary: 'Only these biz types (for Laravel/think-queue rows: the job class).',
    multiple: true,
    aliases: ['job-class'],
  }),
  since: timeFlag({ summary: 'Only tasks created (failed, for failed-job tables) at or after this time.' }),
  until: timeFlag({ summary: 'Only tasks created (failed) before this time.' }),
  'error-like': errorLikeFlag,
  queue: queueFlag,
  operator: Flags.string({
    summary:
      'Who is acting, for the audit (default: TASKRECON_OPERATOR, else config operator, else OS user@host).',
  }),
  reason: Flags.string({
    summary: 'Why, for the audit (required when config compensate.requireReason is true).',
  }),
  'dry-run': Flags.boolean({ summary: 'Show what would change; write nothing.' }),
  now: Flags.boolean({
    summary:
      'With --action retry on a task table: run the retried tasks at once through their handlers, as redrive does.',
  }),
  'force-effect': Flags.boolean({
    summary:
      'With --action retry: also retry tasks whose business effect the diff rules find already there (present or duplicated), each audited as forced.',
  }),
  yes: Flags.boolean({
    char: 'y',
    summary: 'Do not ask: act on every match (needed when not on a terminal).',
  }),
  limit: countFlag(0)({ summary: 'Act on at most this many tasks; 0 = every match.', default: 0 }),
  rate: Flags.string({ summary: 'At most this many tasks per second, e.g. 200/s or 6000/m.' }),
  batch: countFlag(1)({ summary: 'Rows per transaction.', default: 250, hidden: true }),
  ...shardFlags,
};

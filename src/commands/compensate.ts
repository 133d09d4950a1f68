import { Args, Flags } from '@oclif/core';
import { randomUUID } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import { BaseCommand } from '../base-command.js';
import type { LogicalStatus, TaskId } from '../core/task.js';
import { ExitCode, usageError } from '../errors.js';
import { countFlag, resolveTime, statusFlag, timeFlag } from '../flags.js';
import {
  compensate,
  previewCandidates,
  type CompensateRequest,
  type CompensateResult,
} from '../verbs/compensate/index.js';
import { checkDispatchable, dispatchNow } from '../verbs/compensate/index.js';
import { COMPENSATE_ACTIONS, parseRate, type CompensateAction } from '../verbs/compensate/index.js';
import { parseTaskId, showTask } from '../verbs/show/index.js';
import { renderCompensate, startBar } from '../render/compensate.js';
import { renderShow } from '../render/show.js';
import { writeErr } from '../render/terminal.js';

/** How many matches the interactive picker lists at most. */
const PICKER_ROWS = 100;

export default class Compensate extends BaseCommand<typeof Compensate> {
  static override summary =
    'Retry, mark compensated, mark failed or forget tasks by hand, each change audited.';
  static override description =
    'Selects tasks by id or by filters and moves them through the state machine: every change is a guarded write ' +
    'with its taskrecon_audit row (who, when, before, after, why) in the same transaction. On a terminal without ' +
    '--yes it opens a picker and asks before writing (default no); elsewhere it needs --yes. Failed Laravel and ' +
    'think-queue jobs are retried as their own queue:retry does: re-pushed onto their queue, the failed row deleted. ' +
    'Bulk runs go in id order a batch at a time: interrupted (Ctrl-C finishes the batch in hand), the same command ' +
    'continues without redoing anything.';
  static override examples = [
    '<%= config.bin %> compensate 1042 1043 --action mark-compensated --reason "coupon issued by hand" --yes',
    '<%= config.bin %> compensate --action retry --status failed --biz-type sms --error-like timeout --dry-run',
    '<%= config.bin %> compensate 2001 2002 --action retry --now --reason "partner API is back" --yes',
    '<%= config.bin %> compensate --source failed --action retry --queue high --rate 200/s --yes',
    '<%= config.bin %> compensate --profile laravel-failed-jobs --action forget --job-class "App\\Jobs\\SendSms" --yes',
  ];

  static override strict = false;
  static override args = {
    ids: Args.string({
      description: 'Task ids (several allowed, space or comma separated); without ids the filters select.',
    }),
  };

  static override flags = {
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
    'error-like': Flags.string({
      summary: 'Only tasks whose last error contains this text (or matches this LIKE pattern with %).',
    }),
    queue: Flags.string({ summary: 'Only jobs of these queues.', multiple: true }),
    operator: Flags.string({ summary: 'Who is acting, for the audit (default: OS user@host).' }),
    reason: Flags.string({
      summary: 'Why, for the audit (required when config compensate.requireReason is true).',
    }),
    'dry-run': Flags.boolean({ summary: 'Show what would change; write nothing.' }),
    now: Flags.boolean({
      summary:
        'With --action retry on a task table: run the retried tasks at once through their handlers, as redrive does.',
    }),
    yes: Flags.boolean({
      char: 'y',
      summary: 'Do not ask: act on every match (needed when not on a terminal).',
    }),
    limit: countFlag(0)({ summary: 'Act on at most this many tasks; 0 = every match.', default: 0 }),
    rate: Flags.string({ summary: 'At most this many tasks per second, e.g. 200/s or 6000/m.' }),
    batch: countFlag(1)({ summary: 'Rows per transaction.', default: 250, hidden: true }),
  };

  async run(): Promise<CompensateResult | undefined> {
    const { argv } = await this.parse(Compensate);
    const source = await this.openSource();
    const ids = (argv as string[])
      .flatMap((a) => a.split(','))
      .filter((a) => a.trim() !== '')
      .map((a): TaskId => parseTaskId(source, a));
    const filtersGiven = ['status', 'biz-type', 'since', 'until', 'error-like', 'queue'].filter(
      (f) => this.flags[f as keyof typeof this.flags] !== undefined,
    );
    if (ids.length && filtersGiven.length) {
      throw usageError(
        `give task ids or filters, not both (got ids and --${filtersGiven.join(', --')})`,
        'Filters select tasks when no ids are given.',
      );
    }
    const rate = this.flags.rate === undefined ? undefined : parseRate(this.flags.rate);
    if (this.flags.rate !== undefined && rate === undefined)
      throw usageError(`--rate: '${this.flags.rate}' is not a rate`, 'Write e.g. 200/s, 50 or 6000/m.');
    const nowEpoch = await source.db.nowEpoch();
    const interactive =
      !this.flags.yes &&
      !this.flags['dry-run'] &&
      !this.jsonEnabled() &&
      Boolean(process.stdin.isTTY && process.stdout.isTTY);
    if (!this.flags.yes && !this.flags['dry-run'] && !interactive) {
      throw usageError(
        'refusing to change tasks without a confirmation: this is not a terminal',
        'Pass --yes to act on every match, or --dry-run to see what would change.',
      );
    }
    if (!this.flags.action && !interactive)
      throw usageError('--action is required', `One of: ${COMPENSATE_ACTIONS.join(', ')}.`);
    if (this.flags.now) {
      if (this.flags.action !== 'retry')
        throw usageError(
          '--now goes with --action retry',
          'It runs the tasks a retry has just sent back to pending.',
        );
      if (this.flags['dry-run'])
        throw usageError('--now and --dry-run exclude each other: a dry run changes and runs nothing');
      checkDispatchable(source, this.context.config);
    }
    const reasonRequired = this.context.config.compensate?.requireReason === true;
    if (reasonRequired && !interactive && !this.flags['dry-run'] && !this.flags.reason?.trim()) {
      throw usageError(
        '--reason is required: the config sets compensate.requireReason',
        'Say why, e.g. --reason "refund issued by hand, ticket OPS-123".',
      );
    }
    const request: CompensateRequest = {
      action: (this.flags.action ?? 'retry') as CompensateAction,
      operator: this.flags.operator ?? defaultOperator(),
      host: hostname(),
      reason: this.flags.reason?.trim() || null,
      dryRun: Boolean(this.flags['dry-run']),
      runId: randomUUID(),
      ids: ids.length ? ids : undefined,
      statuses: this.flags.status as LogicalStatus[] | undefined,
      filter: {
        bizTypes: this.flags['biz-type'],
        sinceEpoch: resolveTime(this.flags.since, nowEpoch),
        untilEpoch: resolveTime(this.flags.until, nowEpoch),
        errorLike: this.flags['error-like'],
        queues: this.flags.queue,
      },
      limit: this.flags.limit,
      rate,
      batchSize: this.flags.batch,
      queueConnections: this.context.source().config.queue?.connections,
    };
    if (interactive) {
      // Loaded only here: the prompt library is not needed by scripted runs.
      const { pickInteractively } = await import('../render/compensate-prompt.js');
      const choice = await pickInteractively(
        {
          load: (action) => previewCandidates(source, { ...request, action }, PICKER_ROWS),
          action: this.flags.action as CompensateAction | undefined,
          preselected: ids.length > 0,
          reason: request.reason ?? undefined,
          reasonRequired,
          sourceName: source.name,
          detail: async (id) => renderShow(await showTask(source, String(id)), { full: false }),
        },
        (text) => this.log(text),
      );
      if (choice === 'none') {
        this.log('No task matches: nothing to do.');
        return undefined;
      }
      if (!choice) {
        this.log('Nothing changed.');
        return undefined;
      }
      Object.assign(request, { ids: choice.ids, action: choice.action, reason: choice.reason, limit: 0 });
    }
    let stopping = false;
    const onSignal = () => {
      if (stopping) process.exit(130);
      stopping = true;
      writeErr('stopping after the batch in hand (press Ctrl-C again to abort it; it is rolled back)');
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const bar = startBar(request.action, !this.jsonEnabled());
    let result: CompensateResult;
    const retried: TaskId[] = [];
    try {
      result = await compensate(source, {
        ...request,
        shouldStop: () => stopping,
        onProgress: (done, total, applied) => bar.update(done, total, applied),
        onApplied: this.flags.now ? (applied) => retried.push(...applied) : undefined,
      });
      if (this.flags.now && retried.length > 0 && !stopping) {
        result.dispatched = await dispatchNow(
          source,
          retried,
          this.context.config,
          this.context.source().stuckAfterMs,
        );
      }
    } finally {
      bar.stop();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    if (!this.jsonEnabled()) this.log(renderCompensate(result));
    if (result.refused > 0) {
      if (request.ids) {
        writeErr(
          `nothing was changed: ${result.refused} of the named tasks cannot take ${request.action} (see the reasons above)`,
        );
        this.setExit(ExitCode.couldNotRun);
      } else this.setExit(ExitCode.findings);
    } else if (result.interrupted) this.setExit(ExitCode.findings);
    return result;
  }
}

/** OS user@host, the default operator. */
function defaultOperator(): string {
  let user = process.env.USER ?? process.env.LOGNAME ?? 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (containers): the environment's name will do
  }
  return `${user}@${hostname()}`;
}

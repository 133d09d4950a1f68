import { Flags } from '../core/oclif.js';
import { BaseCommand } from '../base-command.js';
import { ExitCode } from '../errors.js';
import { durationFlag } from '../flags.js';
import { renderSweep, sweepNeedsAPerson } from '../render/sweep.js';
import { withPasteConnection } from '../render/paste.js';
import { buildSweepRequest, runSweep, type SweepResult } from '../verbs/sweep/index.js';

export default class Sweep extends BaseCommand<typeof Sweep> {
  static override summary =
    'Sweep new failures by per-job-class rules: retry, defer to a window, hold, or flag a second failure.';
  static override description =
    'For cron (the rules are the confirmation): every failed-job table and task table in the config, the rows that ' +
    'failed since the previous sweep (--since, the cron period), each under the first `sweeps:` rule that matches. ' +
    'Retries go through the compensate retry path (state machine, audit, the framework queue format); a rule outside ' +
    'its window or inside a blackout (appTimeZone) defers the row and says when it becomes eligible; a job already ' +
    'swept maxSweeps times is a second failure: not retried, reported, alerted once with --notify. Exit 1 when there ' +
    'are second failures. Running it again over the same window does nothing new. A rule with `match.broker` sweeps ' +
    "a BullMQ broker's failed jobs instead (job name as biz type, failedReason as error), retried through BullMQ.";
  static override examples = [
    '<%= config.bin %> sweep --since 1h --dry-run',
    '<%= config.bin %> sweep --since 1h --notify --quiet',
    '<%= config.bin %> sweep --source failed --json',
  ];

  static override flags = {
    since: durationFlag({
      summary: 'The cron period: rows that failed this long ago or later are new.',
      default: 3_600_000,
      defaultHelp: async () => '1h',
    }),
    'dry-run': Flags.boolean({ summary: 'Show what the rules would do; write and send nothing.' }),
    notify: Flags.boolean({ summary: 'Alert second failures (once per job) to report.notify webhooks.' }),
    webhook: Flags.string({ summary: 'An extra alert target KIND=URL (with --notify).', multiple: true }),
    operator: Flags.string({ summary: 'Who the audit names (default: sweep:OS user@host).' }),
    'force-effect': Flags.boolean({
      summary:
        'Also retry rows whose business effect the diff rules find already there (present or duplicated), each audited as forced.',
    }),
    quiet: Flags.boolean({
      char: 'q',
      summary: 'Print nothing unless something needs a person (second failures, holds, refusals).',
    }),
  };

  async run(): Promise<SweepResult> {
    const request = await buildSweepRequest(this.context, {
      sinceMs: this.flags.since,
      dryRun: this.flags['dry-run'] === true,
      notify: this.flags.notify,
      webhooks: this.flags.webhook ?? [],
      operator: this.flags.operator,
      forceEffect: this.flags['force-effect'],
    });
    const result = await runSweep({ ...request, paste: withPasteConnection });
    // Under --quiet a run that needs nobody prints nothing, connection warnings included.
    if (!this.flags.quiet || sweepNeedsAPerson(result)) {
      for (const { source } of request.sources)
        for (const warning of source.db.warnings) this.warnLine(warning);
      if (!this.jsonEnabled()) this.log(renderSweep(result));
    }
    if (result.secondFailures > 0) this.setExit(ExitCode.findings);
    return result;
  }
}

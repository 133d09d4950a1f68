import { BaseCommand } from '../base-command.js';
import { ExitCode } from '../errors.js';
import { untilStopped } from '../stop-signals.js';
import {
  COMPENSATE_FLAGS,
  COMPENSATE_IDS_ARG,
  type CompensateAction,
  compensateOutcome,
  compensateRequest,
  type CompensateResult,
  runCompensate,
  effectSetup,
  compensateShards,
  type CompensateRequest,
} from '../verbs/compensate/index.js';
import { renderCompensate, startBar } from '../render/compensate.js';
import { confirmShardPlan, renderCompensateShards } from '../render/compensate-shards.js';
import { writeErr } from '../render/terminal.js';

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
    '<%= config.bin %> compensate --source failed 11-13 15 --action retry --queue high --rate 200/s --yes',
    '<%= config.bin %> compensate --source tasks shop_0.async_task_3:42 --action retry --yes  # a sharded source: SHARD:ID',
    '<%= config.bin %> compensate --profile laravel-failed-jobs --action forget --job-class "App\\Jobs\\SendSms" --yes',
  ];

  static override strict = false;
  static override args = {
    ids: COMPENSATE_IDS_ARG,
  };

  static override flags = COMPENSATE_FLAGS;

  async run(): Promise<CompensateResult | undefined> {
    const { argv } = await this.parse(Compensate);
    const { source, set } = await this.openSourceOrShards(this.flags);
    const tty = Boolean(process.stdin.isTTY && process.stdout.isTTY);
    const now = this.flags.now
      ? { config: this.context.config, stuckAfterMs: this.context.source().stuckAfterMs }
      : undefined;
    const input = {
      ...{ flags: this.flags, argv: argv as string[], config: this.context.config, json: this.jsonEnabled() },
      queueConnections: this.context.source().config.queue?.connections,
    };
    if (set) {
      const result = await untilStopped(noteStop, (shouldStop) =>
        compensateShards(set, {
          ...{ ...input, now, shouldStop },
          effects: (shard) => effectSetup(this.context, shard.spec.db),
          confirm: tty ? (plan, action) => confirmShardPlan(plan, action, (t) => this.log(t)) : undefined,
        }),
      );
      if (!result) this.log('Nothing changed.');
      return result && this.finish(result, input.argv.length > 0, renderCompensateShards);
    }
    const { request, interactive, reasonRequired } = await compensateRequest(source, {
      ...{ ...input, tty, effects: effectSetup(this.context) },
    });
    if (interactive) {
      // Loaded only here: the prompt library is not needed by scripted runs.
      const { pickIntoRequest } = await import('../render/compensate-prompt.js');
      const action = this.flags.action as CompensateAction | undefined;
      if (!(await pickIntoRequest(source, request, { action, reasonRequired }, (t) => this.log(t))))
        return undefined;
    }
    const bar = startBar(request.action, !this.jsonEnabled());
    const result = await untilStopped(noteStop, (shouldStop) =>
      runCompensate({
        source,
        request: {
          ...request,
          shouldStop,
          onProgress: (count, total, applied) => bar.update(count, total, applied),
        },
        now,
      }),
    ).finally(() => bar.stop());
    return this.finish(result, Boolean(request.ids), renderCompensate, request);
  }

  private finish<R extends CompensateResult>(
    r: R,
    named: boolean,
    render: (r: R) => string,
    request?: CompensateRequest,
  ): R {
    if (!this.jsonEnabled()) this.log(render(r));
    const outcome = compensateOutcome(request ?? { action: r.action, ids: named ? [] : undefined }, r);
    if (outcome.message) writeErr(outcome.message);
    if (outcome.exit !== ExitCode.ok) this.setExit(outcome.exit);
    return r;
  }
}

const noteStop = () =>
  writeErr('stopping after the batch in hand (press Ctrl-C again to abort it; it is rolled back)');

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
} from '../verbs/compensate/index.js';
import { renderCompensate, startBar } from '../render/compensate.js';
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
    '<%= config.bin %> compensate --profile laravel-failed-jobs --action forget --job-class "App\\Jobs\\SendSms" --yes',
  ];

  static override strict = false;
  static override args = {
    ids: COMPENSATE_IDS_ARG,
  };

  static override flags = COMPENSATE_FLAGS;

  async run(): Promise<CompensateResult | undefined> {
    const { argv } = await this.parse(Compensate);
    const source = await this.openSource();
    const { request, interactive, reasonRequired } = await compensateRequest(source, {
      flags: this.flags,
      argv: argv as string[],
      config: this.context.config,
      queueConnections: this.context.source().config.queue?.connections,
      json: this.jsonEnabled(),
      tty: Boolean(process.stdin.isTTY && process.stdout.isTTY),
      effects: effectSetup(this.context),
    });
    if (interactive) {
      // Loaded only here: the prompt library is not needed by scripted runs.
      const { pickForRequest } = await import('../render/compensate-prompt.js');
      const choice = await pickForRequest(
        source,
        request,
        { action: this.flags.action as CompensateAction | undefined, reasonRequired },
        (text) => this.log(text),
      );
      if (!choice || choice === 'none') {
        this.log(choice === 'none' ? 'No task matches: nothing to do.' : 'Nothing changed.');
        return undefined;
      }
      Object.assign(request, {
        ids: choice.ids,
        action: choice.action,
        reason: choice.reason,
        limit: 0,
        skipEffectRefusals: true,
      });
    }
    const bar = startBar(request.action, !this.jsonEnabled());
    const result = await untilStopped(
      () => writeErr('stopping after the batch in hand (press Ctrl-C again to abort it; it is rolled back)'),
      (shouldStop) =>
        runCompensate({
          source,
          request: {
            ...request,
            shouldStop,
            onProgress: (count, total, applied) => bar.update(count, total, applied),
          },
          now: this.flags.now
            ? { config: this.context.config, stuckAfterMs: this.context.source().stuckAfterMs }
            : undefined,
        }),
    ).finally(() => bar.stop());
    if (!this.jsonEnabled()) this.log(renderCompensate(result));
    const outcome = compensateOutcome(request, result);
    if (outcome.message) writeErr(outcome.message);
    if (outcome.exit !== ExitCode.ok) this.setExit(outcome.exit);
    return result;
  }
}

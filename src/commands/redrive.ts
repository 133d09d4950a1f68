import { BaseCommand, CANCELLED_EXIT } from '../base-command.js';
import { RetryPolicies } from '../core/backoff.js';
import { registryFromConfig } from '../dispatch/registry.js';
import {
  checkRedrive,
  everyAttemptFailed,
  ReasonTally,
  REDRIVE_FLAGS,
  redriveLeaseMs,
  type RedriveOptions,
  type RedriveResult,
  runRedrive,
  runRedriveShards,
  summaryEvent,
} from '../verbs/redrive/index.js';
import { startProgress } from '../render/progress.js';
import { eventLine, renderRedrive } from '../render/redrive.js';
import { renderReasons } from '../render/redrive-reasons.js';
import { appendFileSync } from 'node:fs';
import { ExitCode } from '../errors.js';
import { writeErr } from '../render/terminal.js';
import { stopThenAbort } from '../stop-signals.js';
import { grouped } from '../core/grouped.js';

export default class Redrive extends BaseCommand<typeof Redrive> {
  static override summary =
    'The reconciliation job: claim due and stuck tasks, run their handlers, record each outcome.';
  static override description =
    'Claims stuck processing rows whose lease expired, then due pending rows, in batches (FOR UPDATE SKIP LOCKED where the ' +
    'server has it), runs each through the handler of its biz type (config `handlers:`), and writes success, a retry ' +
    'with backoff (config `retry:`, default 1s 4s 16s 64s 5m 30m 2h) or failed through guarded, fenced updates. Safe to ' +
    'run from many hosts at once, e.g. from cron every minute. SIGINT/SIGTERM stop claiming and settle what is in flight ' +
    '(after Ctrl-C the exit code is 130).';
  static override examples = [
    '<%= config.bin %> redrive --db mysql://app@127.0.0.1:3306/shop --batch 500 --pause 100ms',
    '<%= config.bin %> redrive --biz-type coupon --max-tasks 1000 --lease 2m --log-format json',
    '<%= config.bin %> redrive --dry-run',
  ];

  static override flags = REDRIVE_FLAGS;

  async run(): Promise<RedriveResult> {
    const leaseMs = redriveLeaseMs(this.flags.lease);
    const { handlers, brokers, retry } = this.context.config;
    const dispatchers = registryFromConfig(handlers, undefined, brokers);
    const opened = await this.openSourceOrShards(this.flags);
    for (const { source } of opened.set?.shards ?? [opened])
      for (const warning of await checkRedrive(source, dispatchers, leaseMs)) this.warnLine(warning);
    const signals = stopThenAbort((signal) =>
      writeErr(`${signal}: no more claims; settling tasks in flight (again to give up on them)`),
    );
    const json = this.flags['log-format'] === 'json';
    const logFile = this.flags['log-file'];
    const writeLog = (line: string) => (logFile ? appendFileSync(logFile, `${line}\n`) : this.logLine(line));
    const reasons = new ReasonTally();
    const progress = startProgress(
      this.flags['dry-run'] ? 'counting' : 'redriving',
      !this.jsonEnabled() && !json,
    );
    try {
      const options: RedriveOptions = {
        batch: this.flags.batch,
        pauseMs: this.flags.pause,
        concurrency: this.flags.concurrency,
        maxTasks: this.flags['max-tasks'],
        leaseSeconds: Math.ceil(leaseMs / 1000),
        stuckAfterMs: this.flags['stuck-after'] ?? this.context.source().stuckAfterMs,
        bizTypes: this.flags['biz-type'],
        dryRun: this.flags['dry-run'] ?? false,
        dispatchers,
        policies: RetryPolicies.fromConfig(retry),
        heartbeat: this.flags.heartbeat,
        stop: signals.stop,
        abort: signals.abort,
        log: (event) => {
          reasons.add(event);
          if (json) writeLog(eventLine(event));
        },
        onProgress: (c) =>
          progress.update(`${grouped(c.claimed)} claimed, ${grouped(c.succeeded)} succeeded`),
      };
      const result = opened.set
        ? await runRedriveShards(opened.set, options)
        : await runRedrive(opened.source, options);
      progress.stop();
      if (json)
        writeLog(JSON.stringify({ ts: new Date().toISOString(), ...summaryEvent(result, reasons.top()) }));
      if (!this.jsonEnabled())
        this.log(
          [renderRedrive(result), renderReasons(reasons.top(), reasons.total)].filter(Boolean).join('\n'),
        );
      // Every attempt failed: the handlers or what they call are down, which needs a person.
      if (everyAttemptFailed(result)) this.setExit(ExitCode.findings);
      for (const u of result.unhandled) {
        if (this.jsonEnabled())
          writeErr(
            `warning: ${u.count} due or stuck tasks of biz type ${u.bizType ?? '(none)'} have no handler`,
          );
      }
      // Ctrl-C: the shell's exit for SIGINT, as at compensate's prompt (SIGTERM, a service stop, exits as usual).
      if (signals.received() === 'SIGINT') process.exitCode = CANCELLED_EXIT;
      return result;
    } finally {
      progress.stop();
      signals.dispose();
      await dispatchers.close();
    }
  }
}

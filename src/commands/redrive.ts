import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { RetryPolicies } from '../core/backoff.js';
import { registryFromConfig } from '../dispatch/registry.js';
import { usageError } from '../errors.js';
import { countFlag, durationFlag } from '../flags.js';
import {
  DEFAULT_BATCH,
  DEFAULT_CONCURRENCY,
  DEFAULT_LEASE_SECONDS,
  DEFAULT_PAUSE_MS,
  assertRedrivable,
  runRedrive,
  type RedriveResult,
} from '../verbs/redrive/index.js';
import { startProgress } from '../render/progress.js';
import { eventLine, renderRedrive } from '../render/redrive.js';
import { renderReasons } from '../render/redrive-reasons.js';
import { appendFileSync } from 'node:fs';
import { ExitCode } from '../errors.js';
import { everyAttemptFailed, ReasonTally, summaryEvent } from '../verbs/redrive/reasons.js';
import { writeErr } from '../render/terminal.js';

export default class Redrive extends BaseCommand<typeof Redrive> {
  static override summary =
    'The reconciliation job: claim due and stuck tasks, run their handlers, record each outcome.';
  static override description =
    'Claims stuck processing rows whose lease expired, then due pending rows, in batches (FOR UPDATE SKIP LOCKED where the ' +
    'server has it), runs each through the handler of its biz type (config `handlers:`), and writes success, a retry ' +
    'with backoff (config `retry:`, default 1s 4s 16s 64s 5m 30m 2h) or failed through guarded, fenced updates. Safe to ' +
    'run from many hosts at once, e.g. from cron every minute. SIGINT/SIGTERM stop claiming and settle what is in flight.';
  static override examples = [
    '<%= config.bin %> redrive --db mysql://app@127.0.0.1:3306/shop --batch 500 --pause 100ms',
    '<%= config.bin %> redrive --biz-type coupon --max-tasks 1000 --lease 2m --log-format json',
    '<%= config.bin %> redrive --dry-run',
  ];

  static override flags = {
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

  async run(): Promise<RedriveResult> {
    const leaseMs = this.flags.lease ?? DEFAULT_LEASE_SECONDS * 1000;
    if (leaseMs < 1000)
      throw usageError(
        `--lease: ${leaseMs}ms is shorter than 1s`,
        'Claims are fenced by a lease expiry in whole seconds; give at least 1s.',
      );
    const config = this.context.config;
    const dispatchers = registryFromConfig(config.handlers, undefined, config.brokers);
    const policies = RetryPolicies.fromConfig(config.retry);
    const source = await this.openSource();
    assertRedrivable(source);
    if (!dispatchers.hasDefault && dispatchers.bizTypes.length === 0) {
      await dispatchers.close();
      throw usageError(
        'no handlers are configured, so redrive has nothing to run tasks with',
        'Add `handlers:` to taskrecon.config.yaml, per biz type or as `default:` — e.g. `default: { type: http, url: "http://127.0.0.1:8080/tasks" }`, or `{ type: mark-only }` to only record success.',
      );
    }
    const slowest = Math.max(0, ...dispatchers.all().map((d) => d.timeoutMs ?? 0));
    if (slowest > leaseMs) {
      this.warnLine(
        `--lease ${Math.ceil(leaseMs / 1000)}s is shorter than the slowest handler's timeout (${Math.ceil(slowest / 1000)}s): ` +
          'a task still running may be taken over by another worker and run twice; give --lease more than the timeout',
      );
    }
    for (const [bizType, type] of dispatchers.unsupported) {
      this.warnLine(
        `handlers.${bizType} is ${type}, which re-pushes failed jobs: redrive leaves biz type ${bizType} alone (see compensate)`,
      );
    }
    const stop = new AbortController();
    const abort = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => {
      if (!stop.signal.aborted) {
        writeErr(`${signal}: no more claims; settling tasks in flight (again to give up on them)`);
        stop.abort();
      } else abort.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const json = this.flags['log-format'] === 'json';
    const logFile = this.flags['log-file'];
    const writeLog = (line: string) => (logFile ? appendFileSync(logFile, `${line}\n`) : this.logLine(line));
    const reasons = new ReasonTally();
    const progress = startProgress(
      this.flags['dry-run'] ? 'counting' : 'redriving',
      !this.jsonEnabled() && !json,
    );
    try {
      const result = await runRedrive(source, {
        batch: this.flags.batch,
        pauseMs: this.flags.pause,
        concurrency: this.flags.concurrency,
        maxTasks: this.flags['max-tasks'],
        leaseSeconds: Math.ceil(leaseMs / 1000),
        stuckAfterMs: this.flags['stuck-after'] ?? this.context.source().stuckAfterMs,
        bizTypes: this.flags['biz-type'],
        dryRun: this.flags['dry-run'] ?? false,
        dispatchers,
        policies,
        heartbeat: this.flags.heartbeat,
        stop: stop.signal,
        abort: abort.signal,
        log: (event) => {
          reasons.add(event);
          if (json) writeLog(eventLine(event));
        },
        onProgress: (c) =>
          progress.update(
            `${c.claimed.toLocaleString('en-US')} claimed, ${c.succeeded.toLocaleString('en-US')} succeeded`,
          ),
      });
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
      return result;
    } finally {
      progress.stop();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await dispatchers.close();
    }
  }
}

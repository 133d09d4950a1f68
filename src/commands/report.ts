import { Flags } from '@oclif/core';
import { BaseCommand, describeError } from '../base-command.js';
import { parseDuration } from '../core/duration.js';
import { DEFAULT_NOTIFY_COOLDOWN_SECONDS } from '../core/report-cooldown.js';
import type { ReportResult } from '../core/report.js';
import { resolveThresholds, STATUS_EXIT } from '../core/thresholds.js';
import { usageError } from '../errors.js';
import { durationFlag } from '../flags.js';
import { resolveTargets } from '../notify/targets.js';
import { buildReport } from '../verbs/report/index.js';
import { notifyReport } from '../verbs/report/index.js';
import { renderNagios } from '../render/nagios.js';
import { renderPrometheus } from '../render/prometheus.js';
import { checkOutputPath, writeFileAtomic } from '../render/report-file.js';
import { renderReport } from '../render/report.js';
import { writeOut } from '../render/terminal.js';
import { sweepCounts, sweepFigures } from '../verbs/sweep/index.js';
import { writeDownFile } from '../verbs/report/prometheus-state.js';
import { unknownBizTypeWarnings } from '../verbs/scan/biz-type-check.js';
import { reportQueues, type QueueReportSection } from '../verbs/queues/report.js';
import { renderQueuePrometheus, renderQueueReport } from '../render/queues.js';
import { reportTrend, TREND_SPAN_NAMES } from '../verbs/report/trend.js';
import { renderTrend } from '../render/trend.js';

const REPORT_FORMATS = ['table', 'json', 'prometheus', 'nagios'] as const;
/** Seed 000 §4.4 watches the last hour. */
const DEFAULT_WINDOW = '1h';

export default class Report extends BaseCommand<typeof Report> {
  // --format json is rendered here, to stdout or to --output; only --json is oclif's JSON mode.
  static override formatJsonIsJson = false;
  static override readOnly = true;
  static override summary =
    'Health metrics for cron and alerting: failure rate, latency, backlog, stuck and failed tasks, with thresholds.';
  static override description =
    'Over tasks created in --window: created, succeeded, failed, failure rate, latency avg/p95. As of now: due, oldest due, stuck, ' +
    'failed awaiting action. Thresholds give OK/WARNING/CRITICAL and exit 0/1/2 (3: could not run), as Nagios expects. ' +
    '--notify sends the alert to the webhooks of `report.notify` and --webhook, once per breach (--notify-cooldown).';
  static override examples = [
    '<%= config.bin %> report --db mysql://app@127.0.0.1:3306/shop --window 15m',
    '<%= config.bin %> report --format prometheus --output /var/lib/node_exporter/textfile/taskrecon.prom',
    '<%= config.bin %> report --format nagios --threshold failureRate.warn=2% --threshold failureRate.crit=10%',
    '<%= config.bin %> report --trend 24h',
    '<%= config.bin %> report --notify --webhook wecom=https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=KEY --notify-cooldown 30m',
  ];

  static override flags = {
    window: durationFlag({
      summary: 'Metrics over tasks created in this window (default 1h, or report.window).',
    }),
    'biz-type': Flags.string({ summary: 'Only these biz types.', multiple: true }),
    'stuck-after': durationFlag({
      summary: "A processing task untouched this long is stuck (default: the profile's lease).",
    }),
    threshold: Flags.string({
      summary:
        'Override a threshold: METRIC.LEVEL=VALUE, e.g. failureRate.crit=10%, stuck.warn=5, oldestDue.warn=off.',
      multiple: true,
    }),
    format: Flags.string({ summary: 'Output format.', options: [...REPORT_FORMATS] }),
    output: Flags.string({
      summary:
        'Write the output to this file atomically (temp file + rename), e.g. for the node_exporter textfile collector.',
    }),
    notify: Flags.boolean({
      summary: 'Send the alert to the webhooks configured under report.notify (and any --webhook).',
    }),
    webhook: Flags.string({
      summary: 'A webhook to notify: KIND=URL (wecom, dingtalk, feishu, slack, generic); implies --notify.',
      multiple: true,
    }),
    'notify-cooldown': durationFlag({
      summary:
        'Repeat a persisting, unchanged breach only after this long (default 1h, or report.notifyCooldown).',
    }),
    'notify-timeout': durationFlag({ summary: 'Give up on a webhook after this long (default 5s).' }),
    trend: Flags.string({
      summary: 'Also show created, failed, failure rate and latency per bucket over 24h or 7d (sparklines).',
      options: [...TREND_SPAN_NAMES],
    }),
    'full-scan': Flags.boolean({
      summary:
        'On a large table, also compute the figures no index serves, reading the whole table for them.',
      description:
        'Without it, a figure that would read the whole table (no index serves it, ≥ 100,000 rows) is skipped and a note names the index that would serve it (taskrecon doctor prints the CREATE INDEX).',
    }),
  };

  private format(): (typeof REPORT_FORMATS)[number] {
    return this.jsonEnabled()
      ? 'json'
      : ((this.flags?.format as (typeof REPORT_FORMATS)[number] | undefined) ?? 'table');
  }

  /** --notify writes its cooldown state: such a run reads and writes the primary, never the replica. */
  protected override readsOnly(): boolean {
    return !this.flags.notify && (this.flags.webhook?.length ?? 0) === 0;
  }

  async run(): Promise<ReportResult> {
    const config = this.context.config.report ?? {};
    // Every input is checked before the database is touched: bad input exits 3 with nothing written.
    const thresholds = resolveThresholds(config.thresholds, this.flags.threshold, {
      failedJobs: this.context.source().profile.kind === 'failed-jobs',
    });
    const windowMs = this.flags.window ?? parseDuration(config.window ?? DEFAULT_WINDOW, 'report.window');
    if (windowMs < 1000) throw usageError('--window must be at least 1s');
    const notify = this.flags.notify || (this.flags.webhook?.length ?? 0) > 0;
    const targets = notify
      ? resolveTargets(this.flags.notify ? (config.notify ?? []) : [], this.flags.webhook ?? [], {
          timeoutMs: this.flags['notify-timeout'],
        })
      : [];
    if (this.flags.notify && targets.length === 0)
      throw usageError(
        '--notify: no webhook is configured',
        'Add `report.notify: [{kind, url}]` to the config, or pass --webhook KIND=URL.',
      );
    const cooldownSeconds =
      this.flags['notify-cooldown'] !== undefined
        ? this.flags['notify-cooldown'] / 1000
        : config.notifyCooldown !== undefined
          ? parseDuration(config.notifyCooldown, 'report.notifyCooldown') / 1000
          : DEFAULT_NOTIFY_COOLDOWN_SECONDS;
    const output = this.flags.output ? checkOutputPath(this.flags.output) : undefined;
    // From here on the input is good: a run that fails now marks its Prometheus file down.
    if (output && this.format() === 'prometheus') this.downFile = output;

    const source = await this.openSource();
    const choice = this.context.source();
    if ((this.flags['biz-type']?.length ?? 0) > 0 && !source.sql.has('bizType'))
      throw usageError(`--biz-type needs a biz type, and profile ${source.profile.name} has none`);
    const nowEpoch = await source.db.nowEpoch();
    for (const warning of await unknownBizTypeWarnings(source, this.flags['biz-type']))
      this.warnLine(warning);
    const report = await buildReport(source, {
      nowEpoch,
      windowSeconds: Math.round(windowMs / 1000),
      stuckAfterMs: this.flags['stuck-after'] ?? choice.stuckAfterMs,
      bizTypes: this.flags['biz-type'],
      thresholds,
      fullScan: this.flags['full-scan'] ?? false,
    });
    const notifications = await notifyReport(source.db, report, { targets, cooldownSeconds, nowEpoch });
    for (const n of notifications)
      if (n.outcome === 'failed') this.warnLine(`webhook ${n.kind} ${n.target} failed: ${n.error}`);
    const sweep = await sweepFigures(source, this.context.config, Math.round(windowMs / 1000));
    const queues = await reportQueues(this.context.config);
    const trend = this.flags.trend ? await reportTrend(source, this.flags.trend, nowEpoch) : undefined;
    const result: ReportResult & { queues?: QueueReportSection } = {
      ...report,
      ...(sweep ? { sweep: sweepCounts(sweep) } : {}),
      ...(queues ? { queues } : {}),
      ...(trend ? { trend } : {}),
      notifications,
    };
    if (queues && STATUS_EXIT[queues.status] > STATUS_EXIT[result.status]) result.status = queues.status;
    this.setExit(STATUS_EXIT[result.status]);

    const format = this.format();
    const rendered =
      format === 'prometheus'
        ? renderPrometheus(result) + (queues ? renderQueuePrometheus(queues) : '')
        : format === 'nagios'
          ? `${renderNagios(result)}\n`
          : format === 'json'
            ? `${JSON.stringify(result, null, 2)}\n`
            : `${renderReport(result)}\n${queues ? `${renderQueueReport(queues)}\n` : ''}${trend ? `${renderTrend(trend)}\n` : ''}`;
    if (output) {
      writeFileAtomic(output, rendered);
      this.note(`${result.status}: wrote ${format} to ${output}`);
    } else if (!this.jsonEnabled()) {
      await writeOut(rendered);
    }
    return result;
  }

  /** The Prometheus `--output` file to rewrite with `taskrecon_up 0` if the run fails past its input checks. */
  private downFile: string | undefined;

  override async catch(error: Error & { exitCode?: number }): Promise<void> {
    if (this.downFile && describeError(error).code !== 'USAGE')
      writeDownFile(this.downFile, () => this.context.source().name);
    // A Nagios check that could not run still prints one status line: UNKNOWN (exit 3).
    if (this.format() === 'nagios')
      process.stdout.write(`TASKRECON UNKNOWN - ${describeError(error).message.split('\n')[0]}\n`);
    return super.catch(error);
  }
}

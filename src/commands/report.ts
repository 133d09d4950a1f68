import { BaseCommand, describeError } from '../base-command.js';
import { STATUS_EXIT } from '../core/thresholds.js';
import { writeFileAtomic } from '../files.js';
import { renderReportAs } from '../render/report-output.js';
import { writeOut } from '../render/terminal.js';
import {
  REPORT_FLAGS,
  reportRequest,
  runReport,
  writeDownFile,
  type FullReport,
  type ReportFormat,
} from '../verbs/report/index.js';

export default class Report extends BaseCommand<typeof Report> {
  // --format json is rendered here, to stdout or to --output; only --json is oclif's JSON mode.
  static override formatJsonIsJson = false;
  static override readOnly = true;
  static override summary =
    'Health metrics for cron and alerting: failure rate, latency, backlog, stuck and failed tasks, with thresholds.';
  static override description =
    'Over tasks created in --window: created, succeeded, failed, failure rate, latency avg/p95. As of now: due, oldest due, stuck, ' +
    'failed awaiting action. Thresholds give OK/WARNING/CRITICAL and exit 0/1/2 (3: could not run), as Nagios expects; ' +
    'with --output the run exits 0 once the file is written (--exit-status: the verdict). ' +
    '--notify sends the alert to the webhooks of `report.notify` and --webhook, once per breach (--notify-cooldown).';
  static override examples = [
    '<%= config.bin %> report --db mysql://app@127.0.0.1:3306/shop --window 15m',
    '<%= config.bin %> report --format prometheus --output /var/lib/node_exporter/textfile/taskrecon.prom',
    '<%= config.bin %> report --format nagios --threshold failureRate.warn=2% --threshold failureRate.crit=10%',
    '<%= config.bin %> report --trend 24h',
    '<%= config.bin %> report --notify --webhook wecom=https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=KEY --notify-cooldown 30m',
  ];

  static override flags = REPORT_FLAGS;

  private format(): ReportFormat {
    return this.jsonEnabled() ? 'json' : ((this.flags?.format as ReportFormat | undefined) ?? 'table');
  }

  /** --notify writes its cooldown state: such a run reads and writes the primary, never the replica. */
  protected override readsOnly(): boolean {
    return !this.flags.notify && (this.flags.webhook?.length ?? 0) === 0;
  }

  async run(): Promise<FullReport> {
    // Every input is checked before the database is touched: bad input exits 3 with nothing written.
    const request = reportRequest(
      this.flags,
      this.context.config.report ?? {},
      this.context.source().profile.kind === 'failed-jobs',
    );
    const { output } = request;
    // From here on the input is good: a run that fails now marks its Prometheus file down.
    if (output && this.format() === 'prometheus') this.downFile = output;
    const opened = await this.openSourceOrShards(this.flags);
    const result = await runReport({
      source: opened.source,
      ...(opened.set ? { shards: opened.set } : {}),
      config: this.context.config,
      request,
      bizTypes: this.flags['biz-type'],
      stuckAfterMs: this.flags['stuck-after'] ?? this.context.source().stuckAfterMs,
      fullScan: this.flags['full-scan'] ?? false,
      trend: this.flags.trend,
      warn: (line) => this.warnLine(line),
    });
    // A file written is the run's success (the verdict is in it); --exit-status keeps the verdict's code.
    if (!output || this.flags['exit-status']) this.setExit(STATUS_EXIT[result.status]);
    const format = this.format();
    const rendered = renderReportAs(format, result);
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

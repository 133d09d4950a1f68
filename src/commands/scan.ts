import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import {
  countFlag,
  durationFlag,
  errorLikeFlag,
  FORMATS,
  queueFlag,
  statusFlag,
  timeFlag,
} from '../flags.js';
import {
  LIST_ORDERS,
  scan,
  scanRequest,
  type ScanResult,
  unknownBizTypeWarnings,
} from '../verbs/scan/index.js';
import { startProgress } from '../render/progress.js';
import { streamScanRows } from '../render/scan-stream.js';
import type { SecondFailureRow } from '../verbs/sweep/index.js';

export default class Scan extends BaseCommand<typeof Scan> {
  static override readOnly = true;
  static override summary = 'Find stuck, due and failed tasks, with counts by status and biz type.';
  static override description =
    'Reads only. "Due" is pending with next_retry_time ≤ now; "stuck" is processing whose lease expired ' +
    '(updated_at older than --stuck-after). Now is the database clock, read once per run.';
  static override examples = [
    '<%= config.bin %> scan --db mysql://app@127.0.0.1:3306/shop --profile async-task',
    '<%= config.bin %> scan --biz-type coupon --stuck-after 5m --limit 50',
    '<%= config.bin %> scan --status failed --limit 0 --format ndjson > failed.ndjson',
    '<%= config.bin %> scan --profile laravel-failed-jobs --queue emails --error-like TimeoutException',
  ];

  static override flags = {
    'biz-type': Flags.string({ summary: 'Only these biz types.', multiple: true }),
    status: statusFlag,
    since: timeFlag({
      summary: 'Only tasks created at or after this time (ISO date-time, or a duration ago like 2h).',
    }),
    until: timeFlag({ summary: 'Only tasks created before this time.' }),
    queue: queueFlag,
    'error-like': errorLikeFlag,
    'stuck-after': durationFlag({
      summary: "A processing task untouched this long is stuck (default: the profile's lease, 10m).",
    }),
    limit: countFlag(0)({
      summary: 'Rows per list; 0 lists every row (stream it with --format ndjson).',
      default: 20,
    }),
    format: Flags.string({ summary: 'Output format.', options: [...FORMATS] }),
    order: Flags.string({
      summary: 'Order of each list: next-retry (next_retry_time, then id) or id (primary key).',
      description:
        'Default: next-retry. With --format ndjson --limit 0 and no --order, each list streams in the order the server reads faster: primary-key order when the list is a quarter or more of a table of 100,000 rows or more (MySQL/MariaDB), list order otherwise.',
      options: [...LIST_ORDERS],
    }),
    'full-scan': Flags.boolean({
      summary:
        'On a large table, also compute the figures no index serves, reading the whole table for them.',
      description:
        'Without it, a figure that would read the whole table (no index serves it, ≥ 100,000 rows) is skipped and a note names the index that would serve it (taskrecon doctor prints the CREATE INDEX).',
    }),
    'second-failures': Flags.boolean({
      summary:
        'Also list second failures: jobs the `sweeps:` rules retried maxSweeps times that failed again.',
    }),
  };

  async run(): Promise<ScanResult | undefined> {
    const format = this.jsonEnabled() ? 'json' : (this.flags.format ?? 'table');
    const source = await this.openSource();
    const streamedWhole = format === 'ndjson' && this.flags.limit === 0;
    const order = this.flags.order ?? (streamedWhole ? 'cheapest' : undefined);
    const options = await scanRequest(source, { ...this.flags, order }, this.context.source().stuckAfterMs);
    for (const warning of await unknownBizTypeWarnings(source, this.flags['biz-type']))
      this.warnLine(warning);
    if (format === 'ndjson' || format === 'csv') {
      this.note(await streamScanRows(source, options, format));
      return undefined;
    }
    const progress = startProgress('scanning', format === 'table');
    const result: ScanResult & { secondFailures?: SecondFailureRow[] } = await scan(source, options).finally(
      () => progress.stop(),
    );
    if (this.flags['second-failures']) {
      // Imported here: the sweep rules (and their schema) are not needed to stream or list tasks.
      const { listSecondFailures } = await import('../verbs/sweep/index.js');
      result.secondFailures = await listSecondFailures(
        source,
        this.context.config,
        options.nowEpoch,
        options.sinceEpoch,
      );
    }
    if (format === 'table') {
      // Imported here: the table renderer (cli-table3) is not needed to stream or print JSON.
      const { renderScan } = await import('../render/scan.js');
      this.log(renderScan(result));
      if (result.secondFailures) {
        const { renderSecondFailures } = await import('../render/sweep.js');
        this.log(renderSecondFailures(result.secondFailures));
      }
    }
    return result;
  }
}

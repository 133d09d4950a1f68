import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import type { LogicalStatus } from '../core/task.js';
import type { ListKind } from '../db/sql/scan.js';
import { windowField } from '../db/fragment.js';
import { usageError } from '../errors.js';
import { countFlag, durationFlag, FORMATS, resolveTime, statusFlag, timeFlag } from '../flags.js';
import {
  ALL_LISTS,
  scan,
  sourceInfo,
  streamListBatches,
  streamListEncoded,
  type ScanOptions,
  type ScanResult,
} from '../verbs/scan/index.js';
import { NdjsonWireEncoder } from '../render/ndjson-wire.js';
import { startProgress } from '../render/progress.js';
import { CSV_HEADER, rowSerializer } from '../render/task-rows.js';
import { writeOut } from '../render/terminal.js';
import { toIso } from '../db/task-sql.js';
import { listSecondFailures, type SecondFailureRow } from '../verbs/sweep/index.js';
import { renderSecondFailures } from '../render/sweep.js';

const PROGRESS_EVERY_ROWS = 65_536;

const LISTS_OF_STATUS: Record<LogicalStatus, ListKind[]> = {
  processing: ['stuck'],
  pending: ['due'],
  failed: ['failed'],
  success: [],
  compensated: [],
};

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
  ];

  static override flags = {
    'biz-type': Flags.string({ summary: 'Only these biz types.', multiple: true }),
    status: statusFlag,
    since: timeFlag({
      summary: 'Only tasks created at or after this time (ISO date-time, or a duration ago like 2h).',
    }),
    until: timeFlag({ summary: 'Only tasks created before this time.' }),
    'stuck-after': durationFlag({
      summary: "A processing task untouched this long is stuck (default: the profile's lease, 10m).",
    }),
    limit: countFlag(0)({
      summary: 'Rows per list; 0 lists every row (stream it with --format ndjson).',
      default: 20,
    }),
    format: Flags.string({ summary: 'Output format.', options: [...FORMATS] }),
    'second-failures': Flags.boolean({
      summary:
        'Also list second failures: jobs the `sweeps:` rules retried maxSweeps times that failed again.',
    }),
  };

  async run(): Promise<ScanResult | undefined> {
    const format = this.jsonEnabled() ? 'json' : (this.flags.format ?? 'table');
    const source = await this.openSource();
    const choice = this.context.source();
    const nowEpoch = await source.db.nowEpoch();
    if ((this.flags.since || this.flags.until) && !windowField(source.sql)) {
      throw usageError(
        `--since/--until need a created or updated time, and profile ${source.profile.name} has neither`,
      );
    }
    const statuses = this.flags.status as LogicalStatus[] | undefined;
    const options: ScanOptions = {
      nowEpoch,
      stuckAfterMs: this.flags['stuck-after'] ?? choice.stuckAfterMs,
      limit: this.flags.limit,
      bizTypes: this.flags['biz-type'],
      sinceEpoch: resolveTime(this.flags.since, nowEpoch),
      untilEpoch: resolveTime(this.flags.until, nowEpoch),
      lists: statuses
        ? ALL_LISTS.filter((k) => statuses.some((s) => LISTS_OF_STATUS[s].includes(k)))
        : ALL_LISTS,
    };
    if ((options.bizTypes?.length ?? 0) > 0 && !source.sql.has('bizType')) {
      throw usageError(`--biz-type needs a biz type, and profile ${source.profile.name} has none`);
    }
    if (format === 'ndjson' || format === 'csv') {
      await this.streamRows(source, options, format);
      return undefined;
    }
    const progress = startProgress('scanning', format === 'table');
    const result: ScanResult & { secondFailures?: SecondFailureRow[] } = await scan(source, options).finally(
      () => progress.stop(),
    );
    if (this.flags['second-failures'])
      result.secondFailures = await listSecondFailures(
        source,
        this.context.config,
        nowEpoch,
        options.sinceEpoch,
      );
    if (format === 'table') {
      // Imported here: the table renderer (cli-table3) is not needed to stream or print JSON.
      const { renderScan } = await import('../render/scan.js');
      this.log(renderScan(result));
      if (result.secondFailures) this.log(renderSecondFailures(result.secondFailures));
    }
    return result;
  }

  /** NDJSON or CSV: one line per listed task, streamed in constant memory; the summary goes to stderr. */
  private async streamRows(
    source: Awaited<ReturnType<BaseCommand<typeof Scan>['openSource']>>,
    options: ScanOptions,
    format: 'ndjson' | 'csv',
  ): Promise<void> {
    const progress = startProgress('streaming');
    let count = 0;
    let nextProgress = PROGRESS_EVERY_ROWS;
    const counted = (total: number) => {
      count = total;
      if (count < nextProgress) return;
      nextProgress += PROGRESS_EVERY_ROWS;
      progress.update(`${count.toLocaleString('en-US')} rows`);
    };
    try {
      if (format === 'ndjson' && source.db.streamEncoded) {
        // The fast path: NDJSON written from the wire bytes, one write per chunk.
        const encoder = new NdjsonWireEncoder(source.sql, 'stuck');
        for (const kind of options.lists ?? ALL_LISTS) {
          encoder.setList(kind);
          const chunks = streamListEncoded(source, kind, options, encoder);
          if (!chunks) continue;
          for await (const chunk of chunks) {
            await writeOut(chunk);
            counted(encoder.rows);
          }
        }
        count = encoder.rows;
      } else {
        const serializer = rowSerializer(source.sql);
        if (format === 'csv') await writeOut(CSV_HEADER);
        for (const kind of options.lists ?? ALL_LISTS) {
          const batches = streamListBatches(source, kind, options);
          if (!batches) continue;
          for await (const rows of batches) {
            await writeOut(
              format === 'ndjson' ? serializer.ndjsonBatch(kind, rows) : serializer.csvBatch(kind, rows),
            );
            counted(count + rows.length);
          }
        }
      }
    } finally {
      progress.stop();
    }
    this.note(
      `${count.toLocaleString('en-US')} rows from ${sourceInfo(source).name} as of ${toIso(options.nowEpoch)}`,
    );
  }
}

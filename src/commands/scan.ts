import { BaseCommand } from '../base-command.js';
import {
  scan,
  scanRequest,
  SCAN_FLAGS,
  scanShards,
  type ScanResult,
  unknownBizTypeWarnings,
} from '../verbs/scan/index.js';

import { startProgress } from '../render/progress.js';
import { streamScanRows } from '../render/scan-stream.js';
import { streamShardRows } from '../render/scan-stream-shards.js';
import { eachShard, type ShardSet } from '../ops/shards/set.js';
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

  static override flags = SCAN_FLAGS;

  async run(): Promise<ScanResult | undefined> {
    const format = this.jsonEnabled() ? 'json' : (this.flags.format ?? 'table');
    const opened = await this.openSourceOrShards(this.flags);
    const stuckAfterMs = this.context.source().stuckAfterMs;
    if (opened.set) return this.scanShards(opened.set, format, stuckAfterMs);
    const { source } = opened;
    const streamedWhole = format === 'ndjson' && this.flags.limit === 0;
    const order = this.flags.order ?? (streamedWhole ? 'cheapest' : undefined);
    const options = await scanRequest(source, { ...this.flags, order }, stuckAfterMs);
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

  /** A sharded source: every shard read, merged; NDJSON and CSV stream in list order. */
  private async scanShards(set: ShardSet, format: string, stuckAfterMs: number) {
    if (format === 'ndjson' || format === 'csv') {
      const shards = await eachShard(set, async (shard) => ({
        shard,
        options: await scanRequest(shard.source, this.flags, stuckAfterMs),
      }));
      this.note(await streamShardRows(shards, format, this.flags.limit));
      return undefined;
    }
    const result = await scanShards(set, this.flags, stuckAfterMs);
    if (format === 'table') this.log((await import('../render/scan.js')).renderScan(result));
    return result;
  }
}

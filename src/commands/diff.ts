import { BaseCommand } from '../base-command.js';
import { totalOf } from '../core/diff.js';
import { ExitCode } from '../errors.js';
import type { ShardSet } from '../ops/shards/set.js';
import { askYesNo } from '../render/confirm.js';
import { findingStream, renderDiff } from '../render/diff.js';
import { startProgress } from '../render/progress.js';
import { confirmCreate, renderCreateMissing } from '../render/sweep.js';
import {
  checkShardDiffFlags,
  DIFF_FLAGS,
  reconcile,
  reconcileShards,
  type DiffResult,
  type DiffRunResult,
  type ShardedDiffResult,
} from '../verbs/diff/index.js';

export default class Diff extends BaseCommand<typeof Diff> {
  static override summary = 'Reconcile tasks against the business tables they were supposed to change.';
  static override description =
    'For each rule under `rules:` in the config: missing (task done, no business row), duplicate (more rows than expected), ' +
    "orphan (business row, no task), unsettled (effect present, task failed/pending). Reads only (a rule's where and every join in read-only transactions); " +
    '--enqueue sends missing tasks back to pending for redrive, audited. Exit 1 when anything is found.';
  static override examples = [
    '<%= config.bin %> diff',
    '<%= config.bin %> diff --rule coupon-issued --since 24h --format ndjson > findings.ndjson',
    '<%= config.bin %> diff --rule coupon-issued --walk join --chunk-time 200ms',
    '<%= config.bin %> diff --rule coupon-issued --enqueue --reason "coupons lost in the 11-29 outage"',
    '<%= config.bin %> diff --rule order-paid --create-missing --into-shard shop_0.async_task_0 --dry-run',
  ];

  static override flags = DIFF_FLAGS;

  /** Without --enqueue or --create-missing diff only reads: it reads from readDb when one is configured. */
  static override readOnly = true;

  protected override readsOnly(): boolean {
    return !this.flags.enqueue && !this.flags['create-missing'];
  }

  async run(): Promise<DiffRunResult | ShardedDiffResult> {
    const format = this.jsonEnabled() ? 'json' : (this.flags.format ?? 'table');
    const shards = this.shardNames();
    checkShardDiffFlags(this.flags, shards);
    const stream =
      format === 'ndjson' || format === 'csv' ? findingStream(format, Boolean(shards)) : undefined;
    const run = {
      context: this.context,
      flags: this.flags,
      interactive: !this.jsonEnabled() && Boolean(process.stdin.isTTY && process.stdout.isTTY),
      ask: askYesNo,
      confirmCreate,
      progress: () => startProgress('diff', format !== 'json' || !this.jsonEnabled()),
      onWarning: (message: string) => this.warnLine(message),
      onFinding: stream?.onFinding,
      onDiff: async (diff: DiffResult) => {
        if (stream) {
          await stream.flush();
          const t = diff.total;
          this.note(
            `missing ${t.missing}, duplicate ${t.duplicate}, orphan ${t.orphan}, unsettled ${t.unsettled} over ${diff.rules.length} rule(s)`,
          );
        } else if (format === 'table') this.log(renderDiff(diff));
        if (totalOf(diff.total) > 0) this.setExit(ExitCode.findings);
      },
    };
    const result = shards
      ? await reconcileShards({
          ...run,
          openShards: async () => (await this.openSourceOrShards(this.flags)).set as ShardSet,
        })
      : await reconcile({ ...run, openSource: () => this.openSource() });
    if (result.createMissing && format === 'table') this.log(renderCreateMissing(result.createMissing));
    return result;
  }

  /** The shards of the chosen source, or undefined for one table (a bad source is reported when it is opened). */
  private shardNames(): string[] | undefined {
    try {
      return this.context.shards(this.context.source())?.map((s) => s.name);
    } catch {
      return undefined;
    }
  }
}

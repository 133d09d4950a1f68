import { randomUUID } from 'node:crypto';
import { BaseCommand } from '../base-command.js';
import { totalOf } from '../core/diff.js';
import { ExitCode } from '../errors.js';
import { resolveTime } from '../flags.js';
import {
  checkDiffFlags,
  DIFF_FLAGS,
  diffActor,
  enqueueRequest,
  prepareRules,
  RuleTargets,
  runDiff,
  selectRules,
  CreateMissingSession,
  withCollector,
  confirmEnqueue,
  enqueueDeclined,
  type CreateMissingResult,
  type DiffResult,
  type RuleTarget,
  type WalkChoice,
} from '../verbs/diff/index.js';
import { findingStream, renderDiff } from '../render/diff.js';
import { startProgress } from '../render/progress.js';
import { confirmCreate, renderCreateMissing } from '../render/sweep.js';
import { askYesNo } from '../render/confirm.js';

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
  ];

  static override flags = DIFF_FLAGS;

  private targets: RuleTargets | undefined;

  /** Without --enqueue or --create-missing diff only reads: it reads from readDb when one is configured. */
  static override readOnly = true;

  protected override readsOnly(): boolean {
    return !this.flags.enqueue && !this.flags['create-missing'];
  }

  async run(): Promise<DiffResult & { createMissing?: CreateMissingResult }> {
    const format = this.jsonEnabled() ? 'json' : (this.flags.format ?? 'table');
    checkDiffFlags(this.flags);
    const rules = selectRules(this.context.config.rules ?? [], this.flags.rule);
    const main = await this.openSource();
    const nowEpoch = await main.db.nowEpoch();
    this.targets = new RuleTargets(this.context, main);
    const targets: RuleTarget[] = [];
    for (const rule of rules) targets.push(await this.targets.open(rule));
    const sinceEpoch = resolveTime(this.flags.since, nowEpoch);
    const untilEpoch = resolveTime(this.flags.until, nowEpoch);
    const walk = this.flags.walk as WalkChoice;
    const prepared = await prepareRules(targets, { sinceEpoch, untilEpoch, walk });
    const interactive = !this.jsonEnabled() && Boolean(process.stdin.isTTY && process.stdout.isTTY);
    if (!(await confirmEnqueue(this.flags, interactive, askYesNo))) throw enqueueDeclined();
    const creating = this.flags['create-missing']
      ? await CreateMissingSession.open(targets, this.context.config.rules ?? [], {
          dryRun: Boolean(this.flags['dry-run']),
          yes: this.flags.yes,
          interactive,
        })
      : undefined;
    const progress = startProgress('diff', format !== 'json' || !this.jsonEnabled());
    const stream = format === 'ndjson' || format === 'csv' ? findingStream(format) : undefined;
    const result = await runDiff(prepared, {
      sinceEpoch,
      untilEpoch,
      chunkTimeMs: this.flags['chunk-time'],
      samplesPerKind: this.flags.samples,
      progress: (text) => progress.update(text),
      onWarning: (message) => this.warnLine(message),
      onFinding: withCollector(creating?.collect, stream?.onFinding),
      enqueue: enqueueRequest(this.flags),
    }).finally(() => progress.stop());
    if (stream) {
      await stream.flush();
      const t = result.total;
      this.note(
        `missing ${t.missing}, duplicate ${t.duplicate}, orphan ${t.orphan}, unsettled ${t.unsettled} over ${result.rules.length} rule(s)`,
      );
    } else if (format === 'table') this.log(renderDiff(result));
    if (totalOf(result.total) > 0) this.setExit(ExitCode.findings);
    if (!creating) return result;
    const createMissing = await creating.run(
      { ...diffActor(this.flags, null), runId: randomUUID() },
      this.flags.yes ? undefined : confirmCreate,
    );
    if (format === 'table') this.log(renderCreateMissing(createMissing));
    return { ...result, createMissing };
  }

  override async finally(error: Error | undefined): Promise<void> {
    await this.targets?.close();
    await super.finally(error);
  }
}

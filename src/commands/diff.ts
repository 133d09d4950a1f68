import { Flags } from '@oclif/core';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { BaseCommand } from '../base-command.js';
import { DEFAULT_CHUNK_TIME_MS, totalOf } from '../core/diff.js';
import { ExitCode, usageError } from '../errors.js';
import { countFlag, durationFlag, FORMATS, resolveTime, timeFlag } from '../flags.js';
import { prepareRules, runDiff, type DiffResult, type RuleTarget } from '../verbs/diff/index.js';
import { defaultOperator, RuleTargets, selectRules } from '../verbs/diff/index.js';
import { WALK_CHOICES, type WalkChoice } from '../verbs/diff/index.js';
import { FINDING_CSV_HEADER, findingCsv, findingNdjson, renderDiff } from '../render/diff.js';
import { startProgress } from '../render/progress.js';
import { writeOut } from '../render/terminal.js';
import { confirmCreate, renderCreateMissing } from '../render/sweep.js';
import {
  CreateMissingSession,
  withCollector,
  type CreateMissingResult,
} from '../verbs/sweep/create-missing.js';

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

  static override flags = {
    rule: Flags.string({ summary: 'Only this rule (by name); repeatable.', multiple: true }),
    since: timeFlag({
      summary: 'Only tasks created at or after this time (ISO date-time, or a duration ago like 24h).',
    }),
    until: timeFlag({ summary: 'Only tasks created before this time.' }),
    'chunk-time': durationFlag({
      summary: 'Aim each chunk of the table walk at this long (like pt-table-checksum).',
      default: DEFAULT_CHUNK_TIME_MS,
      defaultHelp: async () => `${DEFAULT_CHUNK_TIME_MS}ms`,
    }),
    walk: Flags.string({
      summary:
        'On one server: merge the two key indexes (text keys of one collation), join row by row, or auto.',
      options: [...WALK_CHOICES],
      default: 'auto',
    }),
    samples: countFlag(0)({ summary: 'Findings kept as samples per kind and rule.', default: 10 }),
    format: Flags.string({
      summary: 'Output format (ndjson and csv stream every finding).',
      options: [...FORMATS],
    }),
    enqueue: Flags.boolean({
      summary: 'Send tasks whose effect is missing back to pending, due now, for redrive (audited).',
    }),
    'dry-run': Flags.boolean({
      summary: 'With --enqueue or --create-missing: show what would be written; write nothing.',
    }),
    'create-missing': Flags.boolean({
      summary:
        'Create the task of each orphan business row of rules with `create:` (event id <rule>:<key>; audited).',
    }),
    yes: Flags.boolean({
      char: 'y',
      summary: 'With --create-missing: do not ask (needed when not on a terminal).',
    }),
    operator: Flags.string({ summary: 'Who is acting, for the audit of --enqueue (default: OS user@host).' }),
    reason: Flags.string({ summary: 'Why, for the audit of --enqueue.' }),
  };

  private targets: RuleTargets | undefined;

  /** Without --enqueue or --create-missing diff only reads: it reads from readDb when one is configured. */
  static override readOnly = true;

  protected override readsOnly(): boolean {
    return !this.flags.enqueue && !this.flags['create-missing'];
  }

  async run(): Promise<DiffResult & { createMissing?: CreateMissingResult }> {
    const format = this.jsonEnabled() ? 'json' : (this.flags.format ?? 'table');
    if (this.flags['dry-run'] && !this.flags.enqueue && !this.flags['create-missing'])
      throw usageError(
        '--dry-run goes with --enqueue or --create-missing',
        'Without them diff writes nothing anyway.',
      );
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
    const creating = this.flags['create-missing']
      ? await CreateMissingSession.open(targets, this.context.config.rules ?? [], {
          dryRun: Boolean(this.flags['dry-run']),
          yes: this.flags.yes,
          interactive,
        })
      : undefined;
    const progress = startProgress('diff', format !== 'json' || !this.jsonEnabled());
    let streamed = format === 'csv' ? FINDING_CSV_HEADER : '';
    const result = await runDiff(prepared, {
      sinceEpoch,
      untilEpoch,
      chunkTimeMs: this.flags['chunk-time'],
      samplesPerKind: this.flags.samples,
      progress: (text) => progress.update(text),
      onWarning: (message) => this.warnLine(message),
      onFinding: withCollector(
        creating?.collect,
        format === 'ndjson' || format === 'csv'
          ? async (finding) => {
              streamed += format === 'ndjson' ? findingNdjson(finding) : findingCsv(finding);
              if (streamed.length > 65_536) {
                // Emptied before the await: findings of another walk may arrive while stdout drains.
                const text = streamed;
                streamed = '';
                await writeOut(text);
              }
            }
          : undefined,
      ),
      enqueue: this.flags.enqueue
        ? {
            operator: this.flags.operator ?? defaultOperator(),
            host: hostname(),
            reason: this.flags.reason ?? 'diff: task says success, business effect missing',
            dryRun: Boolean(this.flags['dry-run']),
          }
        : undefined,
    }).finally(() => progress.stop());
    if (format === 'ndjson' || format === 'csv') {
      await writeOut(streamed);
      const t = result.total;
      this.note(
        `missing ${t.missing}, duplicate ${t.duplicate}, orphan ${t.orphan}, unsettled ${t.unsettled} over ${result.rules.length} rule(s)`,
      );
    } else if (format === 'table') this.log(renderDiff(result));
    if (totalOf(result.total) > 0) this.setExit(ExitCode.findings);
    if (!creating) return result;
    const createMissing = await creating.run(
      {
        dryRun: Boolean(this.flags['dry-run']),
        operator: this.flags.operator ?? defaultOperator(),
        host: hostname(),
        reason: this.flags.reason ?? null,
        runId: randomUUID(),
      },
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

import { Flags } from '@oclif/core';
import { hostname, userInfo } from 'node:os';
import { BaseCommand } from '../base-command.js';
import { Context } from '../context.js';
import { closest } from '../config/suggest.js';
import { DEFAULT_CHUNK_TIME_MS, normalizeRule, totalOf, type DiffRule } from '../core/diff.js';
import { bindSource } from '../db/bind-source.js';
import { connect } from '../db/connect.js';
import type { Db } from '../db/types.js';
import { ExitCode, usageError } from '../errors.js';
import { countFlag, durationFlag, FORMATS, resolveTime, timeFlag } from '../flags.js';
import { prepareRules, runDiff, type DiffResult, type RuleTarget } from '../ops/diff.js';
import { FINDING_CSV_HEADER, findingCsv, findingNdjson, renderDiff } from '../render/diff.js';
import { startProgress } from '../render/progress.js';
import { writeOut } from '../render/terminal.js';

export default class Diff extends BaseCommand<typeof Diff> {
  static override summary = 'Reconcile tasks against the business tables they were supposed to change.';
  static override description =
    'For each rule under `rules:` in the config: missing (task done, no business row), duplicate (more rows than expected), ' +
    'orphan (business row, no task), unsettled (effect present, task failed/pending). Reads only, in read-only transactions; ' +
    '--enqueue sends missing tasks back to pending for redrive, audited. Exit 1 when anything is found.';
  static override examples = [
    '<%= config.bin %> diff',
    '<%= config.bin %> diff --rule coupon-issued --since 24h --format ndjson > findings.ndjson',
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
      summary: 'With --enqueue: show what would be requeued; write nothing.',
      dependsOn: ['enqueue'],
    }),
    operator: Flags.string({ summary: 'Who is acting, for the audit of --enqueue (default: OS user@host).' }),
    reason: Flags.string({ summary: 'Why, for the audit of --enqueue.' }),
  };

  private readonly extraContexts: Context[] = [];
  private readonly businessDbs: Db[] = [];

  async run(): Promise<DiffResult> {
    const format = this.jsonEnabled() ? 'json' : (this.flags.format ?? 'table');
    const rules = this.selectedRules();
    const main = await this.openSource();
    const nowEpoch = await main.db.nowEpoch();
    const targets: RuleTarget[] = [];
    for (const rule of rules) targets.push(await this.target(rule, main));
    const sinceEpoch = resolveTime(this.flags.since, nowEpoch);
    const untilEpoch = resolveTime(this.flags.until, nowEpoch);
    const prepared = await prepareRules(targets, { sinceEpoch, untilEpoch });
    const progress = startProgress('diff', format !== 'json' || !this.jsonEnabled());
    let streamed = format === 'csv' ? FINDING_CSV_HEADER : '';
    const result = await runDiff(prepared, {
      sinceEpoch,
      untilEpoch,
      chunkTimeMs: this.flags['chunk-time'],
      samplesPerKind: this.flags.samples,
      progress: (text) => progress.update(text),
      onWarning: (message) => this.warnLine(message),
      onFinding:
        format === 'ndjson' || format === 'csv'
          ? async (finding) => {
              streamed += format === 'ndjson' ? findingNdjson(finding) : findingCsv(finding);
              if (streamed.length > 65_536) {
                await writeOut(streamed);
                streamed = '';
              }
            }
          : undefined,
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
    return result;
  }

  /** The configured rules, checked, narrowed by --rule. */
  private selectedRules(): DiffRule[] {
    const configured = this.context.config.rules ?? [];
    if (configured.length === 0) {
      throw usageError(
        'no diff rules are configured',
        'Add `rules:` to taskrecon.config.yaml, e.g. { name: coupon-issued, bizType: coupon, business: { table: user_coupon, key: order_id } }.',
      );
    }
    const names = this.flags.rule;
    if (!names?.length) return configured.map((r, i) => normalizeRule(r, i));
    // Only the rules asked for are checked: a broken rule elsewhere does not block them.
    return names.map((name) => {
      const index = configured.findIndex((r) => r.name === name);
      if (index < 0) {
        const all = configured.map((r) => r.name);
        const guess = closest(name, all);
        throw usageError(
          `unknown rule '${name}'`,
          `${guess ? `Did you mean '${guess}'? ` : ''}Configured rules: ${all.join(', ')}.`,
        );
      }
      return normalizeRule(configured[index] as (typeof configured)[number], index);
    });
  }

  /** Opens where a rule's tables are: its source (default: the command's) and its business database. */
  private async target(rule: DiffRule, main: Awaited<ReturnType<Diff['openSource']>>): Promise<RuleTarget> {
    let source = main;
    let sourceDsn = this.context.dsn(this.context.source());
    if (rule.source && rule.source !== main.name) {
      const context = new Context({
        ...this.context.input,
        source: rule.source,
        profile: undefined,
        table: undefined,
      });
      this.extraContexts.push(context);
      const choice = context.source();
      sourceDsn = context.dsn(choice);
      source = await bindSource(await context.open(choice), choice.profile, choice.name);
    }
    let businessDb = source.db;
    if (rule.business.db && rule.business.db !== sourceDsn) {
      businessDb = await connect(rule.business.db, { appTimeZone: this.context.config.appTimeZone });
      this.businessDbs.push(businessDb);
    }
    return { rule, source, sourceDsn, businessDb };
  }

  override async finally(error: Error | undefined): Promise<void> {
    await Promise.allSettled([
      ...this.businessDbs.map((db) => db.close()),
      ...this.extraContexts.map((c) => c.close()),
    ]);
    await super.finally(error);
  }
}

/** OS user@host, the default operator. */
function defaultOperator(): string {
  let user = process.env.USER ?? process.env.LOGNAME ?? 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (containers): the environment's name will do
  }
  return `${user}@${hostname()}`;
}

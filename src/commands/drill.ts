import { Flags } from '@oclif/core';
import { existsSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { BaseCommand } from '../base-command.js';
import { RetryPolicies } from '../core/backoff.js';
import { parseDuration } from '../core/duration.js';
import { HANDLER_VARIANTS, type HandlerVariant } from '../verbs/drill/index.js';
import { SCENARIO_NAMES } from '../verbs/drill/index.js';
import { checkHandlerUrl, findRule, systemTarget } from '../verbs/drill/index.js';
import { DEAD_LETTER_SCENARIO } from '../brokers/rabbitmq/topology-drill.js';
import { mergeDrillResults, planDrill, runDeadLetterDrill } from '../verbs/drill/dead-letter.js';
import { ExitCode, usageError } from '../errors.js';
import { durationFlag } from '../flags.js';
import { runDrill, SANDBOX_BIZ_TYPE, type DrillResult, type SystemTarget } from '../verbs/drill/index.js';
import { githubAnnotations } from '../render/drill-annotations.js';
import { liveStepPrinter, renderDrill } from '../render/drill.js';
import { renderJunit } from '../render/junit.js';
import { isStderrTty } from '../render/terminal.js';

/** Drill deliveries on the sandbox time out fast: the reference handler answers in milliseconds. */
const SANDBOX_TIMEOUT_MS = 500;
/** A staging handler gets longer, unless its config entry says. */
const SYSTEM_TIMEOUT_MS = 3000;

export default class Drill extends BaseCommand<typeof Drill> {
  static override summary =
    'Run chaos drills: unreachable target, duplicate delivery, permanent error, worker crash, slow target.';
  static override description =
    'Each scenario injects a fault, observes the task table and verifies the outcome, step by step, in its own rows ' +
    '(event ids drill-<run>-…), removed afterwards unless --keep. Retry waits are checked against the policy and then ' +
    'fast-forwarded, never slept through. Without --handler-url it runs on an embedded SQLite sandbox with a built-in ' +
    'reference handler on 127.0.0.1 (no server needed); with --handler-url it drills your staging task table (--db, ' +
    '--source) and handler, checking effects in the business table of --diff-rule. Exit 1 when any step fails.';
  static override examples = [
    '<%= config.bin %> drill',
    '<%= config.bin %> drill --scenario duplicate-delivery --scenario worker-crash --junit drill-report.xml',
    '<%= config.bin %> drill --scenario dead-letter-topology --broker rabbit --queue business_queue --junit drill-report.xml',
    '<%= config.bin %> drill --db mysql://app@127.0.0.1:3306/staging --source tasks --handler-url http://127.0.0.1:8080/tasks/coupon --diff-rule coupon-issued',
  ];

  static override flags = {
    scenario: Flags.string({
      summary: 'Run only this scenario (repeatable).',
      options: [...SCENARIO_NAMES, DEAD_LETTER_SCENARIO],
      multiple: true,
    }),
    broker: Flags.string({
      summary: `${DEAD_LETTER_SCENARIO}: the RabbitMQ broker (a brokers: entry with api:) whose retry topology to drill.`,
    }),
    queue: Flags.string({
      summary: `${DEAD_LETTER_SCENARIO}: the business queue (its dead-letter path is copied).`,
    }),
    'parking-queue': Flags.string({
      summary: `${DEAD_LETTER_SCENARIO}: where exhausted messages are parked (default: <queue>.parking, <queue>_dlq, parking_queue, …).`,
    }),
    junit: Flags.string({
      summary: 'Also write a JUnit XML report to this file (for GitLab, Jenkins, GitHub).',
    }),
    keep: Flags.boolean({ summary: 'Leave the drill rows (and the sandbox file) in place to inspect.' }),
    'handler-url': Flags.string({
      summary: 'Drill a real handler at this URL, on the task table of --db/--source.',
    }),
    'diff-rule': Flags.string({
      summary: 'With --handler-url: the diff rule whose business table holds the effects.',
    }),
    timeout: durationFlag({
      summary: `Handler timeout for drill deliveries (default ${SANDBOX_TIMEOUT_MS}ms on the sandbox, else the handler's or ${SYSTEM_TIMEOUT_MS / 1000}s).`,
    }),
    'handler-variant': Flags.string({
      summary:
        'Sandbox only: run the reference handler deliberately broken (non-idempotent) to see drills fail.',
      options: [...HANDLER_VARIANTS],
      default: 'idempotent',
    }),
  };

  async run(): Promise<DrillResult> {
    const flags = this.flags;
    const junit = flags.junit ? resolve(flags.junit) : undefined;
    if (junit && !(existsSync(dirname(junit)) && statSync(dirname(junit)).isDirectory())) {
      throw usageError(
        `--junit: the directory ${dirname(junit)} does not exist`,
        'Create it first, or write the report elsewhere.',
      );
    }
    const config = this.context.config;
    let system: SystemTarget | undefined;
    let bizType = SANDBOX_BIZ_TYPE;
    let timeoutMs = flags.timeout ?? SANDBOX_TIMEOUT_MS;
    if (flags['handler-url']) {
      if (flags['handler-variant'] !== 'idempotent')
        throw usageError('--handler-variant applies to the sandbox only, not to --handler-url');
      const handlerUrl = checkHandlerUrl(flags['handler-url']);
      const rule = findRule(config.rules, flags['diff-rule']);
      const choice = this.context.source();
      const source = await this.openSource();
      const resolved = await systemTarget(source, rule, handlerUrl, choice.stuckAfterMs);
      if (resolved.extraDb) this.closeLater(resolved.extraDb);
      system = resolved.target;
      bizType = rule.bizType;
      const handler = config.handlers?.[rule.bizType];
      const configured =
        handler?.type === 'http' && handler.timeout !== undefined
          ? parseDuration(handler.timeout, `handlers.${rule.bizType}.timeout`)
          : undefined;
      timeoutMs = flags.timeout ?? configured ?? SYSTEM_TIMEOUT_MS;
    } else if (flags['diff-rule']) {
      throw usageError(
        '--diff-rule needs --handler-url: on the sandbox the drill checks its own business table',
      );
    }
    const policy = RetryPolicies.fromConfig(config.retry).for(bizType);
    const live = !this.jsonEnabled() && isStderrTty();
    const plan = planDrill(flags, config.brokers);
    const base =
      plan.scenarios?.length === 0
        ? undefined
        : await runDrill({
            scenarios: plan.scenarios,
            keep: flags.keep,
            timeoutMs,
            policy,
            system,
            handlerVariant: flags['handler-variant'] as HandlerVariant,
            listener: liveStepPrinter(live),
          });
    const topology = plan.deadLetter
      ? await runDeadLetterDrill(plan.deadLetter, liveStepPrinter(live))
      : undefined;
    const result = mergeDrillResults(base, topology);
    if (plan.skipped) this.note(plan.skipped);
    if (junit) writeAtomically(junit, renderJunit(result));
    if (process.env.GITHUB_ACTIONS === 'true') {
      const lines = githubAnnotations(result);
      if (lines.length) (this.jsonEnabled() ? process.stderr : process.stdout).write(`${lines.join('\n')}\n`);
    }
    if (!this.jsonEnabled()) this.log(renderDrill(result, { brief: live }));
    if (result.sandboxFile) this.note(`sandbox kept: ${result.sandboxFile}`);
    if (junit) this.note(`JUnit report: ${junit}`);
    if (result.failed > 0) this.setExit(ExitCode.findings);
    return result;
  }

  private readonly extra: Array<{ close(): Promise<void> }> = [];

  private closeLater(db: { close(): Promise<void> }): void {
    this.extra.push(db);
  }

  override async finally(error: Error | undefined): Promise<void> {
    await Promise.allSettled(this.extra.map((db) => db.close()));
    await super.finally(error);
  }
}

function writeAtomically(file: string, text: string): void {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  renameSync(temp, file);
}

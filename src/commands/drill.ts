import { Flags } from '../core/oclif.js';
import { BaseCommand } from '../base-command.js';
import {
  drillTarget,
  HANDLER_VARIANTS,
  runDrills,
  SANDBOX_TIMEOUT_MS,
  SCENARIO_NAMES,
  SYSTEM_TIMEOUT_MS,
  type DrillResult,
} from '../verbs/drill/index.js';
import { checkOutputPath, writeFileAtomic } from '../files.js';
import { DEAD_LETTER_SCENARIO } from '../brokers/rabbitmq/topology-drill.js';
import { ExitCode } from '../errors.js';
import { durationFlag } from '../flags.js';
import { githubAnnotations } from '../render/drill-annotations.js';
import { liveStepPrinter, renderDrill } from '../render/drill.js';
import { renderJunit } from '../render/junit.js';
import { isStderrTty } from '../render/terminal.js';

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
    const junit = flags.junit ? checkOutputPath(flags.junit, '--junit', 'report') : undefined;
    const config = this.context.config;
    const target = await drillTarget(flags, config, async () => ({
      stuckAfterMs: this.context.source().stuckAfterMs,
      bound: await this.openSource(),
      openExtra: (dsn) => this.context.openExtra(dsn),
    }));
    const live = !this.jsonEnabled() && isStderrTty();
    const { result, skipped } = await runDrills(flags, config, target, () => liveStepPrinter(live));
    if (skipped) this.note(skipped);
    if (junit) writeFileAtomic(junit, renderJunit(result));
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
}

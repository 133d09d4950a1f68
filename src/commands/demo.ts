import { Flags } from '../core/oclif.js';
import { relative } from 'node:path';
import { BaseCommand } from '../base-command.js';
import { countFlag } from '../flags.js';
import { buildSandbox } from '../verbs/demo/index.js';
import { TOUR_STEPS } from '../verbs/demo/index.js';
import { runTour, type StepOutcome } from '../verbs/demo/index.js';
import { ExitCode } from '../errors.js';
import { DEMO_REDIS_URL, prepareDemoQueues } from '../verbs/demo/index.js';

export interface DemoResult {
  file: string;
  configFile: string;
  tasks: number;
  businessRows: number;
  steps: StepOutcome[];
}

export default class Demo extends BaseCommand<typeof Demo> {
  static override summary =
    'Build a SQLite sandbox with realistic broken tasks and walk through every command on it.';
  static override description =
    'Needs no database server. The sandbox holds the reference task table, three business tables and a few thousand ' +
    'tasks across coupon, points and sms, some stuck, overdue, failed, or with missing and duplicated effects. ' +
    'Each step prints the command so you can run it yourself. Running demo again rebuilds the sandbox.';
  static override examples = [
    '<%= config.bin %> demo',
    '<%= config.bin %> demo --file /tmp/sandbox.sqlite --tasks 10000',
    '<%= config.bin %> demo --no-tour',
  ];

  static override flags = {
    file: Flags.string({ summary: 'Where to build the sandbox.', default: 'taskrecon-demo.sqlite' }),
    tasks: countFlag(10)({ summary: 'How many tasks to generate.', default: 3000 }),
    redis: Flags.string({
      summary:
        "The Redis of the tour's queues step (a scratch key prefix, removed after); without one the step is left out.",
      default: DEMO_REDIS_URL,
    }),
    tour: Flags.boolean({
      summary: 'Walk through the commands after building.',
      default: true,
      allowNo: true,
    }),
  };

  async run(): Promise<DemoResult> {
    const sandbox = await buildSandbox(this.flags.file, this.flags.tasks);
    const show = (path: string) => relative(process.cwd(), path) || path;
    this.note(
      `Built ${show(sandbox.file)}: ${sandbox.tasks} tasks, ${sandbox.businessRows} business rows; config ${show(sandbox.configFile)}`,
    );
    const queues = this.flags.tour ? await prepareDemoQueues(this.flags.redis) : undefined;
    if (queues?.note) this.note(queues.note);
    const tour = queues?.step ? [...TOUR_STEPS, queues.step] : TOUR_STEPS;
    const available = tour.filter((step) => this.config.findCommand(step.command));
    const steps = this.flags.tour
      ? await runTour(available, sandbox, (text) => this.log(text), { quiet: this.jsonEnabled() }).finally(
          () => queues?.cleanup(),
        )
      : [];
    if (steps.some((s) => !s.ok)) this.setExit(ExitCode.findings);
    if (this.flags.tour && !this.jsonEnabled()) {
      this.log(
        `\nThe sandbox stays in ${show(sandbox.file)}. Point any command at it with --config ${show(sandbox.configFile)}.` +
          `\nOpen it in the browser: taskrecon console --config ${show(sandbox.configFile)} (then the URL it prints).`,
      );
    }
    return {
      file: sandbox.file,
      configFile: sandbox.configFile,
      tasks: sandbox.tasks,
      businessRows: sandbox.businessRows,
      steps,
    };
  }
}

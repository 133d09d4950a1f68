import type { DrillEvent, ScenarioResult, StepResult } from '../verbs/drill/index.js';
import type { DrillResult } from '../verbs/drill/index.js';
import { chalk, isStderrTty, oneLine } from './terminal.js';

/**
 * The human views of a drill: a live list of steps on stderr while it runs (TTY only), and the
 * final report on stdout. Both take plain data from the drill framework.
 */
const MARK: Record<StepResult['status'], () => string> = {
  passed: () => chalk.green('✓'),
  failed: () => chalk.red('✗'),
  skipped: () => chalk.dim('-'),
};

function ms(value: number): string {
  return value < 1000 ? `${value}ms` : `${(value / 1000).toFixed(1)}s`;
}

export function renderStepLine(step: StepResult, detailChars = 110): string {
  const detail = step.status === 'skipped' ? '' : chalk.dim(` — ${oneLine(step.detail, detailChars)}`);
  const name =
    step.status === 'failed'
      ? chalk.red.bold(step.name)
      : step.status === 'skipped'
        ? chalk.dim(step.name)
        : step.name;
  return `  ${MARK[step.status]()} ${name}${detail}${step.status === 'skipped' ? '' : chalk.dim(` (${ms(step.durationMs)})`)}`;
}

function scenarioLine(scenario: ScenarioResult): string {
  const label = scenario.status === 'passed' ? chalk.green.bold('PASS') : chalk.red.bold('FAIL');
  return `${label} ${chalk.bold(scenario.name)} ${chalk.dim(`(${ms(scenario.durationMs)})`)}`;
}

/**
 * A listener that prints each scenario and step to stderr as it happens; the running step is shown
 * with an ellipsis that the result overwrites. Returns a no-op when stderr is not a TTY.
 */
export function liveStepPrinter(enabled = isStderrTty()): (event: DrillEvent) => void {
  if (!enabled) return () => {};
  const write = (text: string): boolean => process.stderr.write(text);
  return (event) => {
    if (event.kind === 'scenario-start')
      write(`${chalk.bold(event.scenario)} ${chalk.dim(`— ${event.summary}`)}\n`);
    else if (event.kind === 'step-start') write(`  ${chalk.cyan('…')} ${event.step}`);
    else if (event.kind === 'step-end')
      write(
        `\r\x1b[2K${renderStepLine(event.step, Math.max(40, (process.stderr.columns ?? 120) - event.step.name.length - 20))}\n`,
      );
    else write(`${scenarioLine(event.scenario)}\n\n`);
  };
}

/** The final report: every scenario with its steps (or only the summary lines when `brief`). */
export function renderDrill(result: DrillResult, options: { brief?: boolean } = {}): string {
  const out: string[] = [];
  for (const scenario of result.scenarios) {
    out.push(scenarioLine(scenario));
    const steps = options.brief ? scenario.steps.filter((s) => s.status === 'failed') : scenario.steps;
    for (const step of steps) out.push(renderStepLine(step, 200));
  }
  const total = `${result.passed} passed, ${result.failed} failed in ${ms(result.durationMs)}`;
  out.push('');
  out.push(result.failed === 0 ? chalk.green.bold(total) : chalk.red.bold(total));
  out.push(
    chalk.dim(
      `run ${result.runId} on ${result.target.description}${result.keptRows ? `; drill rows kept (${result.keptRows})` : ''}`,
    ),
  );
  return out.join('\n');
}

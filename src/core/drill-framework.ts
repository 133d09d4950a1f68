import { randomBytes } from 'node:crypto';

/**
 * The drill framework: a scenario is a straight line of named steps — inject, observe,
 * verify — each recorded as passed, failed or skipped. Once a step fails, the scenario's later
 * steps are recorded as skipped without running, so a report always names the step that broke.
 */
export type StepStatus = 'passed' | 'failed' | 'skipped';
export type ScenarioStatus = 'passed' | 'failed';

export interface StepResult {
  name: string;
  status: StepStatus;
  detail: string;
  durationMs: number;
}

export interface ScenarioResult {
  name: string;
  summary: string;
  status: ScenarioStatus;
  durationMs: number;
  steps: StepResult[];
}

/** What a listener hears while a drill runs (the live list on a TTY). */
export type DrillEvent =
  | { kind: 'scenario-start'; scenario: string; summary: string }
  | { kind: 'step-start'; scenario: string; step: string }
  | { kind: 'step-end'; scenario: string; step: StepResult }
  | { kind: 'scenario-end'; scenario: ScenarioResult };

export type DrillListener = (event: DrillEvent) => void;

/** A verification that did not hold: the step fails with this message as its detail. */
export class DrillCheckFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DrillCheckFailed';
  }
}

/** Fails the current step with `message` unless `condition` holds. */
export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new DrillCheckFailed(message);
}

/** A step that runs longer than this fails: a broken system must not hang the drill (or CI). */
export const STEP_TIMEOUT_MS = 20_000;

/** Records the steps of one scenario as they run. */
export class StepRecorder {
  readonly steps: StepResult[] = [];
  private broken = false;

  constructor(
    private readonly scenario: string,
    private readonly listener: DrillListener,
    private readonly stepTimeoutMs: number = STEP_TIMEOUT_MS,
  ) {}

  get failed(): boolean {
    return this.broken;
  }

  /**
   * Runs one step: `fn` returns the detail to record (what was observed). A DrillCheckFailed or any
   * other error fails the step; after a failure every later step is skipped.
   */
  async step(name: string, fn: () => Promise<string>): Promise<boolean> {
    if (this.broken) {
      this.record({ name, status: 'skipped', detail: 'skipped: an earlier step failed', durationMs: 0 });
      return false;
    }
    this.listener({ kind: 'step-start', scenario: this.scenario, step: name });
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new DrillCheckFailed(`did not finish within ${this.stepTimeoutMs / 1000}s`)),
          this.stepTimeoutMs,
        );
      });
      const detail = await Promise.race([fn(), timeout]);
      this.record({ name, status: 'passed', detail, durationMs: elapsed(started) });
      return true;
    } catch (error) {
      this.broken = true;
      const detail =
        error instanceof DrillCheckFailed
          ? error.message
          : `error: ${(error as Error)?.message ?? String(error)}`;
      this.record({ name, status: 'failed', detail, durationMs: elapsed(started) });
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  private record(step: StepResult): void {
    this.steps.push(step);
    this.listener({ kind: 'step-end', scenario: this.scenario, step });
  }
}

/** A scenario: a name, one line of what it proves, and its steps, run against an environment E. */
export interface Scenario<E> {
  name: string;
  summary: string;
  run(steps: StepRecorder, env: E): Promise<void>;
}

/** Runs scenarios one after the other; a scenario that throws outside a step is recorded as a failed step. */
export async function runScenarios<E>(
  scenarios: ReadonlyArray<Scenario<E>>,
  env: E,
  listener: DrillListener = () => {},
  options: { stepTimeoutMs?: number } = {},
): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    listener({ kind: 'scenario-start', scenario: scenario.name, summary: scenario.summary });
    const started = performance.now();
    const recorder = new StepRecorder(scenario.name, listener, options.stepTimeoutMs);
    try {
      await scenario.run(recorder, env);
    } catch (error) {
      await recorder.step('scenario ran to the end', () => Promise.reject(error));
    }
    if (recorder.steps.length === 0) {
      await recorder.step('scenario recorded a step', () =>
        Promise.reject(new DrillCheckFailed('no step was recorded')),
      );
    }
    const result: ScenarioResult = {
      name: scenario.name,
      summary: scenario.summary,
      status: recorder.failed ? 'failed' : 'passed',
      durationMs: elapsed(started),
      steps: recorder.steps,
    };
    results.push(result);
    listener({ kind: 'scenario-end', scenario: result });
  }
  return results;
}

/** A short random run id; every drill row's event id starts with `drill-<run>-`. */
export function newRunId(): string {
  return randomBytes(4).toString('hex');
}

export function drillPrefix(runId: string): string {
  return `drill-${runId}-`;
}

/** True for an event id (or biz id) a drill wrote — the only rows a drill may touch. */
export function isDrillKey(value: string | null | undefined, runId: string): boolean {
  return typeof value === 'string' && value.startsWith(drillPrefix(runId));
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}

import type { DrillResult } from '../verbs/drill/index.js';

/**
 * GitHub Actions workflow commands for a drill's failed steps: one `::error title=…::message`
 * line each, which the runner turns into annotations on the run. Escaped as the runner expects:
 * `%`, CR and LF in the message; also `:` and `,` in property values.
 */
export function githubAnnotations(result: DrillResult): string[] {
  const lines: string[] = [];
  for (const scenario of result.scenarios) {
    for (const step of scenario.steps) {
      if (step.status !== 'failed') continue;
      lines.push(
        `::error title=${property(`drill ${scenario.name}: ${step.name}`)}::${data(`${step.name} failed: ${step.detail}`)}`,
      );
    }
  }
  if (result.failed > 0)
    lines.push(
      `::notice title=taskrecon drill::${data(`${result.passed} passed, ${result.failed} failed (run ${result.runId})`)}`,
    );
  return lines;
}

export function data(value: string): string {
  return value.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

export function property(value: string): string {
  return data(value).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

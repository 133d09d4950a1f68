import type { DrillResult } from '../verbs/drill/index.js';

/**
 * JUnit XML of a drill, in the shape GitLab, Jenkins and GitHub test reporters read:
 * <testsuites> of one <testsuite> per scenario, one <testcase> per step, <failure> for a failed
 * step and <skipped/> for one that did not run. Times are seconds.
 */
export function renderJunit(result: DrillResult, timestamp = new Date()): string {
  const steps = result.scenarios.flatMap((s) => s.steps);
  const count = (status: string): number => steps.filter((s) => s.status === status).length;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="taskrecon drill" tests="${steps.length}" failures="${count('failed')}" errors="0" skipped="${count('skipped')}" time="${seconds(result.durationMs)}">`,
  ];
  for (const scenario of result.scenarios) {
    const failures = scenario.steps.filter((s) => s.status === 'failed').length;
    const skipped = scenario.steps.filter((s) => s.status === 'skipped').length;
    lines.push(
      `  <testsuite name="${attr(scenario.name)}" tests="${scenario.steps.length}" failures="${failures}" errors="0" skipped="${skipped}" ` +
        `time="${seconds(scenario.durationMs)}" timestamp="${timestamp.toISOString().replace(/\.\d{3}Z$/, '')}">`,
    );
    lines.push(
      `    <properties><property name="run" value="${attr(result.runId)}"/><property name="target" value="${attr(result.target.description)}"/></properties>`,
    );
    for (const step of scenario.steps) {
      const open = `    <testcase classname="drill.${attr(scenario.name)}" name="${attr(step.name)}" time="${seconds(step.durationMs)}"`;
      if (step.status === 'passed') {
        lines.push(`${open}>`, `      <system-out>${text(step.detail)}</system-out>`, '    </testcase>');
      } else if (step.status === 'failed') {
        lines.push(
          `${open}>`,
          `      <failure message="${attr(oneLine(step.detail))}" type="DrillStepFailed">${text(step.detail)}</failure>`,
          '    </testcase>',
        );
      } else {
        lines.push(`${open}>`, `      <skipped message="${attr(step.detail)}"/>`, '    </testcase>');
      }
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>', '');
  return lines.join('\n');
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}

function oneLine(value: string): string {
  const line = value.replace(/\s*\n\s*/g, ' ');
  return line.length > 500 ? `${line.slice(0, 499)}…` : line;
}

/** Characters XML 1.0 cannot carry at all (even escaped) are replaced with U+FFFD. */
function clean(value: string): string {
  return value.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
    '\ufffd',
  );
}

/** Element text. */
export function text(value: string): string {
  return clean(value).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** An attribute value (double-quoted); newlines and tabs kept as character references. */
export function attr(value: string): string {
  return text(value)
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
    .replace(/\n/g, '&#10;')
    .replace(/\r/g, '&#13;')
    .replace(/\t/g, '&#9;');
}

import { expect } from 'vitest';
import { runJson, type CliOptions } from './cli.js';
import { assertMatchesSchema } from './schemas.js';

/** The parts of `diff --json` the diff tests read. */
export interface DiffJson {
  rules: Array<{
    name: string;
    mode: string;
    walk: string;
    tasksChecked: number;
    findings: Record<string, number>;
    samples: Array<{ kind: string; key: string | null; taskId: number | null; businessRows: number }>;
  }>;
  total: Record<string, number>;
}

/** A rule's findings as "kind:key" (orphans with their row count, NULL keys as null), sorted. */
export function findingKeys(json: DiffJson, name: string): string[] {
  const rule = json.rules.find((r) => r.name === name);
  if (!rule) throw new Error(`no rule ${name}`);
  return rule.samples
    .map((s) =>
      s.kind === 'orphan' ? `orphan:${s.key ?? 'null'}×${s.businessRows}` : `${s.kind}:${s.key ?? 'null'}`,
    )
    .sort();
}

/**
 * Runs `diff --json` with `args` and checks what every finding run shares: exit 1 (it found
 * something) and output that matches schemas/diff. Out: the parsed JSON.
 */
export async function diffWithFindings<T extends DiffJson = DiffJson>(
  args: string[],
  options: CliOptions = {},
): Promise<T> {
  const run = await runJson<T>(['diff', ...args], options);
  expect(run.code, run.stderr).toBe(1);
  assertMatchesSchema('diff', run.json);
  return run.json;
}

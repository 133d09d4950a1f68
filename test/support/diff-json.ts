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

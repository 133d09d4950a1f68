import {
  addCounts,
  emptyFindingCounts,
  FINDING_KINDS,
  type Finding,
  type FindingCounts,
} from '../../../core/diff.js';
import type { DiffResult, RuleResult } from '../diff.js';
import type { EnqueueOutcome } from '../enqueue.js';

/** One rule on one shard, in `shards[].rules` of a sharded diff. */
export interface ShardRuleResult {
  name: string;
  mode: RuleResult['mode'];
  walk: RuleResult['walk'];
  tasksChecked: number;
  /** Missing, duplicate and unsettled of this shard (orphans belong to no shard: see the rule's). */
  findings: FindingCounts;
  durationMs: number;
}

/** One shard of a sharded diff; `ok: false` for a shard left out with --allow-partial. */
export interface ShardDiffEntry {
  name: string;
  ok: boolean;
  error?: string;
  tasksChecked?: number;
  findings?: FindingCounts;
  rules?: ShardRuleResult[];
  enqueue?: { applied: number; skipped: number };
}

/** What one shard's walk gave. */
export interface ShardPart {
  shard: string;
  result: DiffResult;
}

type Enqueue = NonNullable<DiffResult['enqueue']>;

/** The first `perKind` of each kind, in the order given. */
function keepSamples(samples: readonly Finding[], perKind: number): Finding[] {
  return FINDING_KINDS.flatMap((kind) => samples.filter((s) => s.kind === kind).slice(0, perKind));
}

/**
 * Every shard's result as one: per rule the counts add (the orphans, found across the shards, are
 * added once), samples keep their shard, warnings name theirs; mode and walk are the first
 * shard's (each shard's are in `shards[].rules`).
 */
export function mergeShardDiffs(
  parts: readonly ShardPart[],
  orphans: ReadonlyMap<string, Finding[]>,
  options: { source: string; table: string; samplesPerKind: number; enqueue: Enqueue | null },
): DiffResult & { shards: ShardDiffEntry[] } {
  const first = parts[0]?.result.rules ?? [];
  const rules: RuleResult[] = first.map((rule, index) => {
    const all = parts.map((p) => p.result.rules[index] as RuleResult);
    const findings = all.reduce((sum, r) => addCounts(sum, r.findings), emptyFindingCounts());
    const ruleOrphans = orphans.get(rule.name) ?? [];
    for (const o of ruleOrphans) findings.orphan += o.businessRows;
    const dbs = new Set(all.map((r) => r.business.db));
    return {
      ...rule,
      source: options.source,
      table: options.table,
      business: { ...rule.business, db: dbs.size === 1 ? rule.business.db : `${dbs.size} databases` },
      tasksChecked: all.reduce((n, r) => n + r.tasksChecked, 0),
      findings,
      samples: keepSamples(
        [...all.flatMap((r) => r.samples), ...ruleOrphans.slice(0, options.samplesPerKind)],
        options.samplesPerKind,
      ),
      warnings: parts.flatMap((p, i) => (all[i]?.warnings ?? []).map((w) => `shard ${p.shard}: ${w}`)),
      durationMs: Math.max(...all.map((r) => r.durationMs)),
    };
  });
  const shards: ShardDiffEntry[] = parts.map((p) => {
    const counts = p.result.rules.reduce((sum, r) => addCounts(sum, r.findings), emptyFindingCounts());
    return {
      name: p.shard,
      ok: true,
      tasksChecked: p.result.rules.reduce((n, r) => n + r.tasksChecked, 0),
      findings: counts,
      rules: p.result.rules.map((r) => ({
        name: r.name,
        mode: r.mode,
        walk: r.walk,
        tasksChecked: r.tasksChecked,
        findings: r.findings,
        durationMs: r.durationMs,
      })),
      ...(p.result.enqueue
        ? { enqueue: { applied: p.result.enqueue.applied, skipped: p.result.enqueue.skipped } }
        : {}),
    };
  });
  const total = rules.reduce((sum, r) => addCounts(sum, r.findings), emptyFindingCounts());
  return { rules: rules.map(withoutLevels), total, enqueue: options.enqueue, shards };
}

/** A merged rule keeps no checksum levels: they are one shard's bisection each. */
function withoutLevels(rule: RuleResult): RuleResult {
  const { checksum: _checksum, ...rest } = rule;
  return rest;
}

/** Every shard's --enqueue as one, each outcome naming its shard. */
export function mergeEnqueue(parts: readonly ShardPart[], runId: string, dryRun: boolean): Enqueue {
  const results: Array<EnqueueOutcome & { shard: string }> = [];
  let applied = 0;
  let skipped = 0;
  for (const p of parts) {
    const e = p.result.enqueue;
    if (!e) continue;
    applied += e.applied;
    skipped += e.skipped;
    results.push(...e.results.map((r) => ({ ...r, shard: p.shard })));
  }
  return { runId, applied, skipped, dryRun, results };
}

import type { Finding } from '../../../core/diff.js';
import { normalizeKey, type KeySemantics } from '../../../core/diff-keys.js';
import { store } from '../../../db/port/index.js';
import type { DiffPlan } from '../plan.js';
import { KEYS_PER_LOOKUP } from '../walk/classify.js';

/**
 * Orphans of a sharded source. A business row's task may be on any shard, so a shard's walk can
 * only name candidates: business keys with no task on that shard. A key is an orphan when no
 * shard has a task of the rule's biz type with it:
 * - the shards diffed against the same business table (a group) each name the keys they lack,
 *   and a key is kept when every shard of the group named it;
 * - the keys kept are then looked up in the shards of the rule diffed against another business
 *   table (a rule without `business.db` on shards in several databases), and dropped when one
 *   of them has a task with the key.
 * Memory: one entry per business key that some shard lacks, until the shards are all walked.
 */

/** Which business table a plan read: the business database's DSN (a shard's own when the rule names none) and table. */
export function businessGroup(plan: DiffPlan, shardDsn: string): string {
  return `${plan.rule.business.db ?? shardDsn}\n${plan.rule.business.table}`;
}

interface Candidate {
  finding: Finding;
  /** How many shards of the group lack the key. */
  seen: number;
}

interface Group {
  /** The shards diffed against this business table, by name. */
  shards: Set<string>;
  candidates: Map<string, Candidate>;
}

/** One shard's plan of a rule, for the lookups of other groups' orphans. */
interface ShardPlan {
  shard: string;
  group: string;
  plan: DiffPlan;
}

/** A NULL key matches no task anywhere: its rows are orphans on every shard alike. */
const NULL_KEY = '\u0000';

export class ShardOrphans {
  /** rule → group → candidates. */
  private readonly groups = new Map<string, Map<string, Group>>();
  private readonly plans: ShardPlan[] = [];

  /** Registers a shard's plan of a rule (before the walks: every shard of a group must be known). */
  plan(shard: string, shardDsn: string, plan: DiffPlan): void {
    const group = businessGroup(plan, shardDsn);
    this.plans.push({ shard, group, plan });
    const byGroup = this.groups.get(plan.rule.name) ?? new Map<string, Group>();
    this.groups.set(plan.rule.name, byGroup);
    const entry = byGroup.get(group) ?? { shards: new Set<string>(), candidates: new Map() };
    entry.shards.add(shard);
    byGroup.set(group, entry);
  }

  /** A shard's walk found `finding` (an orphan on that shard alone). */
  hold(shard: string, shardDsn: string, finding: Finding, plan: DiffPlan): void {
    const entry = this.groups.get(finding.rule)?.get(businessGroup(plan, shardDsn));
    if (!entry?.shards.has(shard)) return;
    const id = finding.key === null ? NULL_KEY : `k${finding.key}`;
    const seen = entry.candidates.get(id);
    if (seen) seen.seen++;
    else entry.candidates.set(id, { finding, seen: 1 });
  }

  /**
   * The orphans of every rule (kept in the rule order given), each with the business group it was
   * found in. Call once every shard is walked.
   */
  async resolve(
    rules: readonly string[],
  ): Promise<Array<{ rule: string; group: string; orphans: Finding[] }>> {
    const out: Array<{ rule: string; group: string; orphans: Finding[] }> = [];
    for (const rule of rules) {
      for (const [group, entry] of this.groups.get(rule) ?? []) {
        let kept: Finding[] = [...entry.candidates.values()]
          .filter((c) => c.seen >= entry.shards.size)
          .map((c) => ({ ...c.finding, shard: null }));
        entry.candidates.clear();
        const others = this.plans.filter((p) => p.plan.rule.name === rule && p.group !== group);
        for (const other of others) kept = await withoutTasksOn(other.plan, kept);
        out.push({ rule, group, orphans: kept });
      }
    }
    return out;
  }
}

/** How a plan's task keys compare among themselves. */
function taskSemantics(plan: DiffPlan): KeySemantics {
  return plan.kind === 'checksum' ? plan.keySemantics : plan.taskSemantics;
}

/** The findings whose key no task of the rule on `plan`'s shard has (NULL keys stay: they match nothing). */
async function withoutTasksOn(plan: DiffPlan, findings: Finding[]): Promise<Finding[]> {
  const keyed = findings.filter((f) => f.key !== null);
  if (keyed.length === 0) return findings;
  const task =
    plan.kind === 'checksum'
      ? { ...plan.task, key: { sql: plan.task.key, isInt: plan.task.keyIsInt } }
      : plan.task;
  const semantics = taskSemantics(plan);
  const found = new Set<string>();
  await store.diff.withReadOnly(plan.source.db, async (q) => {
    for (let i = 0; i < keyed.length; i += KEYS_PER_LOOKUP) {
      const keys = keyed.slice(i, i + KEYS_PER_LOOKUP).map((f) => f.key as string);
      for (const row of await store.diff.keySiblings(q, task, keys))
        if (Number(row.tasks) > 0) found.add(normalizeKey(row.k, semantics) as string);
    }
  });
  return findings.filter((f) => f.key === null || !found.has(normalizeKey(f.key, semantics) as string));
}

import { randomUUID } from 'node:crypto';
import type { Finding } from '../../../core/diff.js';
import type { TaskId } from '../../../core/task.js';
import { resolveTime } from '../../../flags.js';
import { usageError } from '../../../errors.js';
import { requireAuditTable } from '../../../ops/audit-trail.js';
import { defaultOperator } from '../../../ops/operator.js';
import { eachShard, shardsWhere, type OpenShard, type ShardSet } from '../../../ops/shards/set.js';
import {
  checkCreatable,
  createMissing,
  requireCreateConsent,
  type CreateMissingItem,
  type CreateMissingResult,
} from '../create-missing.js';
import { prepareRules, runDiff, type DiffResult, type RuleTarget } from '../diff.js';
import { confirmEnqueue, enqueueDeclined } from '../enqueue-confirm.js';
import { enqueueMissing } from '../enqueue.js';
import type { DiffRun, DiffRunFlags } from '../orchestrate.js';
import type { DiffPlan } from '../plan.js';
import type { WalkChoice } from '../prepare.js';
import { checkDiffFlags, diffActor, enqueueRequest } from '../request.js';
import { RuleTargets, selectRules } from '../targets.js';
import { mergeEnqueue, mergeShardDiffs, type ShardDiffEntry, type ShardPart } from './merge.js';
import { businessGroup, ShardOrphans } from './orphans.js';
import { checkShardRules } from './request.js';

export interface ShardDiffRun extends Omit<DiffRun, 'openSource' | 'flags'> {
  flags: DiffRunFlags & { 'into-shard'?: string };
  /** Opens every shard (after the flags and rules are checked). */
  openShards: () => Promise<ShardSet>;
}

export type ShardedDiffResult = DiffResult & {
  shards: ShardDiffEntry[];
  missingShards?: string[];
  createMissing?: CreateMissingResult & { results: Array<CreateMissingItem & { shard: string }> };
};

/** One shard's rules opened and planned. */
interface ShardPlans {
  shard: OpenShard;
  targets: RuleTarget[];
  plans: DiffPlan[];
}

/**
 * `diff` on a sharded source: each shard is diffed as a source of its own against each rule's
 * business table (the rule's `business.db`, or the shard's own database when it names none), the
 * findings merged, and the orphans kept only when no shard has their task (ShardOrphans). Every
 * shard's rules are planned before anything is walked, so a rule that does not fit one shard
 * stops the run before a write. --enqueue writes on each shard in its own transactions and
 * audits there, under one run id; --create-missing writes into --into-shard.
 */
export async function reconcileShards(run: ShardDiffRun): Promise<ShardedDiffResult> {
  const flags = {
    ...run.flags,
    operator: run.flags.operator ?? defaultOperator(run.context.env, run.context.config.operator),
  };
  checkDiffFlags(flags);
  const configured = run.context.config.rules ?? [];
  const rules = selectRules(configured, flags.rule);
  const set = await run.openShards();
  checkShardRules(rules, set.name);
  const into = flags['into-shard'];
  if (flags['create-missing'] && set.missing.length > 0)
    throw usageError(
      `--create-missing: shards ${set.missing.map((m) => m.name).join(', ')} cannot be reached, and an orphan's task may be on them; nothing was created`,
      'Start their servers and run again (--allow-partial cannot create tasks).',
    );
  if (set.missing.length > 0 && rules.some((r) => r.business.orphans))
    run.onWarning?.(
      `orphans are checked against the shards that answered: a task on ${set.missing.map((m) => m.name).join(', ')} is not seen`,
    );
  const openers: RuleTargets[] = [];
  try {
    const orphans = new ShardOrphans();
    const walk = flags.walk as WalkChoice;
    const planned = await eachShard(set, async (shard): Promise<ShardPlans & { now: number }> => {
      const opener = new RuleTargets(run.context, shard.source, shard.spec.db);
      openers.push(opener);
      const targets: RuleTarget[] = [];
      for (const rule of rules) targets.push(await opener.open(rule));
      const now = await shard.source.db.nowEpoch();
      const plans = await prepareRules(targets, {
        sinceEpoch: resolveTime(flags.since, now),
        untilEpoch: resolveTime(flags.until, now),
        walk,
      });
      return { shard, targets, plans, now };
    });
    for (const p of planned)
      for (const plan of p.plans) orphans.plan(p.shard.spec.name, p.shard.spec.db, plan);
    const intoShard = into === undefined ? undefined : planned.find((p) => p.shard.spec.name === into);
    if (flags['create-missing']) {
      if (!intoShard) throw usageError(`--into-shard: shard '${into ?? ''}' is not open`);
      requireCreateConsent({
        dryRun: Boolean(flags['dry-run']),
        yes: Boolean(flags.yes),
        interactive: run.interactive,
      });
      await checkCreatable(intoShard.targets, configured);
      if (!flags['dry-run']) await requireAuditTable(intoShard.shard.source.db);
    }
    // Every shard written to must have its audit table before any shard is written.
    if (flags.enqueue && !flags['dry-run'])
      await eachShard(set, (shard) => requireAuditTable(shard.source.db));
    if (!(await confirmEnqueue(flags, run.interactive, run.ask))) throw enqueueDeclined();
    const runId = randomUUID();
    const enqueue = enqueueRequest(flags);
    const missing = new Map<OpenShard, TaskId[]>(set.shards.map((shard) => [shard, []]));
    const progress = run.progress?.();
    const parts: ShardPart[] = await eachShard(set, async (shard) => {
      const { plans, now } = planned.find((p) => p.shard === shard) as ShardPlans & { now: number };
      const name = shard.spec.name;
      const ids = missing.get(shard) as TaskId[];
      const result = await runDiff(plans, {
        sinceEpoch: resolveTime(flags.since, now),
        untilEpoch: resolveTime(flags.until, now),
        chunkTimeMs: flags['chunk-time'],
        samplesPerKind: flags.samples,
        progress: progress ? (text) => progress.update(`${name}: ${text}`) : undefined,
        onWarning: run.onWarning ? (message) => run.onWarning?.(`shard ${name}: ${message}`) : undefined,
        onFinding: async (finding) => {
          if (enqueue && finding.kind === 'missing' && finding.taskId !== null) ids.push(finding.taskId);
          await run.onFinding?.({ ...finding, shard: name });
        },
        holdOrphan: (finding, plan) => orphans.hold(name, shard.spec.db, finding, plan),
      });
      result.rules.forEach((r) => (r.samples = r.samples.map((s) => ({ ...s, shard: name }))));
      return { shard: name, result };
    }).finally(() => progress?.stop());
    const found = await orphans.resolve(rules.map((r) => r.name));
    const byRule = new Map<string, Finding[]>();
    for (const { rule, orphans: list } of found) {
      byRule.set(rule, [...(byRule.get(rule) ?? []), ...list]);
      for (const orphan of list) await run.onFinding?.(orphan);
    }
    // Every shard walked and every orphan looked up before any write: a failed read changes nothing.
    if (enqueue)
      await eachShard(set, async (shard) => {
        const part = parts.find((p) => p.shard === shard.spec.name) as ShardPart;
        const ids = [...new Set(missing.get(shard))];
        const done = await enqueueMissing(shard.source, ids, { ...enqueue, runId });
        part.result.enqueue = { ...done, dryRun: enqueue.dryRun };
      });
    const merged = mergeShardDiffs(parts, byRule, {
      source: set.name,
      ...shardsWhere(
        set.shards.length,
        set.shards.map((s) => s.source.db.display),
      ),
      samplesPerKind: flags.samples,
      enqueue: enqueue ? mergeEnqueue(parts, runId, Boolean(flags['dry-run'])) : null,
    });
    const result: ShardedDiffResult = {
      ...merged,
      shards: [...merged.shards, ...set.missing.map((m) => ({ name: m.name, ok: false, error: m.error }))],
      ...(set.missing.length ? { missingShards: set.missing.map((m) => m.name) } : {}),
    };
    await run.onDiff?.(result);
    if (!intoShard || !flags['create-missing']) return result;
    const created = await createInto(intoShard, planned, found, {
      ...diffActor(flags, null),
      runId: randomUUID(),
      configured,
      confirm: flags.yes ? undefined : run.confirmCreate,
    });
    return { ...result, createMissing: created };
  } finally {
    await Promise.allSettled(openers.map((o) => o.close()));
  }
}

/**
 * --create-missing on shards: every orphan's task goes into `into`, its payload read from the
 * business table the orphan was found in. One confirmation for the total; no: nothing written.
 */
async function createInto(
  into: ShardPlans,
  planned: readonly ShardPlans[],
  found: ReadonlyArray<{ rule: string; group: string; orphans: Finding[] }>,
  request: Parameters<typeof createMissing>[3] & {
    configured: Parameters<typeof createMissing>[1];
    confirm?: (count: number) => Promise<boolean>;
  },
): Promise<NonNullable<ShardedDiffResult['createMissing']>> {
  const name = into.shard.spec.name;
  const creatable = found.filter((f) => request.configured.some((r) => r.name === f.rule && r.create));
  const pending = new Set(
    creatable.flatMap((f) => f.orphans.filter((o) => o.key !== null).map((o) => `${f.rule}\n${o.key}`)),
  ).size;
  const result = {
    dryRun: request.dryRun,
    created: 0,
    existing: 0,
    refused: 0,
    results: [] as Array<CreateMissingItem & { shard: string }>,
  };
  if (!request.dryRun && pending > 0 && request.confirm && !(await request.confirm(pending)))
    return { ...result, dryRun: true };
  for (const { rule, group, orphans } of creatable) {
    const target = into.targets.find((t) => t.rule.name === rule) as RuleTarget;
    // The business table the orphans were found in: that of a shard of their group.
    const from = planned
      .flatMap((p) => p.plans.map((plan) => ({ plan, dsn: p.shard.spec.db })))
      .find(({ plan, dsn }) => plan.rule.name === rule && businessGroup(plan, dsn) === group);
    const part = await createMissing(
      [{ ...target, businessDb: from?.plan.businessDb ?? target.businessDb }],
      request.configured,
      orphans,
      request,
    );
    result.created += part.created;
    result.existing += part.existing;
    result.refused += part.refused;
    result.results.push(...part.results.map((r) => ({ ...r, shard: name })));
  }
  return result;
}

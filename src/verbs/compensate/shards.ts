import { splitShardId } from '../../core/shards.js';
import type { BoundSource } from '../../db/bind-source.js';
import { usageError } from '../../errors.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import type { EffectSetup } from '../../ops/effect/index.js';
import { eachShard, shardsWhere, type OpenShard, type ShardSet } from '../../ops/shards/set.js';
import { compensate, previewCandidates } from './compensate.js';
import { runCompensate, type CompensateRun } from './orchestrate.js';
import { compensateRequest, type CompensateInput } from './request.js';
import {
  MAX_KEPT_RESULTS,
  type CompensateItem,
  type CompensateRequest,
  type CompensateResult,
} from '../../ops/compensation/types.js';

/** One shard's part of a sharded compensate. */
export interface ShardCompensate {
  shard: string;
  matched: number;
  applied: number;
  skipped: number;
  refused: number;
  interrupted: boolean;
}

export type ShardedCompensateResult = Omit<CompensateResult, 'results'> & {
  results: Array<CompensateItem & { shard: string }>;
  shards: ShardCompensate[];
  missingShards?: string[];
};

/** What a sharded run needs besides the shards: compensate's input, per shard where it differs. */
export interface ShardCompensateInput extends Omit<CompensateInput, 'effects' | 'tty'> {
  /** The effect lookups of a retry on one shard (its DSN stands for the source's own database). */
  effects: (shard: OpenShard) => EffectSetup;
  /** Asked once, with the plan (matches per shard), before anything is written; false: nothing is. */
  confirm?: (plan: ShardCompensate[], action: string) => Promise<boolean>;
  now?: CompensateRun['now'];
  shouldStop?: () => boolean;
}

/**
 * compensate on every shard of a sharded source: ids are SHARD:ID (each goes to its shard, an
 * unknown shard stops the run before anything is read), filters select on every shard. One plan,
 * checked on every shard first (unknown ids, refusals, the audit table), one confirmation, one run
 * id; then each shard runs compensate's own batches in its own database, audited there.
 * `--limit` bounds each shard.
 */
export async function compensateShards(
  set: ShardSet,
  input: ShardCompensateInput,
): Promise<ShardedCompensateResult | undefined> {
  const names = set.shards.map((s) => s.spec.name).concat(set.missing.map((m) => m.name));
  const byShard = new Map<string, string[]>();
  for (const arg of input.argv.flatMap((a) => a.split(',')).map((a) => a.trim())) {
    if (arg === '') continue;
    const { shard, id } = splitShardId(arg, names);
    if (set.missing.some((m) => m.name === shard))
      throw usageError(`shard ${shard} of '${arg}' cannot be reached: nothing was changed`);
    byShard.set(shard, [...(byShard.get(shard) ?? []), id]);
  }
  const interactive = !input.flags.yes && !input.flags['dry-run'] && !input.json && Boolean(input.confirm);
  if (interactive && !input.flags.action)
    throw usageError('--action is required on a sharded source', 'e.g. --action retry.');
  const chosen: ShardSet = {
    ...set,
    shards: byShard.size ? set.shards.filter((s) => byShard.has(s.spec.name)) : set.shards,
  };
  const plans = await eachShard(chosen, async (shard) => {
    const { request } = await compensateRequest(shard.source, {
      ...input,
      argv: byShard.get(shard.spec.name) ?? [],
      tty: false,
      flags: { ...input.flags, yes: input.flags.yes || interactive },
      effects: input.effects(shard),
    });
    return { shard, request };
  });
  const runId = plans[0]?.request.runId ?? '';
  for (const p of plans) p.request.runId = runId;
  // Read everything first: an unknown id or a refused named task on any shard, and nothing is written.
  const counts = await eachShard(chosen, async (shard) => {
    const { request } = plans.find((p) => p.shard === shard) as { request: CompensateRequest };
    if (!request.dryRun) await requireAuditTable(shard.source.db);
    if (request.ids) {
      const dry = await compensate(shard.source, { ...request, dryRun: true });
      if (dry.refused > 0)
        throw usageError(
          `${dry.refused} of the named tasks cannot take ${request.action}; nothing was changed`,
          `See them with: taskrecon compensate ${request.ids.map((id) => `${shard.spec.name}:${String(id)}`).join(' ')} --action ${request.action} --dry-run`,
        );
      return dry.matched;
    }
    return (await previewCandidates(shard.source, request, 1)).matched;
  });
  const plan = chosen.shards.map((s, i) => ({
    shard: s.spec.name,
    matched: counts[i] ?? 0,
    applied: 0,
    skipped: 0,
    refused: 0,
    interrupted: false,
  }));
  if (interactive && !(await input.confirm?.(plan, plans[0]?.request.action ?? ''))) return undefined;
  const parts = await eachShard(chosen, async (shard) => {
    const { request } = plans.find((p) => p.shard === shard) as { request: CompensateRequest };
    const result = await runCompensate({
      source: shard.source,
      request: { ...request, shouldStop: input.shouldStop },
      now: input.now,
    });
    return { shard: shard.spec.name, source: shard.source, result };
  });
  return mergeCompensate(set, parts);
}

function mergeCompensate(
  set: ShardSet,
  parts: Array<{ shard: string; source: BoundSource; result: CompensateResult }>,
): ShardedCompensateResult {
  const first = parts[0]?.result;
  if (!first) throw usageError('no shard to compensate on');
  const sum = (k: 'matched' | 'applied' | 'skipped' | 'refused') =>
    parts.reduce((n, p) => n + p.result[k], 0);
  const all = parts.flatMap((p) => p.result.results.map((r) => ({ ...r, shard: p.shard })));
  const wouldFail = parts.reduce((n, p) => n + (p.result.wouldFail ?? 0), 0);
  return {
    ...first,
    matched: sum('matched'),
    applied: sum('applied'),
    skipped: sum('skipped'),
    refused: sum('refused'),
    ...(wouldFail ? { wouldFail } : {}),
    source: {
      ...first.source,
      name: set.name,
      ...shardsWhere(
        parts.length,
        parts.map((p) => p.source.db.display),
      ),
    },
    interrupted: parts.some((p) => p.result.interrupted),
    durationMs: Math.max(...parts.map((p) => p.result.durationMs)),
    results: all.slice(0, MAX_KEPT_RESULTS),
    resultsOmitted:
      Math.max(0, all.length - MAX_KEPT_RESULTS) + parts.reduce((n, p) => n + p.result.resultsOmitted, 0),
    ...(first.effect ? { effect: mergeEffects(parts.map((p) => p.result)) } : {}),
    ...(first.dispatched ? { dispatched: mergeDispatched(parts.map((p) => p.result)) } : {}),
    shards: parts.map(({ shard, result }) => ({
      shard,
      matched: result.matched,
      applied: result.applied,
      skipped: result.skipped,
      refused: result.refused,
      interrupted: result.interrupted,
    })),
    ...(set.missing.length ? { missingShards: set.missing.map((m) => m.name) } : {}),
  };
}

function mergeEffects(results: CompensateResult[]): NonNullable<CompensateResult['effect']> {
  const out = {
    present: 0,
    duplicated: 0,
    missing: 0,
    noRule: 0,
    refused: 0,
    forced: 0,
    refusedIds: [] as CompensateItem['id'][],
  };
  for (const e of results.map((r) => r.effect)) {
    if (!e) continue;
    for (const k of ['present', 'duplicated', 'missing', 'noRule', 'refused', 'forced'] as const)
      out[k] += e[k];
    out.refusedIds.push(...e.refusedIds);
  }
  return out;
}

function mergeDispatched(results: CompensateResult[]): NonNullable<CompensateResult['dispatched']> {
  const out = { claimed: 0, succeeded: 0, retried: 0, failed: 0, lostRace: 0 };
  for (const d of results.map((r) => r.dispatched))
    if (d) for (const k of Object.keys(out) as (keyof typeof out)[]) out[k] += d[k];
  return out;
}

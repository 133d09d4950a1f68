import {
  addCounts,
  emptyFindingCounts,
  FindingTally,
  type DiffRule,
  type ExpectMode,
  type Finding,
  type FindingCounts,
} from '../../core/diff.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { Db } from '../../db/types.js';
import type { LevelRecord } from '../../core/diff-levels.js';
import { runChecksum } from './checksum/run-checksum.js';
import { enqueueMissing, type EnqueueRequest, type EnqueueResult } from './enqueue.js';
import { runJoin } from './join/run-join.js';
import { runMerge } from './merge/run-merge.js';
import { modeOf, type DiffPlan } from './plan.js';
import { prepareRule, type WalkChoice } from './prepare.js';
import type { WalkOptions } from './walk/workers.js';

/** One rule's part of the JSON contract of `diff`. */
export interface RuleResult {
  name: string;
  bizType: string;
  source: string;
  table: string;
  business: {
    table: string;
    key: string;
    expect: ExpectMode;
    db: string;
    where: string | null;
    orphans: boolean;
  };
  mode: 'same-server' | 'cross-server';
  /**
   * How the tables were compared (the plan's strategy): `merge` (same server: both key indexes
   * read in order and merged), `join` (same server: chunked LEFT JOIN anti-joins), `checksum`
   * (across servers).
   */
  walk: DiffPlan['kind'];
  tasksChecked: number;
  findings: FindingCounts;
  samples: Finding[];
  warnings: string[];
  durationMs: number;
  /** Cross-server only: segments compared per level of the checksum bisection. */
  checksum?: LevelRecord[];
}

export interface DiffResult {
  rules: RuleResult[];
  total: FindingCounts;
  /** What --enqueue did (null without it). */
  enqueue: (Omit<EnqueueResult, 'results'> & { dryRun: boolean; results: EnqueueResult['results'] }) | null;
}

/** Where a rule's tables are: the bound task source and the business table's database. */
export interface RuleTarget {
  rule: DiffRule;
  source: BoundSource;
  sourceDsn: string;
  businessDb: Db;
}

export interface DiffOptions {
  sinceEpoch?: number;
  untilEpoch?: number;
  chunkTimeMs: number;
  samplesPerKind: number;
  /** Called for every finding as it is found (ndjson/csv streaming). */
  onFinding?: (finding: Finding) => void | Promise<void>;
  onWarning?: (message: string) => void;
  progress?: (text: string) => void;
  enqueue?: EnqueueRequest;
  /**
   * On a sharded source: orphans go here instead of the tally and onFinding, since a business
   * row without a task on this shard may have it on another (see shards/orphans.ts).
   */
  holdOrphan?: (finding: Finding, plan: DiffPlan) => void;
}

/** Checks every rule against the live schemas first (exit 3 before anything is read), then diffs each. */
export async function prepareRules(
  targets: RuleTarget[],
  options: Pick<DiffOptions, 'sinceEpoch' | 'untilEpoch'> & { walk?: WalkChoice },
): Promise<DiffPlan[]> {
  const plans: DiffPlan[] = [];
  for (const target of targets) {
    plans.push(
      await prepareRule(target.rule, target.source, target.businessDb, {
        sinceEpoch: options.sinceEpoch,
        untilEpoch: options.untilEpoch,
        sourceDsn: target.sourceDsn,
        walk: options.walk,
      }),
    );
  }
  return plans;
}

/** Runs a plan's strategy: the rule's tasks checked and, for a checksum plan, its levels. */
async function runPlan(
  plan: DiffPlan,
  walk: WalkOptions,
): Promise<{ tasksChecked: number; checksum?: LevelRecord[] }> {
  switch (plan.kind) {
    case 'join':
      return runJoin(plan, walk);
    case 'merge':
      return runMerge(plan, walk);
    case 'checksum': {
      const stats = await runChecksum(plan, walk);
      return { tasksChecked: stats.tasksChecked, checksum: stats.levels };
    }
    default: {
      const unknown: never = plan;
      throw new Error(`diff plan of unknown kind: ${JSON.stringify(unknown)}`);
    }
  }
}

export async function runDiff(plans: DiffPlan[], options: DiffOptions): Promise<DiffResult> {
  const rules: RuleResult[] = [];
  const missing = new Map<BoundSource, TaskId[]>();
  for (const plan of plans) {
    for (const warning of plan.warnings) options.onWarning?.(warning);
    const tally = new FindingTally(options.samplesPerKind);
    const started = performance.now();
    const walk: WalkOptions = {
      chunkTimeMs: options.chunkTimeMs,
      progress: (text: string) => options.progress?.(`${plan.rule.name}: ${text}`),
      emit: async (finding: Finding) => {
        if (options.holdOrphan && finding.kind === 'orphan') {
          options.holdOrphan(finding, plan);
          return;
        }
        tally.add(finding);
        if (options.enqueue && finding.kind === 'missing' && finding.taskId !== null) {
          const list = missing.get(plan.source) ?? [];
          list.push(finding.taskId);
          missing.set(plan.source, list);
        }
        await options.onFinding?.(finding);
      },
    };
    const { tasksChecked, checksum } = await runPlan(plan, walk);
    rules.push({
      name: plan.rule.name,
      bizType: plan.rule.bizType,
      source: plan.source.name,
      table: plan.source.profile.table,
      business: {
        table: plan.rule.business.table,
        key: plan.rule.business.key,
        expect: plan.rule.business.expect,
        db: plan.businessDb.display,
        where: plan.rule.business.where ?? null,
        orphans: plan.rule.business.orphans,
      },
      mode: modeOf(plan),
      walk: plan.kind,
      tasksChecked,
      findings: { ...tally.counts },
      samples: tally.samples(),
      warnings: plan.warnings,
      durationMs: Math.round(performance.now() - started),
      ...(checksum ? { checksum } : {}),
    });
  }
  const total = rules.reduce((sum, rule) => addCounts(sum, rule.findings), emptyFindingCounts());
  let enqueue: DiffResult['enqueue'] = null;
  if (options.enqueue) {
    const merged: EnqueueResult = { runId: '', applied: 0, skipped: 0, results: [] };
    for (const [source, ids] of missing) {
      const enqueued = await enqueueMissing(source, [...new Set(ids)], options.enqueue);
      merged.runId = enqueued.runId;
      merged.applied += enqueued.applied;
      merged.skipped += enqueued.skipped;
      merged.results.push(...enqueued.results);
    }
    enqueue = { ...merged, dryRun: options.enqueue.dryRun };
  }
  return { rules, total, enqueue };
}

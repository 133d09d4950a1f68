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
import { runCrossServer, type CrossStats } from './cross-server.js';
import { enqueueMissing, type EnqueueRequest, type EnqueueResult } from './enqueue.js';
import { prepareRule, type PreparedRule, type WalkChoice } from './prepare.js';
import { runSameServer } from './same-server.js';

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
   * How the tables were compared: `merge` (same server: both key indexes read in order and merged),
   * `join` (same server: chunked LEFT JOIN anti-joins), `checksum` (across servers).
   */
  walk: 'merge' | 'join' | 'checksum';
  tasksChecked: number;
  findings: FindingCounts;
  samples: Finding[];
  warnings: string[];
  durationMs: number;
  /** Cross-server only: segments compared per level of the checksum bisection. */
  checksum?: CrossStats['levels'];
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
}

/** Checks every rule against the live schemas first (exit 3 before anything is read), then diffs each. */
export async function prepareRules(
  targets: RuleTarget[],
  options: Pick<DiffOptions, 'sinceEpoch' | 'untilEpoch'> & { walk?: WalkChoice },
): Promise<PreparedRule[]> {
  const prepared: PreparedRule[] = [];
  for (const t of targets) {
    prepared.push(
      await prepareRule(t.rule, t.source, t.businessDb, {
        sinceEpoch: options.sinceEpoch,
        untilEpoch: options.untilEpoch,
        sourceDsn: t.sourceDsn,
        walk: options.walk,
      }),
    );
  }
  return prepared;
}

export async function runDiff(prepared: PreparedRule[], options: DiffOptions): Promise<DiffResult> {
  const rules: RuleResult[] = [];
  const missing = new Map<BoundSource, TaskId[]>();
  for (const p of prepared) {
    for (const w of p.warnings) options.onWarning?.(w);
    const tally = new FindingTally(options.samplesPerKind);
    const started = performance.now();
    const walk = {
      chunkTimeMs: options.chunkTimeMs,
      progress: (text: string) => options.progress?.(`${p.rule.name}: ${text}`),
      emit: async (finding: Finding) => {
        tally.add(finding);
        if (options.enqueue && finding.kind === 'missing' && finding.taskId !== null) {
          const list = missing.get(p.source) ?? [];
          list.push(finding.taskId);
          missing.set(p.source, list);
        }
        await options.onFinding?.(finding);
      },
    };
    let tasksChecked: number;
    let checksum: CrossStats['levels'] | undefined;
    if (p.mode === 'same-server') {
      ({ tasksChecked } = await runSameServer(p, walk));
    } else {
      const stats = await runCrossServer(p, walk);
      tasksChecked = stats.tasksChecked;
      checksum = stats.levels;
    }
    rules.push({
      name: p.rule.name,
      bizType: p.rule.bizType,
      source: p.source.name,
      table: p.source.profile.table,
      business: {
        table: p.rule.business.table,
        key: p.rule.business.key,
        expect: p.rule.business.expect,
        db: p.businessDb.display,
        where: p.rule.business.where ?? null,
        orphans: p.rule.business.orphans,
      },
      mode: p.mode,
      walk: p.mode === 'cross-server' ? 'checksum' : p.merge ? 'merge' : 'join',
      tasksChecked,
      findings: { ...tally.counts },
      samples: tally.samples(),
      warnings: p.warnings,
      durationMs: Math.round(performance.now() - started),
      ...(checksum ? { checksum } : {}),
    });
  }
  const total = rules.reduce((sum, r) => addCounts(sum, r.findings), emptyFindingCounts());
  let enqueue: DiffResult['enqueue'] = null;
  if (options.enqueue) {
    const merged: EnqueueResult = { runId: '', applied: 0, skipped: 0, results: [] };
    for (const [source, ids] of missing) {
      const r = await enqueueMissing(source, [...new Set(ids)], options.enqueue);
      merged.runId = r.runId;
      merged.applied += r.applied;
      merged.skipped += r.skipped;
      merged.results.push(...r.results);
    }
    enqueue = { ...merged, dryRun: options.enqueue.dryRun };
  }
  return { rules, total, enqueue };
}

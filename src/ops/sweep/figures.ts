import type { TaskreconConfig } from '../../config/schema.js';
import { compileRules } from '../../core/sweep-rules.js';
import { isKnownZone } from '../../core/sweep-window.js';
import { sweepZoneProblem } from '../../core/sweep-config.js';
import type { BoundSource } from '../../db/bind-source.js';
import { isoOrNull, planSource, sweepable } from './plan.js';

/**
 * The sweep's figures for report and scan, read-only: of the failed rows of the last `sinceSeconds`
 * (and those deferred before), how many the rules defer and how many are second failures, with
 * the second failures listed. Null when no rules apply (no `sweeps:`, a source without failed rows,
 * or rules that cannot be read in the configured zone).
 */
export interface SweepFigures {
  deferred: number;
  secondFailures: number;
  list: Array<{
    id: string | number;
    bizType: string | null;
    rule: string;
    identity: string;
    failedAt: string | null;
  }>;
}

export async function sweepFigures(
  source: BoundSource,
  config: TaskreconConfig,
  sinceSeconds: number,
  appTimeZone?: string,
): Promise<SweepFigures | null> {
  const zone = appTimeZone ?? config.appTimeZone;
  if (!config.sweeps?.length || !sweepable(source) || sweepZoneProblem(config.sweeps, zone, isKnownZone))
    return null;
  const now = await source.db.nowEpoch();
  const plan = await planSource(source, compileRules(config.sweeps, zone), now, now - sinceSeconds);
  const second = plan.rows.filter((r) => r.decision.outcome === 'second-failure');
  return {
    deferred: plan.rows.filter((r) => r.decision.outcome === 'deferred').length,
    secondFailures: second.length,
    list: second.map((r) => ({
      id: r.id,
      bizType: r.bizType,
      rule: r.rule.name,
      identity: r.identity,
      failedAt: isoOrNull(r.failedAt),
    })),
  };
}

/** The two figures report shows. */
export function sweepCounts(figures: SweepFigures): { secondFailures: number; deferred: number } {
  return { secondFailures: figures.secondFailures, deferred: figures.deferred };
}

export type SecondFailureRow = SweepFigures['list'][number];

/**
 * `scan --second-failures`: every failed row (or those failed since `sinceEpoch`) that the rules
 * call a second failure. Empty when no rules apply to the source.
 */
export async function listSecondFailures(
  source: BoundSource,
  config: TaskreconConfig,
  nowEpoch: number,
  sinceEpoch: number | undefined,
): Promise<SecondFailureRow[]> {
  const figures = await sweepFigures(source, config, nowEpoch - (sinceEpoch ?? 0));
  return figures?.list ?? [];
}

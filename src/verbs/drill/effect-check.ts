import type { FindingCounts } from '../../core/diff.js';
import { store } from '../../db/port/index.js';
import { prepareRule } from '../diff/index.js';
import { runDiff } from '../diff/index.js';
import type { DrillEnv } from './env.js';
import { drillPrefix } from '../../core/drill-framework.js';

export interface DrillDiff {
  tasksChecked: number;
  findings: FindingCounts;
  samples: string[];
}

/**
 * Reconciles the run's tasks against the business table with taskrecon's own `diff`: the diff
 * rule's table, key and filter, narrowed to this run (tasks of the run's biz type, business rows
 * whose key carries the run prefix), expecting exactly one business row per successful task.
 */
export async function diffDrillRun(env: DrillEnv): Promise<DrillDiff> {
  const where = store.sandbox.drillRunFilter(
    env.effectDb.dialect,
    env.effect.key,
    drillPrefix(env.runId),
    env.effect.where,
  );
  // Orphans are looked for explicitly: a drill row's effect without its task is a finding here.
  const business = {
    table: env.effect.table,
    key: env.effect.key,
    where,
    expect: 'exactly-one' as const,
    orphans: true,
    ...(env.effect.db ? { db: env.effect.db } : {}),
  };
  const prepared = await prepareRule(
    { name: `drill-${env.runId}`, bizType: env.bizType, taskStatus: ['success'], taskKey: 'bizId', business },
    env.source,
    env.effectDb,
    { sourceDsn: env.source.db.display },
  );
  const result = await runDiff([prepared], { chunkTimeMs: 200, samplesPerKind: 5 });
  const rule = result.rules[0];
  if (!rule) throw new Error('diff returned no result for the drill rule');
  return {
    tasksChecked: rule.tasksChecked,
    findings: rule.findings,
    samples: rule.samples.map((s) => `${s.kind} ${JSON.stringify(s)}`),
  };
}

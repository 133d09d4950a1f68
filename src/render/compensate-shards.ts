import chalk from 'chalk';
import type { ShardCompensate, ShardedCompensateResult } from '../verbs/compensate/index.js';
import { renderCompensate } from './compensate.js';
import { renderTable } from './table.js';
import { grouped } from '../core/grouped.js';

/** The plan of a sharded compensate: matches per shard and the total. */
export function renderShardPlan(plan: readonly ShardCompensate[]): string {
  const total = plan.reduce((n, p) => n + p.matched, 0);
  return [
    renderTable(
      [{ title: 'shard', fit: 'whole' }, 'matched'],
      plan.map((p) => [p.shard, grouped(p.matched)]),
    ),
    `${grouped(total)} tasks on ${plan.length} shards`,
  ].join('\n');
}

/** One question for the whole plan (default no). */
export async function confirmShardPlan(
  plan: readonly ShardCompensate[],
  action: string,
  write: (text: string) => void,
): Promise<boolean> {
  const { confirm } = await import('@inquirer/prompts');
  write(renderShardPlan(plan));
  const total = plan.reduce((n, p) => n + p.matched, 0);
  return confirm({
    message: `Apply ${action} to ${total} task(s) on ${plan.length} shards?`,
    default: false,
  });
}

/** A sharded run: compensate's own view with ids as SHARD:ID, then each shard's counts. */
export function renderCompensateShards(result: ShardedCompensateResult): string {
  const view = {
    ...result,
    results: result.results.map((r) => ({ ...r, id: `${r.shard}:${String(r.id)}` })),
  };
  const rows = result.shards.map((s) => [
    s.shard,
    grouped(s.matched),
    grouped(result.dryRun ? s.matched - s.skipped - s.refused : s.applied),
    s.refused ? chalk.red(String(s.refused)) : '0',
  ]);
  const missing = result.missingShards?.length
    ? [chalk.yellow(`left out (cannot be reached): ${result.missingShards.join(', ')}`)]
    : [];
  return [
    renderCompensate(view),
    renderTable(
      [{ title: 'shard', fit: 'whole' }, 'matched', result.dryRun ? 'would change' : 'changed', 'refused'],
      rows,
    ),
    ...missing,
  ].join('\n');
}

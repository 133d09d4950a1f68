import type { DiffRule } from '../../../core/diff.js';
import { usageError } from '../../../errors.js';

/** The flags of `diff` that only a sharded source takes, or that it takes differently. */
export interface ShardDiffFlags {
  'create-missing'?: boolean;
  'into-shard'?: string;
}

/**
 * Checked before a shard is opened. A created task must go to one shard, and taskrecon knows no
 * sharding function, so on a sharded source --create-missing needs --into-shard NAME (one of the
 * source's shards); without a sharded source --into-shard means nothing.
 */
export function checkShardDiffFlags(flags: ShardDiffFlags, shards: readonly string[] | undefined): void {
  const into = flags['into-shard'];
  if (!shards) {
    if (into !== undefined)
      throw usageError(
        '--into-shard is for a sharded source',
        'The source has one table: --create-missing creates the tasks there.',
      );
    return;
  }
  const list = `Shards: ${shards.slice(0, 8).join(', ')}${shards.length > 8 ? ', …' : ''}.`;
  if (into !== undefined && !flags['create-missing'])
    throw usageError('--into-shard goes with --create-missing', 'Only created tasks go to one shard.');
  if (flags['create-missing'] && into === undefined)
    throw usageError(
      '--create-missing on a sharded source needs --into-shard NAME: taskrecon does not know which shard a new task belongs to',
      `Name the shard your application would have written the task to, e.g. --into-shard ${shards[0] ?? 'SHARD'}. ${list}`,
    );
  if (into !== undefined && !shards.includes(into))
    throw usageError(`--into-shard: unknown shard '${into}'`, list);
}

/** A sharded run diffs the rules of its own source: a rule of another source runs on its own. */
export function checkShardRules(rules: readonly DiffRule[], source: string): void {
  const other = rules.find((r) => r.source !== undefined && r.source !== source);
  if (other)
    throw usageError(
      `rule '${other.name}' reads source '${other.source as string}', and source '${source}' is sharded`,
      `Run it on its own: taskrecon diff --source ${other.source as string} --rule ${other.name}; pick the sharded source's rules with --rule.`,
    );
}

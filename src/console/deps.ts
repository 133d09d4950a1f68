import type { Trend } from '../core/trend.js';
import type { BoundSource } from '../db/bind-source.js';
import type { EffectGate } from '../verbs/compensate/index.js';
import type { RuleResult } from '../verbs/diff/index.js';
import type { QueuePages } from './queue-pages.js';
import type { VerdictSource } from './verdict-source.js';

/** Runs one diff rule for the diff page (the command wires it to the configured rules). */
export interface DiffPages {
  names: readonly string[];
  /** Why there is nothing to run (no rules configured), when there is not. */
  problem?: string;
  run(name: string): Promise<RuleResult>;
}

/** One shard of a sharded source: served under `/shards/<name>/` as a console of its own. */
export interface ConsoleShard {
  name: string;
  /** The shard's console: its table as `source`, no queues, no verdict (the merged overview has them). */
  deps: ConsoleDeps;
}

/** The shards of a sharded source the console serves, and those it could not reach (--allow-partial). */
export interface ConsoleShards {
  shards: ConsoleShard[];
  missing: ReadonlyArray<{ name: string; error: string }>;
  /** How many shards the merged overview reads at once. */
  concurrency: number;
  /** The overview's trend charts over every shard, bucket by bucket, as of `nowEpoch`. */
  trends(nowEpoch: number): Promise<Trend[]>;
}

/** What the console serves and acts on. */
export interface ConsoleDeps {
  /** The table (on a sharded source: the first shard, which stands for the source's own tables, such as queue snapshots). */
  source: BoundSource;
  /** On a sharded source: every shard, each a console under its own prefix; the top level merges. */
  shards?: ConsoleShards;
  /** On one shard's console: that shard's name (shown on every page). */
  shardName?: string;
  stuckAfterMs: number;
  /** Who acts, for the audit. */
  operator: string;
  /** This machine's name, for the audit. */
  host: string;
  readOnly: boolean;
  diff?: DiffPages;
  /** A retry's effect check over the configured diff rules; `force` retries past a present effect (audited). */
  effects?: (force: boolean) => EffectGate | undefined;
  /** The brokers' queues, when brokers are configured. */
  queues?: QueuePages;
  /** The overview's verdict, as `report` computes it. */
  verdict?: VerdictSource;
}

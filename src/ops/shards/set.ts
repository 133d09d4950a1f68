import { boundedAll, type ShardSpec } from '../../core/shards.js';
import { TaskreconError } from '../../errors.js';
import type { BoundSource } from '../../db/bind-source.js';
import { schemaDrift, type ShardDrift } from './drift.js';

/** One reachable shard: its spec and its table bound on its own server. */
export interface OpenShard {
  spec: ShardSpec;
  source: BoundSource;
}

/** A shard that could not be opened, and why. */
export interface MissingShard {
  name: string;
  error: string;
}

/** The shards of a sharded source a run works on. */
export interface ShardSet {
  /** The source's name, as in `sources:`. */
  name: string;
  shards: OpenShard[];
  /** Shards that could not be reached (only with --allow-partial; otherwise the run stops). */
  missing: MissingShard[];
  /** Columns that differ between the shards' tables (doctor reports them; every other command stops). */
  drift: ShardDrift[];
  /** How many shards are read or written at once. */
  concurrency: number;
}

export interface ShardSetOptions {
  concurrency: number;
  allowPartial: boolean;
}

/**
 * How many shards are opened at once at least: opening is a connection and one read of the
 * table's columns, so it need not wait for the slower reads `--shard-concurrency` bounds.
 */
export const OPEN_CONCURRENCY = 16;

/** `--shard-concurrency` when the flag is not given. */
export const DEFAULT_SHARD_CONCURRENCY = 4;

/**
 * Opens every shard, `concurrency` (at least OPEN_CONCURRENCY) at a time. A shard that cannot be reached stops the run (exit
 * 3, every such shard named), unless `allowPartial`: then it is listed in `missing` and the rest
 * go on. A table whose profile does not fit stops the run either way: that is not an outage.
 */
export async function openShardSet(
  name: string,
  specs: readonly ShardSpec[],
  open: (spec: ShardSpec) => Promise<BoundSource>,
  options: ShardSetOptions,
): Promise<ShardSet> {
  type Outcome = { spec: ShardSpec; source: BoundSource } | { spec: ShardSpec; error: Error };
  const opening = Math.max(options.concurrency, OPEN_CONCURRENCY);
  const outcomes = await boundedAll(specs, opening, async (spec): Promise<Outcome> => {
    try {
      return { spec, source: await open(spec) };
    } catch (error) {
      return { spec, error: error as Error };
    }
  });
  const shards: OpenShard[] = [];
  const missing: MissingShard[] = [];
  for (const o of outcomes) {
    if ('source' in o) shards.push({ spec: o.spec, source: o.source });
    else if (isSchemaError(o.error)) throw shardError(o.spec.name, o.error);
    else missing.push({ name: o.spec.name, error: o.error.message });
  }
  if (missing.length > 0 && (!options.allowPartial || shards.length === 0)) {
    const names = missing.map((m) => m.name);
    throw new TaskreconError(
      `${missing.length} of ${specs.length} shards of source '${name}' cannot be reached: ${names.join(', ')} (${missing[0]?.error})`,
      {
        code: 'SHARD_UNREACHABLE',
        hint:
          shards.length === 0
            ? 'Check that their servers run and the DSNs in `shards:` are right.'
            : 'Start their servers, or pass --allow-partial to go on without them: the output then names the missing shards and sums the rest.',
      },
    );
  }
  return {
    name,
    shards,
    missing,
    drift: schemaDrift(
      shards.map((s) => ({ name: s.spec.name, columns: s.source.columns, engine: s.source.db.engine })),
    ),
    concurrency: options.concurrency,
  };
}

/** How a merged result names the tables it read: how many shards, on how many databases. */
export function shardsWhere(shards: number, databases: readonly string[]): { table: string; db: string } {
  const count = new Set(databases).size;
  return { table: `${shards} shards`, db: `${count} ${count === 1 ? 'database' : 'databases'}` };
}

/** Runs `fn` on every open shard, the set's concurrency at a time; results in shard order. */
export function eachShard<R>(set: ShardSet, fn: (shard: OpenShard) => Promise<R>): Promise<R[]> {
  return boundedAll(set.shards, set.concurrency, (shard) =>
    fn(shard).catch((error: unknown) => {
      throw shardError(shard.spec.name, error as Error);
    }),
  );
}

/** Whatever is not an outage (a table that does not fit, a refused login) stops the run even with --allow-partial. */
function isSchemaError(error: Error): boolean {
  return error instanceof TaskreconError && error.code !== 'CONNECTION';
}

/** An error of one shard, with the shard named first. */
export function shardError(shard: string, error: Error): Error {
  if (error.message.startsWith(`shard ${shard}:`)) return error;
  if (error instanceof TaskreconError)
    return new TaskreconError(`shard ${shard}: ${error.message}`, {
      code: error.code,
      hint: error.hint,
      exit: error.exit,
      cause: error,
    });
  return new TaskreconError(`shard ${shard}: ${error.message}`, { cause: error });
}

import type { Context } from '../../context.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { EffectGate } from '../../ops/compensation/types.js';
import { effectGate, type EffectSetup } from '../../ops/effect/index.js';

/** Where a retry's effect lookups go for the context's source (or one shard of it, by its DSN): its diff rules and databases. */
export function effectSetup(context: Context, dsn?: string): EffectSetup {
  return {
    rules: context.config.rules,
    sourceDsn: dsn ?? context.dsn(context.source()),
    openExtra: (dsn) => context.openExtra(dsn),
  };
}

/** The effect gate of a retry on the context's source, or on one shard of it by its DSN (undefined when no diff rule covers it). */
export function contextEffectGate(
  context: Context,
  source: BoundSource,
  force: boolean,
  shardDsn?: string,
): EffectGate | undefined {
  return effectGate(source, effectSetup(context, shardDsn), force);
}

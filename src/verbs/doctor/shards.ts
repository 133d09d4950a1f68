import { boundedAll, type ShardSpec } from '../../core/shards.js';
import type { Profile } from '../../db/profiles/types.js';
import type { Db } from '../../db/types.js';
import { driftLines, schemaDrift } from '../../ops/shards/drift.js';
import { shardsWhere } from '../../ops/shards/set.js';
import { TaskreconError } from '../../errors.js';
import { check, type DoctorCheck } from './check.js';
import { runDoctor, type DoctorOptions, type DoctorResult } from './doctor.js';
import { withBrokerChecks } from './queues.js';

/** doctor of a sharded source: every shard's checks (named by shard) and the schema drift between them. */
export type ShardedDoctorResult = DoctorResult & {
  shards: { name: string; status: DoctorResult['status'] | 'unreachable' }[];
};

export interface ShardDoctorOptions extends Omit<DoctorOptions, 'profile' | 'connectMs' | 'sourceDsn'> {
  /** The profile of one shard's table. */
  profileOf: (spec: ShardSpec) => Profile;
  open: (spec: ShardSpec) => Promise<Db>;
  concurrency: number;
  allowPartial: boolean;
}

/**
 * Runs doctor on every shard, `concurrency` at a time, and adds a `shard schemas` check that
 * compares the shards' columns. A shard that cannot be reached stops the run (exit 3, named), or
 * with `allowPartial` is a failed check of its own.
 */
export async function runDoctorShards(
  specs: readonly ShardSpec[],
  options: ShardDoctorOptions,
): Promise<ShardedDoctorResult> {
  const outcomes = await boundedAll(specs, options.concurrency, async (spec) => {
    const started = Date.now();
    let db: Db;
    try {
      db = await options.open(spec);
    } catch (error) {
      if (error instanceof TaskreconError && error.code !== 'CONNECTION') throw error;
      return { spec, error: (error as Error).message };
    }
    const profile = options.profileOf(spec);
    const result = await runDoctor(db, { ...options, profile, connectMs: Date.now() - started });
    return { spec, result, columns: (await db.columns(profile.table)) ?? [], engine: db.engine };
  });
  const down = outcomes.filter((o) => 'error' in o);
  if (down.length > 0 && !options.allowPartial)
    throw new TaskreconError(
      `${down.length} of ${specs.length} shards of source '${options.sourceName}' cannot be reached: ${down.map((o) => o.spec.name).join(', ')}`,
      {
        code: 'SHARD_UNREACHABLE',
        hint: 'Start their servers, or pass --allow-partial to check the rest and list these as failed.',
      },
    );
  const reached = outcomes.flatMap((o) => ('result' in o && o.result ? [{ ...o, result: o.result }] : []));
  const first = reached[0];
  if (!first) throw new TaskreconError(`no shard of source '${options.sourceName}' can be reached`);
  const checks: DoctorCheck[] = [];
  for (const o of reached)
    for (const c of o.result.checks) checks.push({ ...c, name: `${o.spec.name}: ${c.name}` });
  for (const o of down)
    checks.push(
      check(
        `${o.spec.name}: connection`,
        'fail',
        `cannot be reached: ${'error' in o ? o.error : ''}`,
        'Start its server, or fix its DSN in `shards:`.',
      ),
    );
  const drift = schemaDrift(
    reached.map((o) => ({ name: o.spec.name, columns: o.columns, engine: o.engine })),
  );
  const driftCheck = drift.length
    ? check(
        'shard schemas',
        'fail',
        `the shards' tables differ: ${driftLines(drift, first.spec.name).join('; ')}`,
        'Run the missing migration on the shards that differ: every other command refuses to merge shards whose schemas differ.',
      )
    : check('shard schemas', 'ok', `${reached.length} shards have the same columns`, null);
  const result: ShardedDoctorResult = {
    ...first.result,
    source: {
      ...first.result.source,
      ...shardsWhere(
        specs.length,
        specs.map((s) => s.db),
      ),
    },
    status: 'ok',
    summary: { ok: 0, warn: 0, fail: 0 },
    checks: [],
    shards: [
      ...reached.map((o) => ({ name: o.spec.name, status: o.result.status })),
      ...down.map((o) => ({ name: o.spec.name, status: 'unreachable' as const })),
    ],
  };
  return withBrokerChecks(result, [driftCheck, ...checks]);
}

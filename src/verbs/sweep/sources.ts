import { sweepZoneProblem } from '../../core/sweep-config.js';
import type { TaskreconConfig } from '../../config/schema.js';
import { compileRules, type SweepRule } from '../../core/sweep-rules.js';
import { isKnownZone } from '../../core/sweep-window.js';
import { Context, type SourceChoice } from '../../context.js';
import type { ShardSpec } from '../../core/shards.js';
import { profileFor } from '../../db/profiles/registry.js';
import { DEFAULT_SHARD_CONCURRENCY, openShardSet } from '../../ops/shards/set.js';
import { bindSource } from '../../db/bind-source.js';
import { configError, usageError } from '../../errors.js';
import { effectGate } from '../../ops/effect/index.js';
import { sweepable } from '../../ops/sweep/plan.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import type { BrokerChoice } from '../../brokers/index.js';
import type { Db } from '../../db/types.js';
import { brokerNamesOf } from './bullmq.js';
import type { SweepSource } from './index.js';

/** The config's sweep rules, compiled; exit 3 (nothing read or written) when they cannot be used. */
export function sweepRulesOf(config: TaskreconConfig, appTimeZone: string | undefined): SweepRule[] {
  const zone = appTimeZone ?? config.appTimeZone;
  const problem = sweepZoneProblem(config.sweeps, zone, isKnownZone);
  if (problem)
    throw configError(
      `sweeps: ${problem}`,
      'Set appTimeZone in taskrecon.config.yaml to the zone the windows are meant in.',
    );
  if (!config.sweeps?.length) {
    throw usageError(
      'no sweep rules are configured',
      "Add `sweeps:` to taskrecon.config.yaml, e.g. - { name: sms, match: { bizType: 'app\\job\\SendPaidSmsJob' }, action: retry, rate: 20/s }.",
    );
  }
  return compileRules(config.sweeps, zone);
}

/**
 * The sources a sweep covers: the one --source / --profile names, else every configured source
 * that holds failed rows (failed-job tables, task tables with a failed status), else the default
 * source. Each is opened and checked against its live table (exit 3 on a mismatch).
 */
export async function openSweepSources(context: Context, forceEffect = false): Promise<SweepSource[]> {
  const configured = Object.keys(context.config.sources ?? {});
  const names =
    context.input.source || context.input.profile || configured.length === 0 ? [undefined] : configured;
  const out: SweepSource[] = [];
  for (const name of names) {
    const choice = (
      name === undefined ? context : new Context({ ...context.input, source: name }, context.env, context.cwd)
    ).source();
    // A queue table (laravel-jobs) holds no failed rows: not even opened.
    if (name !== undefined && choice.profile.kind === 'queue-jobs') continue;
    const shards = context.shards(choice);
    if (shards) {
      out.push(...(await openShards(context, choice, shards, forceEffect)));
      continue;
    }
    const db = await context.open(choice);
    const source = await bindSource(db, choice.profile, choice.name);
    if (!sweepable(source)) {
      if (name === undefined)
        throw usageError(`source ${source.name} (${source.profile.name}) holds no failed rows to sweep`);
      continue;
    }
    const effects = effectGate(
      source,
      {
        rules: context.config.rules,
        sourceDsn: context.dsn(choice),
        openExtra: (dsn) => context.openExtra(dsn),
      },
      forceEffect,
    );
    out.push({ source, queueConnections: choice.config.queue?.connections, effects });
  }
  if (out.length === 0) throw usageError('no configured source holds failed rows to sweep');
  return out;
}

/**
 * The BullMQ brokers the rules' `match.broker` names (undefined when none does), each configured
 * with `framework: bullmq` (else exit 3 before any connection), and the audit log their retries
 * go to: the configured database (exit 3 without one, unless a dry run).
 */
export function sweepBrokersOf(
  context: Context,
  rules: readonly SweepRule[],
): { choices: BrokerChoice[]; auditDb: (dryRun: boolean) => Promise<Db | undefined> } | undefined {
  const names = brokerNamesOf(rules);
  if (names.length === 0) return undefined;
  const configured = context.config.brokers ?? {};
  const choices = names.map((name): BrokerChoice => {
    const rule = rules.find((r) => r.brokers?.includes(name))?.name ?? '';
    const config = configured[name];
    if (!config)
      throw configError(
        `sweeps: rule '${rule}': match.broker: '${name}' is not a configured broker`,
        `Configured brokers: ${Object.keys(configured).join(', ') || 'none'}. Add it under \`brokers:\` with framework: bullmq.`,
      );
    if (config.kind !== 'redis' || config.framework !== 'bullmq')
      throw configError(
        `sweeps: rule '${rule}': match.broker: broker ${name} is not a BullMQ broker (${config.kind === 'redis' ? `framework ${config.framework}` : config.kind})`,
        'A sweep retries the failed jobs of BullMQ brokers (kind: redis, framework: bullmq); sweep other frameworks through their failed-job tables.',
      );
    return { name, config };
  });
  const auditDb = async (dryRun: boolean): Promise<Db | undefined> => {
    if (!(context.input.db || context.env.TASKRECON_DB || context.config.db)) {
      if (dryRun) return undefined;
      throw usageError(
        'sweeping BullMQ failed jobs needs a database for the audit log, and none is given',
        'Put `db:` in the config (or pass --db, or set TASKRECON_DB); `taskrecon init --audit-only` creates taskrecon_audit there. --dry-run needs none. Nothing was retried.',
      );
    }
    const db = await context.open();
    if (!dryRun) await requireAuditTable(db);
    return db;
  };
  return { choices, auditDb };
}

/**
 * Every shard of a sharded source, each a source of its own to sweep (its rows, its audit log and
 * alert claims in its own database, its own clock). A shard that cannot be reached stops the sweep.
 */
async function openShards(
  context: Context,
  choice: SourceChoice,
  specs: ShardSpec[],
  forceEffect: boolean,
): Promise<SweepSource[]> {
  const set = await openShardSet(
    choice.name,
    specs,
    async (spec) =>
      bindSource(
        await context.open(choice, { dsn: spec.db }),
        profileFor({ ...choice.config, table: spec.table }, `sources.${choice.name}`),
        choice.name,
      ),
    { concurrency: DEFAULT_SHARD_CONCURRENCY, allowPartial: false },
  );
  if (set.drift.length > 0)
    throw configError(
      `the shards of source '${choice.name}' have different schemas`,
      'Migrate every shard to one schema (taskrecon doctor lists the differences), then sweep again.',
    );
  return set.shards
    .filter(({ source }) => sweepable(source))
    .map(({ spec, source }) => ({
      source,
      shard: spec.name,
      queueConnections: choice.config.queue?.connections,
      effects: effectGate(
        source,
        { rules: context.config.rules, sourceDsn: spec.db, openExtra: (dsn) => context.openExtra(dsn) },
        forceEffect,
      ),
    }));
}

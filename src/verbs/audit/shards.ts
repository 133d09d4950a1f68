import type { AuditFilter } from '../../db/port/index.js';
import { store } from '../../db/port/index.js';
import { usageError } from '../../errors.js';
import { eachShard, type OpenShard, type ShardSet } from '../../ops/shards/set.js';
import { resolveTime } from '../../flags.js';

type TimeInput = Parameters<typeof resolveTime>[0];
import { latestAudit, streamAudit, type AuditEntry } from './audit.js';
import { resolveRunId } from './run-prefix.js';

/** An audit entry of a sharded source: the shard whose database holds it and whose table it is about. */
export type ShardAuditEntry = AuditEntry & { shard: string };

/**
 * The audit log of a sharded source: each shard's rows (those about its table, in its database's
 * taskrecon_audit) merged, the newest `limit` of all (0: every entry), listed oldest first as
 * `audit` lists them, each naming its shard. A shard whose database has no audit table has none.
 */
export async function shardAudit(
  set: ShardSet,
  flags: {
    operator?: string;
    action?: string[];
    task?: string[];
    limit: number;
    run?: string;
    since?: TimeInput;
    until?: TimeInput;
  },
): Promise<ShardAuditEntry[]> {
  const options = flags;
  const filter: AuditFilter = { operator: flags.operator, actions: flags.action, taskIds: flags.task };
  // Durations ago are taken on the first shard's clock, as a one-table audit takes them on its database's.
  const now = await (set.shards[0] as OpenShard).source.db.nowEpoch();
  const times = { sinceEpoch: resolveTime(options.since, now), untilEpoch: resolveTime(options.until, now) };
  const runId = options.run === undefined ? undefined : await resolveShardRun(set, options.run);
  const parts = await eachShard(set, async ({ spec, source }) => {
    if (!(await store.audit.tableExists(source.db))) return [];
    const query = { ...filter, ...times, runId, taskTable: spec.table };
    const entries: AuditEntry[] = [];
    if (options.limit === 0) for await (const e of streamAudit(source.db, query)) entries.push(e);
    else entries.push(...(await latestAudit(source.db, { ...query, limit: options.limit })));
    return entries.map((e) => ({ ...e, shard: spec.name }));
  });
  const newestFirst = parts
    .flat()
    .sort((a, b) => b.at.localeCompare(a.at) || a.shard.localeCompare(b.shard) || b.id - a.id);
  return (options.limit > 0 ? newestFirst.slice(0, options.limit) : newestFirst).reverse();
}

/** `--run` on a sharded source: a run id, or the start of one, as any shard's audit log knows it. */
async function resolveShardRun(set: ShardSet, value: string): Promise<string> {
  const found = await eachShard(set, async ({ source }) =>
    resolveRunId(source.db, value).then(
      (id) => ({ id }),
      (error: Error) => ({ error }),
    ),
  );
  const ids = [...new Set(found.flatMap((f) => ('id' in f ? [f.id] : [])))];
  if (ids.length === 1) return ids[0] as string;
  if (ids.length > 1)
    throw usageError(
      `--run: '${value}' is the start of ${ids.length} run ids (${ids.slice(0, 5).join(', ')})`,
      'Give more characters of the run id.',
    );
  throw (found.find((f) => 'error' in f) as { error: Error }).error;
}

import { checkServers, perDatabase, type ShardLayout } from './shard-seed.js';
import { quoteId, timeSql, type ShardServer } from './shard-sql.js';

export const STATUSES = ['pending', 'processing', 'success', 'failed', 'compensated'] as const;
export type StatusName = (typeof STATUSES)[number];

export interface ShardTruth {
  name: string;
  total: number;
  byStatus: Record<StatusName, number>;
  /** Pending with next_retry_time ≤ the shard's now. */
  due: number;
  /** Processing with updated_at ≤ the shard's now − stuckAfterSeconds. */
  stuck: number;
  /** Epoch seconds of the oldest due next_retry_time; null when none is due. */
  oldestDueEpoch: number | null;
  /** The shard server's clock when it was counted, epoch seconds. */
  nowEpoch: number;
  /** Rows per biz type. */
  byBizType: Record<string, number>;
  /** Success rows per latency (updated_at − created_at, whole seconds): a mergeable histogram. */
  successLatency: Record<number, number>;
}

export interface Truth extends Omit<ShardTruth, 'name' | 'nowEpoch'> {
  shards: ShardTruth[];
  /** The largest (shard now − oldest due) over the shards; null when nothing is due. */
  oldestDueSeconds: number | null;
  /** Nearest-rank p95 of every success latency over all shards; null without successes. */
  latencyP95Seconds: number | null;
}

const add = <K extends string | number>(into: Record<K, number>, from: Record<K, number>) => {
  for (const [key, n] of Object.entries(from) as Array<[K, number]>) into[key] = (into[key] ?? 0) + n;
};

/** Nearest rank: the smallest latency with at least ⌈p·N⌉ successes at or below it. */
export function nearestRank(histogram: Record<number, number>, p: number): number | null {
  const entries = Object.entries(histogram)
    .map(([lat, n]) => [Number(lat), n] as const)
    .sort((a, b) => a[0] - b[0]);
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  if (total === 0) return null;
  const rank = Math.ceil(p * total);
  let seen = 0;
  for (const [lat, n] of entries) if ((seen += n) >= rank) return lat;
  return null;
}

/**
 * What scan and report must say, from plain SQL on every shard (each counted by its own server's
 * clock), and the exact sums over all shards.
 */
export async function groundTruth(
  servers: ShardServer[],
  layout: ShardLayout,
  options: { stuckAfterSeconds?: number } = {},
): Promise<Truth> {
  checkServers(servers, layout);
  const stuckAfter = Math.trunc(options.stuckAfterSeconds ?? 600);
  const shards = await perDatabase(servers, layout, async (db, list) => {
    const out: ShardTruth[] = [];
    const { now, minus, epoch, seconds } = timeSql(db.engine);
    const count = (condition: string) => `COALESCE(SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END), 0)`;
    const due = `status = 0 AND next_retry_time <= ${now}`;
    for (const shard of list) {
      const t = quoteId(db.engine, shard.table);
      const [head] = (await db.query(
        `SELECT ${epoch(now)} AS now, COUNT(*) AS total, ${count(due)} AS due,
           ${count(`status = 1 AND updated_at <= ${minus(now, String(stuckAfter))}`)} AS stuck,
           MIN(CASE WHEN ${due} THEN ${epoch('next_retry_time')} END) AS oldest
         FROM ${t}`,
      )) as [Record<string, unknown>];
      const byStatus = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<StatusName, number>;
      const statusRows = await db.query<{ status: number; n: unknown }>(
        `SELECT status, COUNT(*) AS n FROM ${t} GROUP BY status`,
      );
      for (const r of statusRows) {
        const name = STATUSES[Number(r.status)];
        if (!name) throw new Error(`${shard.name}: status ${r.status} is none of 0…4`);
        byStatus[name] = Number(r.n);
      }
      const bizRows = await db.query<{ biz_type: string; n: unknown }>(
        `SELECT biz_type, COUNT(*) AS n FROM ${t} GROUP BY biz_type`,
      );
      const latRows = await db.query<{ lat: unknown; n: unknown }>(
        `SELECT ${seconds('created_at', 'updated_at')} AS lat, COUNT(*) AS n FROM ${t} WHERE status = 2 GROUP BY 1`,
      );
      out.push({
        name: shard.name,
        total: Number(head.total),
        byStatus,
        due: Number(head.due),
        stuck: Number(head.stuck),
        oldestDueEpoch: head.oldest === null ? null : Math.trunc(Number(head.oldest)),
        nowEpoch: Math.trunc(Number(head.now)),
        byBizType: Object.fromEntries(bizRows.map((r) => [r.biz_type, Number(r.n)])),
        successLatency: Object.fromEntries(latRows.map((r) => [Number(r.lat), Number(r.n)])),
      });
    }
    return out;
  });
  shards.sort(
    (a, b) =>
      layout.shards.findIndex((s) => s.name === a.name) - layout.shards.findIndex((s) => s.name === b.name),
  );
  const truth: Truth = {
    shards,
    total: 0,
    byStatus: Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<StatusName, number>,
    due: 0,
    stuck: 0,
    oldestDueEpoch: null,
    oldestDueSeconds: null,
    byBizType: {},
    successLatency: {},
    latencyP95Seconds: null,
  };
  for (const s of shards) {
    truth.total += s.total;
    truth.due += s.due;
    truth.stuck += s.stuck;
    add(truth.byStatus, s.byStatus);
    add(truth.byBizType, s.byBizType);
    add(truth.successLatency, s.successLatency);
    if (s.oldestDueEpoch !== null) {
      truth.oldestDueEpoch = Math.min(truth.oldestDueEpoch ?? Infinity, s.oldestDueEpoch);
      truth.oldestDueSeconds = Math.max(truth.oldestDueSeconds ?? 0, s.nowEpoch - s.oldestDueEpoch);
    }
  }
  truth.latencyP95Seconds = nearestRank(truth.successLatency, 0.95);
  return truth;
}

/** The latest failure of one biz type on one shard: the failed row with the highest id. */
export interface LatestFailure {
  shard: string;
  bizType: string;
  id: number;
  failedAtEpoch: number;
}

/** Every shard's latest failure of each biz type with failed rows, read with SQL. */
export async function latestFailures(servers: ShardServer[], layout: ShardLayout): Promise<LatestFailure[]> {
  checkServers(servers, layout);
  return perDatabase(servers, layout, async (db, list) => {
    const out: LatestFailure[] = [];
    const { epoch } = timeSql(db.engine);
    for (const shard of list) {
      const t = quoteId(db.engine, shard.table);
      const rows = await db.query<{ biz_type: string; id: unknown; at: unknown }>(
        `SELECT f.biz_type, f.id, ${epoch('f.updated_at')} AS at FROM ${t} f
           JOIN (SELECT biz_type, MAX(id) AS id FROM ${t} WHERE status = 3 GROUP BY biz_type) m ON m.id = f.id`,
      );
      for (const r of rows)
        out.push({
          shard: shard.name,
          bizType: r.biz_type,
          id: Number(r.id),
          failedAtEpoch: Math.trunc(Number(r.at)),
        });
    }
    return out;
  });
}

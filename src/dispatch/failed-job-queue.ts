// Over 300 lines: one requeuer for both frameworks and every driver (database, another database, Redis with its write-ahead marker).
import type { RedisFramework } from '../config/brokers.js';
import type { SourceConfig } from '../config/schema.js';
import type { TaskId } from '../core/task.js';
import { connectBeside } from '../db/connect.js';
import { store, type QueueJobInsert } from '../db/port/index.js';
import type { ColumnInfo, Db, Queryable, Row } from '../db/types.js';
import { TaskreconError, usageError } from '../errors.js';
import { PhpJsonError } from './php-json.js';
import type { RedisLists, RedisListOp } from './redis-list.js';

/**
 * Re-pushing failed jobs (Laravel's and think-queue's `queue:retry`): each failed row goes back onto
 * the queue of its `connection` — a database `jobs` table or a Redis list — with its attempts reset,
 * in the framework's exact format; the caller deletes the failed row in the same transaction.
 * What differs per framework is a QueueFlavor (laravel-queue.ts, thinkphp-queue.ts).
 */
export interface QueueFlavor {
  framework: 'laravel' | 'thinkphp';
  /** The Redis key layouts a connection may name (`layout:`); the first is the default. */
  redisLayouts: readonly RedisFramework[];
  /** The Redis writes of `pushRaw` for one payload, under the target's prefix and layout. */
  redisOps(target: RedisTarget, queue: string, payload: string): RedisListOp[];
  /** The list key `pushRaw` writes to (for the audit), with the prefix. */
  redisKey(target: RedisTarget, queue: string): string;
  /** The columns `pushRaw` writes in a database queue table, found in the live table, or why not. */
  jobColumns(columns: ColumnInfo[]): QueueJobInsert['columns'] | string;
  /** The payload `queue:retry` pushes for a stored one, or throws PhpJsonError / returns a refusal. */
  retryPayload(stored: string, nowEpoch: number): { payload: string } | { refused: string };
}

export type QueueConnectionConfig = NonNullable<SourceConfig['queue']>['connections'][string];

/** Where one connection's jobs go. */
type Target =
  { driver: 'database'; connection: string; table: string; defaultQueue: string; dsn?: string } | RedisTarget;

export interface RedisTarget {
  driver: 'redis';
  connection: string;
  url: string;
  prefix: string;
  layout: RedisFramework;
  defaultQueue: string;
}

/** What a retried row became, for the audit's after-image. */
export type Requeued =
  | {
      driver: 'database';
      connection: string;
      table: string;
      queue: string;
      jobId: number | string;
      payload: string;
    }
  | { driver: 'redis'; connection: string; key: string; queue: string; payload: string };

export interface RequeuePlan {
  id: TaskId;
  target: Target;
  queue: string;
  payload: string;
}

/**
 * The marker of a target's write-ahead intent: the Redis key its MULTI lists the pushed ids in, or,
 * for a queue table in another database, the run and intent of the row written with the jobs.
 */
export interface PushMarkerRef {
  key: string;
  runId: string;
  intentId: number;
}

/** A group of planned pushes that one write-ahead intent covers (a Redis target, or another database's table). */
export interface JournaledGroup {
  target: string;
  connection: string;
  driver: 'redis' | 'database';
  plans: RequeuePlan[];
}

/** How a push whose marker a later run wrote first (it settled the intent as not landed) fails. */
export function fencedPush(): TaskreconError {
  return new TaskreconError(
    'another run settled this batch as not pushed before it was pushed; nothing was pushed',
    {
      code: 'GUARD',
      hint: 'Another taskrecon run settled this run’s open batch; run the command again: it retries what is left.',
    },
  );
}

/** The framework's default: a connection named `database` pushes to the `jobs` table of the same database. */
const DEFAULT_DATABASE_TARGET: QueueConnectionConfig = { driver: 'database', table: 'jobs' };

export class FailedJobRequeuer {
  private readonly redis = new Map<string, RedisLists>();
  private readonly otherDbs = new Map<string, Db>();
  private readonly columns = new Map<string, QueueJobInsert['columns']>();
  private readonly checked = new Map<string, Promise<string | undefined>>();

  /** Throws a usage error (exit 3, nothing written) for a `layout:` this framework or driver cannot take. */
  constructor(
    private readonly flavor: QueueFlavor,
    private readonly sourceName: string,
    private readonly db: Db,
    private readonly connections: Record<string, QueueConnectionConfig>,
  ) {
    for (const [name, config] of Object.entries(connections)) {
      if (config.layout === undefined) continue;
      const where = `sources.${sourceName}.queue.connections.${name}.layout`;
      if (config.driver !== 'redis')
        throw usageError(`${where}: a layout is for redis connections, this one is ${config.driver}`);
      if (!flavor.redisLayouts.includes(config.layout))
        throw usageError(
          `${where}: '${config.layout}' is not a ${flavor.framework} key layout`,
          `Allowed: ${flavor.redisLayouts.join(', ')}.`,
        );
    }
  }

  private target(connection: string): Target | string {
    const config =
      this.connections[connection] ?? (connection === 'database' ? DEFAULT_DATABASE_TARGET : undefined);
    const where = `sources.${this.sourceName}.queue.connections.${connection || '(empty)'}`;
    if (!config) {
      return `no queue target for connection '${connection}': add ${where} {driver: database, table: jobs} or {driver: redis, url: redis://…, prefix: …}`;
    }
    const defaultQueue = config.queue ?? 'default';
    if (config.driver === 'redis') {
      if (!config.url) return `${where} is a redis connection without url`;
      const layout = config.layout ?? (this.flavor.redisLayouts[0] as RedisFramework);
      return {
        driver: 'redis',
        connection,
        url: config.url,
        prefix: config.prefix ?? '',
        layout,
        defaultQueue,
      };
    }
    return { driver: 'database', connection, table: config.table ?? 'jobs', defaultQueue, dsn: config.db };
  }

  /** What `queue:retry` would push for one locked failed row, or why it cannot. Pure apart from config. */
  plan(row: Row, nowEpoch: number): RequeuePlan | { refused: string } {
    const connection = text(row.connection ?? row.connector) ?? '';
    const target = this.target(connection);
    if (typeof target === 'string') return { refused: target };
    const stored = text(row.payload);
    if (stored === null) return { refused: 'the failed row has no payload' };
    let retried: { payload: string } | { refused: string };
    try {
      retried = this.flavor.retryPayload(stored, nowEpoch);
    } catch (error) {
      if (error instanceof PhpJsonError)
        return { refused: `the payload is not JSON PHP can decode (${error.message})` };
      throw error;
    }
    if ('refused' in retried) return retried;
    return {
      id: row.id as TaskId,
      target,
      queue: text(row.queue) || target.defaultQueue,
      payload: retried.payload,
    };
  }

  /**
   * The planned pushes that cannot commit with the failed rows' delete, one group per target (what
   * one write-ahead intent covers): Redis targets, and queue tables in another database (`db:`).
   * `target` is the group's key in `push`'s markers.
   */
  journaledGroups(plans: readonly RequeuePlan[]): JournaledGroup[] {
    const groups = new Map<string, JournaledGroup>();
    for (const plan of plans) {
      const { target } = plan;
      if (target.driver === 'database' && !target.dsn) continue;
      const key = JSON.stringify(target);
      const group = groups.get(key) ?? {
        target: key,
        connection: target.connection,
        driver: target.driver,
        plans: [],
      };
      group.plans.push(plan);
      groups.set(key, group);
    }
    return [...groups.values()];
  }

  /** The list key a plan's job goes to (for the audit). */
  redisKeyOf(plan: RequeuePlan): string | undefined {
    return plan.target.driver === 'redis' ? this.flavor.redisKey(plan.target, plan.queue) : undefined;
  }

  /**
   * The hash tag of the marker a Redis group's push writes with its jobs: on a Redis Cluster, the
   * tag that puts it in the slot of the group's keys (a group whose keys span slots is refused,
   * exit 3, nothing written); undefined on one server and for a queue table.
   */
  async markerTag(group: JournaledGroup): Promise<string | undefined> {
    const target = group.plans[0]?.target;
    if (target?.driver !== 'redis') return undefined;
    const ops = group.plans.flatMap((p) => this.flavor.redisOps(target, p.queue, p.payload));
    return (await this.redisClient(target.url)).markerTag(ops);
  }

  /**
   * The other database of a `database` connection with its own `db:`, for its push markers;
   * undefined when the connection's queue table is in the source's own database, or is not a table.
   */
  async databaseOf(connection: string): Promise<Db | undefined> {
    const target = this.target(connection);
    return typeof target !== 'string' && target.driver === 'database' && target.dsn
      ? this.otherDb(target.dsn)
      : undefined;
  }

  /** Refuses (exit 3, nothing written) a queue table's database without taskrecon's push markers. */
  async requireMarkers(connection: string): Promise<void> {
    const db = await this.databaseOf(connection);
    if (db && !(await store.intents.markerTableExists(db)))
      throw new TaskreconError(
        `connection ${connection}: the queue table's database ${db.display} has no taskrecon_push_marker table, which a re-push into another database writes with its jobs`,
        {
          code: 'USAGE',
          hint: `Create it with \`taskrecon init --audit-only --db <that database's DSN>\` (or --print for a DBA); nothing was pushed and no row was changed.`,
        },
      );
  }

  /** The Redis client of a connection, for looking at a write-ahead intent's marker; undefined when it is not Redis. */
  async redisOf(connection: string): Promise<RedisLists | undefined> {
    const target = this.target(connection);
    return typeof target !== 'string' && target.driver === 'redis' ? this.redisClient(target.url) : undefined;
  }

  /**
   * Pushes the planned jobs. Database targets in the source's database are written on `tx` (so the
   * insert and the caller's delete commit together); a target in another database commits its own
   * transaction first, with its write-ahead intent's marker row; Redis pushes go in one MULTI/EXEC
   * per target, last, with the marker of the target's intent. `markers` are by `journaledGroups`'
   * key. Any failure throws so the caller rolls back.
   */
  async push(
    tx: Queryable,
    plans: readonly RequeuePlan[],
    markers: ReadonlyMap<string, PushMarkerRef> = new Map(),
  ): Promise<Map<TaskId, Requeued>> {
    const out = new Map<TaskId, Requeued>();
    const byTarget = new Map<string, RequeuePlan[]>();
    for (const plan of plans) {
      const key = JSON.stringify(plan.target);
      byTarget.set(key, [...(byTarget.get(key) ?? []), plan]);
    }
    const redisBatches: Array<[RedisLists, RedisListOp[], { key: string; ids: string[] } | undefined]> = [];
    for (const [targetKey, group] of byTarget) {
      const target = (group[0] as RequeuePlan).target;
      if (target.driver === 'database') {
        const db = target.dsn ? await this.otherDb(target.dsn) : this.db;
        const columns = await this.jobColumns(db, target.table);
        const insertAll = async (q: Queryable) => {
          for (const plan of group) {
            const jobId = await store.tasks.insertQueueJob(q, db.dialect, target.table, {
              columns,
              queue: plan.queue,
              payload: plan.payload,
            });
            out.set(plan.id, {
              driver: 'database',
              connection: target.connection,
              table: target.table,
              queue: plan.queue,
              jobId,
              payload: plan.payload,
            });
          }
        };
        const marker = markers.get(targetKey);
        if (db === this.db) await insertAll(tx);
        else
          await db.transaction(async (q) => {
            // The marker first: a later run that fenced the intent holds the key, and nothing is inserted.
            const ids = group.map((p) => String(p.id));
            if (
              marker &&
              !(await store.intents.insertMarker(q, db.dialect, marker.runId, marker.intentId, 'landed', ids))
            )
              throw fencedPush();
            await insertAll(q);
          });
      } else {
        const client = await this.redisClient(target.url);
        const ops = group.flatMap((plan) => {
          out.set(plan.id, {
            driver: 'redis',
            connection: target.connection,
            key: this.flavor.redisKey(target, plan.queue),
            queue: plan.queue,
            payload: plan.payload,
          });
          return this.flavor.redisOps(target, plan.queue, plan.payload);
        });
        const marker = markers.get(targetKey);
        redisBatches.push([
          client,
          ops,
          marker ? { key: marker.key, ids: group.map((p) => String(p.id)) } : undefined,
        ]);
      }
    }
    // Redis last: it cannot be rolled back, so it goes only when every database write has succeeded.
    for (const [client, ops, marker] of redisBatches) await client.pushAll(ops, marker);
    return out;
  }

  /**
   * Why a push to `target` would fail, or undefined when it would not (for dry runs): the database
   * queue table exists with the framework's columns; the Redis server answers PING. Checked once
   * per target; writes nothing.
   */
  wouldFail(target: Target): Promise<string | undefined> {
    const key = JSON.stringify(target);
    let check = this.checked.get(key);
    if (!check) {
      check = this.check(target).then((why) => why && `connection ${target.connection}: ${why}`);
      this.checked.set(key, check);
    }
    return check;
  }

  private async check(target: Target): Promise<string | undefined> {
    if (target.driver === 'redis') return (await this.redisClient(target.url)).whyUnreachable();
    try {
      await this.jobColumns(target.dsn ? await this.otherDb(target.dsn) : this.db, target.table);
      if (target.dsn) await this.requireMarkers(target.connection);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }

  private async redisClient(url: string): Promise<RedisLists> {
    let client = this.redis.get(url);
    if (!client) {
      // Loaded on first use: runs without a Redis target never load the client.
      const { RedisLists } = await import('./redis-list.js');
      client = new RedisLists(url);
      this.redis.set(url, client);
    }
    return client;
  }

  private async otherDb(dsn: string): Promise<Db> {
    let db = this.otherDbs.get(dsn);
    if (!db) {
      // The source's zone and statement time limit hold for the queue's database too.
      db = await connectBeside(this.db, dsn);
      this.otherDbs.set(dsn, db);
    }
    return db;
  }

  private async jobColumns(db: Db, table: string): Promise<QueueJobInsert['columns']> {
    const key = `${db.display}/${table}`;
    const known = this.columns.get(key);
    if (known) return known;
    const live = await db.columns(table);
    if (!live) {
      throw new TaskreconError(`the queue table '${table}' does not exist in ${db.display}`, {
        code: 'SCHEMA',
        hint: `Create it with the framework's migration, or name the right one under sources.${this.sourceName}.queue.connections.<name>.table.`,
      });
    }
    const columns = this.flavor.jobColumns(live);
    if (typeof columns === 'string')
      throw new TaskreconError(`the queue table '${table}' ${columns}`, { code: 'SCHEMA' });
    this.columns.set(key, columns);
    return columns;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.redis.values()].map((r) => r.close()));
    await Promise.allSettled([...this.otherDbs.values()].map((d) => d.close()));
  }
}

function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

/** Finds the first of `candidates` among the live columns (case-insensitive), by its real name. */
export function pickColumn(columns: ColumnInfo[], candidates: readonly string[]): string | undefined {
  for (const candidate of candidates) {
    const found = columns.find((c) => c.name.toLowerCase() === candidate);
    if (found) return found.name;
  }
  return undefined;
}

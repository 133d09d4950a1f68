import { markerKey } from '../../brokers/redis/intents.js';
import { ACTION_RULES } from '../../core/compensate-plan.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store, type AuditInsert, type IntentRecord } from '../../db/port/index.js';
import type { Queryable, Row } from '../../db/types.js';
import type { FailedJobRequeuer, PushMarkerRef, RequeuePlan } from '../../dispatch/failed-job-queue.js';
import { TaskreconError } from '../../errors.js';
import {
  openIntent,
  requireIntentTable,
  settleIntentWithAudit,
  settleOpenIntents,
  type IntentLook,
  type SettleSummary,
} from '../intents/index.js';
import { rowEventId, rowId, rowJson, rowStatus } from '../rows.js';
import type { CompensateRequest } from './types.js';

/**
 * The write-ahead intents of failed jobs re-pushed onto Redis (compensate, sweep and the console
 * retry through the same batch). A Redis push cannot join the batch's transaction, which deletes the
 * failed rows and audits them: so before the batch, one intent per Redis target is committed naming
 * the rows; the push leaves a marker listing what it pushed (in its own MULTI); the batch settles
 * the intents in its transaction. A run killed between the push and the commit leaves the rows,
 * their jobs in Redis and the intent open: the next run looks at the marker and deletes and audits
 * the rows whose job was pushed, instead of pushing them again.
 */

export const REPUSH_KIND = 'failed-job-retry';

/** What an intent of a re-push keeps beside its row ids: where each job went. */
interface RepushDetail {
  connection: string;
  /** Absent on a Redis target (the intents written before queue tables in other databases had any). */
  driver?: 'database';
  /** The queue table, for a target in another database. */
  table?: string;
  pushes: Array<{ id: string; queue: string; key: string }>;
  /**
   * The hash tag of the marker key on a Redis Cluster (it puts the marker in the slot of the
   * pushed keys, so one MULTI writes both); absent when the marker is untagged (one server).
   */
  markerTag?: string;
}

/** The Redis key of an intent's marker, as its push wrote it and as the run settling it reads it. */
function repushMarker(runId: string, intentId: number, detail: Pick<RepushDetail, 'markerTag'>): string {
  return markerKey(runId, intentId, detail.markerTag);
}

/** One intent of a batch: its marker, its target connection and the ids it covers. */
interface OpenedIntent {
  id: number;
  marker: PushMarkerRef;
  connection: string;
  driver: 'redis' | 'database';
  ids: Set<string>;
}

/** The intents one batch opened: markers by the requeuer's target key, and which ids each covers. */
export interface OpenedRepush {
  markers: Map<string, PushMarkerRef>;
  intents: OpenedIntent[];
}

export class RepushJournal {
  /** The Redis connections named after this run so far. */
  private readonly named = new Set<string>();

  constructor(
    private readonly source: BoundSource,
    private readonly requeuer: FailedJobRequeuer,
    private readonly request: CompensateRequest,
  ) {}

  private get action(): string {
    return this.request.audit?.action ?? this.request.action;
  }

  /**
   * Commits one intent per target of these planned pushes that cannot commit with the batch (a
   * Redis target, a queue table in another database), before anything is pushed.
   */
  async open(plans: readonly RequeuePlan[]): Promise<OpenedRepush> {
    const opened: OpenedRepush = { markers: new Map(), intents: [] };
    const groups = this.requeuer.journaledGroups(plans);
    if (groups.length === 0) return opened;
    const { db } = this.source;
    await requireIntentTable(db);
    for (const group of groups) {
      // A Redis connection is named before its intent exists: other runs leave this run's open
      // re-pushes to it. Another database must hold the markers the push writes with its jobs.
      // On a Redis Cluster the marker is tagged into the slot of the keys it is pushed with.
      let markerTag: string | undefined;
      if (group.driver === 'redis') {
        await this.nameRunOn(group.connection);
        markerTag = await this.requeuer.markerTag(group);
      } else await this.requeuer.requireMarkers(group.connection);
      const first = group.plans[0]?.target;
      const detail: RepushDetail = {
        connection: group.connection,
        ...(first?.driver === 'database' ? { driver: 'database' as const, table: first.table } : {}),
        pushes: group.plans.map((p) => ({
          id: String(p.id),
          queue: p.queue,
          key: this.requeuer.redisKeyOf(p) ?? '',
        })),
        ...(markerTag === undefined ? {} : { markerTag }),
      };
      const where = detail.table ?? [...new Set(detail.pushes.map((p) => p.key))].join(',');
      const intent = await openIntent(db, {
        kind: REPUSH_KIND,
        source: this.source.name,
        from: this.source.profile.table,
        to: `${group.connection}:${where}`.slice(0, 255),
        jobs: detail.pushes.map((p) => p.id),
        detail,
        meta: {
          runId: this.request.runId,
          operator: this.request.operator,
          host: this.request.host,
          reason: this.request.reason,
          action: this.action,
        },
      });
      const marker = {
        key: repushMarker(this.request.runId, intent.id, detail),
        runId: this.request.runId,
        intentId: intent.id,
      };
      opened.markers.set(group.target, marker);
      opened.intents.push({
        id: intent.id,
        marker,
        connection: group.connection,
        driver: group.driver,
        ids: new Set(detail.pushes.map((p) => p.id)),
      });
    }
    return opened;
  }

  private async nameRunOn(connection: string): Promise<void> {
    if (this.named.has(connection)) return;
    await (await this.requeuer.redisOf(connection))?.nameRun(this.request.runId);
    this.named.add(connection);
  }

  /** Refuses a journaled push no intent of the batch names (the batch rolls back, nothing is pushed). */
  checkCovered(opened: OpenedRepush, plans: readonly RequeuePlan[]): void {
    const covered = new Set(opened.intents.flatMap((i) => [...i.ids]));
    const journaled = new Set(this.requeuer.journaledGroups(plans).flatMap((g) => g.plans));
    const stray = plans.filter((p) => journaled.has(p) && !covered.has(String(p.id)));
    if (stray.length)
      throw new TaskreconError(
        `failed job ${String(stray[0]?.id)} became retryable after its batch's intent was written; the batch was rolled back`,
        { code: 'GUARD', hint: 'Run the command again: it retries what is left.' },
      );
  }

  /**
   * Settles the batch's intents on its transaction (its audit rows are written there too):
   * `not-landed` when the batch pushed nothing (another run took its rows first).
   */
  async settle(
    tx: Queryable,
    opened: OpenedRepush,
    state: 'landed' | 'not-landed' = 'landed',
  ): Promise<void> {
    for (const intent of opened.intents) {
      if (!(await settleIntentWithAudit(tx, this.source.db, intent.id, state, this.request.runId, [])))
        throw new TaskreconError(
          `another run settled this batch's intent ${intent.id} meanwhile; rolled back`,
          {
            code: 'GUARD',
            hint: 'Its connection to Redis was seen closed meanwhile (a reconnect, a restart); run the command again: it retries what is left.',
          },
        );
    }
  }

  /** Removes the markers of a committed batch. */
  async forget(opened: OpenedRepush): Promise<void> {
    for (const intent of opened.intents)
      await this.forgetMarker(intent.connection, intent.driver, intent.marker);
  }

  private async forgetMarker(connection: string, driver: 'redis' | 'database', marker: PushMarkerRef) {
    if (driver === 'redis') {
      await (await this.requeuer.redisOf(connection))?.forgetMarker(marker.key).catch(() => undefined);
      return;
    }
    const db = await this.requeuer.databaseOf(connection);
    if (db)
      await store.intents.deleteMarker(db, db.dialect, marker.runId, marker.intentId).catch(() => undefined);
  }

  /**
   * Settles the re-push intents killed runs left open on this source: the rows whose job the marker
   * says was pushed are deleted and audited under the killed run (not pushed again); an intent
   * whose push never happened is fenced off and closed, its rows left for this run to retry. The
   * intents of a run still connected to the target Redis (its named connection) are left to it.
   */
  async settleOpen(): Promise<SettleSummary> {
    const look: IntentLook = (intent) => this.look(intent);
    return settleOpenIntents(this.source.db, { [REPUSH_KIND]: look }, this.request.runId, {
      source: this.source.name,
    });
  }

  private async look(intent: IntentRecord) {
    const { source } = this;
    const detail = intent.detail as RepushDetail;
    const driver = detail.driver ?? 'redis';
    const key = repushMarker(intent.runId, intent.id, detail);
    const marker = { key, runId: intent.runId, intentId: intent.id };
    const pushed =
      driver === 'database' ? await this.lookTable(intent, detail) : await this.lookRedis(intent, detail);
    if (pushed === undefined) return undefined;
    if (pushed === null) return { state: 'not-landed' as const, audit: [] };
    const rule = ACTION_RULES.retry;
    const rows = await store.tasks.selectWholeRows(source.db, source, pushed as TaskId[], false);
    const byId = new Map(detail.pushes.map((p) => [p.id, p]));
    const audit: AuditInsert[] = rows.map((row: Row) => {
      const id = String(rowId(source.sql, row));
      const push = byId.get(id);
      return {
        operator: intent.operator,
        host: intent.host,
        action: intent.action,
        source: source.name,
        taskTable: source.profile.table,
        taskId: id,
        eventId: this.request.audit ? this.request.audit.eventId(row) : rowEventId(source.sql, row),
        fromStatus: rowStatus(source.sql, row),
        toStatus: rule.to,
        beforeJson: rowJson(row),
        afterJson: JSON.stringify({
          requeued:
            driver === 'database'
              ? { driver, connection: detail.connection, table: detail.table, queue: push?.queue }
              : { driver, connection: detail.connection, key: push?.key, queue: push?.queue },
          settledBy: this.request.runId,
        }),
        reason: intent.reason,
        runId: intent.runId,
      };
    });
    const ids = rows.map((row) => rowId(source.sql, row));
    return {
      state: 'landed' as const,
      audit,
      apply: async (tx: Queryable) => {
        const deleted = await store.tasks.deleteGuarded(tx, source, ids, rule.from);
        if (deleted !== ids.length)
          throw new TaskreconError(
            `settling run ${intent.runId}'s re-push: ${deleted} of ${ids.length} failed rows deleted; rolled back`,
            { code: 'GUARD', hint: 'Another writer changed them; run the command again.' },
          );
      },
      after: () => this.forgetMarker(detail.connection, driver, marker),
    };
  }

  /** What a Redis push left: the ids it pushed, null (fenced: it never will), undefined (its run is alive). */
  private async lookRedis(intent: IntentRecord, detail: RepushDetail): Promise<string[] | null | undefined> {
    const redis = await this.requeuer.redisOf(detail.connection);
    if (!redis) throw gone(intent, detail, 'Redis');
    // A run still connected settles its own batch.
    if ((await redis.runAlive(intent.runId)) === true) return undefined;
    return redis.lookMarker(repushMarker(intent.runId, intent.id, detail));
  }

  /**
   * What a push into another database's queue table left: the ids its marker lists when the jobs
   * committed there; otherwise null, and a `fenced` marker now holds the key, so it never will.
   */
  private async lookTable(intent: IntentRecord, detail: RepushDetail): Promise<string[] | null> {
    const db = await this.requeuer.databaseOf(detail.connection);
    if (!db) throw gone(intent, detail, 'database queue table in another database');
    await this.requeuer.requireMarkers(detail.connection);
    const { intents } = store;
    // Waits for a push that is committing its marker, then keeps every later one out.
    await intents.insertMarker(db, db.dialect, intent.runId, intent.id, 'fenced', []);
    const marker = await intents.selectMarker(db, db.dialect, intent.runId, intent.id);
    return marker?.state === 'landed' ? marker.jobs : null;
  }
}

function gone(intent: IntentRecord, detail: RepushDetail, what: string): TaskreconError {
  return new TaskreconError(
    `an open re-push of run ${intent.runId} names connection '${detail.connection}', which is no ${what} connection now`,
    { code: 'CONFIG_INVALID', hint: 'Restore the connection in the source config to settle it.' },
  );
}

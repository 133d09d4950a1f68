import { markerKey } from '../../brokers/redis/intents.js';
import { ACTION_RULES } from '../../core/compensate-plan.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store, type AuditInsert, type IntentRecord } from '../../db/port/index.js';
import type { Queryable, Row } from '../../db/types.js';
import type { FailedJobRequeuer, RequeuePlan } from '../../dispatch/failed-job-queue.js';
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
  pushes: Array<{ id: string; queue: string; key: string }>;
}

/** The intents one batch opened: marker keys by the requeuer's target key, and which ids each covers. */
export interface OpenedRepush {
  markers: Map<string, string>;
  intents: Array<{ id: number; marker: string; connection: string; ids: Set<string> }>;
}

export class RepushJournal {
  constructor(
    private readonly source: BoundSource,
    private readonly requeuer: FailedJobRequeuer,
    private readonly request: CompensateRequest,
  ) {}

  private get action(): string {
    return this.request.audit?.action ?? this.request.action;
  }

  /** Commits one intent per Redis target of these planned pushes, before anything is pushed. */
  async open(plans: readonly RequeuePlan[]): Promise<OpenedRepush> {
    const opened: OpenedRepush = { markers: new Map(), intents: [] };
    const groups = this.requeuer.redisGroups(plans);
    if (groups.length === 0) return opened;
    const { db } = this.source;
    await requireIntentTable(db);
    for (const group of groups) {
      const detail: RepushDetail = {
        connection: group.connection,
        pushes: group.plans.map((p) => ({
          id: String(p.id),
          queue: p.queue,
          key: this.requeuer.redisKeyOf(p) ?? '',
        })),
      };
      const intent = await openIntent(db, {
        kind: REPUSH_KIND,
        source: this.source.name,
        from: this.source.profile.table,
        to: `${group.connection}:${[...new Set(detail.pushes.map((p) => p.key))].join(',')}`.slice(0, 255),
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
      const marker = markerKey(this.request.runId, intent.id);
      opened.markers.set(group.target, marker);
      opened.intents.push({
        id: intent.id,
        marker,
        connection: group.connection,
        ids: new Set(detail.pushes.map((p) => p.id)),
      });
    }
    return opened;
  }

  /** Refuses a Redis push no intent of the batch names (the batch rolls back, nothing is pushed). */
  checkCovered(opened: OpenedRepush, plans: readonly RequeuePlan[]): void {
    const covered = new Set(opened.intents.flatMap((i) => [...i.ids]));
    const stray = plans.filter((p) => p.target.driver === 'redis' && !covered.has(String(p.id)));
    if (stray.length)
      throw new TaskreconError(
        `failed job ${String(stray[0]?.id)} became retryable after its batch's intent was written; the batch was rolled back`,
        { code: 'GUARD', hint: 'Run the command again: it retries what is left.' },
      );
  }

  /** Settles the batch's intents on its transaction (its audit rows are written there too). */
  async settle(tx: Queryable, opened: OpenedRepush): Promise<void> {
    for (const intent of opened.intents) {
      if (!(await settleIntentWithAudit(tx, this.source.db, intent.id, 'landed', this.request.runId, [])))
        throw new TaskreconError(
          `another run settled this batch's intent ${intent.id} meanwhile; rolled back`,
          {
            code: 'GUARD',
            hint: 'Run one retry of a failed-jobs table at a time; run the command again.',
          },
        );
    }
  }

  /** Removes the markers of a committed batch. */
  async forget(opened: OpenedRepush): Promise<void> {
    for (const intent of opened.intents)
      await (
        await this.requeuer.redisOf(intent.connection)
      )
        ?.forgetMarker(intent.marker)
        .catch(() => undefined);
  }

  /**
   * Settles the re-push intents killed runs left open on this source: the rows whose job the marker
   * says was pushed are deleted and audited under the killed run (not pushed again); an intent
   * whose push never happened is fenced off and closed, its rows left for this run to retry.
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
    const redis = await this.requeuer.redisOf(detail.connection);
    if (!redis)
      throw new TaskreconError(
        `an open re-push of run ${intent.runId} names connection '${detail.connection}', which is no Redis connection now`,
        { code: 'CONFIG_INVALID', hint: 'Restore the connection in the source config to settle it.' },
      );
    const marker = markerKey(intent.runId, intent.id);
    const pushed = await redis.lookMarker(marker);
    if (!pushed) return { state: 'not-landed' as const, audit: [] };
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
          requeued: { driver: 'redis', connection: detail.connection, key: push?.key, queue: push?.queue },
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
      after: () => redis.forgetMarker(marker),
    };
  }
}

import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store, type DrillTaskRow, type EffectTable } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import type { DispatchResult } from '../../dispatch/types.js';
import type { FaultServer } from './fault-server.js';
import { check, drillPrefix } from '../../core/drill-framework.js';

/** When the policy under test wants retry `n` (1-based) to run, as a window (jitter included). */
export interface RetryWindow {
  minSeconds: number;
  maxSeconds: number;
}

/** What the drill expects of the retry policy of its biz type (from config, or the default). */
export interface RetryExpectation {
  /** A description for step details, e.g. "schedule 1s, 4s, … then failed". */
  describe: string;
  /** Retries before `failed` (the seed's default: 7). */
  maxRetries: number;
  window(retry: number): RetryWindow;
}

/** Counts of one reconciliation pass, as the drill reads them. */
export interface PassSummary {
  claimed: number;
  succeeded: number;
  retried: number;
  failed: number;
  lostRace: number;
  recoveredStuck: number;
}

/**
 * The system a drill exercises, called in-process: taskrecon's own redrive, dispatch and
 * compensate code, restricted to this run's rows. Built by src/drills/system.ts.
 */
export interface DrillSystem {
  /** One pass of the reconciliation job over the run's rows, delivering the drill's biz type to `url`. */
  redrivePass(url: string): Promise<PassSummary>;
  /** Delivers a task to `url` through the http dispatcher redrive uses (a queue redelivering it). */
  deliver(task: DrillTask, url: string): Promise<DispatchResult>;
  /** A worker claims the task, delivers it, and dies before recording the outcome. */
  claimDeliverAndDie(task: DrillTask, url: string): Promise<DispatchResult>;
  /** The manual retry of `compensate --action retry`, audited; resolves to the tasks moved. */
  manualRetry(ids: TaskId[], reason: string): Promise<number>;
  /** Audit rows of one task, oldest first. */
  auditOf(
    id: TaskId,
  ): Promise<Array<{ action: string; fromStatus: string | null; toStatus: string | null; operator: string }>>;
  /** Releases the dispatchers' connection pools. */
  close(): Promise<void>;
}

/** Everything a scenario works with. */
export interface DrillEnv {
  runId: string;
  source: BoundSource;
  /** Where the business table is (the task database unless the rule names another). */
  effectDb: Db;
  effect: EffectTable;
  /**
   * The biz type drill rows carry: `drill-<run>`, so that every claim the drill makes (filtered by
   * it) can only ever take a drill row. The handler is told the rule's biz type (`handlerBizType`).
   */
  bizType: string;
  handlerBizType: string;
  /** The handler, behind a switchable fault. */
  target: FaultServer;
  /** The http dispatcher's timeout for drill deliveries. */
  timeoutMs: number;
  /** How long a claim is leased: a processing row untouched for longer is stuck. */
  leaseMs: number;
  policy: RetryExpectation;
  system: DrillSystem;
  /** Every task the run inserted (for cleanup and reporting). */
  inserted: TaskId[];
}

export interface DrillTask {
  id: TaskId;
  eventId: string;
  bizId: string;
  /** The payload as stored (JSON text). */
  payload: string;
}

/** Inserts a pending drill task due now; `tag` names it within the run (`drill-<run>-<tag>`). */
export async function injectTask(env: DrillEnv, tag: string): Promise<DrillTask> {
  const eventId = `${drillPrefix(env.runId)}${tag}`;
  const bizId = eventId;
  const payload = JSON.stringify({ order_id: bizId, drill: env.runId, bizType: env.handlerBizType });
  const id = await store.sandbox.insertDrillTask(env.source, {
    bizType: env.bizType,
    bizId,
    eventId,
    payload,
    maxAttempts: env.policy.maxRetries + 1,
  });
  env.inserted.push(id);
  return { id, eventId, bizId, payload };
}

/** The task as it stands now; a missing row fails the step. */
export async function observe(env: DrillEnv, task: DrillTask): Promise<DrillTaskRow> {
  const row = await store.sandbox.readDrillTask(env.source, task.id, drillPrefix(env.runId));
  check(row, `task #${task.id} (${task.eventId}) is gone from ${env.source.profile.table}`);
  return row;
}

/** How many business rows the task's effect left, by the rule's table and key. */
export function effectCount(env: DrillEnv, task: DrillTask): Promise<number> {
  return store.sandbox.countEffects(env.effectDb, env.effect, task.bizId);
}

/** Instead of sleeping until the retry is due: moves its next_retry_time to now (database clock). */
export async function fastForward(env: DrillEnv, task: DrillTask): Promise<void> {
  const now = await env.source.db.nowEpoch();
  const changed = await store.sandbox.fastForwardRetry(env.source, task.id, drillPrefix(env.runId), now - 1);
  check(changed === 1, `could not fast-forward task #${task.id}: it is no longer pending`);
}

/** Instead of waiting out the lease: ages the task's last touch to just past the lease. */
export async function expireLease(env: DrillEnv, task: DrillTask): Promise<void> {
  const now = await env.source.db.nowEpoch();
  const changed = await store.sandbox.ageClaim(
    env.source,
    task.id,
    drillPrefix(env.runId),
    now - Math.ceil(env.leaseMs / 1000) - 2,
  );
  check(changed === 1, `could not age task #${task.id}: it is no longer processing`);
}

/** A wait for step details: 2s, 68s, 5min 11s, 2h 4min. */
export function seconds(value: number): string {
  const v = Math.round(value);
  if (Math.abs(v) < 120) return `${Math.round(value * 10) / 10}s`;
  if (v >= 3600)
    return `${Math.floor(v / 3600)}h${v % 3600 >= 60 ? ` ${Math.floor((v % 3600) / 60)}min` : ''}`;
  return `${Math.floor(v / 60)}min${v % 60 ? ` ${v % 60}s` : ''}`;
}

export function expectStatus(row: DrillTaskRow, status: string, context: string): void {
  check(
    row.status === status,
    `${context}: task #${row.id} is ${row.status} (attempts ${row.attempts ?? 'n/a'}${row.lastError ? `, last error: ${row.lastError}` : ''}), expected ${status}`,
  );
}

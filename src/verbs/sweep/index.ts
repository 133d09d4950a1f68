import type { SweepRule } from '../../core/sweep-rules.js';
import type { BoundSource } from '../../db/bind-source.js';
import { toIso } from '../../db/task-sql.js';
import type { QueueConnectionConfig } from '../../dispatch/failed-job-queue.js';
import type { NotifyTarget } from '../../notify/types.js';
import { alertSecondFailures, notYetAlerted, type SecondFailure } from './alert.js';
import { identityReader, isoOrNull, planSource, type PlannedRow } from '../../ops/sweep/plan.js';
import { retryThroughCompensate } from './retry.js';
import type { EffectGate } from '../../ops/compensation/types.js';
import { effectBlocksRetry } from '../../core/effect.js';
import { MAX_SWEEP_RESULTS, type SweepItem, type SweepItemOutcome, type SweepResult } from './types.js';
import { sweepBrokers } from './bullmq.js';
import type { BrokerChoice } from '../../brokers/index.js';
import type { Db } from '../../db/types.js';

export * from './types.js';
export { sweepable, planSource } from '../../ops/sweep/plan.js';
export {
  listSecondFailures,
  sweepCounts,
  sweepFigures,
  type SecondFailureRow,
  type SweepFigures,
} from '../../ops/sweep/figures.js';
export { openSweepSources, sweepRulesOf } from './sources.js';
export { buildSweepRequest, type SweepFlags } from './request.js';

/**
 * The failure sweep (the hourly sweep of the think-queue failed_jobs table): for each source, the
 * failed rows since the previous sweep, each under its first matching rule — retried now through
 * compensate's retry path, deferred until its window opens, held for a person, or (retried
 * `maxSweeps` times already) a second failure, alerted once with --notify. Nothing is written for
 * deferred, held or second-failure rows except the one-time alert record; a rerun over the same
 * window finds the retried rows gone (failed jobs) or no longer failed (tasks), so it does nothing new.
 */
export interface SweepSource {
  source: BoundSource;
  /** The shard's name, when the source is sharded (each shard is swept as a source of its own). */
  shard?: string;
  queueConnections?: Record<string, QueueConnectionConfig>;
  /** The effect check of its retries (see compensate's retry): a row whose effect is there is refused. */
  effects?: EffectGate;
}

export interface SweepRequest {
  sources: SweepSource[];
  rules: SweepRule[];
  /** The cron period: rows that failed within it are new. */
  sinceSeconds: number;
  dryRun: boolean;
  /** --notify: the webhook targets; undefined = no alerts. */
  notify?: NotifyTarget[];
  runId: string;
  operator: string;
  host: string;
  /** Completes the commands an alert prints with the connection of this run. */
  paste?: (text: string) => string;
  /** BullMQ brokers whose failed jobs rules with `match.broker` sweep. */
  brokers?: BrokerChoice[];
  /** Their audit log (undefined only in a dry run without a database). */
  auditDb?: Db;
}

export async function runSweep(request: SweepRequest): Promise<SweepResult> {
  const started = Date.now();
  const first = request.sources[0];
  const clock = first?.source.db ?? request.auditDb;
  const nowEpoch = clock ? await clock.nowEpoch() : Math.floor(Date.now() / 1000);
  const result: SweepResult = {
    now: toIso(nowEpoch) as string,
    since: toIso(nowEpoch - request.sinceSeconds) as string,
    dryRun: request.dryRun,
    matched: 0,
    unmatched: 0,
    retried: 0,
    deferred: 0,
    held: 0,
    secondFailures: 0,
    lostRace: 0,
    refused: 0,
    effectRefused: 0,
    alerted: 0,
    sources: [...new Set(request.sources.map((s) => s.source.name))],
    ...(request.brokers?.length ? { brokers: request.brokers.map((b) => b.name) } : {}),
    ...(request.sources.some((s) => s.shard)
      ? { shards: request.sources.flatMap((s) => s.shard ?? []) }
      : {}),
    results: [],
    resultsOmitted: 0,
    runId: request.runId,
    notifications: [],
    durationMs: 0,
  };
  const items: SweepItem[] = [];
  const second: Array<SecondFailure & { item: SweepItem }> = [];
  for (const { source, shard, queueConnections, effects } of request.sources) {
    // Each database's own clock decides for its rows.
    const now = source === first?.source ? nowEpoch : await source.db.nowEpoch();
    const plan = await planSource(source, request.rules, now, now - request.sinceSeconds);
    result.unmatched += plan.unmatched;
    const item = (p: PlannedRow, outcome: SweepItemOutcome, reason?: string): SweepItem => ({
      source: source.name,
      ...(shard ? { shard } : {}),
      id: p.id,
      bizType: p.bizType,
      rule: p.rule.name,
      outcome,
      eligibleAt: isoOrNull(p.decision.eligibleAt),
      identity: p.identity,
      failedAt: isoOrNull(p.failedAt),
      ...(reason ? { reason } : {}),
    });
    const toRetry = new Map<SweepRule, PlannedRow[]>();
    for (const p of plan.rows) {
      if (p.decision.outcome === 'retry') {
        const list = toRetry.get(p.rule) ?? [];
        list.push(p);
        toRetry.set(p.rule, list);
      } else if (p.decision.outcome === 'second-failure') {
        const it = item(p, 'second-failure');
        second.push({
          planned: p,
          sourceName: source.name,
          table: source.profile.table,
          db: source.db,
          item: it,
        });
        items.push(it);
      } else items.push(item(p, p.decision.outcome));
    }
    const identityOf = identityReader(source);
    for (const [rule, planned] of toRetry) {
      const byId = new Map(planned.map((p) => [String(p.id), p]));
      const outcomes = await retryThroughCompensate(source, {
        ids: planned.map((p) => p.id),
        identityOf,
        rule: rule.name,
        rate: rule.rate,
        dryRun: request.dryRun,
        runId: request.runId,
        operator: request.operator,
        host: request.host,
        queueConnections,
        effects,
      });
      for (const o of outcomes) {
        const p = byId.get(String(o.id));
        if (!p) continue;
        const outcome: SweepItemOutcome =
          o.outcome === 'applied'
            ? 'retried'
            : o.outcome === 'would-apply'
              ? 'would-retry'
              : o.outcome === 'refused' || o.outcome === 'would-fail'
                ? 'refused'
                : 'lost-race';
        const it = item(
          p,
          outcome,
          outcome === 'retried' || outcome === 'would-retry' ? undefined : o.reason,
        );
        if (o.effect) it.effect = o.effect.state;
        if (o.effect && outcome === 'refused' && effectBlocksRetry(o.effect)) result.effectRefused++;
        items.push(it);
      }
    }
  }
  if (request.brokers?.length) {
    const swept = await sweepBrokers({
      brokers: request.brokers,
      db: request.auditDb,
      rules: request.rules,
      nowEpoch,
      cutoffEpoch: nowEpoch - request.sinceSeconds,
      dryRun: request.dryRun,
      runId: request.runId,
      operator: request.operator,
      host: request.host,
    });
    result.unmatched += swept.unmatched;
    if (swept.settledIntents.length) result.settledIntents = swept.settledIntents;
    items.push(...swept.items);
    const db = request.auditDb;
    if (db)
      for (const s of swept.second)
        second.push({ planned: s.planned, sourceName: s.broker, table: s.queue, db, item: s.item });
    else for (const s of swept.second) s.item.alerted = false;
  }
  if (request.notify && !request.dryRun && second.length) {
    const fresh = await notYetAlerted(second);
    const sent = await alertSecondFailures(fresh, {
      targets: request.notify,
      nowIso: result.now,
      sinceSeconds: request.sinceSeconds,
      runId: request.runId,
      operator: request.operator,
      host: request.host,
      paste: request.paste,
    });
    result.notifications = sent.notifications;
    if (sent.delivered) {
      const alerted = new Set(sent.alerted.map((f) => f.planned));
      for (const s of second) s.item.alerted = alerted.has(s.planned);
      result.alerted = sent.alerted.length;
    }
  }
  for (const s of second) s.item.alerted ??= false;
  for (const it of items) {
    if (it.outcome === 'retried' || it.outcome === 'would-retry') result.retried++;
    else if (it.outcome === 'deferred') result.deferred++;
    else if (it.outcome === 'held') result.held++;
    else if (it.outcome === 'second-failure') result.secondFailures++;
    else if (it.outcome === 'lost-race') result.lostRace++;
    else if (it.outcome === 'refused') result.refused++;
  }
  result.matched = items.length;
  result.results = items.slice(0, MAX_SWEEP_RESULTS);
  result.resultsOmitted = Math.max(0, items.length - MAX_SWEEP_RESULTS);
  result.durationMs = Date.now() - started;
  return result;
}

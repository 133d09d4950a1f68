// Over 300 lines: the one batch of compensate and sweep — lock, re-check, effect gate, write, push, audit and settle its intents together.
import { systemClock, type LocalClock } from '../../core/clock.js';
import { Pacer } from '../../core/pacer.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store as portStore, type AuditInsert, type CompensateStore } from '../../db/port/index.js';
import type { Queryable, Row } from '../../db/types.js';
import {
  FailedJobRequeuer,
  type QueueFlavor,
  type Requeued,
  type RequeuePlan,
} from '../../dispatch/failed-job-queue.js';
import { laravelQueue } from '../../dispatch/laravel-queue.js';
import type { JobSystemWriter } from '../../dispatch/pg-boss.js';
import { jobDecision, openJobWriter, solidQueueWriter, writeThrough } from './job-system.js';
import { RepushJournal, type OpenedRepush } from './repush-journal.js';
import { thinkphpQueue } from '../../dispatch/thinkphp-queue.js';
import { TaskreconError, usageError } from '../../errors.js';
import {
  ACTION_RULES,
  actionUnsupported,
  DELETED,
  type CompensateAction,
} from '../../core/compensate-plan.js';
import { rowEventId, rowId, rowJson, rowStatus } from '../rows.js';
import {
  MAX_KEPT_RESULTS,
  type CompensateItem,
  type CompensateRequest,
  type CompensateResult,
} from './types.js';
import { sourceInfo } from '../task-lists.js';
import type { TaskEffect } from '../../core/effect.js';
import {
  applyGate,
  countEffect,
  emptyEffectSummary,
  gateAudits,
  type Decided,
  type Gate,
} from './effect-gate.js';

/**
 * One compensation run: the bookkeeping of its result and the batch that locks rows, re-checks
 * their state, writes, audits and commits them together (see verbs/compensate/ for the selection).
 */

/** Picks the framework a failed-jobs profile belongs to. */
function flavorOf(source: BoundSource): QueueFlavor | undefined {
  if (source.profile.name.startsWith('laravel')) return laravelQueue;
  if (source.profile.name.startsWith('thinkphp')) return thinkphpQueue;
  return undefined;
}

/** Checks the action against the table before anything is read or written. */
export function checkSupported(source: BoundSource, action: CompensateAction): void {
  const why = actionUnsupported(action, {
    profile: source.profile.name,
    kind: source.profile.kind,
    statuses: source.sql.statuses(),
    ...(source.profile.systemActions ? { systemActions: source.profile.systemActions } : {}),
  });
  if (why) throw usageError(`cannot ${action} on source ${source.name}: ${why}`);
}

export class Run {
  readonly result: CompensateResult;
  private readonly started: number;
  private requeuer: FailedJobRequeuer | undefined;
  /** The write-ahead intents of the Redis pushes of a failed-job retry. */
  private journal: RepushJournal | undefined;
  /** A job system's own client (pg-boss), started at the first write of the run. */
  private jobWriter: Promise<JobSystemWriter> | undefined;
  private processed = 0;
  private readonly pacer: Pacer;

  constructor(
    private readonly source: BoundSource,
    private readonly request: CompensateRequest,
    private readonly nowEpoch: number,
    /** The statements of a batch (the installed store unless a test gives its own). */
    private readonly store: CompensateStore = portStore,
    /** Paces the run and times it (the request's clock, else the system's). */
    private readonly clock: LocalClock = request.clock ?? systemClock,
  ) {
    this.started = this.clock.nowMs();
    this.pacer = new Pacer(request.rate, this.clock);
    this.result = {
      action: request.action,
      operator: request.operator,
      dryRun: request.dryRun,
      matched: 0,
      applied: 0,
      skipped: 0,
      refused: 0,
      ...(request.dryRun ? { wouldFail: 0 } : {}),
      runId: request.runId,
      source: sourceInfo(source),
      interrupted: false,
      durationMs: 0,
      results: [],
      resultsOmitted: 0,
      ...(this.checksEffects ? { effect: emptyEffectSummary() } : {}),
    };
    if (source.profile.kind === 'failed-jobs' && request.action === 'retry') {
      const flavor = flavorOf(source);
      if (!flavor)
        throw usageError(
          `profile ${source.profile.name} is a failed-jobs table of no known framework: cannot re-push its jobs`,
        );
      this.requeuer = new FailedJobRequeuer(flavor, source.name, source.db, request.queueConnections ?? {});
      this.journal = new RepushJournal(source, this.requeuer, request);
    }
  }

  /**
   * Before the first batch of a run that writes: settles the re-pushes killed runs left open on
   * this source (a job already pushed is not pushed again: its failed row is deleted and audited).
   */
  async settleOpen(): Promise<void> {
    if (this.request.dryRun || !this.journal) return;
    const { settled } = await this.journal.settleOpen();
    if (settled.length) this.result.settledIntents = settled;
  }

  /** A retry with an effect gate: each task's effect is looked up before it moves. */
  private get checksEffects(): boolean {
    return this.request.action === 'retry' && this.request.effects !== undefined;
  }

  /** The effects of the rows (undefined when the run checks none); `q` is the batch's transaction. */
  async effectsOf(rows: readonly Row[], q?: Queryable): Promise<Map<string, TaskEffect> | undefined> {
    return this.checksEffects ? this.request.effects?.check(rows, q) : undefined;
  }

  /** Audits the refusals of a run that writes nothing else (named ids, one refused). */
  async auditRefusals(decided: readonly Decided[]): Promise<void> {
    const rows = gateAudits(this.source, this.request, decided, 'refused');
    if (this.request.dryRun || rows.length === 0) return;
    await this.store.tasks.transaction(this.source, (tx) =>
      this.store.audit.insertBatch(tx, this.source.db.dialect, rows),
    );
  }

  record(item: CompensateItem, gate?: Gate): void {
    if (this.result.effect) countEffect(this.result.effect, item, gate);
    if (item.outcome === 'applied') this.result.applied++;
    else if (item.outcome !== 'would-apply') this.result.skipped++;
    if (item.outcome === 'refused') this.result.refused++;
    if (item.outcome === 'would-fail') this.result.wouldFail = (this.result.wouldFail ?? 0) + 1;
    if (this.result.results.length < MAX_KEPT_RESULTS) this.result.results.push(item);
    else this.result.resultsOmitted++;
  }

  /** Decides for each whole row (with `effects`, through the effect gate); plans the re-push of failed jobs. */
  decideRows(rows: Row[], effects?: Map<string, TaskEffect>): Array<Decided & { push?: RequeuePlan }> {
    const { sql } = this.source;
    const rule = ACTION_RULES[this.request.action];
    const decided = rows.map((row): Decided & { push?: RequeuePlan } => {
      const id = rowId(sql, row);
      const status = rowStatus(sql, row);
      const decision = jobDecision(this.source, this.request.action, status);
      if (decision.kind === 'already')
        return {
          row,
          id,
          from: status,
          item: { id, from: status, to: rule.to, outcome: 'already', reason: decision.reason },
        };
      if (decision.kind === 'refused')
        return {
          row,
          id,
          from: status,
          item: { id, from: status, to: rule.to, outcome: 'refused', reason: decision.reason },
        };
      if (this.requeuer) {
        const plan = this.requeuer.plan(row, this.nowEpoch);
        if ('refused' in plan)
          return {
            row,
            id,
            from: status,
            item: { id, from: status, to: rule.to, outcome: 'refused', reason: plan.refused },
          };
        return { row, id, from: status, push: plan };
      }
      return { row, id, from: status };
    });
    return applyGate(decided, effects, this.request.effects?.force ?? false, rule.to);
  }

  /** One batch: lock, re-check, write, audit, commit (or, in a dry run, read and decide). */
  async batch(ids: readonly TaskId[], mode: 'ids' | 'filter'): Promise<void> {
    const { source, request, store } = this;
    const rule = ACTION_RULES[request.action];
    if (request.dryRun) {
      const rows = await store.tasks.selectWholeRows(source.db, source, ids, false);
      for (const d of this.decideRows(rows, await this.effectsOf(rows))) {
        // A failed job's target is checked as the push would use it: a dry run promises no push it cannot make.
        const why = d.push && (await this.requeuer?.wouldFail(d.push.target));
        this.record(
          d.item ??
            (why
              ? { id: d.id, from: d.from, to: rule.to, outcome: 'would-fail', reason: why }
              : { id: d.id, from: d.from, to: rule.to, outcome: 'would-apply', ...effectOf(d) }),
          d.gate,
        );
      }
      this.processed += ids.length;
      return;
    }
    const writer = source.profile.kind === 'job-system' ? await this.openJobWriter() : undefined;
    if (writer) this.result.client = writer.client;
    const gates = new Map<string, Gate>();
    const opened = await this.openRepush(ids);
    const items = await store.tasks.transaction(source, async (tx) => {
      const rows = await store.tasks.selectWholeRows(tx, source, ids, true);
      const found = new Set(rows.map((r) => String(rowId(source.sql, r))));
      const out: CompensateItem[] = ids
        .filter((id) => !found.has(String(id)))
        .map((id) => ({
          id,
          from: null,
          to: rule.to,
          outcome: 'lost-race' as const,
          reason: 'the row is gone (another run or worker removed it)',
        }));
      const decided = this.decideRows(rows, await this.effectsOf(rows, tx));
      const movers = decided.filter((d) => !d.item);
      for (const d of decided) if (d.gate) gates.set(String(d.id), d.gate);
      const refusals = gateAudits(source, request, decided, 'refused');
      if (refusals.length) await store.audit.insertBatch(tx, source.db.dialect, refusals);
      for (const d of decided) {
        if (!d.item) continue;
        // Selected by filter in a movable state, now elsewhere: someone else moved it first.
        if (mode === 'filter' && d.item.outcome !== 'refused' && !d.gate)
          out.push({ ...d.item, outcome: 'lost-race', reason: `${d.item.reason}: moved meanwhile` });
        else out.push(d.item);
      }
      if (movers.length === 0) {
        // Nothing of the batch is pushed (another run took its rows first): its intents close here.
        if (opened) await this.journal?.settle(tx, opened, 'not-landed');
        return out;
      }
      const moverIds = movers.map((m) => m.id);
      // A job system's own client writes the change itself; it re-pushes nothing of taskrecon's.
      if (writer) await writeThrough(writer, source, request.action, tx, movers);
      const requeued = writer
        ? new Map<TaskId, Requeued>()
        : await this.write(
            tx,
            moverIds,
            movers.flatMap((m) => (m.push ? [m.push] : [])),
            opened,
          );
      // A job system's client writes columns of its own (pg-boss's retry_limit, River's
      // max_attempts): its rows are read back whole.
      const written =
        rule.to === DELETED || this.requeuer
          ? []
          : writer
            ? await store.tasks.selectWholeRows(tx, source, moverIds, false)
            : await store.tasks.selectWrittenColumns(tx, source, moverIds);
      const afterById = new Map(written.map((r) => [String(rowId(source.sql, r)), r]));
      const audit: AuditInsert[] = movers.map((m) => ({
        operator: request.operator,
        host: request.host,
        action: request.audit?.action ?? request.action,
        source: source.name,
        taskTable: source.profile.table,
        taskId: String(m.id),
        eventId: request.audit ? request.audit.eventId(m.row) : rowEventId(source.sql, m.row),
        fromStatus: m.from,
        toStatus: rule.to,
        beforeJson: rowJson(m.row),
        afterJson: afterImage(m.row, afterById.get(String(m.id)), requeued.get(m.id)),
        reason: request.reason,
        runId: request.runId,
      }));
      await store.audit.insertBatch(tx, source.db.dialect, [
        ...audit,
        ...gateAudits(source, request, movers, 'forced'),
      ]);
      if (opened) await this.journal?.settle(tx, opened);
      for (const m of movers)
        out.push({ id: m.id, from: m.from, to: rule.to, outcome: 'applied', ...effectOf(m) });
      return out;
    });
    if (opened) await this.journal?.forget(opened);
    const order = new Map(ids.map((id, index) => [String(id), index]));
    items.sort((a, b) => (order.get(String(a.id)) ?? 0) - (order.get(String(b.id)) ?? 0));
    for (const item of items) this.record(item, gates.get(String(item.id)));
    const applied = items.filter((i) => i.outcome === 'applied').map((i) => i.id);
    if (applied.length) this.request.onApplied?.(applied);
    this.processed += ids.length;
  }

  /** Commits the intents of this batch's Redis pushes, planned from the rows as they are now. */
  private async openRepush(ids: readonly TaskId[]): Promise<OpenedRepush | undefined> {
    if (!this.journal) return undefined;
    const rows = await this.store.tasks.selectWholeRows(this.source.db, this.source, ids, false);
    const plans = this.decideRows(rows).flatMap((d) => (d.push && !d.item ? [d.push] : []));
    const opened = await this.journal.open(plans);
    return opened.intents.length ? opened : undefined;
  }

  /** The guarded write of the movers; a count short of the locked rows means the guard failed: roll back. */
  private async write(
    tx: Queryable,
    ids: TaskId[],
    pushes: RequeuePlan[],
    opened?: OpenedRepush,
  ): Promise<Map<TaskId, Requeued>> {
    const { source, request, store } = this;
    const rule = ACTION_RULES[request.action];
    let changed: number;
    let requeued = new Map<TaskId, Requeued>();
    if (rule.to === DELETED || this.requeuer) {
      changed = await store.tasks.deleteGuarded(tx, source, ids, rule.from);
      if (changed === ids.length && this.requeuer) {
        this.journal?.checkCovered(opened ?? { markers: new Map(), intents: [] }, pushes);
        requeued = await this.requeuer.push(tx, pushes, opened?.markers);
      }
    } else {
      changed = await store.tasks.applyTransition(tx, source, {
        transition: rule.transition as NonNullable<typeof rule.transition>,
        id: ids,
        ...(request.action === 'retry' ? { attempts: 0, nextRetryAt: 'now' as const } : {}),
      });
    }
    if (changed !== ids.length) {
      throw new TaskreconError(
        `the guarded write changed ${changed} of ${ids.length} locked rows; the batch was rolled back`,
        {
          code: 'GUARD',
          hint: 'Another writer bypassed row locks; run the command again: it redoes nothing already done.',
        },
      );
    }
    return requeued;
  }

  /** The job system's client for this run's source, started once (a failure writes nothing). */
  private openJobWriter(): Promise<JobSystemWriter> {
    const { source } = this;
    if (!this.jobWriter && source.profile.system === 'solid-queue')
      this.jobWriter = Promise.resolve(solidQueueWriter(this.store, source));
    if (!this.jobWriter) {
      this.jobWriter = openJobWriter(source);
      this.jobWriter.catch(() => undefined);
    }
    return this.jobWriter;
  }

  /** Paces the run to `rate` rows per second, cumulatively (a slow batch is not punished twice). */
  async pace(): Promise<void> {
    await this.pacer.wait(this.processed);
  }

  finish(): CompensateResult {
    this.result.durationMs = this.clock.nowMs() - this.started;
    return this.result;
  }

  async close(): Promise<void> {
    await this.requeuer?.close();
    const writer = await this.jobWriter?.catch(() => undefined);
    await writer?.close();
  }
}

function afterImage(before: Row, written: Row | undefined, requeued: Requeued | undefined): string | null {
  if (requeued) return JSON.stringify({ requeued });
  return written ? rowJson({ ...before, ...written }) : null;
}

function effectOf(d: Decided): { effect?: TaskEffect } {
  return d.effect ? { effect: d.effect } : {};
}

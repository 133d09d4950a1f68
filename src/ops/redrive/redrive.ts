import { setMaxListeners } from 'node:events';
import { classifyError, describeFailure } from '../../core/classify.js';
import { systemClock } from '../../core/clock.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store, type ClaimedTask } from '../../db/port/index.js';
import { toIso } from '../../db/task-sql.js';
import type { DispatchResult, DispatchTask } from '../../dispatch/types.js';
import { TaskreconError } from '../../errors.js';
import { Feeder } from './feed.js';
import { Heartbeat } from './heartbeat.js';
import { Settler } from './settle.js';
import { zeroCounts, type RedriveOptions, type RedriveResult } from './types.js';

export type { RedriveEvent, RedriveOptions, RedriveResult } from './types.js';

/** The classic task-table design: claim 500 at a time, rest 100 ms between batches. */
export const DEFAULT_BATCH = 500;
export const DEFAULT_PAUSE_MS = 100;
/** Tasks in flight per process: enough to keep a keep-alive pool busy without flooding a handler. */
export const DEFAULT_CONCURRENCY = 16;
/** A claim is held this long; it must outlast the slowest handler (the HTTP timeout defaults to 10 s). */
export const DEFAULT_LEASE_SECONDS = 300;
/** How often the progress callback hears the counts. */
const PROGRESS_EVERY_MS = 250;

/**
 * Refuses, with exit 3 and a pointer to the right tool, a source redrive cannot work on: failed-job
 * tables (nothing is pending; retry them with compensate), Laravel's jobs table (Laravel's own
 * worker runs it), and any profile without a status column, pending/processing values or a
 * next-retry column to claim and fence with.
 */
export function assertRedrivable(source: BoundSource): void {
  const { profile, sql } = source;
  if (profile.kind === 'failed-jobs') {
    throw new TaskreconError(
      `${profile.name} holds failed jobs only: nothing there is pending or due, so there is nothing to redrive`,
      {
        code: 'PROFILE_CAPABILITY',
        hint: `Retry failed jobs with \`taskrecon compensate --profile ${profile.name} --action retry\` (it re-pushes them onto their queue).`,
      },
    );
  }
  if (profile.kind === 'job-system') {
    throw new TaskreconError(
      `${profile.name} is a job table that ${profile.system ?? profile.name}'s own workers run: redrive would race them`,
      {
        code: 'PROFILE_CAPABILITY',
        hint: 'Use `taskrecon scan` to see its backlog and stuck jobs, and `taskrecon compensate --action retry` for failed jobs (through its own client).',
      },
    );
  }
  if (profile.kind === 'queue-jobs') {
    throw new TaskreconError(
      `${profile.name} is a queue that Laravel's own worker runs: redrive would race \`php artisan queue:work\``,
      {
        code: 'PROFILE_CAPABILITY',
        hint: 'Use `taskrecon scan` to see its backlog and stuck reservations, and `taskrecon compensate` for jobs that failed.',
      },
    );
  }
  const missing: string[] = [];
  if (profile.status.kind !== 'column') missing.push('a status column');
  for (const status of ['pending', 'processing'] as const)
    if (sql.rawStatus(status) === undefined) missing.push(`a '${status}' status value`);
  if (!sql.has('nextRetryAt')) missing.push('a next-retry column (claims write their lease into it)');
  if (!sql.has('id')) missing.push('an id column');
  if (missing.length > 0) {
    throw new TaskreconError(`redrive needs ${missing.join(', ')}, and profile ${profile.name} has none`, {
      code: 'PROFILE_CAPABILITY',
      hint: 'Map them under `columns:`/`statuses:` in the source, or act on rows by hand with `taskrecon compensate`.',
    });
  }
}

/**
 * The reconciliation job: claims stuck processing rows (lease expired),
 * then due pending rows, a page at a time by (next_retry_time, id) with the cutoff fixed once,
 * dispatches each through its biz type's handler with bounded concurrency, and writes each outcome
 * through the state machine with the claim's fence. Safe to run from many hosts at once.
 *
 * Used by the `redrive` command, the demo and the drills; the dispatchers and policies are injected.
 */
export async function runRedrive(source: BoundSource, options: RedriveOptions): Promise<RedriveResult> {
  assertRedrivable(source);
  const clock = options.clock ?? systemClock;
  const started = clock.nowMs();
  const log = options.log ?? (() => undefined);
  const stuckAfterSeconds = Math.floor(options.stuckAfterMs / 1000);
  const cutoffEpoch = await source.db.nowEpoch();
  const cutoffs = { cutoffEpoch, stuckCutoffEpoch: cutoffEpoch - stuckAfterSeconds };
  const registry = options.dispatchers;
  const counts = zeroCounts();

  // Which biz types to claim: the ones asked for, and of those only the ones with a handler (unless a default exists).
  const hasBizType = source.sql.has('bizType');
  let bizTypes = options.bizTypes?.length ? [...options.bizTypes] : undefined;
  let nothingHandled = false;
  if (!registry.hasDefault) {
    bizTypes = bizTypes ? bizTypes.filter((b) => registry.bizTypes.includes(b)) : [...registry.bizTypes];
    nothingHandled = bizTypes.length === 0 || !hasBizType;
  }
  const unhandled = registry.hasDefault
    ? []
    : await store.tasks.countUnhandled(
        source,
        cutoffs,
        hasBizType ? registry.bizTypes : [],
        options.bizTypes,
      );
  const skipLocked = options.skipLocked ?? (await store.tasks.detectSkipLocked(source));
  const result = (interrupted: boolean): RedriveResult => ({
    ...counts,
    dryRun: Boolean(options.dryRun),
    durationMs: clock.nowMs() - started,
    interrupted,
    unhandled,
    source: source.name,
    now: toIso(cutoffEpoch) as string,
    leaseSeconds: options.leaseSeconds,
    stuckAfterSeconds,
    skipLocked,
  });

  if (nothingHandled) return result(false);
  if (options.dryRun) {
    const cap = options.maxTasks ?? Number.POSITIVE_INFINITY;
    counts.recoveredStuck = await store.tasks.countClaimable(
      source,
      { kind: 'stuck', ...cutoffs, bizTypes, ids: options.ids },
      cap,
    );
    counts.claimed =
      counts.recoveredStuck +
      (await store.tasks.countClaimable(
        source,
        { kind: 'due', ...cutoffs, bizTypes, ids: options.ids },
        cap - counts.recoveredStuck,
      ));
    return result(false);
  }

  // A database failure stops every dispatch at once; the user's abort does too.
  const fatal = new AbortController();
  const abort = options.abort ? AbortSignal.any([options.abort, fatal.signal]) : fatal.signal;
  setMaxListeners(0, abort); // every request in flight listens to it
  const stopped = () => Boolean(options.stop?.aborted) || abort.aborted;
  const settler = new Settler(source, store.tasks, options.policies, counts, log, options.random, clock);
  const feeder = new Feeder(
    source,
    store.tasks,
    { ...options, ...cutoffs, bizTypes, skipLocked, stopped, clock },
    counts,
    log,
  );
  const progress = setInterval(() => options.onProgress?.({ ...counts }), PROGRESS_EVERY_MS);
  progress.unref();
  try {
    const heartbeat = new Heartbeat(source, options.leaseSeconds, options.heartbeat !== false, clock);
    await dispatchAll(feeder, options, settler, abort, fatal, heartbeat);
    // Claimed but never started (a stop): hand them back unattempted.
    for (const { task } of feeder.drain()) await settler.add({ task, release: 'stopped before dispatch' });
    await settler.close();
  } catch (error) {
    fatal.abort();
    settler.abandon();
    throw asRunError(error, source);
  } finally {
    clearInterval(progress);
  }
  return result(Boolean(options.stop?.aborted || options.abort?.aborted));
}

/** Runs `concurrency` workers that take tasks from the feeder until it runs dry; outcomes go to the settler. */
async function dispatchAll(
  feeder: Feeder,
  options: RedriveOptions,
  settler: Settler,
  abort: AbortSignal,
  fatal: AbortController,
  heartbeat: Heartbeat,
): Promise<void> {
  const leaseMs = options.leaseSeconds * 1000;
  const worker = async () => {
    for (;;) {
      const queued = await feeder.next();
      if (!queued) return;
      const { task } = queued;
      // A claim whose lease ran out while it waited in the queue may be taken over at any moment: do not start it.
      if ((options.clock ?? systemClock).nowMs() - queued.claimedAtMs >= leaseMs) {
        await settler.add({ task, release: 'lease expired before dispatch' });
        continue;
      }
      const dispatcher = options.dispatchers.forBizType(task.bizType);
      if (!dispatcher) {
        await settler.add({ task, release: `no handler for biz type ${task.bizType ?? '(none)'}` });
        continue;
      }
      let outcome: DispatchResult;
      try {
        outcome = await heartbeat.around(task, () =>
          dispatcher.dispatch(toDispatchTask(task), { signal: abort }),
        );
      } catch (error) {
        outcome = { outcome: classifyError(error), error: describeFailure(error) };
      }
      if (abort.aborted) await settler.add({ task, release: 'stopped while in flight' });
      else await settler.add({ task, result: outcome });
    }
  };
  const workers = Array.from({ length: Math.max(1, options.concurrency) }, () =>
    worker().catch((error: unknown) => {
      fatal.abort();
      throw error;
    }),
  );
  const settled = await Promise.allSettled(workers);
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure) throw failure.reason;
}

/** The task as a handler sees it; the payload parsed when it is JSON. */
export function toDispatchTask(task: ClaimedTask): DispatchTask {
  let payload: unknown = task.payloadValue ?? null;
  if (typeof task.payloadValue === 'string' || Buffer.isBuffer(task.payloadValue)) {
    try {
      payload = JSON.parse(task.payloadText as string);
    } catch {
      payload = task.payloadText;
    }
  }
  return {
    id: task.id,
    bizType: task.bizType,
    bizId: task.bizId,
    eventId: task.eventId,
    payload,
    payloadText: task.payloadText,
    attempt: task.attempts + 1,
  };
}

/** A failure mid-run becomes exit 3 with what happened to the claims. */
function asRunError(error: unknown, source: BoundSource): TaskreconError {
  const hint =
    'Every claim and every outcome is its own transaction, so nothing was half-written. Tasks this run had claimed stay ' +
    'processing until their lease (--lease) passes; the next run recovers them.';
  if (error instanceof TaskreconError)
    return new TaskreconError(error.message, { code: error.code, hint, cause: error });
  return new TaskreconError(`redrive stopped on ${source.db.display}: ${describeFailure(error)}`, {
    code: 'CONNECTION',
    hint,
    cause: error,
  });
}

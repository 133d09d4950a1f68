import { randomUUID } from 'node:crypto';
import type { TaskId } from '../core/task.js';
import { maskDsnText } from '../db/dsn.js';
import type { CompensateAction, CompensateResult } from '../verbs/compensate/index.js';
import type { ListQuery } from './filters.js';
import { newSecret } from './security/secret.js';

/**
 * Bulk actions on a filtered list go through a preview that freezes the selection: the exact ids
 * matching at that moment, kept here on the server under the preview's id. Applying works through
 * those ids only, a batch at a time; tasks that match the filter later are never touched.
 */

/** At most this many ids are frozen by one preview (5 bytes or so each; a larger set: narrow the filter or use the CLI). */
export const MAX_FROZEN = 200_000;
/** Previews kept; the oldest one that is not running is dropped beyond that. */
const MAX_PREVIEWS = 20;

export type BulkState = 'preview' | 'running' | 'done' | 'failed';

export interface BulkRun {
  id: string;
  action: CompensateAction;
  query: ListQuery;
  ids: readonly TaskId[];
  frozenAt: string;
  state: BulkState;
  reason?: string;
  runId?: string;
  done: number;
  applied: number;
  result?: CompensateResult;
  error?: string;
}

export type FrozenRunner = (
  run: BulkRun,
  onProgress: (done: number, applied: number) => void,
) => Promise<CompensateResult>;

export class BulkRuns {
  private readonly runs = new Map<string, BulkRun>();
  /** Set on shutdown: runs stop after the batch in hand. */
  stopping = false;

  stop(): void {
    this.stopping = true;
  }

  freeze(action: CompensateAction, query: ListQuery, ids: readonly TaskId[]): BulkRun {
    const run: BulkRun = {
      id: newSecret().slice(0, 16),
      action,
      query,
      ids,
      frozenAt: new Date().toISOString(),
      state: 'preview',
      done: 0,
      applied: 0,
    };
    this.runs.set(run.id, run);
    if (this.runs.size > MAX_PREVIEWS) {
      const idle = [...this.runs.values()].find((r) => r.state !== 'running');
      if (idle) this.runs.delete(idle.id);
    }
    return run;
  }

  get(id: string): BulkRun | undefined {
    return this.runs.get(id);
  }

  /** Starts applying a preview in the background (once); progress is read back with get(). */
  start(run: BulkRun, reason: string, runner: FrozenRunner): void {
    if (run.state !== 'preview') return;
    run.state = 'running';
    run.reason = reason;
    run.runId = randomUUID();
    runner(run, (done, applied) => {
      run.done = done;
      run.applied = applied;
    }).then(
      (result) => {
        run.result = result;
        run.done = result.matched;
        run.applied = result.applied;
        run.state = 'done';
      },
      (error: unknown) => {
        run.error = maskDsnText((error as Error)?.message ?? String(error));
        run.state = 'failed';
      },
    );
  }

  /** Whether any run is still writing (the server waits for it before closing the database). */
  running(): BulkRun[] {
    return [...this.runs.values()].filter((r) => r.state === 'running');
  }
}

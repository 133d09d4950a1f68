import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { store } from '../db/port/index.js';
import type { Db } from '../db/types.js';
import { usageError } from '../errors.js';
import {
  findingLevel,
  type BrokerReport,
  type QueueFinding,
  type QueueSnapshot,
  type QueueStats,
} from './types.js';

/**
 * Snapshots of queue depths between runs, for `stale-queue` (Redis: a non-empty queue whose length
 * has not changed since a snapshot at least `staleAfter` old) and `backlog-growing` (RabbitMQ: ready
 * rose over the last runs). Kept in `taskrecon_queue_snapshot` when there is a database, else in a
 * `--state FILE` (JSON). The decisions are pure functions of the history.
 */

/** Default `staleAfter`: a queue whose length has not moved for a day is nobody's. */
export const DEFAULT_STALE_AFTER_SECONDS = 24 * 3600;
/** Runs whose ready count must have risen one after the other for `backlog-growing` (with this one). */
export const GROWING_RUNS = 3;
/** Snapshots older than the look-back plus this are pruned. */
const KEEP_EXTRA_SECONDS = 7 * 24 * 3600;

/** What the history says about one queue. */
export interface QueueHistory {
  /** The newest snapshot at least `staleAfter` old. */
  anchor: { depth: number; atEpoch: number } | null;
  /** Smallest and largest depth of the snapshots newer than the anchor's cutoff. */
  after: { lo: number; hi: number } | null;
  /** The ready counts of the newest snapshots, newest first. */
  recentReady: number[];
}

export function depthOf(stats: QueueStats): number {
  return (stats.ready ?? 0) + (stats.delayed ?? 0) + (stats.reserved ?? 0) + (stats.unacked ?? 0);
}

/** Non-empty, and the same length at the anchor and at every snapshot since. */
export function isStale(depth: number, history: QueueHistory): boolean {
  if (depth === 0 || !history.anchor || history.anchor.depth !== depth) return false;
  return !history.after || (history.after.lo === depth && history.after.hi === depth);
}

/** Ready rose at every one of the last runs, this one included. */
export function isGrowing(ready: number, recentReady: readonly number[]): boolean {
  const series = [ready, ...recentReady.slice(0, GROWING_RUNS - 1)];
  if (series.length < GROWING_RUNS) return false;
  for (let i = 0; i + 1 < series.length; i++)
    if ((series[i] as number) <= (series[i + 1] as number)) return false;
  return true;
}

/** The snapshot findings of one broker's report. */
export function snapshotFindings(
  report: BrokerReport,
  histories: ReadonlyMap<string, QueueHistory>,
  staleAfterSeconds: number,
): QueueFinding[] {
  const out: QueueFinding[] = [];
  for (const q of report.queues) {
    const history = histories.get(q.name);
    if (!history) continue;
    const depth = depthOf(q);
    if (report.kind === 'redis' && isStale(depth, history)) {
      const hours = Math.round(staleAfterSeconds / 360) / 10;
      out.push({
        code: 'stale-queue',
        level: findingLevel('stale-queue'),
        broker: report.name,
        queue: q.name,
        count: depth,
        message: `queue ${q.name} has held ${depth} job(s) unchanged for at least ${hours}h: nothing consumes or feeds it`,
        hint: `Check that a worker consumes ${q.name} (a renamed queue?); \`taskrecon queues move --from ${q.name} --to QUEUE\` moves its jobs.`,
      });
    }
    if (report.kind === 'rabbitmq' && q.ready !== null && isGrowing(q.ready, history.recentReady)) {
      out.push({
        code: 'backlog-growing',
        level: findingLevel('backlog-growing'),
        broker: report.name,
        queue: q.name,
        count: q.ready,
        message: `queue ${q.name}: ready rose over the last ${GROWING_RUNS} runs (${[q.ready, ...history.recentReady.slice(0, GROWING_RUNS - 1)].reverse().join(' → ')})`,
        hint: 'Consumers are slower than producers or stuck: check their count, their errors and the prefetch.',
      });
    }
  }
  return out;
}

/** Where snapshots live. */
export interface SnapshotStore {
  readonly where: string;
  history(
    broker: string,
    queues: readonly string[],
    staleAfterSeconds: number,
    nowEpoch: number,
  ): Promise<Map<string, QueueHistory>>;
  append(snapshots: readonly QueueSnapshot[], staleAfterSeconds: number, nowEpoch: number): Promise<void>;
}

export function snapshotsOf(report: BrokerReport, nowEpoch: number): QueueSnapshot[] {
  return report.queues.map((q) => ({
    broker: report.name,
    queue: q.name,
    depth: depthOf(q),
    ready: q.ready ?? 0,
    atEpoch: Math.floor(nowEpoch),
  }));
}

/** The history of one queue, from its snapshots (any order). Pure. */
export function historyOf(snapshots: readonly QueueSnapshot[], cutoff: number): QueueHistory {
  const sorted = [...snapshots].sort((a, b) => a.atEpoch - b.atEpoch);
  const before = sorted.filter((s) => s.atEpoch <= cutoff);
  const after = sorted.filter((s) => s.atEpoch > cutoff);
  const anchor = before[before.length - 1];
  return {
    anchor: anchor ? { depth: anchor.depth, atEpoch: anchor.atEpoch } : null,
    after: after.length
      ? { lo: Math.min(...after.map((s) => s.depth)), hi: Math.max(...after.map((s) => s.depth)) }
      : null,
    recentReady: sorted
      .slice(-GROWING_RUNS)
      .reverse()
      .map((s) => s.ready),
  };
}

/** Snapshots in taskrecon_queue_snapshot. */
export class DbSnapshotStore implements SnapshotStore {
  constructor(private readonly db: Db) {}

  get where(): string {
    return `taskrecon_queue_snapshot in ${this.db.display}`;
  }

  async history(broker: string, queues: readonly string[], staleAfterSeconds: number, nowEpoch: number) {
    const cutoff = nowEpoch - staleAfterSeconds;
    const anchors = new Map(
      (await store.state.selectAnchors(this.db, broker, cutoff)).map((a) => [a.queue, a]),
    );
    const ranges = new Map(
      (await store.state.selectDepthRangeAfter(this.db, broker, cutoff)).map((r) => [r.queue, r]),
    );
    const out = new Map<string, QueueHistory>();
    for (const queue of queues) {
      const anchor = anchors.get(queue);
      const range = ranges.get(queue);
      const recent = await store.state.selectRecent(this.db, broker, queue, GROWING_RUNS - 1);
      out.set(queue, {
        anchor: anchor ? { depth: anchor.depth, atEpoch: anchor.atEpoch } : null,
        after: range ? { lo: range.lo, hi: range.hi } : null,
        recentReady: recent.map((r) => r.ready),
      });
    }
    return out;
  }

  async append(
    snapshots: readonly QueueSnapshot[],
    staleAfterSeconds: number,
    nowEpoch: number,
  ): Promise<void> {
    await store.state.insertSnapshots(this.db, snapshots);
    for (const broker of new Set(snapshots.map((s) => s.broker)))
      await store.state.pruneSnapshots(
        this.db,
        broker,
        nowEpoch - 2 * staleAfterSeconds - KEEP_EXTRA_SECONDS,
      );
  }
}

interface StateFile {
  version: 1;
  snapshots: QueueSnapshot[];
}

/** Snapshots in a JSON file (`--state FILE`), for runs without a database. Written atomically (rename). */
export class FileSnapshotStore implements SnapshotStore {
  private state: StateFile | undefined;

  constructor(private readonly path: string) {}

  get where(): string {
    return this.path;
  }

  private load(): StateFile {
    if (this.state) return this.state;
    if (!existsSync(this.path)) return (this.state = { version: 1, snapshots: [] });
    try {
      const parsed = JSON.parse(readFileSync(this.path, 'utf8')) as Partial<StateFile>;
      if (!Array.isArray(parsed.snapshots)) throw new Error('no snapshots array');
      return (this.state = { version: 1, snapshots: parsed.snapshots });
    } catch (error) {
      throw usageError(
        `--state ${this.path} is not a taskrecon state file: ${(error as Error).message}`,
        'Give a new path (it is created), or the file an earlier `taskrecon queues --state` wrote.',
      );
    }
  }

  async history(broker: string, queues: readonly string[], staleAfterSeconds: number, nowEpoch: number) {
    const all = this.load().snapshots.filter((s) => s.broker === broker);
    const out = new Map<string, QueueHistory>();
    for (const queue of queues)
      out.set(
        queue,
        historyOf(
          all.filter((s) => s.queue === queue),
          nowEpoch - staleAfterSeconds,
        ),
      );
    return out;
  }

  async append(
    snapshots: readonly QueueSnapshot[],
    staleAfterSeconds: number,
    nowEpoch: number,
  ): Promise<void> {
    const state = this.load();
    const keepFrom = nowEpoch - 2 * staleAfterSeconds - KEEP_EXTRA_SECONDS;
    state.snapshots = [...state.snapshots.filter((s) => s.atEpoch >= keepFrom), ...snapshots];
    const temp = `${this.path}.tmp-${process.pid}`;
    writeFileSync(temp, `${JSON.stringify(state)}\n`);
    renameSync(temp, this.path);
  }
}

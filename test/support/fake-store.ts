import type { LocalClock } from '../../src/core/clock.js';
import { TRANSITIONS } from '../../src/core/state-machine.js';
import type { LogicalStatus, TaskId } from '../../src/core/task.js';
import type { BoundSource } from '../../src/db/bind-source.js';
import { mysqlDialect } from '../../src/db/engines/mysql/dialect.js';
import { asyncTask } from '../../src/db/profiles/builtin.js';
import type {
  AuditInsert,
  ClaimBatch,
  ClaimedTask,
  ClaimFence,
  ClaimRequest,
  ClaimStore,
  CompensateStore,
  SettleStore,
  TransitionWrite,
} from '../../src/db/port/index.js';
import { TaskSql } from '../../src/db/task-sql.js';
import type { Queryable, Row } from '../../src/db/types.js';

/**
 * An in-memory task table behind the narrow store interfaces of redrive's feeder and settler and of
 * compensate's batches: claims, fenced transitions, guarded deletes and the audit log, with
 * transactions that roll everything back when their function throws. Every call is logged, so a
 * test can tell what was read, written and committed. No database, no timers.
 */

export interface FakeTask {
  id: number;
  status: LogicalStatus;
  attempts: number;
  /** next_retry_time, epoch seconds: the due time of a pending row, the lease expiry of a processing one. */
  nextRetryEpoch: number;
  bizType: string;
  eventId: string;
  lastError: string | null;
}

/** A source bound to the async-task profile whose connection refuses any use: statements go through the store. */
export function fakeSource(): BoundSource {
  const db = new Proxy(
    { dialect: mysqlDialect, display: 'fake://tasks' },
    {
      get(target, key) {
        if (key in target) return target[key as keyof typeof target];
        if (key === 'then') return undefined;
        throw new Error(`the source's connection was used directly (${String(key)}), not through the store`);
      },
    },
  );
  return {
    name: 'tasks',
    profile: asyncTask,
    db: db as unknown as BoundSource['db'],
    sql: new TaskSql(mysqlDialect, asyncTask, {
      nextRetryAt: 'datetime',
      updatedAt: 'datetime',
      createdAt: 'datetime',
    }),
    columns: [
      { name: 'last_error', dataType: 'varchar', columnType: 'varchar(512)', maxLength: 512, nullable: true },
    ],
    problems: [],
  };
}

/** What a transaction's function gets: a token (the fake keeps its state itself). */
const TX = { fakeTransaction: true } as unknown as Queryable;

const STATUS_CODE: Record<LogicalStatus, number> = {
  pending: 0,
  processing: 1,
  success: 2,
  failed: 3,
  compensated: 4,
};

export class FakeStore implements ClaimStore, SettleStore {
  readonly rows = new Map<number, FakeTask>();
  readonly audit: AuditInsert[] = [];
  /** Every call, in order: `claim:due`, `transition:retry:7`, `select:1,2`, `commit`, `rollback` … */
  readonly calls: string[] = [];
  /** When each claim ran, on the local clock. */
  readonly claimedAtMs: number[] = [];
  readonly claimRequests: ClaimRequest[] = [];
  /** The database clock, epoch seconds. */
  nowEpoch = 1_800_000_000;
  /** Errors the next claims throw, one per claim. */
  readonly claimFailures: Error[] = [];
  /** An error the next write of a transition (or a grouped success) throws. */
  writeFailure: Error | undefined;
  /** Runs after a compensation batch has read its rows (another writer, bypassing the locks). */
  afterSelect: (() => void) | undefined;
  private inTransaction = false;

  constructor(private readonly clock?: LocalClock) {}

  add(...tasks: Array<Partial<FakeTask> & Pick<FakeTask, 'id' | 'status'>>): this {
    for (const t of tasks)
      this.rows.set(t.id, {
        attempts: 0,
        nextRetryEpoch: this.nowEpoch - 60,
        bizType: 'coupon',
        eventId: `evt-${t.id}`,
        lastError: null,
        ...t,
      });
    return this;
  }

  /** The statements that changed something (claims, transitions, deletes, audit rows). */
  writes(): string[] {
    return this.calls.filter((c) => /^(claim|transition|delete|audit):/.test(c));
  }

  /** Another worker takes over the row's claim: a new lease and one more attempt. */
  takeOver(id: number): void {
    const row = this.row(id);
    row.attempts += 1;
    row.nextRetryEpoch += 600;
  }

  /** A claim of rows already processing (what the feeder would have handed out). */
  claimed(id: number): ClaimedTask {
    const row = this.row(id);
    return {
      id: row.id,
      bizType: row.bizType,
      bizId: null,
      eventId: row.eventId,
      payloadText: '{}',
      payloadValue: '{}',
      attempts: row.attempts,
      rowMaxAttempts: null,
      recovered: false,
      fence: { leaseUntilEpoch: row.nextRetryEpoch, attempts: row.attempts },
    };
  }

  row(id: number): FakeTask {
    const row = this.rows.get(id);
    if (!row) throw new Error(`no task ${id}`);
    return row;
  }

  // The port.

  async transaction<T>(_source: BoundSource, fn: (tx: Queryable) => Promise<T>): Promise<T> {
    if (this.inTransaction) throw new Error('nested transaction');
    const rows = new Map([...this.rows].map(([id, row]) => [id, { ...row }]));
    const audited = this.audit.length;
    this.inTransaction = true;
    try {
      const result = await fn(TX);
      this.calls.push('commit');
      return result;
    } catch (error) {
      this.rows.clear();
      for (const [id, row] of rows) this.rows.set(id, row);
      this.audit.splice(audited);
      this.calls.push('rollback');
      throw error;
    } finally {
      this.inTransaction = false;
    }
  }

  async claimBatch(_source: BoundSource, request: ClaimRequest): Promise<ClaimBatch> {
    this.claimRequests.push(request);
    this.claimedAtMs.push(this.clock?.nowMs() ?? 0);
    this.calls.push(`claim:${request.kind}`);
    const failure = this.claimFailures.shift();
    if (failure) throw failure;
    const after = request.cursor;
    const page = [...this.rows.values()]
      .filter((r) =>
        request.kind === 'due'
          ? r.status === 'pending' && r.nextRetryEpoch <= request.cutoffEpoch
          : r.status === 'processing' && r.nextRetryEpoch <= request.stuckCutoffEpoch,
      )
      .filter((r) => !request.bizTypes || request.bizTypes.includes(r.bizType))
      .filter((r) => !request.ids || request.ids.map(String).includes(String(r.id)))
      .sort((a, b) => a.nextRetryEpoch - b.nextRetryEpoch || a.id - b.id)
      .filter(
        (r) =>
          !after ||
          r.nextRetryEpoch > after.nextRetryEpoch ||
          (r.nextRetryEpoch === after.nextRetryEpoch && r.id > Number(after.id)),
      )
      .slice(0, request.limit);
    const last = page.at(-1);
    const cursor = last && { nextRetryEpoch: last.nextRetryEpoch, id: last.id };
    const leaseUntilEpoch = this.nowEpoch + request.leaseSeconds;
    const tasks = page.map((row) => {
      if (request.kind === 'stuck') row.attempts += 1;
      row.status = 'processing';
      row.nextRetryEpoch = leaseUntilEpoch;
      return { ...this.claimed(row.id), recovered: request.kind === 'stuck' };
    });
    return { tasks, scanned: page.length, cursor, leaseUntilEpoch };
  }

  async heldClaims(
    _tx: Queryable,
    _source: BoundSource,
    tasks: readonly ClaimedTask[],
  ): Promise<{ nowEpoch: number; ids: Set<string> }> {
    this.calls.push(`held:${tasks.map((t) => t.id).join(',')}`);
    const ids = new Set(
      tasks.filter((t) => this.holds(this.rows.get(Number(t.id)), t.fence)).map((t) => String(t.id)),
    );
    return { nowEpoch: this.nowEpoch, ids };
  }

  async txNow(): Promise<number> {
    return this.nowEpoch;
  }

  async applyTransition(_q: Queryable, _source: BoundSource, write: TransitionWrite): Promise<number> {
    const ids = (Array.isArray(write.id) ? write.id : [write.id]) as TaskId[];
    this.calls.push(`transition:${write.transition}:${ids.join(',')}`);
    if (this.writeFailure) throw this.writeFailure;
    const rule = TRANSITIONS[write.transition];
    const expect: readonly LogicalStatus[] = write.expect ?? rule.from;
    let changed = 0;
    for (const id of ids) {
      const row = this.rows.get(Number(id));
      if (!row || !expect.includes(row.status)) continue;
      if (write.fence && !this.holds(row, write.fence)) continue;
      row.status = rule.to;
      if (write.attempts !== undefined) row.attempts = write.attempts;
      if (write.nextRetryAt !== undefined)
        row.nextRetryEpoch = write.nextRetryAt === 'now' ? this.nowEpoch : write.nextRetryAt;
      if (write.lastError !== undefined) row.lastError = write.lastError;
      changed++;
    }
    return changed;
  }

  succeedClaimed(
    q: Queryable,
    source: BoundSource,
    ids: readonly TaskId[],
    fence: ClaimFence,
  ): Promise<number> {
    return this.applyTransition(q, source, { transition: 'succeed', id: ids, fence });
  }

  /** Compensate's view: the task statements and the audit log. */
  compensateStore(): CompensateStore {
    return {
      tasks: {
        transaction: (source, fn) => this.transaction(source, fn),
        applyTransition: (q, source, write) => this.applyTransition(q, source, write),
        selectWholeRows: async (q, _source, ids, lock) => {
          this.calls.push(`select${lock ? ' for update' : ''}:${ids.join(',')}`);
          const rows = ids.flatMap((id) => {
            const row = this.rows.get(Number(id));
            return row ? [wholeRow(row)] : [];
          });
          this.afterSelect?.();
          return rows;
        },
        selectWrittenColumns: async (_q, _source, ids) =>
          ids.flatMap((id) => {
            const row = this.rows.get(Number(id));
            if (!row) return [];
            const { id: key, status, retry_count, next_retry_time, last_error } = wholeRow(row);
            return [{ id: key, status, retry_count, next_retry_time, last_error }];
          }),
        deleteGuarded: async (_q, _source, ids, expect) => {
          this.calls.push(`delete:${ids.join(',')}`);
          let deleted = 0;
          for (const id of ids) {
            const row = this.rows.get(Number(id));
            if (row && expect.includes(row.status)) {
              this.rows.delete(row.id);
              deleted++;
            }
          }
          return deleted;
        },
        executionWrite: () =>
          Promise.reject(new Error('the fake store holds no job system kept by executions')),
      },
      audit: {
        insertBatch: async (_tx, _dialect, entries) => {
          if (!this.inTransaction) throw new Error('audit rows written outside a transaction');
          this.calls.push(`audit:${entries.map((e) => e.taskId).join(',')}`);
          this.audit.push(...entries);
        },
      },
    };
  }

  private holds(row: FakeTask | undefined, fence: ClaimFence): boolean {
    return (
      row !== undefined &&
      row.status === 'processing' &&
      row.nextRetryEpoch === fence.leaseUntilEpoch &&
      (fence.attempts === null || row.attempts === fence.attempts)
    );
  }
}

/** The row as SELECT * returns it from an async_task table. */
function wholeRow(row: FakeTask): Row {
  return {
    id: row.id,
    biz_type: row.bizType,
    biz_id: null,
    event_id: row.eventId,
    payload: '{}',
    status: STATUS_CODE[row.status],
    retry_count: row.attempts,
    next_retry_time: row.nextRetryEpoch,
    last_error: row.lastError,
  };
}

/** Lets every pending promise callback run (the next turn of the event loop; no time passes). */
export function settled(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

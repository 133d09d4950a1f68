// Over 300 lines: every claim, fence and settle statement of redrive in one place, so their guards can be read side by side.
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../bind-source.js';
import { and, type Fragment } from '../fragment.js';
import { placeholders, toInt, toText } from '../task-sql.js';
import type { Queryable } from '../types.js';
import { probeSkipLocked } from './doctor.js';
import type { ClaimFence } from './transitions.js';

/**
 * Claims: a worker takes a batch of due pending rows (`claim`) or processing rows whose
 * lease has expired (`recover`) in one short READ COMMITTED transaction:
 *
 *   1. read the database clock (the lease starts now, whatever the run's fixed cutoff);
 *   2. SELECT the next page of candidates by (next_retry_time, id) after the cursor, locking them —
 *      FOR UPDATE SKIP LOCKED where the server has it, so workers spread over the backlog instead
 *      of queueing on the same rows; plain FOR UPDATE elsewhere; nothing on SQLite, whose
 *      BEGIN IMMEDIATE already admits one writer;
 *   3. keep the rows that, read under the lock, are still claimable (a locking read sees the latest
 *      committed row, so a row another worker claimed meanwhile drops out here);
 *   4. one guarded UPDATE of those ids that re-states the expected status and writes the fence:
 *      status processing, next_retry_time = now + lease, updated_at = now, and for a takeover
 *      attempts + 1 (the abandoned attempt counts, so a crash loop still ends `failed`).
 *
 * The rows changed must be exactly the rows kept; anything else rolls the claim back, and the page
 * is claimed again from the same cursor (rows another worker took no longer match). SKIP LOCKED is
 * an optimisation only: correctness comes from the guard and the counted rows, never from a lock
 * taken by the SELECT. TiDB accepts FOR UPDATE SKIP LOCKED without locking what it reads
 * (pingcap/tidb#69720), so two workers there can read the same candidates; the second one's UPDATE
 * waits for the first's row locks, then re-reads the rows as committed, matches none that moved on,
 * changes fewer rows than it kept, and claims again. No row is claimed twice on any engine.
 *
 * No statement here is an `UPDATE … LIMIT`: a page is chosen by a SELECT … ORDER BY … LIMIT and
 * written by its id list, because Vitess (≥ 22) applies one global LIMIT to a scatter
 * `UPDATE … LIMIT` across shards (vitessio/vitess#19790).
 */

/**
 * How often a page is claimed again after other workers won some of its rows, before giving up.
 * Every lost race is another worker's won claim, so the backlog moves on; the pause between
 * attempts is jittered so that the same workers do not keep meeting on the same rows.
 */
const CLAIM_ATTEMPTS = 10;
const RACE_PAUSE_MS = 20;

/** The claim's UPDATE changed fewer rows than it kept: another worker claimed some meanwhile. */
export class LostClaimRace extends Error {
  readonly code = 'CLAIM_RACE';
}

export type ClaimKind = 'due' | 'stuck';

export interface ClaimCursor {
  nextRetryEpoch: number;
  id: TaskId;
}

export interface ClaimRequest {
  kind: ClaimKind;
  limit: number;
  /** The run's fixed "now" (epoch seconds): due means next_retry_time ≤ this. */
  cutoffEpoch: number;
  /** Stuck means updated_at ≤ this (now − stuck-after), when the table has updated_at. */
  stuckCutoffEpoch: number;
  leaseSeconds: number;
  bizTypes?: readonly string[];
  /** Only these task ids (compensate --now drives the tasks it has just retried). */
  ids?: readonly TaskId[];
  cursor?: ClaimCursor;
  skipLocked: boolean;
}

export interface ClaimedTask {
  id: TaskId;
  bizType: string | null;
  bizId: string | null;
  eventId: string | null;
  payloadText: string | null;
  /** The payload as the driver returned it (MySQL 8 parses JSON columns). */
  payloadValue: unknown;
  /** Failed attempts counted so far, after the claim (a takeover counted one more). */
  attempts: number;
  rowMaxAttempts: number | null;
  recovered: boolean;
  fence: ClaimFence;
}

export interface ClaimBatch {
  tasks: ClaimedTask[];
  /** Rows the page read (claimed or not): 0 means the backlog of this kind is exhausted. */
  scanned: number;
  /** Where the next page starts. */
  cursor: ClaimCursor | undefined;
  leaseUntilEpoch: number;
}

/**
 * Whether the server takes FOR UPDATE SKIP LOCKED on this table (MariaDB 10.6+, MySQL 8). Proven
 * by running it rather than by version, so a proxy that rejects it (Vitess) is detected too.
 * In: the source. Out: true/false. Side effects: none (reads no row).
 */
export async function detectSkipLocked(source: BoundSource): Promise<boolean> {
  if (!source.db.engine.mayProbeSkipLocked) return false;
  const id = source.sql.expr('id') as string;
  try {
    await source.db.transaction((tx) => probeSkipLocked(tx, source.sql.table, id));
    return true;
  } catch {
    return false;
  }
}

/** The predicate of claimable rows of a kind, as of the run's fixed cutoffs. */
export function claimableWhere(
  source: BoundSource,
  request: Pick<ClaimRequest, 'kind' | 'cutoffEpoch' | 'stuckCutoffEpoch' | 'bizTypes' | 'ids'>,
): Fragment {
  const { sql } = source;
  const parts: Fragment[] = [];
  if (request.kind === 'due') {
    parts.push(sql.statusIn(['pending']), sql.timeCompare('nextRetryAt', '<=', request.cutoffEpoch));
  } else {
    // The lease a claim wrote has passed, and nobody touched the row for stuck-after. A table with no
    // updated_at (job_retries) cannot say when a row was touched: there the next-retry time (a claim's
    // lease, or the due time a foreign worker started from) must be stuck-after in the past.
    parts.push(sql.statusIn(['processing']));
    if (sql.has('updatedAt')) {
      parts.push(
        sql.timeCompare('nextRetryAt', '<=', request.cutoffEpoch),
        sql.timeCompare('updatedAt', '<=', request.stuckCutoffEpoch),
      );
    } else {
      parts.push(sql.timeCompare('nextRetryAt', '<=', request.stuckCutoffEpoch));
    }
  }
  if (request.bizTypes?.length) {
    parts.push({
      sql: `${sql.expr('bizType')} IN (${placeholders(request.bizTypes)})`,
      params: [...request.bizTypes],
    });
  }
  if (request.ids?.length) {
    parts.push({
      sql: `${sql.expr('id')} IN (${placeholders(request.ids)})`,
      params: [...request.ids],
    });
  }
  return and(parts);
}

interface CandidateRow {
  id: unknown;
  bizType: unknown;
  bizId: unknown;
  eventId: unknown;
  payload: unknown;
  rawStatus: unknown;
  attempts: unknown;
  maxAttempts: unknown;
  nrt: unknown;
  upd: unknown;
}

/**
 * Claims the next page of one kind.
 * In: the request (kind, cutoffs, lease, page size, cursor). Out: the claimed tasks with their fences,
 * how many rows the page read, the next cursor.
 * Side effects: one transaction — SELECT … FOR UPDATE [SKIP LOCKED] and one UPDATE of the claimed ids.
 */
export async function claimBatch(source: BoundSource, request: ClaimRequest): Promise<ClaimBatch> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await claimPage(source, request);
    } catch (error) {
      if (!(error instanceof LostClaimRace) || attempt >= CLAIM_ATTEMPTS) throw error;
      await new Promise((r) => setTimeout(r, Math.random() * RACE_PAUSE_MS * attempt));
    }
  }
}

/** One attempt at a page: one transaction, rolled back (LostClaimRace) when the guard changed fewer rows than kept. */
async function claimPage(source: BoundSource, request: ClaimRequest): Promise<ClaimBatch> {
  const { sql, db } = source;
  const id = sql.expr('id') as string;
  const nrt = sql.expr('nextRetryAt') as string;
  const nrtParam = db.dialect.epochParam(sql.timeTypes.nextRetryAt ?? 'datetime');
  const where = and([
    claimableWhere(source, request),
    request.cursor
      ? {
          sql: `${nrt} > ${nrtParam} OR (${nrt} = ${nrtParam} AND ${id} > ?)`,
          params: [request.cursor.nextRetryEpoch, request.cursor.nextRetryEpoch, request.cursor.id],
        }
      : { sql: '1=1', params: [] },
  ]);
  const nul = 'NULL';
  const select = [
    `${id} AS id`,
    `${sql.expr('bizType') ?? nul} AS bizType`,
    `${sql.expr('bizId') ?? nul} AS bizId`,
    `${sql.expr('eventId') ?? nul} AS eventId`,
    `${sql.expr('payload') ?? nul} AS payload`,
    `${sql.rawStatusExpr()} AS rawStatus`,
    `${sql.expr('attempts') ?? nul} AS attempts`,
    `${sql.expr('maxAttempts') ?? nul} AS maxAttempts`,
    `${sql.epoch('nextRetryAt')} AS nrt`,
    `${sql.epoch('updatedAt') ?? nul} AS upd`,
  ].join(', ');
  const lock = db.dialect.forUpdate
    ? `${db.dialect.forUpdate}${request.skipLocked ? ' SKIP LOCKED' : ''}`
    : '';
  const recover = request.kind === 'stuck';

  return db.transaction(async (tx) => {
    const now = await txNow(tx, source);
    const leaseUntilEpoch = now + request.leaseSeconds;
    const rows = await tx.query<CandidateRow>(
      `SELECT ${select} FROM ${sql.table} WHERE ${where.sql} ORDER BY ${nrt}, ${id} LIMIT ${Math.trunc(request.limit)}${lock}`,
      where.params,
    );
    const last = rows[rows.length - 1];
    const cursor = last ? { nextRetryEpoch: Number(last.nrt), id: sql.id(last.id) } : request.cursor;
    const kept = rows.filter((r) => stillClaimable(source, request, r));
    if (kept.length === 0) return { tasks: [], scanned: rows.length, cursor, leaseUntilEpoch };
    const ids = kept.map((r) => sql.id(r.id));
    const changed = await markClaimed(tx, source, request, ids, leaseUntilEpoch, recover);
    if (changed !== ids.length) {
      throw new LostClaimRace(
        `claim changed ${changed} of the ${ids.length} rows it had read: another worker claimed some first; rolled back`,
      );
    }
    const tasks = kept.map((r): ClaimedTask => {
      const before = toInt(r.attempts) ?? 0;
      const attempts = recover ? before + 1 : before;
      const hasAttempts = sql.has('attempts');
      return {
        id: sql.id(r.id),
        bizType: toText(r.bizType),
        bizId: toText(r.bizId),
        eventId: toText(r.eventId),
        payloadText: payloadText(r.payload),
        payloadValue: r.payload,
        attempts,
        rowMaxAttempts: toInt(r.maxAttempts),
        recovered: recover,
        fence: { leaseUntilEpoch, attempts: hasAttempts ? attempts : null },
      };
    });
    return { tasks, scanned: rows.length, cursor, leaseUntilEpoch };
  });
}

/**
 * Which claimed rows still carry their claim, read and locked inside the outcome's transaction.
 * In: the tasks (with their fences). Out: the database now and the ids (as strings) still held.
 * Side effects: locks those rows (FOR UPDATE; SQLite's write transaction already excludes others).
 */
export async function heldClaims(
  tx: Queryable,
  source: BoundSource,
  tasks: readonly ClaimedTask[],
): Promise<{ nowEpoch: number; ids: Set<string> }> {
  const { sql } = source;
  const nowEpoch = await txNow(tx, source);
  const ids = new Set<string>();
  if (tasks.length === 0) return { nowEpoch, ids };
  const where = and([
    { sql: `${sql.expr('id')} IN (${placeholders(tasks)})`, params: tasks.map((t) => t.id) },
    sql.statusIn(['processing']),
  ]);
  const rows = await tx.query<{ id: unknown; nrt: unknown; attempts: unknown }>(
    `SELECT ${sql.expr('id')} AS id, ${sql.epoch('nextRetryAt')} AS nrt, ${sql.expr('attempts') ?? 'NULL'} AS attempts
       FROM ${sql.table} WHERE ${where.sql}${source.db.dialect.forUpdate}`,
    where.params,
  );
  const byId = new Map(rows.map((r) => [String(sql.id(r.id)), r]));
  for (const task of tasks) {
    const row = byId.get(String(task.id));
    if (!row || Number(row.nrt) !== task.fence.leaseUntilEpoch) continue;
    if (task.fence.attempts !== null && toInt(row.attempts) !== task.fence.attempts) continue;
    ids.add(String(task.id));
  }
  return { nowEpoch, ids };
}

/**
 * How many rows a claim of this kind would take, for a dry run (capped at `cap`).
 * In: the kind, cutoffs and biz types. Out: the count. Side effects: none (one read).
 */
export async function countClaimable(
  source: BoundSource,
  request: Pick<ClaimRequest, 'kind' | 'cutoffEpoch' | 'stuckCutoffEpoch' | 'bizTypes' | 'ids'>,
  cap: number,
): Promise<number> {
  const where = claimableWhere(source, request);
  const limit = Number.isFinite(cap) ? ` LIMIT ${Math.trunc(cap)}` : '';
  const rows = await source.db.query<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM (SELECT 1 AS x FROM ${source.sql.table} WHERE ${where.sql}${limit}) AS claimable`,
    where.params,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Due or stuck rows whose biz type has no handler (none of `handled`), per biz type.
 * In: cutoffs, the handled biz types, an optional --biz-type filter. Out: counts per biz type.
 * Side effects: none (one read).
 */
export async function countUnhandled(
  source: BoundSource,
  cutoffs: Pick<ClaimRequest, 'cutoffEpoch' | 'stuckCutoffEpoch'>,
  handled: readonly string[],
  only: readonly string[] | undefined,
): Promise<Array<{ bizType: string | null; count: number }>> {
  const { sql } = source;
  const due = claimableWhere(source, { kind: 'due', ...cutoffs });
  const stuck = claimableWhere(source, { kind: 'stuck', ...cutoffs });
  const bizType = sql.expr('bizType');
  const parts: Fragment[] = [
    { sql: `(${due.sql}) OR (${stuck.sql})`, params: [...due.params, ...stuck.params] },
  ];
  if (bizType && handled.length > 0) {
    parts.push({
      sql: `${bizType} IS NULL OR ${bizType} NOT IN (${placeholders(handled)})`,
      params: [...handled],
    });
  }
  if (bizType && only?.length)
    parts.push({ sql: `${bizType} IN (${placeholders(only)})`, params: [...only] });
  const where = and(parts);
  const rows = await source.db.query<{ bizType: unknown; n: unknown }>(
    `SELECT ${bizType ?? 'NULL'} AS bizType, COUNT(*) AS n FROM ${sql.table} WHERE ${where.sql} GROUP BY ${bizType ?? '1'}`,
    where.params,
  );
  return rows.map((r) => ({ bizType: toText(r.bizType), count: Number(r.n) })).filter((r) => r.count > 0);
}

/**
 * The database clock inside a transaction, epoch seconds.
 * In: nothing. Out: now. Side effects: none.
 */
export async function txNow(tx: Queryable, source: BoundSource): Promise<number> {
  const rows = await tx.query<{ now: unknown }>(`SELECT ${source.db.dialect.nowEpoch} AS now`);
  return Number(rows[0]?.now);
}

/** Re-checks a locked row against the claim's predicate, in JS, on the values read under the lock. */
function stillClaimable(source: BoundSource, request: ClaimRequest, row: CandidateRow): boolean {
  const status = source.sql.logicalStatus(row.rawStatus);
  const nrt = Number(row.nrt);
  if (request.kind === 'due') return status === 'pending' && nrt <= request.cutoffEpoch;
  if (status !== 'processing') return false;
  if (!source.sql.has('updatedAt')) return nrt <= request.stuckCutoffEpoch;
  return (
    nrt <= request.cutoffEpoch &&
    row.upd !== null &&
    row.upd !== undefined &&
    Number(row.upd) <= request.stuckCutoffEpoch
  );
}

/**
 * The claim's write.
 * In: locked ids, the lease expiry, whether it is a takeover. Out: rows changed.
 * Side effects: one guarded UPDATE: status processing, next_retry_time = lease expiry, updated_at = now,
 * attempts + 1 on a takeover.
 */
async function markClaimed(
  tx: Queryable,
  source: BoundSource,
  request: ClaimRequest,
  ids: TaskId[],
  leaseUntilEpoch: number,
  recover: boolean,
): Promise<number> {
  const { sql } = source;
  const model = sql.profile.status;
  if (model.kind !== 'column') throw new Error(`profile ${sql.profile.name} has no status column`);
  const nrt = sql.expr('nextRetryAt') as string;
  const set: Fragment[] = [
    { sql: `${sql.dialect.quoteId(model.column)} = ?`, params: [sql.rawStatus('processing')] },
    {
      sql: `${nrt} = ${sql.dialect.epochParam(sql.timeTypes.nextRetryAt ?? 'datetime')}`,
      params: [leaseUntilEpoch],
    },
  ];
  const updatedAt = sql.expr('updatedAt');
  if (updatedAt) set.push({ sql: `${updatedAt} = ${sql.nowOf('updatedAt')}`, params: [] });
  const attempts = sql.expr('attempts');
  if (recover && attempts) set.push({ sql: `${attempts} = ${attempts} + 1`, params: [] });
  const where = and([
    { sql: `${sql.expr('id')} IN (${placeholders(ids)})`, params: ids },
    claimableWhere(source, request),
  ]);
  const result = await tx.execute(
    `UPDATE ${sql.table} SET ${set.map((s) => s.sql).join(', ')} WHERE ${where.sql}`,
    [...set.flatMap((s) => s.params), ...where.params],
  );
  return result.affectedRows;
}

/** The payload as text: a string column as is, a parsed JSON value (MySQL 8) re-serialised. */
function payloadText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return JSON.stringify(value);
}

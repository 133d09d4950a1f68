import { actionUnsupported } from '../../core/compensate-plan.js';
import { jobIdentity, type IdentityKind } from '../../core/sweep-identity.js';
import {
  decideRow,
  DEFERRAL_LOOKBACK_SECONDS,
  firstMatch,
  inScope,
  type SweepDecision,
  type SweepRule,
} from '../../core/sweep-rules.js';
import type { TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store, type IdentityAudit, SWEEP_COLUMNS, SWEEP_RETRY_ACTION } from '../../db/port/index.js';
import { toIso } from '../../db/task-sql.js';
import type { Row } from '../../db/types.js';
import { rowEventId, rowId } from '../rows.js';

/**
 * What a sweep would do with one source, read and decided but not written: the failed rows in
 * scope, each under its first matching rule, its job identity, how many sweeps retried that job
 * before (the audit log), and the decision. Used by `sweep` and by the figures of report and scan.
 */
export interface PlannedRow {
  row: Row;
  id: TaskId;
  bizType: string | null;
  /** The start of the last error, for alerts. */
  lastError: string | null;
  rule: SweepRule;
  identity: string;
  failedAt: number | null;
  /** failedAt with its fraction of a second, to tell it from a sweep retry in the same second. */
  failedAtExact?: number | null;
  sweepsBefore: number;
  decision: SweepDecision;
}

export interface SourcePlan {
  source: BoundSource;
  rows: PlannedRow[];
  unmatched: number;
}

const PAGE = 1000;
/** How much of an error an alert may quote. */
const ERROR_CHARS = 500;

function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

/** Which framework's identity rule a source follows. */
export function identityKind(source: BoundSource): IdentityKind {
  if (source.profile.kind !== 'failed-jobs') return 'task';
  return source.profile.name.startsWith('thinkphp') ? 'thinkphp' : 'laravel';
}

/**
 * Whether the sweep can act on a source: failed-job tables, task tables that hold failed rows, and
 * the job systems whose retry compensate makes (pg-boss through its own client; Solid Queue, River and
 * Oban written as their own tools write it), by the same rule compensate applies.
 */
export function sweepable(source: BoundSource): boolean {
  if (source.profile.kind === 'failed-jobs') return true;
  if (source.profile.kind === 'job-system')
    return (
      actionUnsupported('retry', {
        profile: source.profile.name,
        kind: source.profile.kind,
        statuses: source.sql.statuses(),
        ...(source.profile.systemActions ? { systemActions: source.profile.systemActions } : {}),
      }) === undefined
    );
  return source.profile.kind === 'task' && source.sql.statuses().includes('failed');
}

/** The job identity of a whole row of the source (see core/sweep-identity.ts). */
export function identityReader(source: BoundSource): (row: Row) => string {
  const kind = identityKind(source);
  return (row) =>
    jobIdentity({
      kind,
      payload: text(row.payload),
      eventId: rowEventId(source.sql, row),
      rowId: String(rowId(source.sql, row)),
    });
}

export async function planSource(
  source: BoundSource,
  rules: readonly SweepRule[],
  nowEpoch: number,
  cutoffEpoch: number,
): Promise<SourcePlan> {
  const lookback = rules.some(
    (r) => r.action === 'retry' && (r.schedule.window || r.schedule.blackouts.length),
  )
    ? DEFERRAL_LOOKBACK_SECONDS
    : 0;
  const identityOf = identityReader(source);
  const candidates: Omit<PlannedRow, 'sweepsBefore' | 'decision'>[] = [];
  let unmatched = 0;
  let after: TaskId | undefined;
  for (;;) {
    const page = await store.tasks.selectFailedPage(
      source.db,
      source,
      Math.max(0, cutoffEpoch - lookback),
      after,
      PAGE,
    );
    for (const row of page.rows) {
      const failedAtRaw = row[SWEEP_COLUMNS.failedAt];
      const failedAt = failedAtRaw === null || failedAtRaw === undefined ? null : Number(failedAtRaw);
      const exactRaw = row[SWEEP_COLUMNS.failedAtExact];
      const failedAtExact = exactRaw === null || exactRaw === undefined ? failedAt : Number(exactRaw);
      const facts = {
        source: source.name,
        bizType: text(row[SWEEP_COLUMNS.bizType]),
        lastError: text(row[SWEEP_COLUMNS.lastError]),
        queue: text(row[SWEEP_COLUMNS.queue]),
      };
      for (const key of Object.values(SWEEP_COLUMNS)) delete row[key];
      const rule = firstMatch(rules, facts);
      if (!rule) {
        if (failedAt === null || failedAt >= cutoffEpoch) unmatched++;
        continue;
      }
      if (!inScope(rule, failedAt, cutoffEpoch)) continue;
      const id = rowId(source.sql, row);
      const identity = identityOf(row);
      candidates.push({
        row,
        id,
        bizType: facts.bizType,
        lastError: facts.lastError?.slice(0, ERROR_CHARS) ?? null,
        rule,
        identity,
        failedAt,
        failedAtExact,
      });
    }
    if (page.next === undefined) break;
    after = page.next;
  }
  const earlier = (await store.audit.tableExists(source.db))
    ? await store.audit.selectByIdentity(
        source.db,
        source.db.dialect,
        source.profile.table,
        [...new Set(candidates.map((c) => c.identity))],
        SWEEP_RETRY_ACTION,
      )
    : [];
  const byIdentity = new Map<string, IdentityAudit[]>();
  for (const a of earlier) byIdentity.set(a.identity, [...(byIdentity.get(a.identity) ?? []), a]);
  const failedJobs = source.profile.kind === 'failed-jobs';
  const rows = candidates.map((c) => {
    const sweepsBefore = (byIdentity.get(c.identity) ?? []).filter((a) =>
      precedes(a, { id: c.id, failedAt: c.failedAtExact ?? c.failedAt }, failedJobs),
    ).length;
    return { ...c, sweepsBefore, decision: decideRow(c.rule, sweepsBefore, nowEpoch) };
  });
  return { source, rows, unmatched };
}

/**
 * Whether a sweep retry came before this failure (so it counts towards maxSweeps). A failed-job
 * row is failed once and deleted by its retry, so a retry of another row of the same job came
 * first; a task row keeps its id, so a retry counts when it was made before the row last failed.
 * A sweep running at the same time as another therefore never mistakes the other's retry of the
 * very row it is looking at for an earlier sweep (that row is a lost race, not a second failure).
 */
export function precedes(
  audit: IdentityAudit,
  row: { id: TaskId; failedAt: number | null },
  failedJobs: boolean,
): boolean {
  if (failedJobs) return audit.taskId !== String(row.id);
  return row.failedAt === null ? audit.taskId === String(row.id) : audit.atEpoch < row.failedAt;
}

export function isoOrNull(epoch: number | null): string | null {
  return epoch === null ? null : toIso(epoch);
}

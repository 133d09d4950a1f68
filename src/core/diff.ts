import type { RuleSpec } from './config-types.js';
import { configError } from './errors.js';
import { LOGICAL_STATUSES, type LogicalStatus, type TaskId } from './task.js';

/**
 * Diff bookkeeping, pure: what a rule expects, how one task or one business key is
 * classified, and the tallies and samples of a run. No I/O; the SQL and the walks live in
 * src/db/sql/diff*.ts and src/ops/diff*.ts, and both the same-server and the cross-server walk
 * classify through the functions below, so they cannot disagree.
 */

export const EXPECT_MODES = ['exactly-one', 'at-least-one', 'at-most-one'] as const;
export type ExpectMode = (typeof EXPECT_MODES)[number];

export const FINDING_KINDS = ['missing', 'duplicate', 'orphan', 'unsettled'] as const;
export type FindingKind = (typeof FINDING_KINDS)[number];
export type FindingCounts = Record<FindingKind, number>;

/** The task field a rule matches against the business key. */
export const TASK_KEYS = ['bizId', 'eventId', 'id'] as const;
export type TaskKey = (typeof TASK_KEYS)[number];

/** A rule with its defaults applied and its values checked. */
export interface DiffRule {
  name: string;
  bizType: string;
  /** Statuses in which a task says its effect is done (default: success). */
  taskStatus: LogicalStatus[];
  taskKey: TaskKey;
  /** Which configured source holds the tasks (default: the command's source). */
  source?: string;
  business: {
    table: string;
    key: string;
    /** Operator-authored SQL filter on the business table; run read-only, never with `;`. */
    where?: string;
    expect: ExpectMode;
    /** A DSN when the business table lives on another server (or engine). */
    db?: string;
    /** Look for business rows without a task (default true; false when other paths write the table too). */
    orphans: boolean;
  };
}

/**
 * Applies defaults and checks what the config schema leaves open: the expect mode, the `where`
 * fragment, statuses. Every problem is a config error (exit 3) naming the rule and the fix.
 */
export function normalizeRule(config: RuleSpec, index: number): DiffRule {
  const at = `rule '${config.name}' (rules[${index}])`;
  const expect = config.business.expect ?? 'exactly-one';
  if (!(EXPECT_MODES as readonly string[]).includes(expect)) {
    throw configError(`${at}: unknown expect mode '${expect}'`, `Use one of: ${EXPECT_MODES.join(', ')}.`);
  }
  const where = config.business.where?.trim();
  if (where !== undefined) checkWhereFragment(where, at);
  const taskStatus = config.taskStatus ?? ['success'];
  if (taskStatus.length === 0)
    throw configError(
      `${at}: taskStatus is empty`,
      'List the statuses in which a task says its effect is done, e.g. [success].',
    );
  return {
    name: config.name,
    bizType: config.bizType,
    taskStatus: [...new Set(taskStatus)],
    taskKey: config.taskKey ?? 'bizId',
    ...(config.source ? { source: config.source } : {}),
    business: {
      table: config.business.table,
      key: config.business.key,
      ...(where ? { where } : {}),
      expect: expect as ExpectMode,
      ...(config.business.db ? { db: config.business.db } : {}),
      orphans: config.business.orphans ?? true,
    },
  };
}

/**
 * A `where` is operator-authored SQL pasted into a read-only SELECT: one expression, so a `;`
 * (a second statement) is refused, and so is a comment, which could hide the rest of the query.
 */
export function checkWhereFragment(where: string, at: string): void {
  if (where.includes(';')) {
    throw configError(
      `${at}: business.where contains ';'`,
      'Write one SQL condition on the business table, without `;`, e.g. "status = \'issued\'".',
    );
  }
  if (/--|\/\*|#/.test(where.replace(/'(?:[^'\\]|\\.|'')*'/g, "''"))) {
    throw configError(
      `${at}: business.where contains a SQL comment`,
      'Remove the comment; write one SQL condition on the business table.',
    );
  }
  if (where === '')
    throw configError(`${at}: business.where is empty`, 'Remove the key, or write a condition.');
}

/** How a task's status takes part in a rule. */
export type TaskRole = 'done' | 'open' | 'other';

/**
 * `done`: the rule's taskStatus (the task says its effect happened). `open`: failed or pending
 * and not done — an effect present for it is "unsettled". `other`: processing (in flight) and
 * compensated (settled by hand): an effect may or may not be there, neither is a finding.
 */
export function roleOf(status: LogicalStatus | 'unknown', taskStatus: readonly LogicalStatus[]): TaskRole {
  if ((taskStatus as readonly string[]).includes(status)) return 'done';
  if (status === 'failed' || status === 'pending') return 'open';
  return 'other';
}

/** The statuses of each role, for SQL predicates. */
export function statusesOfRole(role: TaskRole, taskStatus: readonly LogicalStatus[]): LogicalStatus[] {
  return LOGICAL_STATUSES.filter((s) => roleOf(s, taskStatus) === role);
}

/** What is known about one task's key when it is classified. */
export interface KeyFacts {
  /** Business rows whose key equals the task's key (0 when the task's key is NULL). */
  rows: number;
  /** Tasks of the rule's biz type with this key, whatever their status (≥ 1: this task). */
  tasks: number;
  /** Of those, the done ones. */
  doneTasks: number;
}

/**
 * Classifies one task (per task, each task being one expected effect):
 * - done, no business row → `missing` (exactly-one, at-least-one);
 * - done, more rows than tasks share the key → `duplicate` (exactly-one, at-most-one): idempotency broken;
 * - open (failed/pending), more rows than the done tasks of its key account for → `unsettled`.
 * When every key has one task — the usual case — that is: missing at 0 rows, duplicate at 2+,
 * unsettled at 1+.
 */
export function classifyTask(role: TaskRole, facts: KeyFacts, expect: ExpectMode): FindingKind | undefined {
  if (role === 'done') {
    if (facts.rows === 0 && expect !== 'at-most-one') return 'missing';
    if (facts.rows > Math.max(1, facts.tasks) && expect !== 'at-least-one') return 'duplicate';
    return undefined;
  }
  if (role === 'open' && facts.rows > facts.doneTasks) return 'unsettled';
  return undefined;
}

/** A business key with rows and no task of the rule's biz type at all is an orphan. */
export function isOrphan(tasks: number, rows: number): boolean {
  return tasks === 0 && rows > 0;
}

/**
 * Whether the same-server walk must look up a task's siblings (other tasks with its key) before
 * classifying it: only when the answer could depend on them. Done with 0 or 1 row, and open with
 * no row, never do.
 */
export function needsSiblings(role: TaskRole, rows: number, expect: ExpectMode): boolean {
  if (role === 'done') return rows > 1 && expect !== 'at-least-one';
  return role === 'open' && rows > 0;
}

/** One finding, as samples and `--format ndjson` show it. */
export interface Finding {
  kind: FindingKind;
  rule: string;
  /** The task's id (null for an orphan). */
  taskId: TaskId | null;
  /** The key compared: the task's key, or the business key of an orphan. */
  key: string | null;
  bizId: string | null;
  eventId: string | null;
  /** The task's logical status (null for an orphan). */
  status: LogicalStatus | 'unknown' | null;
  businessRows: number;
  /**
   * On a sharded source: the shard the task is on; null for an orphan (no shard has its task).
   * Absent on a one-table source.
   */
  shard?: string | null;
}

export function emptyFindingCounts(): FindingCounts {
  return { missing: 0, duplicate: 0, orphan: 0, unsettled: 0 };
}

export function addCounts(into: FindingCounts, from: FindingCounts): FindingCounts {
  for (const kind of FINDING_KINDS) into[kind] += from[kind];
  return into;
}

export function totalOf(counts: FindingCounts): number {
  return FINDING_KINDS.reduce((sum, kind) => sum + counts[kind], 0);
}

/**
 * Counts findings and keeps the first `perKind` of each kind as samples, in constant memory
 * whatever the number of findings. Orphans count business rows (a key with 3 orphan rows
 * counts 3), everything else counts tasks.
 */
export class FindingTally {
  readonly counts = emptyFindingCounts();
  private readonly kept: Record<FindingKind, Finding[]> = {
    missing: [],
    duplicate: [],
    orphan: [],
    unsettled: [],
  };

  constructor(private readonly perKind: number) {}

  add(finding: Finding): void {
    this.counts[finding.kind] += finding.kind === 'orphan' ? finding.businessRows : 1;
    const list = this.kept[finding.kind];
    if (list.length < this.perKind) list.push(finding);
  }

  samples(): Finding[] {
    return FINDING_KINDS.flatMap((kind) => this.kept[kind]);
  }

  /** Missing tasks kept for --enqueue are collected by the caller; this is only for display. */
  get total(): number {
    return totalOf(this.counts);
  }
}

/** The chunk walk aims each chunk at `--chunk-time`; pt-table-checksum's default is 0.5 s. */
export const DEFAULT_CHUNK_TIME_MS = 500;
/** The first chunk, before any timing is known: small enough to be quick on any table. */
export const FIRST_CHUNK_SPAN = 1000;
/** A chunk never grows more than 4× or shrinks below a quarter at once, so one odd timing cannot swing it. */
const MAX_GROWTH = 4;
const MAX_SHRINK = 0.25;
const MIN_CHUNK_SPAN = 100;
const MAX_CHUNK_SPAN = 5_000_000;

/**
 * The id span of the next chunk, sized toward the time target from the last chunk's rate
 * (as pt-table-checksum's --chunk-time does with rows). Spans, not rows: a gap in the ids costs
 * nothing to read, so a chunk over a gap is quick and the next one grows.
 */
export function nextChunkSpan(span: number, elapsedMs: number, targetMs: number): number {
  const ratio = elapsedMs <= 0 ? MAX_GROWTH : targetMs / elapsedMs;
  const next = span * Math.min(MAX_GROWTH, Math.max(MAX_SHRINK, ratio));
  return Math.round(Math.min(MAX_CHUNK_SPAN, Math.max(MIN_CHUNK_SPAN, next)));
}

import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { Context } from '../../context.js';
import { store, type AuditInsert } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { TaskreconError, usageError } from '../../errors.js';
import { untilStopped } from '../../stop-signals.js';
import { openBroker, type BrokerChoice } from '../../brokers/index.js';
import type { MovedJob, MoveRequest, MoveResult, MoveWhat } from '../../brokers/types.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import { parseRate } from '../../core/pacer.js';
import { defaultOperator } from '../../ops/operator.js';
import { databaseGiven } from './index.js';

/**
 * `queues move` and `queues recover`: the request rules (what, limit, rate, confirmation), the
 * audit of every moved job, and SIGINT finishing the batch in hand.
 */

/** `queues recover --json`. */
export interface RecoverResult {
  broker: string;
  dryRun: boolean;
  matched: number;
  moved: number;
  runId: string;
  results: MoveResult[];
}

export interface MoveOptions {
  operator?: string;
  reason?: string;
  rate?: string;
  limit?: number;
  batch: number;
  dryRun: boolean;
  runId: string;
}

/** The audit table's columns are this wide; longer queue keys are cut, the whole key stays in the JSON. */
const AUDIT_NAME_WIDTH = 64;

function cut(text: string): string {
  return text.length <= AUDIT_NAME_WIDTH ? text : text.slice(0, AUDIT_NAME_WIDTH);
}

/**
 * The payload as the audit keeps it: its SHA-1 and size, not its text. Jobs stay in Redis, where a
 * move never loses one; a million-job move would otherwise copy gigabytes of serialized jobs
 * into the audit table (and halve the move's speed).
 */
function payloadDigest(payload: string | undefined): { sha1: string | null; bytes: number | null } {
  if (payload === undefined) return { sha1: null, bytes: null };
  return { sha1: createHash('sha1').update(payload).digest('hex'), bytes: Buffer.byteLength(payload) };
}

/** One audit row per moved job: the queue keys and sets in from/to, the payload's digest before. */
export function auditRows(
  jobs: readonly MovedJob[],
  meta: {
    operator: string;
    host: string;
    action: string;
    broker: string;
    reason: string | null;
    runId: string;
  },
): AuditInsert[] {
  return jobs.map((job) => ({
    operator: meta.operator,
    host: meta.host,
    action: meta.action,
    source: cut(meta.broker),
    taskTable: cut(job.from),
    taskId: cut(job.jobId),
    eventId: cut(job.jobId),
    fromStatus: job.fromSet ?? null,
    toStatus: job.toSet ?? null,
    beforeJson: JSON.stringify({ queue: job.from, set: job.fromSet ?? null, ...payloadDigest(job.payload) }),
    afterJson: JSON.stringify({ queue: job.to, set: job.toSet ?? null }),
    reason: meta.reason,
    runId: meta.runId,
  }));
}

/** The database of the audit log; a move without one is refused (exit 3) unless it is a dry run. */
export async function auditDb(context: Context, dryRun: boolean): Promise<Db | undefined> {
  if (!databaseGiven(context)) {
    if (dryRun) return undefined;
    throw new TaskreconError('moving jobs needs a database for the audit log, and none is given', {
      code: 'USAGE',
      hint:
        'Pass --db mysql://user:pass@host:3306/db (or sqlite:PATH), set TASKRECON_DB, or put `db:` in the config; ' +
        '`taskrecon init --audit-only` creates taskrecon_audit there. --dry-run needs none. Nothing was moved.',
    });
  }
  const db = await context.open();
  if (!dryRun) await requireAuditTable(db);
  return db;
}

export function parseRateFlag(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const rate = parseRate(text);
  if (rate === undefined)
    throw usageError(`--rate: '${text}' is not a rate`, 'Write e.g. 500/s, 50 or 6000/m.');
  return rate;
}

/** What the first SIGINT / SIGTERM says (a second one exits at once). */
const STOPPING = 'stopping after the batch in hand (each batch is atomic: nothing is lost or doubled)';

function onBatchFor(
  db: Db | undefined,
  meta: Parameters<typeof auditRows>[1],
): (jobs: readonly MovedJob[]) => Promise<void> {
  return async (jobs) => {
    if (!db) return;
    const rows = auditRows(jobs, meta);
    await db.transaction(async (tx) => {
      for (let i = 0; i < rows.length; i += 500)
        await store.audit.insertBatch(tx, db.dialect, rows.slice(i, i + 500));
    });
  };
}

/** Which of these jobs an earlier move from `from` already carried, by the audit log. */
function movedBeforeFor(
  db: Db | undefined,
  broker: string,
  from: string,
): ((jobIds: readonly string[]) => Promise<ReadonlySet<string>>) | undefined {
  if (!db) return undefined;
  return async (jobIds) => {
    const seen = new Set<string>();
    for (let i = 0; i < jobIds.length; i += 500) {
      const ids = jobIds.slice(i, i + 500).map(cut);
      const rows = await store.audit.selectPage(
        db,
        db.dialect,
        { source: cut(broker), taskIds: ids, actions: ['queue-move'] },
        0,
        ids.length * 20,
      );
      for (const row of rows) if (row.taskTable === cut(from)) seen.add(row.taskId);
    }
    return seen;
  };
}

/** What every audit row of one move or recover run says besides the job. */
function auditMeta(context: Context, input: MoveOptions, action: string, broker: string) {
  return {
    operator: input.operator ?? defaultOperator(context.env, context.config.operator),
    host: hostname(),
    action,
    broker,
    reason: input.reason?.trim() || null,
    runId: input.runId,
  };
}

export interface MoveInput extends MoveOptions {
  from: string;
  to?: string;
  what: MoveWhat;
  toExchange?: string;
  routingKey?: string;
  resetDeath?: boolean;
  match?: MoveRequest['match'];
  jobIds?: string[];
}

/** `queues move`. */
export async function runMove(
  context: Context,
  choice: BrokerChoice,
  input: MoveInput,
  say: (m: string) => void,
): Promise<MoveResult> {
  // BullMQ retries failed jobs in place when no --to is given.
  if (!input.to && !input.toExchange && input.what !== 'failed')
    throw usageError('--to is required', 'Name the queue the jobs go to: --to QUEUE.');
  if (input.to !== undefined && input.to === input.from)
    throw usageError(
      `--to ${input.to} is the queue the jobs come from`,
      'Name another queue with --to. Nothing was moved.',
    );
  if (input.jobIds?.length && !(choice.config.kind === 'redis' && choice.config.framework === 'bullmq'))
    throw usageError(
      `--job: broker ${choice.name} is no BullMQ broker`,
      'Leave --job out; it names failed BullMQ jobs (framework: bullmq). Nothing was moved.',
    );
  const ratePerSecond = parseRateFlag(input.rate);
  const db = await auditDb(context, input.dryRun);
  const broker = await openBroker(choice.name, choice.config);
  try {
    const meta = auditMeta(context, input, 'queue-move', choice.name);
    return await untilStopped(
      () => say(STOPPING),
      (shouldStop) =>
        broker.move({
          from: input.from,
          to: input.to,
          toExchange: input.toExchange,
          routingKey: input.routingKey,
          what: input.what,
          limit: input.limit,
          ratePerSecond,
          batch: input.batch,
          dryRun: input.dryRun,
          resetDeath: input.resetDeath,
          match: input.match,
          jobIds: input.jobIds,
          runId: input.runId,
          onBatch: onBatchFor(db, meta),
          shouldStop,
          // Only RabbitMQ asks: a Redis batch is atomic, so no job is ever carried twice.
          movedBefore:
            choice.config.kind === 'rabbitmq' ? movedBeforeFor(db, choice.name, input.from) : undefined,
        }),
    );
  } finally {
    await broker.close();
  }
}

/** `queues recover`. */
export async function runRecover(
  context: Context,
  choice: BrokerChoice,
  input: MoveOptions & { queue?: string },
  say: (m: string) => void,
): Promise<RecoverResult> {
  const ratePerSecond = parseRateFlag(input.rate);
  const db = await auditDb(context, input.dryRun);
  const broker = await openBroker(choice.name, choice.config);
  try {
    if (!broker.recover) {
      throw usageError(
        `broker ${choice.name} (${broker.kind}) has nothing to recover`,
        'recover migrates Redis delayed jobs and expired reservations; for RabbitMQ use `taskrecon queues move`.',
      );
    }
    const recover = broker.recover.bind(broker);
    const meta = auditMeta(context, input, 'queue-recover', choice.name);
    const results = await untilStopped(
      () => say(STOPPING),
      (shouldStop) =>
        recover({
          from: input.queue,
          what: 'all',
          limit: input.limit,
          ratePerSecond,
          batch: input.batch,
          dryRun: input.dryRun,
          runId: input.runId,
          onBatch: onBatchFor(db, meta),
          shouldStop,
        }),
    );
    return {
      broker: choice.name,
      dryRun: input.dryRun,
      matched: results.reduce((n, r) => n + r.matched, 0),
      moved: results.reduce((n, r) => n + r.moved, 0),
      runId: input.runId,
      results,
    };
  } finally {
    await broker.close();
  }
}

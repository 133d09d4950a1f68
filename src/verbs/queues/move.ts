import { hostname } from 'node:os';
import type { Context } from '../../context.js';
import { store } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { TaskreconError, usageError } from '../../errors.js';
import { untilStopped } from '../../stop-signals.js';
import type { BrokerChoice } from '../../brokers/index.js';
import { openBroker } from '../../brokers/open/index.js';
import type { BrokerClient, MovedJob, MoveRequest, MoveResult, MoveWhat } from '../../brokers/types.js';
import { requireAuditTable } from '../../ops/audit-trail.js';
import { parseRate } from '../../core/pacer.js';
import { defaultOperator } from '../../ops/operator.js';
import { databaseGiven } from './index.js';
import { rabbitIntents, settleKilledMoves } from './rabbit-intents.js';
import { moveJournal, settleOpenMoves } from './journal.js';
import { bullmqJournal, settleKilledBullmqMoves } from './bullmq-journal.js';
import { auditRows, type MoveAuditMeta } from './move-audit.js';
import type { SettledIntent } from '../../ops/intents/index.js';

/**
 * `queues move` and `queues recover`: the request rules (what, limit, rate, confirmation), the
 * audit of every moved job, and SIGINT finishing the batch in hand.
 */

/** `queues recover --json`. */
export interface RecoverResult extends SettledBefore {
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

/**
 * The audit of a batch moved without a journal or intents, one row per job. With an audit database
 * a move that is no dry run has them (Redis and BullMQ a journal, RabbitMQ intents; those write
 * job-batch rows for Redis and RabbitMQ), so this writes only for a broker that offers neither.
 */
function onBatchFor(db: Db | undefined, meta: MoveAuditMeta): (jobs: readonly MovedJob[]) => Promise<void> {
  return async (jobs) => {
    if (!db) return;
    const rows = auditRows(jobs, meta);
    await db.transaction(async (tx) => {
      for (let i = 0; i < rows.length; i += 500)
        await store.audit.insertBatch(tx, db.dialect, rows.slice(i, i + 500));
    });
  };
}

/** What every audit row of one move or recover run says besides the job. */
function auditMeta(context: Context, input: MoveOptions, action: string, broker: string): MoveAuditMeta {
  return {
    operator: input.operator ?? defaultOperator(context.env, context.config.operator),
    host: hostname(),
    action,
    broker,
    reason: input.reason?.trim() || null,
    runId: input.runId,
  };
}

/** What a move or recover says it settled, beside its own result (only when there was something). */
export interface SettledBefore {
  /** Batches of killed runs found open and settled by looking, before this run moved anything. */
  settledIntents?: SettledIntent[];
}

/**
 * Settles the batches killed runs left open, then gives this run's journal — for brokers whose
 * batches can be looked at afterwards (Redis). Nothing in a dry run, which writes nothing.
 */
async function journalFor(
  db: Db | undefined,
  broker: BrokerClient,
  meta: MoveAuditMeta,
  dryRun: boolean,
  say: (m: string) => void,
  bullmq = false,
): Promise<{
  journal?: MoveRequest['journal'];
  jobJournal?: MoveRequest['jobJournal'];
  settled: SettledBefore;
}> {
  if (!db || dryRun || !broker.lookBatch) return { settled: {} };
  // Named before anything is settled or opened: other runs leave this run's batches to it.
  await broker.nameRun?.(meta.runId);
  const { settled } = await settleOpenMoves(db, broker, meta.runId);
  if (bullmq) settled.push(...(await settleKilledBullmqMoves(db, broker, meta.runId)));
  for (const s of settled)
    say(
      `settled batch ${s.id} of run ${s.runId}, left open when that run stopped: ` +
        (s.state !== 'not-landed' ? `${s.audited} jobs had moved and are now audited` : 'it had not moved'),
    );
  return {
    journal: await moveJournal(db, meta),
    ...(bullmq ? { jobJournal: await bullmqJournal(db, meta) } : {}),
    settled: settled.length ? { settledIntents: settled } : {},
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

/**
 * The audit database and the broker client, opened side by side (the broker's module loads while
 * the database answers). When the database cannot be had, the broker is closed and the database's
 * error is the one thrown, as when they were opened one after the other.
 */
async function openBoth(
  context: Context,
  choice: BrokerChoice,
  dryRun: boolean,
): Promise<{ db: Db | undefined; broker: BrokerClient }> {
  const opening = openBroker(choice.name, choice.config);
  // Its failure is thrown below, once the database is had; until then it is no unhandled rejection.
  opening.catch(() => undefined);
  let db: Db | undefined;
  try {
    db = await auditDb(context, dryRun);
  } catch (error) {
    await opening.then(
      (broker) => broker.close(),
      () => undefined,
    );
    throw error;
  }
  return { db, broker: await opening };
}

/** `queues move`. */
export async function runMove(
  context: Context,
  choice: BrokerChoice,
  input: MoveInput,
  say: (m: string) => void,
): Promise<MoveResult & SettledBefore> {
  // BullMQ retries failed jobs in place when no --to is given.
  if (!input.to && !input.toExchange && input.what !== 'failed')
    throw usageError('--to is required', 'Name the queue the jobs go to: --to QUEUE.');
  if (input.to !== undefined && input.to === input.from)
    throw usageError(
      `--to ${input.to} is the queue the jobs come from`,
      'Name another queue with --to. Nothing was moved.',
    );
  const bullmq = choice.config.kind === 'redis' && choice.config.framework === 'bullmq';
  if (input.jobIds?.length && !bullmq)
    throw usageError(
      `--job: broker ${choice.name} is no BullMQ broker`,
      'Leave --job out; it names failed BullMQ jobs (framework: bullmq). Nothing was moved.',
    );
  const ratePerSecond = parseRateFlag(input.rate);
  const { db, broker } = await openBoth(context, choice, input.dryRun);
  try {
    const meta = auditMeta(context, input, 'queue-move', choice.name);
    const rabbit = choice.config.kind === 'rabbitmq';
    // Named before this run opens a batch (other moves leave this run's batches to it) and before
    // it asks whether another run is alive (the question shares the named connection); the killed
    // runs' batches are read from the database meanwhile.
    const named = rabbit && db && !input.dryRun ? broker.nameRun?.(input.runId) : undefined;
    named?.catch(() => undefined);
    const alive = async (run: string) => {
      await named;
      return broker.runAlive?.(run);
    };
    const killed =
      rabbit && db ? await settleKilledMoves(db, choice.name, input.runId, input.dryRun, alive) : undefined;
    await named;
    const { journal, jobJournal, settled } = await journalFor(db, broker, meta, input.dryRun, say, bullmq);
    const result = await untilStopped(
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
          // RabbitMQ's publish and ack cannot join a transaction: a write-ahead intent per batch.
          intents: rabbit && db && !input.dryRun ? rabbitIntents(db, meta, choice.name) : undefined,
          journal,
          jobJournal,
          shouldStop,
        }),
    );
    return killed ? { ...result, ...killed } : { ...result, ...settled };
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
    const bullmq = choice.config.kind === 'redis' && choice.config.framework === 'bullmq';
    const { journal, jobJournal, settled } = await journalFor(db, broker, meta, input.dryRun, say, bullmq);
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
          journal,
          jobJournal,
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
      ...settled,
    };
  } finally {
    await broker.close();
  }
}

import { createHash } from 'node:crypto';
import type { BrokerChoice } from '../../brokers/index.js';
import { openBroker } from '../../brokers/open/index.js';
import type { BrokerClient, FailedJobDetail } from '../../brokers/types.js';
import { Pacer } from '../../core/pacer.js';
import {
  decideRow,
  DEFERRAL_LOOKBACK_SECONDS,
  firstMatch,
  inScope,
  type SweepRule,
} from '../../core/sweep-rules.js';
import { store, SWEEP_RETRY_ACTION, type AuditInsert } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { usageError } from '../../errors.js';
import { isoOrNull, type PlannedRow } from '../../ops/sweep/plan.js';
import type { SettledIntent } from '../../ops/intents/index.js';
import { BullmqRetryJournal, settleKilledRetries } from './bullmq-journal.js';
import type { SweepItem } from './types.js';

/**
 * The sweep of BullMQ failed jobs: rules with `match.broker` read each queue's failed set through
 * BullMQ (newest first, down to the oldest failure in scope), match the job's name (`bizType`), its
 * failedReason (`errorLike`) and its queue, count the job's earlier sweeps from the audit log
 * (`sweep-retry` rows of its id in that broker's queue made before it last failed) and retry it
 * through `Job.retry('failed')` — only while BullMQ still holds that very failure, so of two sweeps
 * at once one retries and the other records a lost race. Each retry is one audit row, settled with
 * the retry's write-ahead intent (bullmq-journal.ts). Nothing is written in a dry run.
 */
export interface BrokerSweepRequest {
  brokers: BrokerChoice[];
  /** The audit log (required unless a dry run). */
  db?: Db;
  rules: SweepRule[];
  nowEpoch: number;
  cutoffEpoch: number;
  dryRun: boolean;
  runId: string;
  operator: string;
  host: string;
}

/** A second failure of a BullMQ job, for the alert. */
export interface BrokerSecondFailure {
  planned: PlannedRow;
  broker: string;
  queue: string;
  item: SweepItem;
}

export interface BrokerSweepOutput {
  items: SweepItem[];
  unmatched: number;
  second: BrokerSecondFailure[];
  /** Retries killed sweeps left open, settled by this one before it retried anything. */
  settledIntents: SettledIntent[];
}

/** Failed jobs per read. */
const PAGE = 500;
/** How much of an error an alert may quote. */
const ERROR_CHARS = 500;

interface Planned extends PlannedRow {
  queue: string;
  /** BullMQ's finish time of the failure (ms): the retry is made only while it is still this one. */
  finishedOn: number | null;
  attemptsMade: number;
  /** SHA-1 of the job's name and data, for the audit (the payload stays in Redis). */
  payloadSha1: string;
}

/** The brokers `match.broker` of the rules names, in the order first named. */
export function brokerNamesOf(rules: readonly SweepRule[]): string[] {
  return [...new Set(rules.flatMap((r) => r.brokers ?? []))];
}

export async function sweepBrokers(request: BrokerSweepRequest): Promise<BrokerSweepOutput> {
  const out: BrokerSweepOutput = { items: [], unmatched: 0, second: [], settledIntents: [] };
  for (const choice of request.brokers) {
    const broker = await openBroker(choice.name, choice.config);
    try {
      await sweepBroker(broker, request, out);
    } finally {
      await broker.close();
    }
  }
  return out;
}

/** The queues some rule of this broker may match: those named, or all when a rule names none. */
function queuesToRead(broker: string, rules: readonly SweepRule[], found: string[]): string[] {
  const mine = rules.filter((r) => r.brokers?.includes(broker));
  if (mine.some((r) => !r.queues)) return found;
  const named = new Set(mine.flatMap((r) => r.queues ?? []));
  return found.filter((q) => named.has(q));
}

async function sweepBroker(
  broker: BrokerClient,
  request: BrokerSweepRequest,
  out: BrokerSweepOutput,
): Promise<void> {
  if (!broker.bullmqQueues || !broker.failedJobs || !broker.retryFailedJob)
    throw usageError(
      `broker ${broker.name}: sweep rules with match.broker retry BullMQ failed jobs, and it is no BullMQ broker`,
      'Name brokers with kind: redis and framework: bullmq in match.broker.',
    );
  const found = await broker.bullmqQueues();
  // What a killed sweep left open is settled first, so its retries count before this one decides.
  if (request.db && !request.dryRun)
    out.settledIntents.push(...(await settleKilledRetries(request.db, broker, request.runId)));
  for (const queue of queuesToRead(broker.name, request.rules, found)) {
    const planned = await planQueue(broker, queue, request, out);
    const byRule = new Map<SweepRule, Planned[]>();
    for (const p of planned) {
      const outcome = p.decision.outcome;
      if (outcome === 'retry') {
        byRule.set(p.rule, [...(byRule.get(p.rule) ?? []), p]);
        continue;
      }
      const item = itemOf(broker.name, p, outcome);
      if (outcome === 'second-failure') out.second.push({ planned: p, broker: broker.name, queue, item });
      out.items.push(item);
    }
    for (const [rule, jobs] of byRule)
      out.items.push(...(await retryJobs(broker, queue, rule, jobs, request)));
  }
}

/** The failed jobs of one queue in scope, each under its first matching rule, with its decision. */
async function planQueue(
  broker: BrokerClient,
  queue: string,
  request: BrokerSweepRequest,
  out: BrokerSweepOutput,
): Promise<Planned[]> {
  const lookback = request.rules.some(
    (r) => r.action === 'retry' && (r.schedule.window || r.schedule.blackouts.length),
  )
    ? DEFERRAL_LOOKBACK_SECONDS
    : 0;
  const floor = request.cutoffEpoch - lookback;
  const candidates: Array<Omit<Planned, 'sweepsBefore' | 'decision'>> = [];
  for (let start = 0; ; start += PAGE) {
    const page = await (broker.failedJobs as NonNullable<BrokerClient['failedJobs']>)(queue, start, PAGE);
    for (const job of page) {
      const failedAt = job.finishedOn === null ? null : job.finishedOn / 1000;
      const facts = {
        source: broker.name,
        broker: broker.name,
        bizType: job.name,
        lastError: job.failedReason,
        queue,
      };
      const rule = firstMatch(request.rules, facts);
      if (!rule) {
        if (failedAt === null || failedAt >= request.cutoffEpoch) out.unmatched++;
        continue;
      }
      if (!inScope(rule, failedAt, request.cutoffEpoch)) continue;
      candidates.push(candidate(job, queue, rule, failedAt));
    }
    // The failed set is ordered by finish time: past the oldest failure in scope, nothing more is.
    const last = page[page.length - 1];
    if (page.length < PAGE || (last?.finishedOn != null && last.finishedOn / 1000 < floor)) break;
  }
  const earlier =
    request.db && candidates.length && (await store.audit.tableExists(request.db))
      ? await store.audit.selectByIdentity(
          request.db,
          request.db.dialect,
          queue,
          [...new Set(candidates.map((c) => c.identity))],
          SWEEP_RETRY_ACTION,
          broker.name,
        )
      : [];
  return candidates.map((c) => {
    // The job keeps its id across retries: a sweep retry counts when it came before this failure.
    const sweepsBefore = earlier.filter(
      (a) => a.identity === c.identity && (c.failedAt === null || a.atEpoch < c.failedAt),
    ).length;
    return { ...c, sweepsBefore, decision: decideRow(c.rule, sweepsBefore, request.nowEpoch) };
  });
}

function candidate(
  job: FailedJobDetail,
  queue: string,
  rule: SweepRule,
  failedAt: number | null,
): Omit<Planned, 'sweepsBefore' | 'decision'> {
  return {
    row: {},
    id: job.jobId,
    bizType: job.name,
    lastError: job.failedReason?.slice(0, ERROR_CHARS) ?? null,
    rule,
    identity: job.jobId,
    failedAt,
    queue,
    finishedOn: job.finishedOn,
    payloadSha1: createHash('sha1')
      .update(JSON.stringify({ name: job.name, data: job.data }))
      .digest('hex'),
    attemptsMade: job.attemptsMade,
  };
}

function itemOf(broker: string, p: Planned, outcome: SweepItem['outcome'], reason?: string): SweepItem {
  return {
    source: broker,
    queue: p.queue,
    id: p.id,
    bizType: p.bizType,
    rule: p.rule.name,
    outcome,
    eligibleAt: isoOrNull(p.decision.eligibleAt),
    identity: p.identity,
    failedAt: isoOrNull(p.failedAt === null ? null : Math.floor(p.failedAt)),
    ...(reason ? { reason } : {}),
  };
}

/** A rule's jobs retried through BullMQ at the rule's rate, each audited once BullMQ took it. */
async function retryJobs(
  broker: BrokerClient,
  queue: string,
  rule: SweepRule,
  jobs: Planned[],
  request: BrokerSweepRequest,
): Promise<SweepItem[]> {
  if (request.dryRun) return jobs.map((p) => itemOf(broker.name, p, 'would-retry'));
  const journal = await BullmqRetryJournal.open(request.db as Db, broker.name);
  const pacer = new Pacer(rule.rate);
  const items: SweepItem[] = [];
  let done = 0;
  for (const p of jobs) {
    const audit = auditRow(broker.name, p, request);
    const intent = await journal.begin(audit, queue, p.finishedOn);
    const outcome = await (broker.retryFailedJob as NonNullable<BrokerClient['retryFailedJob']>)(queue, {
      jobId: String(p.id),
      finishedOn: p.finishedOn,
    });
    await journal.end(intent, outcome.retried ? audit : null);
    if (outcome.retried) items.push(itemOf(broker.name, p, 'retried'));
    else items.push(itemOf(broker.name, p, 'lost-race', outcome.reason));
    await pacer.wait(++done);
  }
  return items;
}

/** One `sweep-retry` row: the job id in the broker's queue, the failure it retried, the rule. */
function auditRow(broker: string, p: Planned, request: BrokerSweepRequest): AuditInsert {
  return {
    operator: request.operator,
    host: request.host,
    action: SWEEP_RETRY_ACTION,
    source: broker.slice(0, 64),
    taskTable: p.queue.slice(0, 64),
    taskId: String(p.id).slice(0, 64),
    eventId: p.identity.slice(0, 64),
    fromStatus: 'failed',
    toStatus: 'wait',
    beforeJson: JSON.stringify({
      queue: p.queue,
      set: 'failed',
      name: p.bizType,
      failedReason: p.lastError,
      attemptsMade: p.attemptsMade,
      finishedOn: p.finishedOn,
      sha1: p.payloadSha1,
    }),
    afterJson: JSON.stringify({ queue: p.queue, set: 'wait', rule: p.rule.name }),
    reason: `sweep rule ${p.rule.name}`,
    runId: request.runId,
  };
}

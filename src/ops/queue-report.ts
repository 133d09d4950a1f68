import type { TaskreconConfig } from '../config/schema.js';
import { errorText } from './error-text.js';
import { usageError } from '../errors.js';
import { openBroker } from '../brokers/open/index.js';
import type { BrokerConfig } from '../config/brokers.js';
import type {
  Acknowledgement,
  BrokerClient,
  BullmqCounts,
  QueueFinding,
  QueueStats,
} from '../brokers/types.js';
import { acknowledgeBreaches, acknowledgeFindings, unacknowledged } from './acks.js';
import type { AckRow } from '../db/port/index.js';

/**
 * The broker half of `report`: one gauge row per queue of every configured broker, checked against
 * `report.thresholds.queues`. `ready`, `delayedOverdue`, `reservedExpired`, `unacked`, `failed` and
 * `stalled` breach at or above their limit; `consumersMin` breaches below it (a queue with fewer
 * consumers than that). `failed` and `stalled` are BullMQ's (its failed set; active jobs whose lock
 * is gone); on other brokers they are null and never breach.
 * No limit is set by default: `queues` raises the findings; thresholds are for alerting on volume.
 */

export const QUEUE_THRESHOLD_METRICS = [
  'ready',
  'delayedOverdue',
  'reservedExpired',
  'unacked',
  'consumersMin',
  'failed',
  'stalled',
] as const;
export type QueueThresholdMetric = (typeof QUEUE_THRESHOLD_METRICS)[number];
export type QueueThresholds = Partial<Record<QueueThresholdMetric, { warn?: number; crit?: number }>>;

export interface QueueGauge {
  broker: string;
  queue: string;
  ready: number | null;
  delayed: number | null;
  delayedOverdue: number | null;
  oldestOverdueSeconds: number | null;
  reserved: number | null;
  reservedExpired: number | null;
  unacked: number | null;
  consumers: number | null;
  /** BullMQ: its failed set (null on other brokers). */
  failed: number | null;
  /** BullMQ: active jobs whose lock is gone (null on other brokers). */
  stalled: number | null;
  /** BullMQ: its own count of each state (`Queue.getJobCounts`) and the stalled jobs; null elsewhere. */
  bullmq: BullmqGauge | null;
}

/** A BullMQ queue's counts as `report` carries them (the stalled ids left to `queues`). */
export type BullmqGauge = Omit<BullmqCounts, 'stalledIds'>;

export interface QueueBreach {
  broker: string;
  queue: string;
  metric: QueueThresholdMetric;
  level: 'warn' | 'crit';
  value: number;
  threshold: number;
  /** Set when an active acknowledgement (`taskrecon ack METRIC`) covers it: shown, not counted. */
  acknowledged?: Acknowledgement;
}

export type QueueStatus = 'OK' | 'WARNING' | 'CRITICAL';

/** `report --json` → `queues`. */
export interface QueueReportSection {
  status: QueueStatus;
  thresholds: QueueThresholds;
  queues: QueueGauge[];
  breaches: QueueBreach[];
  /** The findings `queues` reports for the same brokers (its snapshot findings need its history). */
  findings: QueueFinding[];
  /** Brokers that could not be reached, with why (the report goes on without them; status WARNING). */
  unreachable: Array<{ broker: string; message: string }>;
}

type Input = Partial<Record<QueueThresholdMetric, { warn?: string | number; crit?: string | number }>>;

/** `report.thresholds.queues` parsed: whole numbers, `off` for none. */
export function queueThresholds(input: Input | undefined): QueueThresholds {
  const out: QueueThresholds = {};
  for (const metric of QUEUE_THRESHOLD_METRICS) {
    const levels = input?.[metric];
    if (!levels) continue;
    const parsed: { warn?: number; crit?: number } = {};
    for (const level of ['warn', 'crit'] as const) {
      const raw = levels[level];
      if (raw === undefined || /^(off|none)$/i.test(String(raw).trim())) continue;
      const text = String(raw).trim();
      if (!/^\d+$/.test(text))
        throw usageError(
          `report.thresholds.queues.${metric}.${level}: '${text}' is not a whole number`,
          'Write e.g. 1000, or off.',
        );
      parsed[level] = Number(text);
    }
    out[metric] = parsed;
  }
  return out;
}

export function gaugeOf(broker: string, q: QueueStats): QueueGauge {
  return {
    broker,
    queue: q.name,
    ready: q.ready,
    delayed: q.delayed,
    delayedOverdue: q.delayedOverdue,
    oldestOverdueSeconds: q.oldestOverdueSeconds,
    reserved: q.reserved,
    reservedExpired: q.reservedExpired,
    unacked: q.unacked,
    consumers: q.consumers,
    failed: q.bullmq?.failed ?? null,
    stalled: q.bullmq?.stalled ?? null,
    bullmq: q.bullmq ? bullmqGauge(q.bullmq) : null,
  };
}

function bullmqGauge(counts: BullmqCounts): BullmqGauge {
  const { stalledIds: _ids, ...gauge } = counts;
  return gauge;
}

/** Breaches of the gauges; a null gauge never breaches. Pure. */
export function queueBreaches(gauges: readonly QueueGauge[], thresholds: QueueThresholds): QueueBreach[] {
  const out: QueueBreach[] = [];
  for (const g of gauges) {
    for (const metric of QUEUE_THRESHOLD_METRICS) {
      const limits = thresholds[metric];
      if (!limits) continue;
      const value = metric === 'consumersMin' ? g.consumers : g[metric];
      if (value === null) continue;
      const breaks = (limit: number | undefined) =>
        limit !== undefined && (metric === 'consumersMin' ? value < limit : value >= limit);
      const level = breaks(limits.crit) ? 'crit' : breaks(limits.warn) ? 'warn' : undefined;
      if (level)
        out.push({
          broker: g.broker,
          queue: g.queue,
          metric,
          level,
          value,
          threshold: limits[level] as number,
        });
    }
  }
  return out;
}

/**
 * The verdict of queue findings, the one `queues` exits with and `report` shows: CRITICAL when one
 * is crit, WARNING when one is warn, else OK. Pure.
 */
export function findingsStatus(findings: readonly Pick<QueueFinding, 'level'>[]): QueueStatus {
  if (findings.some((f) => f.level === 'crit')) return 'CRITICAL';
  if (findings.some((f) => f.level === 'warn')) return 'WARNING';
  return 'OK';
}

/**
 * Inspects every configured broker for `report`; undefined when there are none. Breaches and
 * findings an active acknowledgement covers are shown with it and leave the status alone.
 */
export async function reportQueues(
  config: TaskreconConfig,
  open: (name: string, config: BrokerConfig) => Promise<BrokerClient> = openBroker,
  acks: readonly AckRow[] = [],
): Promise<QueueReportSection | undefined> {
  const brokers = Object.entries(config.brokers ?? {});
  if (brokers.length === 0) return undefined;
  const thresholds = queueThresholds((config.report?.thresholds as { queues?: Input } | undefined)?.queues);
  const section: QueueReportSection = {
    status: 'OK',
    thresholds,
    queues: [],
    breaches: [],
    findings: [],
    unreachable: [],
  };
  for (const [name, brokerConfig] of brokers) {
    let broker: BrokerClient | undefined;
    try {
      broker = await open(name, brokerConfig);
      const { report, findings } = await broker.inspect({ peek: 0, nowEpoch: Date.now() / 1000 });
      section.queues.push(...report.queues.map((q) => gaugeOf(name, q)));
      section.findings.push(...findings);
    } catch (error) {
      section.unreachable.push({ broker: name, message: errorText(error).message });
    } finally {
      await broker?.close();
    }
  }
  section.breaches = acknowledgeBreaches(queueBreaches(section.queues, thresholds), acks);
  section.findings = acknowledgeFindings(section.findings, acks);
  // Breaches and findings judged alike, so `report` never says OK while `queues` warns.
  const unreachable = section.unreachable.map(() => ({ level: 'warn' as const }));
  section.status = findingsStatus([
    ...unacknowledged(section.breaches),
    ...unacknowledged(section.findings),
    ...unreachable,
  ]);
  return section;
}

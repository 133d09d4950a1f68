import { FINDING_CODES } from '../../brokers/types.js';
import type { BrokerConfig } from '../../config/brokers.js';
import { closest } from '../../config/suggest.js';
import { formatSeconds } from '../../core/duration.js';
import { usageError } from '../../errors.js';
import { QUEUE_THRESHOLD_METRICS } from '../../ops/queue-report.js';

/**
 * What `ack` may acknowledge: a finding code of `queues`, or a queue threshold metric of `report`
 * (`ready`, `consumersMin`, …), for one broker's queue; the three broker-wide findings for the broker.
 */
export const ACKABLE_CODES: readonly string[] = [...FINDING_CODES, ...QUEUE_THRESHOLD_METRICS];
/** Findings of a broker as a whole (queue null): acknowledged without --queue. */
export const BROKER_WIDE_CODES: readonly string[] = ['no-persistence', 'evicting', 'key-format'];
/** An acknowledgement is a decision to look again: at most this long (90 days). */
export const MAX_ACK_MS = 90 * 86_400_000;

export interface AckRequest {
  code: string;
  broker: string;
  /** '' for a broker-wide finding. */
  queue: string;
  untilMs: number;
  reason: string;
}

export interface AckFlagValues {
  broker?: string;
  queue?: string;
  until?: number;
  reason?: string;
}

/** The flags of `ack CODE`, checked; exit 3 naming what is wrong before anything is written. */
export function ackRequest(
  code: string | undefined,
  flags: AckFlagValues,
  brokers: Record<string, BrokerConfig> | undefined,
): AckRequest {
  if (!code)
    throw usageError(
      'ack needs the code of the finding to acknowledge',
      'Write e.g. taskrecon ack no-persistence --broker redis-main --until 7d --reason "…", or ack --list.',
    );
  if (!ACKABLE_CODES.includes(code)) {
    const guess = closest(code, ACKABLE_CODES);
    throw usageError(
      `'${code}' is not a queue finding code or a queue threshold metric`,
      `${guess ? `Did you mean '${guess}'? ` : ''}Codes: ${ACKABLE_CODES.join(', ')}.`,
    );
  }
  if (!flags.broker)
    throw usageError(
      '--broker is required',
      'Name the broker of the finding, as `queues` prints it: --broker NAME.',
    );
  const names = Object.keys(brokers ?? {});
  if (names.length > 0 && !names.includes(flags.broker)) {
    const guess = closest(flags.broker, names);
    throw usageError(
      `unknown broker '${flags.broker}'`,
      `${guess ? `Did you mean '${guess}'? ` : ''}Configured brokers: ${names.join(', ')}.`,
    );
  }
  const brokerWide = BROKER_WIDE_CODES.includes(code);
  if (brokerWide && flags.queue)
    throw usageError(
      `${code} is a finding of the broker itself, not of a queue`,
      `Leave out --queue: taskrecon ack ${code} --broker ${flags.broker} …`,
    );
  if (!brokerWide && !flags.queue)
    throw usageError(
      `--queue is required for ${code}`,
      'Name the queue of the finding, as `queues` prints it (BROKER/QUEUE): --queue QUEUE.',
    );
  if (flags.until === undefined)
    throw usageError(
      '--until is required: an acknowledgement expires',
      'Give how long it holds, e.g. --until 7d (at most 90d); ack --remove ID ends it earlier.',
    );
  if (flags.until <= 0 || flags.until > MAX_ACK_MS)
    throw usageError(
      `--until ${formatSeconds(flags.until / 1000)} is out of range`,
      'Give a duration from 1s to 90d, e.g. --until 7d.',
    );
  const reason = flags.reason?.trim();
  if (!reason)
    throw usageError(
      '--reason is required',
      'Say why this finding may stay quiet, e.g. --reason "Prometheus alerts on it; fix planned in OPS-12".',
    );
  return { code, broker: flags.broker, queue: flags.queue ?? '', untilMs: flags.until, reason };
}

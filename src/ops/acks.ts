import type { Acknowledgement, QueueFinding } from '../brokers/types.js';
import { store, type AckRow } from '../db/port/index.js';
import type { Db } from '../db/types.js';
import type { QueueBreach } from './queue-report.js';

/**
 * Acknowledged queue findings, applied: `queues` and `report` mark what an active acknowledgement
 * covers and leave it out of their exit code and status. An acknowledgement covers one code of
 * one broker's queue (or of the broker itself: queue ''); once it expires or is ended, the finding
 * counts again.
 */

/** The active acknowledgements at the database's now; none when the table does not exist yet. */
export async function activeAcks(db: Db): Promise<AckRow[]> {
  if (!(await store.state.ackTableExists(db))) return [];
  return store.state.selectAcks(db, await db.nowEpoch());
}

export function acknowledgementOf(ack: AckRow): Acknowledgement {
  return {
    id: ack.id,
    until: new Date(ack.untilEpoch * 1000).toISOString(),
    reason: ack.reason,
    operator: ack.operator,
  };
}

function covering(
  acks: readonly AckRow[],
  code: string,
  broker: string,
  queue: string | null,
): AckRow | undefined {
  return acks.find((a) => a.code === code && a.broker === broker && a.queue === (queue ?? ''));
}

/** The findings with `acknowledged` set where an active acknowledgement covers them. Pure. */
export function acknowledgeFindings(
  findings: readonly QueueFinding[],
  acks: readonly AckRow[],
): QueueFinding[] {
  return findings.map((f) => {
    const ack = covering(acks, f.code, f.broker, f.queue);
    return ack ? { ...f, acknowledged: acknowledgementOf(ack) } : f;
  });
}

/** The breaches with `acknowledged` set where an acknowledgement of the metric covers them. Pure. */
export function acknowledgeBreaches(
  breaches: readonly QueueBreach[],
  acks: readonly AckRow[],
): QueueBreach[] {
  return breaches.map((b) => {
    const ack = covering(acks, b.metric, b.broker, b.queue);
    return ack ? { ...b, acknowledged: acknowledgementOf(ack) } : b;
  });
}

/** What still counts: the findings no acknowledgement covers. */
export function unacknowledged<T extends { acknowledged?: Acknowledgement }>(items: readonly T[]): T[] {
  return items.filter((i) => i.acknowledged === undefined);
}

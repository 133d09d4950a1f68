import { describe, expect, it } from 'vitest';
import { finding } from '../../src/brokers/types.js';
import type { AckRow } from '../../src/db/port/index.js';
import { acknowledgeBreaches, acknowledgeFindings, unacknowledged } from '../../src/ops/acks.js';
import type { QueueBreach } from '../../src/ops/queue-report.js';
import { exitFor } from '../../src/verbs/queues/index.js';

const ack = (over: Partial<AckRow>): AckRow => ({
  id: 1,
  code: 'no-consumers',
  broker: 'rabbit',
  queue: 'work',
  reason: 'known',
  operator: 'alice@ops',
  createdEpoch: 1_800_000_000,
  untilEpoch: 1_800_086_400,
  endedEpoch: null,
  runId: 'r',
  ...over,
});

describe('acknowledgements applied', () => {
  const findings = [
    finding('no-consumers', 'rabbit', 'work', 2, 'm', 'h'),
    finding('no-consumers', 'rabbit', 'other', 2, 'm', 'h'),
    finding('no-persistence', 'redis', null, null, 'm', 'h'),
    finding('evicting', 'redis', null, null, 'm', 'h'),
  ];

  it('covers exactly its code on its broker and queue; a broker-wide one has queue ""', () => {
    const marked = acknowledgeFindings(findings, [
      ack({}),
      ack({ id: 2, code: 'no-persistence', broker: 'redis', queue: '' }),
    ]);
    expect(marked.map((f) => f.acknowledged?.id ?? null)).toEqual([1, null, 2, null]);
    expect(marked[0]?.acknowledged).toEqual({
      id: 1,
      until: new Date(1_800_086_400_000).toISOString(),
      reason: 'known',
      operator: 'alice@ops',
    });
    expect(unacknowledged(marked).map((f) => `${f.code}:${f.queue}`)).toEqual([
      'no-consumers:other',
      'evicting:null',
    ]);
  });

  it('an acknowledged finding leaves the exit code alone; one not covered still counts', () => {
    const onlyWork = [findings[0]!, finding('evicting', 'redis', null, null, 'm', 'h')];
    expect(exitFor(onlyWork)).toBe(2);
    const bothAcked = acknowledgeFindings(onlyWork, [
      ack({}),
      ack({ id: 2, code: 'evicting', broker: 'redis', queue: '' }),
    ]);
    expect(exitFor(bothAcked)).toBe(0);
    expect(exitFor(acknowledgeFindings(onlyWork, [ack({})]))).toBe(2);
    // Another broker's or queue's acknowledgement covers nothing here.
    expect(
      exitFor(acknowledgeFindings([findings[0]!], [ack({ broker: 'rabbit2' }), ack({ queue: 'x' })])),
    ).toBe(1);
  });

  it('covers a queue breach by its metric', () => {
    const breach: QueueBreach = {
      broker: 'rabbit',
      queue: 'work',
      metric: 'ready',
      level: 'warn',
      value: 2,
      threshold: 1,
    };
    expect(acknowledgeBreaches([breach], [ack({ code: 'ready' })])[0]?.acknowledged?.id).toBe(1);
    expect(acknowledgeBreaches([breach], [ack({})])[0]?.acknowledged).toBeUndefined();
  });
});

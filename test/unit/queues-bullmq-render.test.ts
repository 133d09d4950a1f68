import { describe, expect, it } from 'vitest';
import type { QueuesResult, QueueStats } from '../../src/brokers/types.js';
import { queuesBody } from '../../src/console/pages/queues.js';
import { renderQueues } from '../../src/render/queues.js';

// A BullMQ queue as `queues` reports it: its own counts, a stalled job, two failed jobs in detail.
const mail: QueueStats = {
  name: 'mail',
  ready: 2,
  delayed: 1,
  delayedOverdue: null,
  oldestOverdueSeconds: null,
  reserved: 1,
  reservedExpired: 1,
  unacked: null,
  consumers: null,
  durable: null,
  arguments: null,
  deadLettered: null,
  bullmq: {
    wait: 2,
    active: 1,
    delayed: 1,
    prioritized: 0,
    paused: 0,
    failed: 7,
    completed: 40,
    stalled: 1,
    stalledIds: ['9'],
  },
  failedJobs: [
    {
      jobId: '12',
      name: 'send-mail',
      data: { to: 'a@example.com' },
      failedReason: 'SMTP <refused>',
      stacktrace: ['Error: SMTP <refused>\n    at send (mail.js:3:9)'],
      attemptsMade: 3,
      finishedOn: 1_700_000_000_000,
    },
    {
      jobId: '11',
      name: 'send-mail',
      data: { to: 'b@example.com' },
      failedReason: 'timeout',
      stacktrace: [],
      attemptsMade: 1,
      finishedOn: null,
    },
  ],
};
const result: QueuesResult = {
  now: '2026-01-01T00:00:00Z',
  brokers: [
    { name: 'app', kind: 'redis', framework: 'bullmq', url: 'redis://127.0.0.1:6379/0', queues: [mail] },
  ],
  findings: [],
};

describe('BullMQ failed jobs in the console and the text of queues', () => {
  it('the console queue page shows the failed count and each failed job with payload and error, escaped', () => {
    const page = queuesBody(result, [], undefined).toString();
    expect(page).toContain('<th class="num">failed</th>');
    expect(page).toMatch(/<td class="num">7<\/td>/);
    expect(page).toContain('Failed jobs of mail');
    expect(page).toContain('SMTP &lt;refused&gt;');
    expect(page).not.toContain('SMTP <refused>');
    expect(page).toContain('a@example.com');
    expect(page).toContain('at send (mail.js:3:9)');
  });

  it('a queue of another framework shows no failed column', () => {
    const other: QueuesResult = {
      ...result,
      brokers: [
        {
          ...result.brokers[0]!,
          framework: 'laravel',
          queues: [{ ...mail, bullmq: undefined, failedJobs: undefined }],
        },
      ],
    };
    const page = queuesBody(other, [], undefined).toString();
    expect(page).not.toContain('<th class="num">failed</th>');
    expect(page).not.toContain('Failed jobs of');
  });

  it('the text table has failed and completed, and a line per failed job', () => {
    const text = renderQueues(result, 200);
    expect(text).toMatch(/failed\s+completed/);
    expect(text).toMatch(/mail\s.*\b7\s+40\b/);
    expect(text).toContain('mail: failed 12 send-mail attempts=3: SMTP <refused>');
  });
});

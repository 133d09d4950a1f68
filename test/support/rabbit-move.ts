/**
 * Runs one RabbitMQ move over the data API, as `queues move` does, with a journal file standing in
 * for the intent store: `intents.open` appends an `intent` line with the batch's ids (before the
 * publish), `intents.settle` a `settled` line (after the confirms and the acks), then waits
 * `settleDelayMs` (a slow database, which widens the window a kill can land in).
 * Prints the MoveResult as JSON. Usage: tsx rabbit-move.ts '<json options>'.
 */
import { appendFileSync } from 'node:fs';
import { openRabbitBroker } from '../../src/brokers/rabbitmq/index.js';
import type { MovedJob } from '../../src/brokers/types.js';

interface Options {
  url: string;
  api: string;
  from: string;
  to: string;
  journal: string;
  runId: string;
  batch?: number;
  settleDelayMs?: number;
  ratePerSecond?: number;
}

const options = JSON.parse(process.argv[2] ?? '{}') as Options;
const broker = openRabbitBroker('rabbit', { kind: 'rabbitmq', url: options.url, api: options.api });
const write = (kind: string, jobs: readonly MovedJob[]): void =>
  appendFileSync(
    options.journal,
    `${JSON.stringify({ kind, runId: options.runId, ids: jobs.map((j) => j.jobId) })}\n`,
  );
try {
  const result = await broker.move({
    from: options.from,
    to: options.to,
    what: 'ready',
    batch: options.batch ?? 1,
    dryRun: false,
    runId: options.runId,
    ratePerSecond: options.ratePerSecond,
    onBatch: async () => undefined,
    intents: {
      async open(jobs) {
        write('intent', jobs);
        return 0;
      },
      async settle(_handle, moved) {
        write('settled', moved);
        if (options.settleDelayMs) await new Promise((r) => setTimeout(r, options.settleDelayMs));
      },
    },
    shouldStop: () => false,
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await broker.close();
}

/**
 * Runs one RabbitMQ move over the data API, as `queues move` does, with a journal file standing in
 * for the audit log: onBatch appends the moved ids (then waits `AUDIT_DELAY_MS`, a slow audit
 * write, which widens the window between a confirm and its ack); movedBefore reads it back.
 * Prints the MoveResult as JSON. Usage: tsx rabbit-move.ts '<json options>'.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { openRabbitBroker } from '../../src/brokers/rabbitmq/index.js';

interface Options {
  url: string;
  api: string;
  from: string;
  to: string;
  journal: string;
  runId: string;
  auditDelayMs?: number;
  ratePerSecond?: number;
}

const options = JSON.parse(process.argv[2] ?? '{}') as Options;
const broker = openRabbitBroker('rabbit', { kind: 'rabbitmq', url: options.url, api: options.api });
const journaled = (): Set<string> =>
  new Set(
    existsSync(options.journal)
      ? readFileSync(options.journal, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as { jobId: string }).jobId)
      : [],
  );
try {
  const result = await broker.move({
    from: options.from,
    to: options.to,
    what: 'ready',
    batch: 1,
    dryRun: false,
    runId: options.runId,
    ratePerSecond: options.ratePerSecond,
    async onBatch(moved) {
      for (const job of moved)
        appendFileSync(options.journal, `${JSON.stringify({ jobId: job.jobId, runId: options.runId })}\n`);
      if (options.auditDelayMs) await new Promise((r) => setTimeout(r, options.auditDelayMs));
    },
    shouldStop: () => false,
    async movedBefore(ids) {
      const seen = journaled();
      return new Set(ids.filter((id) => seen.has(id)));
    },
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await broker.close();
}

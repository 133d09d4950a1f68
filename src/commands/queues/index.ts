import { Flags } from '../../core/oclif.js';
import { BaseCommand } from '../../base-command.js';
import type { QueuesResult } from '../../brokers/types.js';
import { renderQueues, withPasteHints } from '../../render/queues.js';
import {
  ackDbOf,
  brokerFlags,
  brokersFor,
  exitFor,
  inspectQueues,
  peekFlag,
  snapshotStore,
} from '../../verbs/queues/index.js';

export default class Queues extends BaseCommand<typeof Queues> {
  static override summary =
    'Inspect the queues of Redis and RabbitMQ brokers: counts, ages, findings; `queues move` and `queues recover` repair them.';
  static override description =
    'Counts ready, delayed, overdue, reserved and expired jobs per queue (Redis: LLEN / ZCARD / ZCOUNT after a SCAN ' +
    'of the key layout, never KEYS; RabbitMQ: the management API) and reports what needs a person: delayed jobs ' +
    'nobody migrates, reservations of dead workers, queues nobody consumes, a Redis without persistence or with an ' +
    'evicting memory policy, dead-letter wiring that drops messages. Exit 1 on a warning, 2 on a critical finding, ' +
    '3 when a broker cannot be reached. Snapshots for stale-queue go to taskrecon_queue_snapshot (with a database) ' +
    'or to --state FILE. Inspecting changes no job; `queues move` and `queues recover` move jobs, audited.';
  static override examples = [
    '<%= config.bin %> queues',
    '<%= config.bin %> queues --broker redis-main --json',
    '<%= config.bin %> queues --redis redis://127.0.0.1:6379/0 --framework laravel --prefix laravel_database_ --queue default',
    '<%= config.bin %> queues --redis redis://127.0.0.1:6379/2 --framework thinkphp --peek 3 --state /var/lib/taskrecon/queues.json',
  ];

  static override flags = {
    ...brokerFlags,
    queue: Flags.string({
      summary:
        'With --redis / --rabbitmq: a queue the workers consume (repeatable); other queues found are unknown-queue.',
      multiple: true,
    }),
    peek: peekFlag,
    state: Flags.string({ summary: 'Keep snapshots in this JSON file (for runs without a database).' }),
  };

  async run(): Promise<QueuesResult> {
    const brokers = brokersFor(this.context, this.flags);
    const store = await snapshotStore(this.context, this.flags.state, (m) => this.note(m));
    const result = withPasteHints(
      await inspectQueues({
        brokers,
        peek: this.flags.peek,
        store,
        ackDb: await ackDbOf(this.context),
        nowEpoch: Date.now() / 1000,
      }),
    );
    if (!this.jsonEnabled()) this.log(renderQueues(result, process.stdout.columns));
    this.setExit(exitFor(result.findings));
    return result;
  }
}

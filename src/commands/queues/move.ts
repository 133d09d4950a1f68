import { Flags } from '../../core/oclif.js';
import { BaseCommand } from '../../base-command.js';
import type { MoveResult, MoveWhat } from '../../brokers/types.js';
import { ExitCode } from '../../errors.js';
import { confirmMove, renderMove } from '../../render/queues.js';
import {
  brokerFlags,
  brokerFor,
  confirmMoveOrStop,
  moveFlags,
  moveOptionsOf,
  parseMatchHeader,
  rabbitMoveFlags,
  runMove,
  stoppedEarly,
} from '../../verbs/queues/index.js';

export default class QueuesMove extends BaseCommand<typeof QueuesMove> {
  static override summary =
    'Move jobs from one queue to another, atomically per batch, each moved job audited.';
  static override description =
    'Redis: one Lua script per batch moves ready jobs list to list in the order workers take them, delayed jobs ' +
    'and reservations set to set with their scores — a crash never loses or doubles a job. RabbitMQ: republishes ' +
    'with publisher confirms and acks each source message after its confirm (a crash may duplicate, never lose); ' +
    'matching by header or body peeks messages, which requeues the others with `redelivered` set. Every moved job ' +
    'gets a taskrecon_audit row, so a database is needed (--dry-run needs none). Asks on a terminal; --yes elsewhere. ' +
    'BullMQ (framework bullmq): --what failed retries failed jobs through its API (Job.retry, or Queue.add + Job.remove ' +
    'with --to). Ctrl-C finishes the batch in hand and stops.';
  static override examples = [
    '<%= config.bin %> queues move --broker redis-main --from default --to default2 --what all --reason "queue renamed in the deploy" --yes',
    '<%= config.bin %> queues move --from low --to high --limit 1000 --rate 500/s --dry-run',
    '<%= config.bin %> queues move --broker rabbit --from business_queue.parking --to-exchange retry_exchange --routing-key business_queue --reset-death --yes',
  ];

  static override flags = {
    ...brokerFlags,
    from: Flags.string({ summary: 'The queue the jobs leave.', required: true }),
    to: Flags.string({ summary: 'The queue they go to (RabbitMQ: or --to-exchange).' }),
    what: Flags.string({
      summary:
        'Redis: which jobs: the ready list, the delayed set, the reservations, or all three; BullMQ: failed (retried in place without --to).',
      options: ['ready', 'delayed', 'reserved', 'all', 'failed'],
      default: 'ready',
    }),
    job: Flags.string({
      summary: 'BullMQ --what failed: only this failed job (repeat the flag for more).',
      multiple: true,
    }),
    ...moveFlags,
    ...rabbitMoveFlags,
  };

  async run(): Promise<MoveResult> {
    const flags = this.flags;
    const options = moveOptionsOf(flags);
    const choice = brokerFor(this.context, flags);
    await confirmMoveOrStop(
      flags,
      !this.jsonEnabled() && process.stdin.isTTY && process.stdout.isTTY,
      `Move ${flags.what} jobs of ${flags.from} to ${flags.to ?? flags['to-exchange'] ?? flags.from} on ${choice.name}?`,
      confirmMove,
    );
    const result = await runMove(
      this.context,
      choice,
      {
        ...options,
        from: flags.from,
        to: flags.to,
        what: flags.what as MoveWhat,
        toExchange: flags['to-exchange'],
        routingKey: flags['routing-key'],
        resetDeath: flags['reset-death'],
        jobIds: flags.job,
        match:
          flags['match-header'] || flags['match-body']
            ? { header: parseMatchHeader(flags['match-header']), body: flags['match-body'] }
            : undefined,
      },
      (m) => this.note(m),
    );
    if (!this.jsonEnabled()) this.log(renderMove(result));
    if (stoppedEarly(result, options.dryRun)) this.setExit(ExitCode.findings);
    return result;
  }
}

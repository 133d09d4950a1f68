import { Flags } from '@oclif/core';
import { randomUUID } from 'node:crypto';
import { BaseCommand } from '../../base-command.js';
import type { MoveResult, MoveWhat } from '../../brokers/types.js';
import { ExitCode, usageError } from '../../errors.js';
import { confirmMove, renderMove } from '../../render/queues.js';
import { brokerFlags, moveFlags, rabbitMoveFlags } from '../../verbs/queues/flags.js';
import { brokerFor, parseMatchHeader } from '../../verbs/queues/index.js';
import { runMove } from '../../verbs/queues/move.js';

export default class QueuesMove extends BaseCommand<typeof QueuesMove> {
  static override summary =
    'Move jobs from one queue to another, atomically per batch, each moved job audited.';
  static override description =
    'Redis: one Lua script per batch moves ready jobs list to list in the order workers take them, delayed jobs ' +
    'and reservations set to set with their scores — a crash never loses or doubles a job. RabbitMQ: republishes ' +
    'with publisher confirms and acks each source message after its confirm (a crash may duplicate, never lose); ' +
    'matching by header or body peeks messages, which requeues the others with `redelivered` set. Every moved job ' +
    'gets a taskrecon_audit row, so a database is needed (--dry-run needs none). Asks on a terminal; --yes elsewhere. ' +
    'Ctrl-C finishes the batch in hand and stops.';
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
      summary: 'Redis: which jobs: the ready list, the delayed set, the reservations, or all three.',
      options: ['ready', 'delayed', 'reserved', 'all'],
      default: 'ready',
    }),
    ...moveFlags,
    ...rabbitMoveFlags,
  };

  async run(): Promise<MoveResult> {
    const flags = this.flags;
    const dryRun = Boolean(flags['dry-run']);
    const choice = brokerFor(this.context, flags);
    if (!flags.yes && !dryRun) {
      const asked = !this.jsonEnabled() && process.stdin.isTTY && process.stdout.isTTY;
      if (!asked)
        throw usageError(
          'refusing to move jobs without a confirmation: this is not a terminal',
          'Pass --yes, or --dry-run to count what would move.',
        );
      if (
        !(await confirmMove(
          `Move ${flags.what} jobs of ${flags.from} to ${flags.to ?? flags['to-exchange']} on ${choice.name}?`,
        ))
      )
        throw usageError('nothing moved: not confirmed');
    }
    const result = await runMove(
      this.context,
      choice,
      {
        from: flags.from,
        to: flags.to,
        what: flags.what as MoveWhat,
        toExchange: flags['to-exchange'],
        routingKey: flags['routing-key'],
        resetDeath: flags['reset-death'],
        match:
          flags['match-header'] || flags['match-body']
            ? { header: parseMatchHeader(flags['match-header']), body: flags['match-body'] }
            : undefined,
        limit: flags.limit,
        rate: flags.rate,
        batch: flags.batch,
        dryRun,
        reason: flags.reason,
        operator: flags.operator,
        runId: randomUUID(),
      },
      (m) => this.note(m),
    );
    if (!this.jsonEnabled()) this.log(renderMove(result));
    // Stopped early (Ctrl-C): what moved is audited; the same command moves the rest.
    if (!dryRun && result.moved < result.matched) this.setExit(ExitCode.findings);
    return result;
  }
}

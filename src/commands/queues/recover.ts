import { Flags } from '@oclif/core';
import { randomUUID } from 'node:crypto';
import { BaseCommand } from '../../base-command.js';
import { ExitCode, usageError } from '../../errors.js';
import { confirmMove, renderRecover } from '../../render/queues.js';
import { brokerFlags, moveFlags } from '../../verbs/queues/flags.js';
import { brokerFor } from '../../verbs/queues/index.js';
import { runRecover, type RecoverResult } from '../../verbs/queues/move.js';

export default class QueuesRecover extends BaseCommand<typeof QueuesRecover> {
  static override summary =
    'Move overdue delayed jobs and expired reservations back to ready, as the framework worker does.';
  static override description =
    "Runs the framework's own migrate where no worker runs it: Laravel's migrateExpiredJobs (a notify element per " +
    "job), think-queue's, and for framework list the mover of the classic design — done atomically per batch, unlike " +
    'the ZRANGEBYSCORE / ZREM / LPUSH loop that loses a job when it dies between two calls. Reservations go back ' +
    'verbatim (attempts already counted). Every moved job gets a taskrecon_audit row. Ctrl-C finishes the batch in hand.';
  static override examples = [
    '<%= config.bin %> queues recover --broker redis-main --queue default --reason "workers were down" --yes',
    '<%= config.bin %> queues recover --redis redis://127.0.0.1:6379/0 --framework list --lists async_queue,async_delay_queue --dry-run',
  ];

  static override flags = {
    ...brokerFlags,
    queue: Flags.string({ summary: 'Only this queue (default: every queue of the layout found).' }),
    ...moveFlags,
  };

  async run(): Promise<RecoverResult> {
    const flags = this.flags;
    const dryRun = Boolean(flags['dry-run']);
    const choice = brokerFor(this.context, { ...flags, queue: undefined });
    if (!flags.yes && !dryRun) {
      const asked = !this.jsonEnabled() && process.stdin.isTTY && process.stdout.isTTY;
      if (!asked)
        throw usageError(
          'refusing to move jobs without a confirmation: this is not a terminal',
          'Pass --yes, or --dry-run to count what would move.',
        );
      if (
        !(await confirmMove(
          `Move due delayed jobs and expired reservations back to ready on ${choice.name}?`,
        ))
      )
        throw usageError('nothing moved: not confirmed');
    }
    const result = await runRecover(
      this.context,
      choice,
      {
        queue: flags.queue,
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
    if (!this.jsonEnabled()) this.log(renderRecover(result));
    if (!dryRun && result.moved < result.matched) this.setExit(ExitCode.findings);
    return result;
  }
}

import { Flags } from '../../core/oclif.js';
import { BaseCommand } from '../../base-command.js';
import { ExitCode } from '../../errors.js';
import { confirmMove, renderRecover } from '../../render/queues.js';
import {
  brokerFlags,
  brokerFor,
  confirmMoveOrStop,
  moveFlags,
  moveOptionsOf,
  type RecoverResult,
  runRecover,
  stoppedEarly,
} from '../../verbs/queues/index.js';

export default class QueuesRecover extends BaseCommand<typeof QueuesRecover> {
  static override summary =
    'Move overdue delayed jobs and expired reservations back to ready, as the framework worker does.';
  static override description =
    "Runs the framework's own migrate where no worker runs it: Laravel's migrateExpiredJobs (a notify element per " +
    "job), think-queue's, and for framework list the mover of the classic design — done atomically per batch, unlike " +
    'the ZRANGEBYSCORE / ZREM / LPUSH loop that loses a job when it dies between two calls. Reservations go back ' +
    'verbatim (attempts already counted). BullMQ (framework bullmq): its own stalled check, through the bullmq library, ' +
    'returns active jobs whose lock is gone to wait. Every moved job gets a taskrecon_audit row. Ctrl-C finishes the batch in hand.';
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
    const options = moveOptionsOf(flags);
    const choice = brokerFor(this.context, { ...flags, queue: undefined });
    await confirmMoveOrStop(
      flags,
      !this.jsonEnabled() && process.stdin.isTTY && process.stdout.isTTY,
      `Move due delayed jobs and expired reservations back to ready on ${choice.name}?`,
      confirmMove,
    );
    const result = await runRecover(this.context, choice, { ...options, queue: flags.queue }, (m) =>
      this.note(m),
    );
    if (!this.jsonEnabled()) this.log(renderRecover(result));
    if (stoppedEarly(result, options.dryRun)) this.setExit(ExitCode.findings);
    return result;
  }
}

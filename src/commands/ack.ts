import { Args, Flags } from '../core/oclif.js';
import { BaseCommand } from '../base-command.js';
import { countFlag, durationFlag } from '../flags.js';
import { renderAck, renderAckList } from '../render/ack.js';
import {
  ackRequest,
  addAck,
  listAcks,
  removeAck,
  type AckListResult,
  type AckResult,
} from '../verbs/ack/index.js';

export default class Ack extends BaseCommand<typeof Ack> {
  static override summary =
    'Acknowledge a queue finding until a time, with a reason: shown, no longer counted.';
  static override description =
    "An acknowledged finding of `queues` (a code on a broker's queue, or of the broker itself) or queue breach of " +
    '`report` (a threshold metric such as ready or consumersMin) is still shown, marked ACK, but no longer sets the ' +
    'exit code or the status, so --quiet cron runs stay quiet. It speaks again when --until has passed or ' +
    'ack --remove ID ends it. Kept in taskrecon_ack (created on first use), each change audited in taskrecon_audit.';
  static override examples = [
    '<%= config.bin %> ack no-persistence --broker redis-main --until 7d --reason "RDB disabled on purpose, OPS-12"',
    '<%= config.bin %> ack parked-messages --broker rabbit --queue orders.dlq --until 2d --reason "replayed Monday"',
    '<%= config.bin %> ack --list',
    '<%= config.bin %> ack --remove 3 --reason "fixed"',
  ];

  static override args = {
    code: Args.string({
      description: 'The finding code (no-persistence, parked-messages, …) or queue metric.',
    }),
  };

  static override flags = {
    broker: Flags.string({ summary: 'The broker of the finding, as `queues` names it.' }),
    queue: Flags.string({ summary: 'The queue of the finding (not for broker-wide findings).' }),
    until: durationFlag({ summary: 'How long it holds, e.g. 7d, 12h, 2s (at most 90d).' }),
    reason: Flags.string({ summary: 'Why it may stay quiet (required; recorded and shown).' }),
    operator: Flags.string({ summary: 'Who acknowledges, for the audit (default: OS user@host).' }),
    list: Flags.boolean({ summary: 'List the active acknowledgements.', exclusive: ['remove'] }),
    all: Flags.boolean({ summary: 'With --list: also the expired and ended ones.', dependsOn: ['list'] }),
    remove: countFlag(1)({ summary: 'End the acknowledgement with this id now.', exclusive: ['list'] }),
    'dry-run': Flags.boolean({ summary: 'Check and show what would be written; write nothing.' }),
  };

  async run(): Promise<AckResult | AckListResult> {
    const { flags } = this;
    if (flags.list) {
      const result = await listAcks(await this.context.open(), flags.all);
      if (!this.jsonEnabled()) this.log(renderAckList(result));
      return result;
    }
    const options = { operator: flags.operator, dryRun: flags['dry-run'], reason: flags.reason };
    // The input is checked before the database is opened: bad input exits 3 with nothing written.
    const request =
      flags.remove === undefined ? ackRequest(this.args.code, flags, this.context.config.brokers) : undefined;
    const db = await this.context.open();
    const result = request
      ? await addAck(db, request, options)
      : await removeAck(db, flags.remove as number, options);
    if (!this.jsonEnabled()) this.log(renderAck(result));
    return result;
  }
}

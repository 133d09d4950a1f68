import type { Channel, Message } from 'amqplib';
import { TaskreconError } from '../../errors.js';
import type { MovedJob, MoveRequest } from '../types.js';
import { AckLedger } from './move-acks.js';
import { bodyDigest, messageJobId, republishOptions } from './move-message.js';
import { flushAcks, type ConfirmedPublisher } from './move-publish.js';

/** Where a move publishes, and what it calls the target in messages and audit rows. */
export interface MoveTarget {
  exchange: string;
  routingKey: string;
  /** The queue, or `exchange 'EX' key 'RK'`. */
  to: string;
  username: string;
}

/**
 * Carries batches of source messages to the target, one at a time through each step, several
 * batches under way at once:
 *   intent opened (committed) → publish with confirms → requeue what did not land, ack what did
 *   (one frame for the batch when nothing open lies below it: AckLedger) →
 *   the acks flushed → the intent settled with the audit rows of what landed (or `onBatch`).
 * The intents of different batches are written at the same time (each in a transaction of its
 * own: the database's pool, or its queue on SQLite); `onBatch`, without intents, is called one
 * batch after another.
 * A process killed anywhere in between leaves the intent open: its messages are at the target,
 * at the source (requeued by the broker), or both — never nowhere.
 */
export class BatchCarrier {
  private database: Promise<unknown> = Promise.resolve();
  private readonly acks: AckLedger;
  moved = 0;
  notMoved = 0;

  constructor(
    private readonly request: MoveRequest,
    private readonly source: Channel,
    private readonly publisher: ConfirmedPublisher,
    private readonly target: MoveTarget,
  ) {
    this.acks = new AckLedger(source);
  }

  /** Runs `step` after every `onBatch` asked before it. */
  private serial(step: () => Promise<void>): Promise<void> {
    const next = this.database.then(step);
    this.database = next.catch(() => undefined);
    return next;
  }

  private job(message: Message): MovedJob {
    return {
      jobId: messageJobId(message),
      from: this.request.from,
      to: this.target.to,
      digest: bodyDigest(message.content),
    };
  }

  /**
   * Carries one batch, calling `acked` once the broker has its acks (it left the prefetch window);
   * throws (after settling what it can) when some of it did not land.
   */
  async carry(batch: readonly Message[], acked: () => void = () => undefined): Promise<void> {
    const { request, target } = this;
    const jobs = batch.map((m) => this.job(m));
    const intents = request.intents;
    let intent = 0;
    if (intents) intent = await intents.open(jobs);
    const landed = await Promise.all(
      batch.map((m) =>
        this.publisher.publish(
          target.exchange,
          target.routingKey,
          m,
          republishOptions(m, request, target.username),
        ),
      ),
    );
    const moved: MovedJob[] = [];
    const putBack: MovedJob[] = [];
    const toAck: Message[] = [];
    const toRequeue: Message[] = [];
    batch.forEach((m, i) => {
      (landed[i] ? toAck : toRequeue).push(m);
      (landed[i] ? moved : putBack).push(jobs[i] as MovedJob);
    });
    // What did not land goes back first: settled, it no longer keeps the rest from one ack frame.
    this.acks.nack(toRequeue, true);
    this.acks.ack(toAck);
    await flushAcks(this.source, request.from);
    acked();
    if (intents) await intents.settle(intent, moved, putBack);
    else if (moved.length) await this.serial(() => request.onBatch(moved));
    this.moved += moved.length;
    this.notMoved += putBack.length;
    if (putBack.length)
      throw new TaskreconError(
        `${putBack.length} message(s) did not reach ${target.to} (routed to no queue, or nacked by the broker)`,
        {
          code: 'BROKER',
          hint:
            'Bind a queue to the exchange with that routing key, or check the target queue; those messages were put ' +
            'back at the source and nothing of them was acked.',
        },
      );
  }
}

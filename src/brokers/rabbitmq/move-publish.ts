import type { Channel, ConfirmChannel, Message, Options } from 'amqplib';

/** One source message on its way: published to the target, then acked (landed) or put back (not). */
interface Outstanding {
  message: Message;
  returned: boolean;
}

/**
 * Publishes with publisher confirms and tells, per message, whether it landed: confirmed by the
 * broker and not returned as unroutable (`mandatory`; RabbitMQ sends the basic.return before the
 * confirm of the same message). One per move, on the confirm channel the move publishes on.
 */
export class ConfirmedPublisher {
  private readonly outstanding = new Map<number, Outstanding>();
  private seq = 0;

  constructor(private readonly channel: ConfirmChannel) {
    channel.on('return', (returned: Message) => this.markReturned(returned));
  }

  private markReturned(returned: Message): void {
    const id = returned.properties.messageId as unknown;
    for (const entry of this.outstanding.values()) {
      if (entry.returned || entry.message.properties.messageId !== id) continue;
      if (!entry.message.content.equals(returned.content)) continue;
      entry.returned = true;
      return;
    }
  }

  /** Publishes one message; resolves true when it landed at the target, false when it did not. */
  publish(exchange: string, key: string, message: Message, options: Options.Publish): Promise<boolean> {
    const seq = ++this.seq;
    const entry: Outstanding = { message, returned: false };
    this.outstanding.set(seq, entry);
    return new Promise((resolve) => {
      const done = (error: unknown): void => {
        this.outstanding.delete(seq);
        resolve(!error && !entry.returned);
      };
      try {
        this.channel.publish(exchange, key, message.content, options, done);
      } catch (error) {
        done(error);
      }
    });
  }
}

/**
 * Waits until every ack and nack sent on `channel` has reached the broker: a channel's methods are
 * handled in order, so the reply of one synchronous call (a passive declare) comes after them.
 */
export async function flushAcks(channel: Channel, queue: string): Promise<void> {
  await channel.checkQueue(queue);
}

import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { randomUUID } from 'node:crypto';
import {
  openConfirmChannel,
  openConnection,
  parseAmqpUrl,
  type AmqpTarget,
} from '../brokers/rabbitmq/connection.js';
import type { BrokerConfig } from '../config/brokers.js';
import { resolveBrokerUrl } from '../config/secrets.js';
import { configError, TaskreconError } from '../errors.js';
import { taskMessage, type DispatchResult, type DispatchTask, type Dispatcher } from './types.js';

/**
 * `rabbitmq`: re-delivers a task row as a message for its consumer, published with publisher
 * confirms (persistent, `message-id` = the event id, mandatory so a message no queue takes is
 * noticed). The body is `{eventId, bizType, bizId, payload, attempt}`, the envelope the `http`
 * dispatcher POSTs. A confirmed publish is `delivered`: the row stays `processing` under its
 * claim's lease until the consumer writes the outcome; when none comes before the lease expires,
 * the next `redrive` delivers it again (at least once: consumers dedupe by event id). A publish the
 * broker nacks, returns unroutable or does not confirm in time is `retryable`.
 */

/** A publish not confirmed within this long counts as failed (the lease must outlast it). */
export const RABBIT_PUBLISH_TIMEOUT_MS = 5000;

/** Header naming one publish, to match a basic.return to the dispatch that caused it. */
const PUBLISH_HEADER = 'x-taskrecon-publish';

export interface RabbitDispatchOptions {
  url: string;
  exchange: string;
  routingKey: string;
}

export class RabbitDispatcher implements Dispatcher {
  readonly kind = 'rabbitmq';
  readonly timeoutMs = RABBIT_PUBLISH_TIMEOUT_MS;
  private readonly target: AmqpTarget;
  private connection: ChannelModel | undefined;
  private channel: ConfirmChannel | undefined;
  private readonly returned = new Set<string>();

  constructor(private readonly options: RabbitDispatchOptions) {
    this.target = parseAmqpUrl(options.url);
  }

  private get where(): string {
    return this.options.exchange === ''
      ? `queue '${this.options.routingKey}'`
      : `exchange '${this.options.exchange}' key '${this.options.routingKey}'`;
  }

  private async open(): Promise<ConfirmChannel> {
    if (this.channel) return this.channel;
    this.connection ??= await openConnection(this.target);
    this.connection.once('close', () => {
      this.connection = undefined;
      this.channel = undefined;
    });
    const channel = await openConfirmChannel(this.connection);
    channel.on('return', (m) => {
      const id = m.properties.headers?.[PUBLISH_HEADER];
      if (typeof id === 'string') this.returned.add(id);
    });
    channel.once('close', () => {
      if (this.channel === channel) this.channel = undefined;
    });
    this.channel = channel;
    return channel;
  }

  async dispatch(task: DispatchTask): Promise<DispatchResult> {
    const body = taskMessage(task);
    const publishId = randomUUID();
    try {
      const channel = await this.open();
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no confirm within ${RABBIT_PUBLISH_TIMEOUT_MS / 1000}s`)),
          RABBIT_PUBLISH_TIMEOUT_MS,
        );
        channel.publish(
          this.options.exchange,
          this.options.routingKey,
          Buffer.from(body),
          {
            persistent: true,
            mandatory: true,
            contentType: 'application/json',
            messageId: task.eventId ?? `task-${String(task.id)}`,
            headers: { [PUBLISH_HEADER]: publishId, 'x-taskrecon-attempt': task.attempt },
          },
          (error: unknown) => {
            clearTimeout(timer);
            if (error) reject(new Error('the broker nacked the message'));
            else resolve();
          },
        );
      });
    } catch (error) {
      const message = error instanceof TaskreconError ? error.message : (error as Error).message;
      return { outcome: 'retryable', error: `rabbitmq ${this.where}: ${message}` };
    }
    if (this.returned.delete(publishId))
      return {
        outcome: 'retryable',
        error: `rabbitmq ${this.where}: routed to no queue (check the queue exists and is bound)`,
      };
    return { outcome: 'delivered' };
  }

  async close(): Promise<void> {
    const { channel, connection } = this;
    this.channel = undefined;
    this.connection = undefined;
    await channel?.close().catch(() => undefined);
    await connection?.close().catch(() => undefined);
  }
}

/** The handler entry (`handlers.<bizType>`), as the config schema admits it. */
export interface RabbitHandlerConfig {
  type: 'rabbitmq';
  broker: string;
  exchange?: string;
  routingKey?: string;
  queue?: string;
}

/**
 * Builds the dispatcher from `{type: rabbitmq, broker: NAME, queue: Q}` (through the default
 * exchange) or `{type: rabbitmq, broker: NAME, exchange: EX, routingKey: RK}`.
 */
export function rabbitDispatcherFromConfig(
  config: RabbitHandlerConfig,
  where: string,
  brokers: Record<string, BrokerConfig> | undefined,
): RabbitDispatcher {
  const broker = brokers?.[config.broker];
  if (!broker)
    throw configError(
      `${where}.broker: no broker '${config.broker}' in brokers:`,
      `Brokers configured: ${Object.keys(brokers ?? {}).join(', ') || '(none)'}.`,
    );
  if (broker.kind !== 'rabbitmq')
    throw configError(`${where}.broker: '${config.broker}' is not a RabbitMQ broker`);
  const url = () => resolveBrokerUrl(config.broker, broker).url;
  if (config.queue !== undefined && (config.exchange !== undefined || config.routingKey !== undefined))
    throw configError(`${where}: give queue, or exchange and routingKey, not both`);
  if (config.queue !== undefined)
    return new RabbitDispatcher({ url: url(), exchange: '', routingKey: config.queue });
  if (config.exchange === undefined)
    throw configError(`${where}: name the queue (queue: Q) or the exchange (exchange: EX, routingKey: RK)`);
  return new RabbitDispatcher({
    url: url(),
    exchange: config.exchange,
    routingKey: config.routingKey ?? '',
  });
}

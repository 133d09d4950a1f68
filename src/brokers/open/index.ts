import type { BrokerConfig } from '../../config/brokers.js';
import { resolveBrokerUrl } from '../../config/secrets.js';
import type { BrokerClient } from '../types.js';

/**
 * Opens the data API of one broker (connected, or exit 3 with a hint); closed by the caller. Each
 * kind's module is imported when a broker of that kind is opened (a Redis-only run never loads the
 * AMQP client). A folder of its own: the kinds import the broker registry's types (brokers/), so the
 * registry cannot import them back.
 */
export async function openBroker(name: string, config: BrokerConfig): Promise<BrokerClient> {
  const resolved = resolveBrokerUrl(name, config);
  if (resolved.kind === 'redis') return (await import('../redis/index.js')).openRedisBroker(name, resolved);
  return (await import('../rabbitmq/index.js')).openRabbitBroker(name, resolved);
}

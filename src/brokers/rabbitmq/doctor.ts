import type { ChannelModel } from 'amqplib';
import { TaskreconError } from '../../errors.js';
import type { BrokerCheck } from '../types.js';
import type { AmqpTarget } from './connection.js';
import type { InspectInput } from './inspect.js';
import { inspectRabbit } from './inspect.js';

const TOPOLOGY_CODES = new Set(['ttl-without-dlx', 'dlx-unroutable', 'not-durable', 'ttl-long']);

/** `doctor` for one RabbitMQ broker: AMQP and API reachable, then durability and dead-letter wiring. */
export async function doctorRabbit(
  connect: () => Promise<ChannelModel>,
  target: AmqpTarget,
  base: Omit<InspectInput, 'connection' | 'peek'>,
): Promise<BrokerCheck[]> {
  const checks: BrokerCheck[] = [];
  let connection: ChannelModel;
  try {
    connection = await connect();
    checks.push({
      name: 'amqp',
      status: 'ok',
      detail: `connected to ${target.display} (vhost '${target.vhost}')`,
    });
  } catch (error) {
    const e = error as TaskreconError;
    checks.push({ name: 'amqp', status: 'fail', detail: e.message, hint: e.hint });
    return checks;
  }
  if (base.api) {
    try {
      await base.api.checkVhost();
      checks.push({
        name: 'management-api',
        status: 'ok',
        detail: `${base.api.display} answers for vhost '${target.vhost}'`,
      });
    } catch (error) {
      const e = error as TaskreconError;
      checks.push({ name: 'management-api', status: 'fail', detail: e.message, hint: e.hint });
      return checks;
    }
  } else {
    checks.push({
      name: 'management-api',
      status: 'warn',
      detail: 'no `api:` given: durability and dead-letter wiring cannot be checked',
      hint: 'Add `api: http://user:pass@host:15672` (the rabbitmq_management plugin).',
    });
  }
  try {
    const { findings } = await inspectRabbit({ ...base, connection, peek: 0 });
    const topology = findings.filter((f) => TOPOLOGY_CODES.has(f.code));
    for (const code of ['not-durable', 'ttl-without-dlx', 'dlx-unroutable', 'ttl-long']) {
      const hits = topology.filter((f) => f.code === code);
      const name = code === 'not-durable' ? 'durability' : `dead-letter: ${code}`;
      if (!base.api) continue;
      checks.push(
        hits.length === 0
          ? { name, status: 'ok', detail: `no ${code} finding` }
          : {
              name,
              status: hits.some((h) => h.level === 'crit') ? 'fail' : 'warn',
              detail: hits.map((h) => h.message).join('; '),
              hint: hits[0]?.hint,
            },
      );
    }
  } catch (error) {
    const e = error as TaskreconError;
    checks.push({ name: 'topology', status: 'fail', detail: e.message, hint: e.hint });
  }
  return checks;
}

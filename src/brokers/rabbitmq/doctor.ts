import type { ChannelModel } from 'amqplib';
import { TaskreconError } from '../../errors.js';
import type { BrokerCheck } from '../types.js';
import type { AmqpTarget } from './connection.js';
import type { InspectInput } from './inspect.js';
import { inspectRabbit } from './inspect.js';

const TOPOLOGY_CODES = ['not-durable', 'ttl-without-dlx', 'dlx-unroutable', 'ttl-long'];
/** Checked where the vhost has a quorum queue (a classic vhost's doctor output stays as it was). */
const QUORUM_CODES = ['dlx-at-most-once', 'no-delivery-limit'];

function checkName(code: string): string {
  if (code === 'not-durable') return 'durability';
  return code === 'no-delivery-limit' ? `quorum: ${code}` : `dead-letter: ${code}`;
}

/**
 * `doctor` for one RabbitMQ broker: AMQP and API reachable, then durability and dead-letter wiring,
 * and with quorum queues their delivery limits and dead-letter strategy.
 */
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
    const { findings, report } = await inspectRabbit({ ...base, connection, peek: 0 });
    const quorum = report.queues.some((q) => q.arguments?.['x-queue-type'] === 'quorum');
    for (const code of quorum ? [...TOPOLOGY_CODES, ...QUORUM_CODES] : TOPOLOGY_CODES) {
      const hits = findings.filter((f) => f.code === code);
      const name = checkName(code);
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

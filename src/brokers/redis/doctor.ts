import type { BrokerCheck } from '../types.js';
import { keyFormatFindings, serverFindings } from './findings.js';
import { discover } from './inspect.js';
import { describeOther } from './layout.js';
import { bullmqApi } from './bullmq-api.js';
import type { RedisBroker } from './index.js';
import { readWeakestSettings } from './server.js';
import { describeSlots } from './slots.js';

/** `, a Redis Cluster of 3 masters (host:port slots a-b; …)`, or nothing for one server. */
function clusterDetail(broker: RedisBroker): string {
  if (!broker.nodes.cluster) return '';
  const masters = broker.nodes.masters.map((m) => `${m.address} slots ${describeSlots(m.slots)}`);
  return `, a Redis Cluster of ${masters.length} masters (${masters.join('; ')})`;
}

/**
 * `doctor` for a Redis broker: reachable (the connection is open when this runs), persistence,
 * eviction policy, and the key layout against the configured framework. Read-only.
 */
export async function redisDoctor(broker: RedisBroker): Promise<BrokerCheck[]> {
  const checks: BrokerCheck[] = [];
  const settings = await readWeakestSettings(broker.nodes.masters.map((m) => m.client));
  checks.push({
    name: `${broker.name}: reachable`,
    status: 'ok',
    detail: `${broker.display}${clusterDetail(broker)} (Redis ${settings.version ?? '?'}, settings read by ${settings.via === 'config' ? 'CONFIG GET' : 'INFO: CONFIG is refused'})`,
  });
  const discovery = await discover(broker.nodes, broker.layout);
  const server = serverFindings(broker.name, settings, discovery.keysWithTtl.length > 0);
  const persistence = server.find((f) => f.code === 'no-persistence');
  checks.push(
    persistence
      ? {
          name: `${broker.name}: persistence`,
          status: 'warn',
          detail: persistence.message,
          hint: persistence.hint,
        }
      : {
          name: `${broker.name}: persistence`,
          status: 'ok',
          detail: `appendonly ${settings.appendonly ? 'yes' : '?'}${settings.appendfsync ? `, appendfsync ${settings.appendfsync}` : ''}`,
        },
  );
  const evicting = server.find((f) => f.code === 'evicting');
  checks.push(
    evicting
      ? {
          name: `${broker.name}: eviction policy`,
          status: 'fail',
          detail: evicting.message,
          hint: evicting.hint,
        }
      : {
          name: `${broker.name}: eviction policy`,
          status: 'ok',
          detail: `maxmemory-policy ${settings.maxmemoryPolicy ?? '?'}`,
        },
  );
  if (broker.layout.framework === 'bullmq') {
    checks.push(await bullmqLayoutCheck(broker));
    return checks;
  }
  const format = keyFormatFindings(broker.name, broker.layout.framework, discovery.others);
  const layoutName =
    broker.layout.framework === 'laravel'
      ? `laravel, prefix '${broker.layout.prefix}'`
      : broker.layout.framework;
  if (format[0]) {
    checks.push({
      name: `${broker.name}: key layout`,
      status: 'warn',
      detail: format[0].message,
      hint: format[0].hint,
    });
  } else if (discovery.found.size === 0 && broker.layout.framework !== 'list') {
    const others = [...new Set(discovery.others.map(describeOther))];
    checks.push({
      name: `${broker.name}: key layout`,
      status: others.length ? 'fail' : 'warn',
      detail: `no queue key of the ${layoutName} layout${others.length ? `; keys of ${others.join('; ')} exist` : ''}`,
      hint: 'Set the framework / prefix the application writes with; an idle system with empty queues has no keys either.',
    });
  } else {
    checks.push({
      name: `${broker.name}: key layout`,
      status: 'ok',
      detail: `${layoutName}: ${discovery.found.size} queue(s) found`,
    });
  }
  return checks;
}

/** BullMQ: the queues of the prefix, or which prefixes the BullMQ queues of the DB have. */
async function bullmqLayoutCheck(broker: RedisBroker): Promise<BrokerCheck> {
  const prefix = broker.layout.prefix;
  const { bullmqQueueNames, otherBullmqPrefixes } = await bullmqApi();
  const names = await bullmqQueueNames(broker.client, prefix);
  if (names.length > 0) {
    return {
      name: `${broker.name}: key layout`,
      status: 'ok',
      detail: `bullmq, prefix '${prefix}': ${names.length} queue(s) found`,
    };
  }
  const others = await otherBullmqPrefixes(broker.client, prefix);
  return {
    name: `${broker.name}: key layout`,
    status: others.length ? 'fail' : 'warn',
    detail: `no BullMQ queue with prefix '${prefix}'${others.length ? `; BullMQ queues with prefix ${others.map((p) => `'${p}'`).join(', ')} exist` : ''}`,
    hint: 'Set the prefix the application gives BullMQ (default bull); an idle system that never added a job has no keys either.',
  };
}

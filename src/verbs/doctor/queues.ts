import { errorText } from '../../ops/error-text.js';
import { openBroker } from '../../brokers/open/index.js';
import type { BrokerConfig } from '../../config/brokers.js';
import type { TaskreconConfig } from '../../config/schema.js';
import type { BrokerClient } from '../../brokers/types.js';
import { check, type DoctorCheck } from './check.js';

/**
 * The broker half of `doctor`: each configured broker's own checks (`BrokerClient.doctor()`:
 * reachable, persistence, eviction policy, key layout vs framework for Redis; durability and
 * dead-letter wiring for RabbitMQ), named `broker <name>: …`. An unreachable broker is one `fail`.
 */
export async function brokerDoctorChecks(
  config: TaskreconConfig,
  open: (name: string, config: BrokerConfig) => Promise<BrokerClient> = openBroker,
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  for (const [name, brokerConfig] of Object.entries(config.brokers ?? {})) {
    let broker: BrokerClient | undefined;
    try {
      broker = await open(name, brokerConfig);
      for (const c of await broker.doctor()) {
        const label = c.name.startsWith(`${name}:`) ? c.name : `${name}: ${c.name}`;
        checks.push(check(`broker ${label}`, c.status, c.detail, c.hint ?? null));
      }
    } catch (error) {
      const described = errorText(error);
      checks.push(check(`broker ${name}: reachable`, 'fail', described.message, described.hint));
    } finally {
      await broker?.close();
    }
  }
  return checks;
}

/** Adds the broker checks to a doctor result: summary and worst status counted again. */
export function withBrokerChecks<
  R extends {
    status: DoctorCheck['status'];
    summary: Record<DoctorCheck['status'], number>;
    checks: DoctorCheck[];
  },
>(result: R, checks: readonly DoctorCheck[]): R {
  for (const c of checks) {
    result.checks.push(c);
    result.summary[c.status] += 1;
  }
  const order = { ok: 0, warn: 1, fail: 2 } as const;
  for (const c of checks) if (order[c.status] > order[result.status]) result.status = c.status;
  return result;
}

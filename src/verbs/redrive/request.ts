import type { BoundSource } from '../../db/bind-source.js';
import type { MapRegistry } from '../../dispatch/registry.js';
import { usageError } from '../../errors.js';
import { assertRedrivable, DEFAULT_LEASE_SECONDS } from '../../ops/redrive/redrive.js';

/** --lease in milliseconds (default 5m); claims are fenced in whole seconds, so at least 1s. */
export function redriveLeaseMs(lease: number | undefined): number {
  const leaseMs = lease ?? DEFAULT_LEASE_SECONDS * 1000;
  if (leaseMs < 1000)
    throw usageError(
      `--lease: ${leaseMs}ms is shorter than 1s`,
      'Claims are fenced by a lease expiry in whole seconds; give at least 1s.',
    );
  return leaseMs;
}

/**
 * Checks a redrive can run on this source with these handlers: the profile can be re-driven and
 * some handler is configured (otherwise the registry is closed and a usage error thrown). Returns
 * the warnings to print: a lease shorter than the slowest handler's timeout, biz types left alone.
 */
export async function checkRedrive(
  source: BoundSource,
  dispatchers: MapRegistry,
  leaseMs: number,
): Promise<string[]> {
  assertRedrivable(source);
  if (!dispatchers.hasDefault && dispatchers.bizTypes.length === 0) {
    await dispatchers.close();
    throw usageError(
      'no handlers are configured, so redrive has nothing to run tasks with',
      'Add `handlers:` to taskrecon.config.yaml, per biz type or as `default:` — e.g. `default: { type: http, url: "http://127.0.0.1:8080/tasks" }`, or `{ type: mark-only }` to only record success.',
    );
  }
  const warnings: string[] = [];
  const slowest = Math.max(0, ...dispatchers.all().map((d) => d.timeoutMs ?? 0));
  if (slowest > leaseMs) {
    warnings.push(
      `--lease ${Math.ceil(leaseMs / 1000)}s is shorter than the slowest handler's timeout (${Math.ceil(slowest / 1000)}s): ` +
        'a task still running may be taken over by another worker and run twice; give --lease more than the timeout',
    );
  }
  for (const [bizType, type] of dispatchers.unsupported) {
    warnings.push(
      `handlers.${bizType} is ${type}, which re-pushes failed jobs: redrive leaves biz type ${bizType} alone (see compensate)`,
    );
  }
  return warnings;
}

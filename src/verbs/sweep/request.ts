import { randomUUID } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import type { Context } from '../../context.js';
import { usageError } from '../../errors.js';
import { resolveTargets } from '../../notify/targets.js';
import { openSweepSources, sweepBrokersOf, sweepRulesOf } from './sources.js';
import type { SweepRequest } from './index.js';

/** What the sweep command's flags become. */
export interface SweepFlags {
  sinceMs: number;
  dryRun: boolean;
  notify: boolean;
  webhooks: string[];
  operator?: string;
  /** Retry rows whose business effect the diff rules find already there (audited as forced). */
  forceEffect?: boolean;
}

/** Checks the rules first (exit 3 before any connection), then opens the sources. */
export async function buildSweepRequest(context: Context, flags: SweepFlags): Promise<SweepRequest> {
  const rules = sweepRulesOf(context.config, context.env.TASKRECON_APP_TIME_ZONE);
  const notify = flags.notify
    ? resolveTargets(context.config.report?.notify ?? [], flags.webhooks)
    : undefined;
  if (notify && notify.length === 0)
    throw usageError(
      '--notify: no webhook is configured',
      'Add `report.notify: [{kind, url}]` to the config, or pass --webhook KIND=URL.',
    );
  // Rules with `match.broker` sweep BullMQ brokers; the others, the configured sources' rows.
  const brokers = sweepBrokersOf(context, rules);
  const sources = rules.some((r) => !r.brokers)
    ? await openSweepSources(context, Boolean(flags.forceEffect))
    : [];
  return {
    sources,
    ...(brokers ? { brokers: brokers.choices, auditDb: await brokers.auditDb(flags.dryRun) } : {}),
    rules,
    sinceSeconds: Math.round(flags.sinceMs / 1000),
    dryRun: flags.dryRun,
    notify,
    runId: randomUUID(),
    operator: flags.operator ?? `sweep:${osUser()}@${hostname()}`,
    host: hostname(),
  };
}

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? 'unknown';
  }
}

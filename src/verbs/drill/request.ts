import type { TaskreconConfig } from '../../config/schema.js';
import { RetryPolicies } from '../../core/backoff.js';
import { parseDuration } from '../../core/duration.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { Db } from '../../db/types.js';
import { usageError } from '../../errors.js';
import { checkHandlerUrl, findRule, systemTarget } from './system-target.js';
import { runDrill, SANDBOX_BIZ_TYPE, type DrillResult, type SystemTarget } from './drill.js';
import { mergeDrillResults, planDrill, runDeadLetterDrill } from './dead-letter.js';
import type { DrillListener } from '../../core/drill-framework.js';
import type { HandlerVariant } from './reference-handler.js';

/** Drill deliveries on the sandbox time out fast: the reference handler answers in milliseconds. */
export const SANDBOX_TIMEOUT_MS = 500;
/** A staging handler gets longer, unless its config entry says. */
export const SYSTEM_TIMEOUT_MS = 3000;

export interface DrillTargetFlags {
  'handler-url'?: string;
  'diff-rule'?: string;
  'handler-variant'?: string;
  timeout?: number;
}

export interface DrillTarget {
  /** The staging system to drill; undefined drills the embedded sandbox. */
  system?: SystemTarget;
  bizType: string;
  timeoutMs: number;
}

/**
 * What the drill runs against: the sandbox, or with --handler-url a real handler on the task
 * table of --db/--source whose effects --diff-rule's business table holds. Checks the flags go
 * together (--handler-variant is the sandbox's, --diff-rule needs --handler-url).
 */
export async function drillTarget(
  flags: DrillTargetFlags,
  config: TaskreconConfig,
  source: () => Promise<{
    bound: BoundSource;
    stuckAfterMs: number;
    openExtra: (dsn: string) => Promise<Db>;
  }>,
): Promise<DrillTarget> {
  if (!flags['handler-url']) {
    if (flags['diff-rule'])
      throw usageError(
        '--diff-rule needs --handler-url: on the sandbox the drill checks its own business table',
      );
    return { bizType: SANDBOX_BIZ_TYPE, timeoutMs: flags.timeout ?? SANDBOX_TIMEOUT_MS };
  }
  if (flags['handler-variant'] !== 'idempotent')
    throw usageError('--handler-variant applies to the sandbox only, not to --handler-url');
  const handlerUrl = checkHandlerUrl(flags['handler-url']);
  const rule = findRule(config.rules, flags['diff-rule']);
  const { bound, stuckAfterMs, openExtra } = await source();
  const resolved = await systemTarget(bound, rule, handlerUrl, stuckAfterMs, openExtra);
  const handler = config.handlers?.[rule.bizType];
  const configured =
    handler?.type === 'http' && handler.timeout !== undefined
      ? parseDuration(handler.timeout, `handlers.${rule.bizType}.timeout`)
      : undefined;
  return {
    system: resolved.target,
    bizType: rule.bizType,
    timeoutMs: flags.timeout ?? configured ?? SYSTEM_TIMEOUT_MS,
  };
}

export interface DrillRunFlags {
  scenario?: string[];
  broker?: string;
  queue?: string;
  'parking-queue'?: string;
  keep: boolean;
  'handler-variant'?: string;
}

/**
 * Runs what the flags ask for on the target: the task-table scenarios, then the dead-letter
 * topology drill when a broker is named; one result. `skipped` says what was left out and why.
 */
export async function runDrills(
  flags: DrillRunFlags,
  config: TaskreconConfig,
  target: DrillTarget,
  listener: () => DrillListener,
): Promise<{ result: DrillResult; skipped?: string }> {
  const policy = RetryPolicies.fromConfig(config.retry).for(target.bizType);
  const plan = planDrill(flags, config.brokers);
  const base =
    plan.scenarios?.length === 0
      ? undefined
      : await runDrill({
          scenarios: plan.scenarios,
          keep: flags.keep,
          timeoutMs: target.timeoutMs,
          policy,
          system: target.system,
          handlerVariant: flags['handler-variant'] as HandlerVariant,
          listener: listener(),
        });
  const topology = plan.deadLetter ? await runDeadLetterDrill(plan.deadLetter, listener()) : undefined;
  return { result: mergeDrillResults(base, topology), ...(plan.skipped ? { skipped: plan.skipped } : {}) };
}

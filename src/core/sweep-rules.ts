import { rangesOf, sweepRate, type SweepAction, type SweepsConfig } from './sweep-config.js';
import { eligibleAt, isEligible, type DailyRange, type Schedule } from './sweep-window.js';

/**
 * The sweep's policy as pure functions: which rule a failed row falls under (first match wins),
 * whether this sweep looks at it, and what happens to it. "Now" and the previous sweep's time
 * (the cutoff, now − --since) come in as epoch seconds from the database clock.
 */
export interface SweepRule {
  name: string;
  action: SweepAction;
  bizTypes?: string[];
  errorLike?: string;
  queues?: string[];
  sources?: string[];
  /** BullMQ brokers whose failed jobs the rule sweeps; undefined: the rule sweeps table rows only. */
  brokers?: string[];
  schedule: Schedule;
  /** Retries per second; undefined = as fast as the database goes. */
  rate?: number;
  maxSweeps: number;
}

/** What a rule looks at in a failed row. */
export interface FailedFacts {
  source: string;
  /** Set for a BullMQ failed job: its broker (only rules naming a broker match it). */
  broker?: string;
  bizType: string | null;
  lastError: string | null;
  queue: string | null;
}

export type SweepOutcome = 'retry' | 'deferred' | 'held' | 'second-failure';

export interface SweepDecision {
  outcome: SweepOutcome;
  /** Deferred: when the rule may retry it (epoch seconds). */
  eligibleAt: number | null;
}

export const DEFAULT_MAX_SWEEPS = 1;

const list = (v: string | string[] | undefined) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

/** The validated config as rules; `zone` is appTimeZone (validated separately; UTC when no rule has a window). */
export function compileRules(config: SweepsConfig | undefined, zone: string | undefined): SweepRule[] {
  return (config ?? []).map((rule) => {
    const ranges = rangesOf(rule);
    const asRange = (r: DailyRange | string | undefined) => (typeof r === 'string' ? undefined : r);
    return {
      name: rule.name,
      action: rule.action as SweepAction,
      bizTypes: list(rule.match?.bizType),
      errorLike: rule.match?.errorLike,
      queues: list(rule.match?.queue),
      sources: list(rule.match?.source),
      brokers: list(rule.match?.broker),
      schedule: {
        window: asRange(ranges.window),
        blackouts: ranges.blackouts.map(asRange).filter((r): r is DailyRange => r !== undefined),
        zone: zone ?? 'UTC',
      },
      rate: rule.rate === undefined ? undefined : sweepRate(rule.rate),
      maxSweeps: rule.maxSweeps ?? DEFAULT_MAX_SWEEPS,
    };
  });
}

/** SQL LIKE (% and _, backslash escapes), case-insensitive; without a wildcard, "contains". */
export function errorMatches(pattern: string, text: string | null): boolean {
  if (text === null) return false;
  if (!/[%_]/.test(pattern)) return text.toLowerCase().includes(pattern.toLowerCase());
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\' && i + 1 < pattern.length)
      re += (pattern[++i] as string).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (c === '%') re += '[\\s\\S]*';
    else if (c === '_') re += '[\\s\\S]';
    else re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 'i').test(text);
}

export function ruleMatches(rule: SweepRule, facts: FailedFacts): boolean {
  // Broker rules and table rules never cross: a rule without `broker` never writes to a broker.
  if (rule.brokers ? facts.broker === undefined || !rule.brokers.includes(facts.broker) : facts.broker)
    return false;
  if (rule.sources && !rule.sources.includes(facts.source)) return false;
  if (rule.bizTypes && (facts.bizType === null || !rule.bizTypes.includes(facts.bizType))) return false;
  if (rule.queues && (facts.queue === null || !rule.queues.includes(facts.queue))) return false;
  if (rule.errorLike !== undefined && !errorMatches(rule.errorLike, facts.lastError)) return false;
  return true;
}

/** The first rule that matches, or undefined. */
export function firstMatch(rules: readonly SweepRule[], facts: FailedFacts): SweepRule | undefined {
  return rules.find((r) => ruleMatches(r, facts));
}

/**
 * Whether this sweep looks at a row: every row that failed since the previous sweep (the cutoff);
 * an older one only under a retry rule that was not eligible at the previous sweep, which therefore
 * deferred it (a row the previous sweep could retry was retried then, and a new failure is a new row
 * or a new failure time).
 */
export function inScope(rule: SweepRule, failedAt: number | null, cutoff: number): boolean {
  if (failedAt === null || failedAt >= cutoff) return true;
  return rule.action === 'retry' && !isEligible(rule.schedule, cutoff);
}

/** What this sweep does with a row in scope, given how many times sweeps have retried its job before. */
export function decideRow(rule: SweepRule, sweepsBefore: number, now: number): SweepDecision {
  if (rule.action === 'hold') return { outcome: 'held', eligibleAt: null };
  if (sweepsBefore >= rule.maxSweeps) return { outcome: 'second-failure', eligibleAt: null };
  if (isEligible(rule.schedule, now)) return { outcome: 'retry', eligibleAt: null };
  return { outcome: 'deferred', eligibleAt: eligibleAt(rule.schedule, now) };
}

/** How far before the cutoff rows are read: a deferral lasts less than a day (daily ranges). */
export const DEFERRAL_LOOKBACK_SECONDS = 86_400;

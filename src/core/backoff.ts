import type { RetryPolicySpec } from './config-types.js';
import { configError } from './errors.js';
import { parseDuration } from './duration.js';

/**
 * Retry policies. Pure: the random source is injected, "now" is not
 * needed (delays are relative; the caller adds them to the database clock).
 *
 * `maxAttempts` counts every attempt, the first included: the default schedule has 7 retries,
 * so 8 attempts, and the 8th failure ends `failed`. After failed attempt n (1-based) the task
 * waits `delayMs(n)`: for the schedule, its n-th value.
 *
 * Jitter is additive and bounded: the wait is in [delay, delay + jitter], never shorter than the
 * policy says (so a retry is never earlier than an operator expects) and never longer than the
 * bound. `jitter` is a fraction of the delay (`10%`) or an absolute duration (`2s`); `0` is off.
 */
export type PolicyName = RetryPolicySpec['policy'];

export interface RetryPolicy {
  name: PolicyName;
  maxAttempts: number;
  /** The nominal wait after failed attempt n (1-based), before jitter. */
  baseDelayMs(failedAttempts: number): number;
  jitter: Jitter;
}

export type Jitter = { kind: 'fraction'; value: number } | { kind: 'absolute'; ms: number };

/** The classic task-table design: 1s, 4s, 16s, 64s, 5min, 30min, 2h, then failed. */
export const DEFAULT_SCHEDULE_MS = [1_000, 4_000, 16_000, 64_000, 300_000, 1_800_000, 7_200_000] as const;
/** Default jitter of the schedule: up to 10% later, enough to spread a herd that failed together. */
export const DEFAULT_SCHEDULE_JITTER: Jitter = { kind: 'fraction', value: 0.1 };
/** exponential-jitter without an explicit `jitter`: up to 20% later (the job-retries design's 0.8–1.2 band, made one-sided). */
export const DEFAULT_EXPONENTIAL_JITTER: Jitter = { kind: 'fraction', value: 0.2 };
/** Attempts for fixed/exponential policies that do not say: as many as the default schedule allows. */
export const DEFAULT_MAX_ATTEMPTS = DEFAULT_SCHEDULE_MS.length + 1;
const DEFAULT_BASE_MS = 1_000;
const DEFAULT_FACTOR = 2;
/** Exponential policies are capped at 1h unless told otherwise (the classic task-table design's formula caps at 1 day; 1h keeps a task moving). */
const DEFAULT_CAP_MS = 3_600_000;
const DEFAULT_INTERVAL_MS = 10_000;
/** A Retry-After further out than this is treated as this: a handler cannot park a task for weeks. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

const NO_JITTER: Jitter = { kind: 'absolute', ms: 0 };

export const DEFAULT_POLICY: RetryPolicy = schedulePolicy(
  [...DEFAULT_SCHEDULE_MS],
  DEFAULT_SCHEDULE_MS.length + 1,
  DEFAULT_SCHEDULE_JITTER,
);

function schedulePolicy(schedule: number[], maxAttempts: number, jitter: Jitter): RetryPolicy {
  return {
    name: 'schedule',
    maxAttempts,
    // Past the end of the schedule (maxAttempts set beyond it) the last wait repeats.
    baseDelayMs: (n) => schedule[Math.min(Math.max(n, 1), schedule.length) - 1] as number,
    jitter,
  };
}

/** Parses `jitter:` — `10%`, `0.1` (a fraction ≤ 1), `2s`, `500ms` or `0`. */
export function parseJitter(input: string | number, what: string): Jitter {
  if (typeof input === 'number') {
    if (input >= 0 && input <= 1) return { kind: 'fraction', value: input };
    throw configError(
      `${what}: ${input} is not a jitter`,
      'Write a fraction such as 10% or 0.1, or a duration such as 2s.',
    );
  }
  const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(input.trim());
  if (percent) {
    const value = Number(percent[1]) / 100;
    if (value > 1)
      throw configError(
        `${what}: ${input} is more than 100%`,
        'Jitter is a fraction of the delay, at most 100%.',
      );
    return { kind: 'fraction', value };
  }
  return { kind: 'absolute', ms: parseDuration(input, what) };
}

/** Builds a policy from its config entry; `where` names the key in messages (e.g. `retry.sms`). */
export function policyFromConfig(config: RetryPolicySpec, where: string): RetryPolicy {
  const ms = (value: string | number | undefined, key: string, fallback: number) =>
    value === undefined ? fallback : parseDuration(value, `${where}.${key}`);
  const jitter = (fallback: Jitter) =>
    config.jitter === undefined ? fallback : parseJitter(config.jitter, `${where}.jitter`);
  switch (config.policy) {
    case 'schedule': {
      const schedule = config.schedule?.map((v, i) => parseDuration(v, `${where}.schedule[${i}]`)) ?? [
        ...DEFAULT_SCHEDULE_MS,
      ];
      if (schedule.length === 0)
        throw configError(
          `${where}.schedule is empty`,
          'List the waits between attempts, e.g. [1s, 4s, 16s].',
        );
      return schedulePolicy(
        schedule,
        config.maxAttempts ?? schedule.length + 1,
        jitter(DEFAULT_SCHEDULE_JITTER),
      );
    }
    case 'fixed': {
      const interval = ms(config.interval ?? config.base, 'interval', DEFAULT_INTERVAL_MS);
      return {
        name: 'fixed',
        maxAttempts: config.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
        baseDelayMs: () => interval,
        jitter: jitter(NO_JITTER),
      };
    }
    case 'exponential':
    case 'exponential-jitter': {
      const base = ms(config.base, 'base', DEFAULT_BASE_MS);
      const cap = ms(config.cap, 'cap', DEFAULT_CAP_MS);
      const factor = config.factor ?? DEFAULT_FACTOR;
      return {
        name: config.policy,
        maxAttempts: config.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
        baseDelayMs: (n) => Math.min(cap, base * factor ** (Math.max(n, 1) - 1)),
        jitter: jitter(config.policy === 'exponential-jitter' ? DEFAULT_EXPONENTIAL_JITTER : NO_JITTER),
      };
    }
  }
}

/** The largest extra wait jitter may add to `delayMs`. */
export function jitterBoundMs(jitter: Jitter, delayMs: number): number {
  return jitter.kind === 'fraction' ? delayMs * jitter.value : jitter.ms;
}

/**
 * The wait after failed attempt n: the policy's delay plus jitter in [0, bound], and no sooner than
 * the handler's Retry-After (capped at MAX_RETRY_AFTER_MS). `random` returns [0, 1).
 */
export function retryDelayMs(
  policy: RetryPolicy,
  failedAttempts: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const base = policy.baseDelayMs(failedAttempts);
  const delay = base + random() * jitterBoundMs(policy.jitter, base);
  if (retryAfterMs === undefined) return Math.round(delay);
  return Math.round(Math.max(delay, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS)));
}

/** Policies per biz type, `default` as the fallback, the seed's schedule when none is configured. */
export class RetryPolicies {
  constructor(
    private readonly byBizType: ReadonlyMap<string, RetryPolicy>,
    private readonly fallback: RetryPolicy = DEFAULT_POLICY,
  ) {}

  static fromConfig(config: Record<string, RetryPolicySpec> | undefined): RetryPolicies {
    const entries = Object.entries(config ?? {}).map(
      ([bizType, c]) => [bizType, policyFromConfig(c, `retry.${bizType}`)] as const,
    );
    const map = new Map(entries);
    return new RetryPolicies(map, map.get('default') ?? DEFAULT_POLICY);
  }

  for(bizType: string | null): RetryPolicy {
    return (bizType !== null ? this.byBizType.get(bizType) : undefined) ?? this.fallback;
  }
}

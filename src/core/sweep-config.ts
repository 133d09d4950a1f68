import { z } from './zod.js';
import { everEligible, parseDailyRange, type DailyRange } from './sweep-window.js';

/**
 * The `sweeps:` section: per job class, what the hourly failure sweep does with new failures.
 * The first rule that matches a failed row decides. Rule checks that zod's shape cannot express
 * (a known action, daily ranges that parse, a window not wholly covered by blackouts, keys that
 * make no sense for the action, unique names) run in `superRefine`, each message naming the rule
 * and the key. The zone (`appTimeZone`, top level) is checked where the sweep runs:
 * `checkSweepZone` in this file.
 */
export const SWEEP_ACTIONS = ['retry', 'hold'] as const;
export type SweepAction = (typeof SWEEP_ACTIONS)[number];

const oneOrMany = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

export const sweepMatchSchema = z.strictObject({
  /** The biz type; for Laravel / think-queue failed jobs, the job class. */
  bizType: oneOrMany.optional(),
  /** Text the last error (exception) contains, or a LIKE pattern with % and _; case-insensitive. */
  errorLike: z.string().min(1).optional(),
  queue: oneOrMany.optional(),
  /** Only rows of this configured source. */
  source: oneOrMany.optional(),
  /**
   * The failed jobs of these configured BullMQ brokers (`framework: bullmq`) instead of table rows:
   * `bizType` is the job's name, `errorLike` its failedReason, `queue` its BullMQ queue.
   */
  broker: oneOrMany.optional(),
});
export type SweepMatch = z.infer<typeof sweepMatchSchema>;

export const sweepRuleSchema = z.strictObject({
  name: z.string().min(1),
  match: sweepMatchSchema.optional(),
  action: z.string(),
  /** Daily range in appTimeZone when retries may run, e.g. "09:00-18:00"; "22:00-06:00" runs across midnight. */
  window: z.string().optional(),
  /** Daily ranges in appTimeZone when retries never run. */
  blackout: z.array(z.string()).optional(),
  /** Retries per second, e.g. 20/s or 600/m. */
  rate: z.union([z.string(), z.number()]).optional(),
  /** How many times the sweep retries one job; a job that fails again after that is a second failure. Default 1. */
  maxSweeps: z.number().int().positive().optional(),
});
export type SweepRuleConfig = z.infer<typeof sweepRuleSchema>;

const RATE = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*(s|sec|m|min|h))?\s*$/;

/** `20/s`, `600/m`, `20` → retries per second; undefined when it is not a rate. */
export function sweepRate(input: string | number): number | undefined {
  const match = RATE.exec(String(input));
  if (!match) return undefined;
  const per = match[2] === 'm' || match[2] === 'min' ? 60 : match[2] === 'h' ? 3600 : 1;
  const rate = Number(match[1]) / per;
  return rate > 0 ? rate : undefined;
}

/** The rule's window and blackouts, parsed; strings are the reasons they do not parse. */
export function rangesOf(rule: SweepRuleConfig): {
  window?: DailyRange | string;
  blackouts: Array<DailyRange | string>;
} {
  return {
    window: rule.window === undefined ? undefined : parseDailyRange(rule.window),
    blackouts: (rule.blackout ?? []).map(parseDailyRange),
  };
}

export const sweepsSchema = z.array(sweepRuleSchema).superRefine((rules, ctx) => {
  const seen = new Set<string>();
  rules.forEach((rule, index) => {
    const fail = (key: string, message: string, path: Array<string | number> = [key]) =>
      ctx.addIssue({
        code: 'custom',
        path: [index, ...path],
        message: `rule '${rule.name}': ${key}: ${message}`,
      });
    if (seen.has(rule.name))
      fail('name', 'another rule has this name; names identify rules in reports and audits');
    seen.add(rule.name);
    if (rule.match?.broker !== undefined && rule.match.source !== undefined)
      fail(
        'match',
        'a rule matches the rows of sources or the failed jobs of brokers, not both; write two rules',
        ['match', 'broker'],
      );
    if (!(SWEEP_ACTIONS as readonly string[]).includes(rule.action)) {
      fail('action', `'${rule.action}' is not an action; use retry or hold`);
      return;
    }
    if (rule.action === 'hold') {
      for (const key of ['window', 'blackout', 'rate', 'maxSweeps'] as const)
        if (rule[key] !== undefined) fail(key, 'a hold rule retries nothing, so it takes no ' + key);
      return;
    }
    if (rule.rate !== undefined && sweepRate(rule.rate) === undefined)
      fail('rate', `'${rule.rate}' is not a rate; write e.g. 20/s or 600/m`);
    const ranges = rangesOf(rule);
    if (typeof ranges.window === 'string') fail('window', ranges.window);
    ranges.blackouts.forEach((b, i) => {
      if (typeof b === 'string') fail('blackout', b, ['blackout', i]);
    });
    const window = typeof ranges.window === 'string' ? undefined : ranges.window;
    const blackouts = ranges.blackouts.filter((b): b is DailyRange => typeof b !== 'string');
    if (blackouts.length === ranges.blackouts.length && typeof ranges.window !== 'string') {
      if (!everEligible({ window, blackouts }))
        fail(
          window ? 'window' : 'blackout',
          `the blackouts ${blackouts.map((b) => b.text).join(', ')} cover ${window ? `the whole window ${window.text}` : 'the whole day'}, so the rule could never retry`,
        );
    }
  });
});
export type SweepsConfig = z.infer<typeof sweepsSchema>;

/** The `create:` key of a diff rule: how `diff --create-missing` builds the task of an orphan business row. */
export const createMissingSchema = z.strictObject({
  /** Business columns copied into the new task's JSON payload (by column name). */
  payload: z.array(z.string().min(1)).min(1),
  /** The source to create tasks in (default: the rule's source). */
  source: z.string().optional(),
});
export type CreateMissingConfig = z.infer<typeof createMissingSchema>;

/** A window or blackout needs a zone to be read in: the rule and key named when appTimeZone is missing or unknown. */
export function sweepZoneProblem(
  rules: SweepsConfig | undefined,
  appTimeZone: string | undefined,
  knownZone: (zone: string) => boolean,
): string | undefined {
  const timed = (rules ?? []).find((r) => r.window !== undefined || r.blackout?.length);
  if (!timed) return undefined;
  const key = timed.window !== undefined ? 'window' : 'blackout';
  if (!appTimeZone)
    return `rule '${timed.name}': ${key}: a ${key} is a wall-clock time and needs appTimeZone (e.g. appTimeZone: Asia/Shanghai)`;
  if (!knownZone(appTimeZone))
    return `appTimeZone '${appTimeZone}' is not a time zone this runtime knows (rule '${timed.name}' reads its ${key} in it)`;
  return undefined;
}

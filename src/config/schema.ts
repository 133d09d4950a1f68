import { z } from '../core/zod.js';
import { brokersSchema, oneUrlForm, THINKPHP_LAYOUTS } from './brokers.js';
import { createMissingSchema, sweepsSchema } from '../core/sweep-config.js';
import { LOGICAL_FIELDS, LOGICAL_STATUSES, TIME_FIELDS, TIME_TYPES } from '../core/task.js';

/**
 * The config file's shape. Objects are strict so that a typo in a key is reported by
 * name, never silently ignored. Durations stay strings here and are parsed where they are used.
 */
const duration = z.union([z.string(), z.number()]);
const statusValue = z.union([z.string(), z.number()]);

export const sourceSchema = z.strictObject({
  profile: z.string().optional(),
  table: z.string().optional(),
  default: z.boolean().optional(),
  db: z.string().optional(),
  /** A column name, null (the table has none), or `{ json, path }`: a key inside a JSON column (bizId, eventId). */
  columns: z
    .partialRecord(
      z.enum([...LOGICAL_FIELDS]),
      z.union([z.string(), z.null(), z.strictObject({ json: z.string().min(1), path: z.string() })]),
    )
    .optional(),
  statuses: z
    .partialRecord(z.enum([...LOGICAL_STATUSES]), z.union([statusValue, z.array(statusValue)]))
    .optional(),
  timeTypes: z.partialRecord(z.enum([...TIME_FIELDS]), z.enum([...TIME_TYPES])).optional(),
  stuckAfter: duration.optional(),
  /** The table split over several tables and servers: each entry a DSN and a table or a range (`async_task_{0..3}`). */
  shards: z
    .array(
      z.strictObject({
        db: z.string().min(1),
        table: z.string().min(1),
        name: z.string().min(1).optional(),
      }),
    )
    .optional(),
  queue: z
    .strictObject({
      connections: z.record(
        z.string(),
        z.strictObject({
          driver: z.enum(['database', 'redis']),
          table: z.string().optional(),
          db: z.string().optional(),
          url: z.string().optional(),
          prefix: z.string().optional(),
          queue: z.string().optional(),
          /** think-queue over Redis: `thinkphp` ({queues:Q}, the default) or `thinkphp-legacy` (queues:Q). */
          layout: z.enum(THINKPHP_LAYOUTS).optional(),
        }),
      ),
    })
    .optional(),
});
export type SourceConfig = z.infer<typeof sourceSchema>;
/** What a profile override needs from a source (also built from `--profile/--table` flags). */
export type CustomProfileConfig = Pick<
  SourceConfig,
  'profile' | 'table' | 'columns' | 'statuses' | 'timeTypes'
>;

export const handlerSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('http'),
    url: z.string(),
    timeout: duration.optional(),
    headers: z.record(z.string(), z.string()).optional(),
  }),
  z.strictObject({
    type: z.literal('command'),
    argv: z.array(z.string()).min(1),
    timeout: duration.optional(),
    cwd: z.string().optional(),
  }),
  z.strictObject({ type: z.literal('mark-only') }),
  z.strictObject({ type: z.literal('laravel-queue') }),
  z.strictObject({ type: z.literal('thinkphp-queue') }),
  /** A Redis list a consumer pops: a `framework: list` broker (its lists.ready), or url + list. */
  z.strictObject({
    type: z.literal('redis-list'),
    broker: z.string().min(1).optional(),
    url: z.string().min(1).optional(),
    list: z.string().min(1).optional(),
  }),
  /** A RabbitMQ queue (through the default exchange) or exchange + routing key of a `brokers:` entry. */
  z.strictObject({
    type: z.literal('rabbitmq'),
    broker: z.string().min(1),
    queue: z.string().min(1).optional(),
    exchange: z.string().optional(),
    routingKey: z.string().optional(),
  }),
]);
export type HandlerConfig = z.infer<typeof handlerSchema>;

export const retryPolicySchema = z.strictObject({
  policy: z.enum(['fixed', 'exponential', 'exponential-jitter', 'schedule']),
  schedule: z.array(duration).optional(),
  base: duration.optional(),
  factor: z.number().positive().optional(),
  cap: duration.optional(),
  interval: duration.optional(),
  maxAttempts: z.number().int().positive().optional(),
  jitter: duration.optional(),
});
export type RetryPolicyConfig = z.infer<typeof retryPolicySchema>;

export const ruleSchema = z.strictObject({
  name: z.string().min(1),
  bizType: z.string().min(1),
  taskStatus: z.array(z.enum([...LOGICAL_STATUSES])).optional(),
  taskKey: z.enum(['bizId', 'eventId', 'id']).optional(),
  source: z.string().optional(),
  business: z.strictObject({
    table: z.string().min(1),
    key: z.string().min(1),
    where: z.string().optional(),
    expect: z.string().optional(),
    db: z.string().optional(),
    /** false: rows of the business table may come from elsewhere too; do not look for orphans. */
    orphans: z.boolean().optional(),
  }),
  /** diff --create-missing: the task an orphan business row should have had. */
  create: createMissingSchema.optional(),
});
export type RuleConfig = z.infer<typeof ruleSchema>;

const threshold = z.union([z.string(), z.number()]);
const levels = z.strictObject({ warn: threshold.optional(), crit: threshold.optional() });

export const reportSchema = z.strictObject({
  window: duration.optional(),
  thresholds: z
    .strictObject({
      failureRate: levels.optional(),
      /** New failures in the window (a count), e.g. `{ warn: 10 }` over a 15m window. */
      failed: levels.optional(),
      stuck: levels.optional(),
      oldestDue: levels.optional(),
      due: levels.optional(),
      failedOpen: levels.optional(),
      latencyP95: levels.optional(),
      /** Broker queue gauges (`report` with `brokers:`); consumersMin breaches below its limit. */
      queues: z
        .strictObject({
          ready: levels.optional(),
          delayedOverdue: levels.optional(),
          reservedExpired: levels.optional(),
          unacked: levels.optional(),
          consumersMin: levels.optional(),
          /** BullMQ's failed set. */
          failed: levels.optional(),
          /** BullMQ's stalled jobs (active, lock gone). */
          stalled: levels.optional(),
        })
        .optional(),
    })
    .optional(),
  notify: z
    .array(
      z
        .strictObject({
          kind: z.enum(['wecom', 'dingtalk', 'feishu', 'slack', 'generic']),
          /** The webhook URL (it carries the key): url, urlEnv (an environment variable) or urlFile. */
          url: z.string().optional(),
          urlEnv: z.string().min(1).optional(),
          urlFile: z.string().min(1).optional(),
          /** The signing secret (dingtalk, feishu): secret, secretEnv or secretFile. */
          secret: z.string().optional(),
          secretEnv: z.string().min(1).optional(),
          secretFile: z.string().min(1).optional(),
          timeout: duration.optional(),
        })
        .refine(oneUrlForm, {
          message: 'give exactly one of url, urlEnv (an environment variable) and urlFile',
        })
        .refine((t) => [t.secret, t.secretEnv, t.secretFile].filter((v) => v !== undefined).length <= 1, {
          message: 'give at most one of secret, secretEnv and secretFile',
        }),
    )
    .optional(),
  notifyCooldown: duration.optional(),
});
export type ReportConfig = z.infer<typeof reportSchema>;

export const configSchema = z.strictObject({
  db: z.string().optional(),
  passwordFile: z.string().optional(),
  appTimeZone: z.string().optional(),
  /** Who acts, for the audit, in the console and every command (TASKRECON_OPERATOR and --operator win). */
  operator: z.string().min(1).optional(),
  connectTimeout: duration.optional(),
  /** A read replica: read-only commands read from it, writes go to `db`. */
  readDb: z.string().optional(),
  /** The time limit of every read statement (default 30s; 0 for none). */
  maxStatementTime: duration.optional(),
  sources: z.record(z.string(), sourceSchema).optional(),
  handlers: z.record(z.string(), handlerSchema).optional(),
  retry: z.record(z.string(), retryPolicySchema).optional(),
  rules: z.array(ruleSchema).optional(),
  report: reportSchema.optional(),
  compensate: z.strictObject({ requireReason: z.boolean().optional() }).optional(),
  brokers: brokersSchema.optional(),
  sweeps: sweepsSchema.optional(),
});
export type TaskreconConfig = z.infer<typeof configSchema>;

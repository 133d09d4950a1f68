import { z } from '../core/zod.js';

/**
 * The `brokers:` section of the config file: named Redis and RabbitMQ brokers that `queues`,
 * `report`, `doctor`, the `redis-list` / `rabbitmq` dispatchers and the dead-letter drill read.
 * Strict objects, so a typo in a key is reported by name.
 */
const duration = z.union([z.string(), z.number()]);

/**
 * Where a broker's URL comes from: `url` inline, `urlEnv` (an environment variable holding it) or
 * `urlFile` (a file holding it), exactly one; `passwordFile` replaces the URL's password. Resolved
 * when the broker is opened (config/secrets.ts).
 */
const urlForms = {
  url: z.string().min(1).optional(),
  urlEnv: z.string().min(1).optional(),
  urlFile: z.string().min(1).optional(),
  passwordFile: z.string().min(1).optional(),
};

/** Exactly one of url, urlEnv and urlFile. */
export function oneUrlForm(config: { url?: string; urlEnv?: string; urlFile?: string }): boolean {
  return [config.url, config.urlEnv, config.urlFile].filter((v) => v !== undefined).length === 1;
}
const ONE_URL = { message: 'give exactly one of url, urlEnv (an environment variable) and urlFile' };

export const REDIS_FRAMEWORKS = ['laravel', 'thinkphp', 'thinkphp-legacy', 'list', 'bullmq'] as const;
export type RedisFramework = (typeof REDIS_FRAMEWORKS)[number];
/** The Redis key layouts of think-queue: braced `{queues:Q}` (3.0.5 on) and plain `queues:Q` (before). */
export const THINKPHP_LAYOUTS = ['thinkphp', 'thinkphp-legacy'] as const satisfies readonly RedisFramework[];

export const redisBrokerSchema = z.strictObject({
  kind: z.literal('redis'),
  ...urlForms,
  framework: z.enum(REDIS_FRAMEWORKS),
  /** laravel: the Redis key prefix ('' for none); bullmq: the queues' prefix (default `bull`). */
  prefix: z.string().optional(),
  /** The queues workers consume; other framework queue keys found are `unknown-queue`. */
  queues: z.array(z.string().min(1)).optional(),
  /** Reservation timeout (laravel/thinkphp). */
  retryAfter: duration.optional(),
  /** bullmq: how often a job may stall before BullMQ fails it (its workers' `maxStalledCount`, default 1). */
  maxStalledCount: z.number().int().nonnegative().optional(),
  /** framework: list — the plain List + delay ZSet of the classic design. */
  lists: z.strictObject({ ready: z.string().min(1), delayed: z.string().min(1) }).optional(),
  /** How long a non-empty queue may keep one length before it is `stale-queue` (default 24h). */
  staleAfter: duration.optional(),
  default: z.boolean().optional(),
});
export type RedisBrokerConfig = z.infer<typeof redisBrokerSchema>;
/** A broker's config once its URL is resolved (config/secrets.ts): what the data APIs open. */
export type WithUrl<T> = T & { url: string };

export const rabbitBrokerSchema = z.strictObject({
  kind: z.literal('rabbitmq'),
  ...urlForms,
  /** The management HTTP API; without it counts come from passive declares and arguments are unknown. */
  api: z.string().optional(),
  /** Default: every queue of the vhost. */
  queues: z.array(z.string().min(1)).optional(),
  /** The x-death count at which a message counts as exhausted. */
  maxRetries: z.number().int().positive().optional(),
  default: z.boolean().optional(),
});
export type RabbitBrokerConfig = z.infer<typeof rabbitBrokerSchema>;

export const brokerSchema = z
  .discriminatedUnion('kind', [redisBrokerSchema, rabbitBrokerSchema])
  .refine(oneUrlForm, ONE_URL);
export type BrokerConfig = z.infer<typeof brokerSchema>;

export const brokersSchema = z.record(z.string(), brokerSchema);

import { Flags } from '../../core/oclif.js';
import { REDIS_FRAMEWORKS } from '../../config/brokers.js';
import { countFlag } from '../../flags.js';

/**
 * The flags that choose brokers, shared by `queues`, `queues move` and `queues recover`: a configured
 * broker by name, or one described inline (Redis or RabbitMQ).
 */
export const brokerFlags = {
  broker: Flags.string({
    summary: 'Only this configured broker (default: every one in `brokers:`).',
    helpGroup: 'BROKER',
  }),
  redis: Flags.string({
    summary: 'A Redis broker without a config: redis://[user:pass@]host:6379/DB, or rediss:// for TLS.',
    description: 'The password is never printed.',
    helpGroup: 'BROKER',
  }),
  framework: Flags.string({
    summary: 'With --redis: the key layout the application writes.',
    options: [...REDIS_FRAMEWORKS],
    helpGroup: 'BROKER',
  }),
  prefix: Flags.string({
    summary:
      "With --redis --framework laravel: the Redis key prefix (e.g. laravel_database_; default ''); bullmq: the queues' prefix (default bull).",
    helpGroup: 'BROKER',
  }),
  lists: Flags.string({
    summary: 'With --redis --framework list: the ready list and the delay set, READY,DELAYED.',
    helpGroup: 'BROKER',
  }),
  rabbitmq: Flags.string({
    summary: 'A RabbitMQ broker without a config: amqp://user:pass@host:5672/VHOST.',
    helpGroup: 'BROKER',
  }),
  api: Flags.string({
    summary: 'With --rabbitmq: the management API, http://user:pass@host:15672.',
    helpGroup: 'BROKER',
  }),
};

/** The move flags of `queues move` and `queues recover`. */
export const moveFlags = {
  limit: countFlag(1)({ summary: 'Move at most this many jobs (default: every match).' }),
  rate: Flags.string({ summary: 'At most this many jobs per second, e.g. 500/s or 6000/m.' }),
  batch: countFlag(1)({ summary: 'Jobs per atomic step (one Lua script, one audit insert).', default: 1000 }),
  'dry-run': Flags.boolean({ summary: 'Count what would move; move and write nothing.' }),
  yes: Flags.boolean({ char: 'y', summary: 'Do not ask (needed when not on a terminal).' }),
  reason: Flags.string({ summary: 'Why, for the audit log.' }),
  operator: Flags.string({
    summary:
      'Who is acting, for the audit (default: TASKRECON_OPERATOR, else config operator, else OS user@host).',
  }),
};

/** The RabbitMQ-only flags of `queues move`. */
export const rabbitMoveFlags = {
  'to-exchange': Flags.string({
    summary: 'RabbitMQ: publish to this exchange instead of a queue (with --routing-key).',
  }),
  'routing-key': Flags.string({ summary: 'RabbitMQ: the routing key to publish with --to-exchange.' }),
  'reset-death': Flags.boolean({ summary: 'RabbitMQ: drop the x-death header from republished messages.' }),
  'match-header': Flags.string({
    summary: 'RabbitMQ: only messages whose header NAME has VALUE (NAME=VALUE).',
  }),
  'match-body': Flags.string({ summary: 'RabbitMQ: only messages whose body contains this text.' }),
};

export const peekFlag = countFlag(0)({
  summary: 'Read this many jobs of each ready queue as samples (id, job, attempts).',
  description:
    'Redis reads them with LRANGE and leaves them in place. RabbitMQ peeking takes the messages and requeues them: ' +
    'they go back to the queue with `redelivered` set, and their order among other messages may change. ' +
    'A quorum queue counts each return as a delivery: one with a delivery limit is not peeked (a peek could drop or dead-letter a message on its last delivery).',
  default: 0,
});

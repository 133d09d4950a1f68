import {
  REDIS_FRAMEWORKS,
  type BrokerConfig,
  type RabbitBrokerConfig,
  type RedisBrokerConfig,
  type RedisFramework,
} from '../config/brokers.js';
import { closest } from '../config/suggest.js';
import { usageError } from '../errors.js';

/**
 * The broker registry: which brokers a command works on — the configured ones, the one `--broker`
 * names, or one described inline by `--redis URL --framework F [--prefix P]` / `--rabbitmq URL
 * [--api URL]`. Which data API serves which `kind` is brokers/open/.
 */

/** What a command may say about which brokers to use. */
export interface BrokerInput {
  broker?: string;
  redis?: string;
  framework?: string;
  prefix?: string;
  /** framework list: `READY,DELAYED`. */
  lists?: string;
  queue?: string[];
  rabbitmq?: string;
  api?: string;
}

export interface BrokerChoice {
  name: string;
  config: BrokerConfig;
}

function parseLists(text: string | undefined): RedisBrokerConfig['lists'] {
  if (text === undefined) return undefined;
  const [ready, delayed, ...rest] = text.split(',').map((s) => s.trim());
  if (!ready || !delayed || rest.length) {
    throw usageError(
      `--lists: '${text}' is not READY,DELAYED`,
      'Write e.g. --lists async_queue,async_delay_queue.',
    );
  }
  return { ready, delayed };
}

/** The brokers a command works on, in config order; exit 3 with a hint when there are none. */
export function chooseBrokers(
  input: BrokerInput,
  configured: Record<string, BrokerConfig> | undefined,
): BrokerChoice[] {
  if (input.redis && input.rabbitmq) {
    throw usageError(
      '--redis and --rabbitmq exclude each other',
      'Inspect one broker per run, or configure both in `brokers:`.',
    );
  }
  if (input.redis) {
    const framework = input.framework ?? 'laravel';
    if (!(REDIS_FRAMEWORKS as readonly string[]).includes(framework)) {
      throw usageError(
        `--framework: '${framework}' is not a Redis key layout`,
        `One of: ${REDIS_FRAMEWORKS.join(', ')}.`,
      );
    }
    const config: RedisBrokerConfig = {
      kind: 'redis',
      url: input.redis,
      framework: framework as RedisFramework,
      prefix: input.prefix ?? '',
      lists: parseLists(input.lists),
      queues: input.queue?.length ? input.queue : undefined,
    };
    return [{ name: input.broker ?? 'redis', config }];
  }
  if (input.rabbitmq) {
    const config: RabbitBrokerConfig = {
      kind: 'rabbitmq',
      url: input.rabbitmq,
      api: input.api,
      queues: input.queue?.length ? input.queue : undefined,
    };
    return [{ name: input.broker ?? 'rabbitmq', config }];
  }
  if (input.framework || input.prefix || input.lists) {
    throw usageError(
      '--framework, --prefix and --lists describe a broker given by --redis URL',
      'Add --redis redis://host:6379/0, or configure the broker in `brokers:`.',
    );
  }
  const entries = Object.entries(configured ?? {});
  if (input.broker) {
    const found = configured?.[input.broker];
    if (!found) {
      const names = entries.map(([n]) => n);
      const guess = closest(input.broker, names);
      throw usageError(
        `unknown broker '${input.broker}'`,
        names.length
          ? `${guess ? `Did you mean '${guess}'? ` : ''}Configured brokers: ${names.join(', ')}.`
          : 'No brokers are configured: add `brokers:` to taskrecon.config.yaml, or pass --redis URL / --rabbitmq URL.',
      );
    }
    return [{ name: input.broker, config: found }];
  }
  if (entries.length === 0) {
    throw usageError(
      'no broker given',
      'Pass --redis redis://127.0.0.1:6379/0 --framework laravel (or --rabbitmq amqp://…), or add `brokers:` to taskrecon.config.yaml.',
    );
  }
  return entries.map(([name, config]) => ({ name, config }));
}

/** The one broker a move works on: --broker, the inline one, the default or the only one. */
export function chooseOneBroker(
  input: BrokerInput,
  configured: Record<string, BrokerConfig> | undefined,
): BrokerChoice {
  const all = chooseBrokers(input, configured);
  if (all.length === 1) return all[0] as BrokerChoice;
  const defaults = all.filter((b) => b.config.default);
  if (defaults.length === 1) return defaults[0] as BrokerChoice;
  throw usageError(
    `${all.length} brokers are configured and none is the default`,
    `Pick one with --broker (${all.map((b) => b.name).join(', ')}), or mark one \`default: true\`.`,
  );
}

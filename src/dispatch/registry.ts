import type { BrokerConfig } from '../config/brokers.js';
import type { HandlerConfig } from '../config/schema.js';
import { parseDuration } from '../core/duration.js';
import { configError } from '../errors.js';
import { CommandDispatcher } from './command.js';
import { HttpDispatcher } from './http.js';
import { MarkOnlyDispatcher } from './mark-only.js';
import { rabbitDispatcherFromConfig } from './rabbitmq.js';
import { redisQueueFromConfig } from './redis-queue.js';
import type { Dispatcher, DispatcherRegistry } from './types.js';

/** An HTTP handler that does not say gets this long to answer. */
export const DEFAULT_HTTP_TIMEOUT_MS = 10_000;
/** A command that does not say gets this long to finish. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 60_000;
export const DEFAULT_HANDLER_KEY = 'default';

/** Builds a dispatcher for handler types this module does not know (laravel-queue, thinkphp-queue), or undefined. */
export type ExtraDispatcherFactory = (config: HandlerConfig, where: string) => Dispatcher | undefined;

/**
 * Builds one dispatcher from its config entry; `where` names the key in messages (e.g. `handlers.coupon`).
 * Undefined for a type this module does not build (the queue re-pushers of failed-job tables).
 */
export function dispatcherFromConfig(
  config: HandlerConfig,
  where: string,
  /** Config `brokers:`, for handlers that name one (`redis-list`). */
  brokers?: Record<string, BrokerConfig>,
): Dispatcher | undefined {
  switch (config.type) {
    case 'http': {
      let url: URL;
      try {
        url = new URL(config.url);
      } catch {
        throw configError(`${where}.url: '${config.url}' is not a URL`, 'Write it as http://host:port/path.');
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw configError(`${where}.url must be http or https`);
      const timeoutMs =
        config.timeout === undefined
          ? DEFAULT_HTTP_TIMEOUT_MS
          : parseDuration(config.timeout, `${where}.timeout`);
      return new HttpDispatcher({ url: config.url, timeoutMs, headers: config.headers });
    }
    case 'command': {
      const timeoutMs =
        config.timeout === undefined
          ? DEFAULT_COMMAND_TIMEOUT_MS
          : parseDuration(config.timeout, `${where}.timeout`);
      return new CommandDispatcher({ argv: config.argv, timeoutMs, cwd: config.cwd });
    }
    case 'mark-only':
      return new MarkOnlyDispatcher();
    case 'redis-list':
      return redisQueueFromConfig(config, where, brokers);
    case 'rabbitmq':
      return rabbitDispatcherFromConfig(config, where, brokers);
    default:
      return undefined;
  }
}

/** A registry over dispatchers by biz type, `default` as the fallback. */
export class MapRegistry implements DispatcherRegistry {
  readonly bizTypes: readonly string[];
  readonly hasDefault: boolean;

  constructor(
    private readonly byBizType: ReadonlyMap<string, Dispatcher>,
    /** Configured biz types whose handler type could not be built here, with the type. */
    readonly unsupported: ReadonlyMap<string, string> = new Map(),
  ) {
    this.bizTypes = [...byBizType.keys()].filter((k) => k !== DEFAULT_HANDLER_KEY);
    this.hasDefault = byBizType.has(DEFAULT_HANDLER_KEY);
  }

  forBizType(bizType: string | null): Dispatcher | undefined {
    return (
      (bizType !== null ? this.byBizType.get(bizType) : undefined) ?? this.byBizType.get(DEFAULT_HANDLER_KEY)
    );
  }

  all(): Dispatcher[] {
    return [...new Set(this.byBizType.values())];
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.all().map((d) => d.close?.()));
  }
}

/**
 * Dispatchers from config `handlers:`. Types this module does not build go to `extra`
 * (compensate passes its queue re-pushers); left unbuilt, they are listed in `unsupported` and their
 * biz types have no dispatcher (reported, never guessed).
 */
export function registryFromConfig(
  handlers: Record<string, HandlerConfig> | undefined,
  extra?: ExtraDispatcherFactory,
  brokers?: Record<string, BrokerConfig>,
): MapRegistry {
  const map = new Map<string, Dispatcher>();
  const unsupported = new Map<string, string>();
  for (const [bizType, config] of Object.entries(handlers ?? {})) {
    const where = `handlers.${bizType}`;
    const dispatcher = dispatcherFromConfig(config, where, brokers) ?? extra?.(config, where);
    if (dispatcher) map.set(bizType, dispatcher);
    else unsupported.set(bizType, config.type);
  }
  return new MapRegistry(map, unsupported);
}

/** A registry from dispatchers given in code (drills, demo, tests, benchmarks). */
export function registryOf(dispatchers: Record<string, Dispatcher>): MapRegistry {
  return new MapRegistry(new Map(Object.entries(dispatchers)));
}

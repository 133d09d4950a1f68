import { maskDsnText } from '../../db/dsn.js';
import { TaskreconError, usageError } from '../../errors.js';
import type { TopologyBinding, TopologyExchange, TopologyQueue } from './topology.js';

/** A management API call that takes longer than this counts as the API being unreachable. */
const API_TIMEOUT_MS = 5000;

/**
 * The RabbitMQ management HTTP API, read-only except for what tests and drills need: queue
 * arguments and policies, exchanges, bindings, consumers and counts of one vhost.
 */
export class ManagementApi {
  private readonly base: string;
  private readonly auth: string;
  readonly display: string;

  constructor(
    apiUrl: string,
    readonly vhost: string,
    fallback: { username: string; password: string },
  ) {
    this.display = maskDsnText(apiUrl);
    let url: URL;
    try {
      url = new URL(apiUrl);
    } catch {
      throw usageError(`api: '${this.display}' is not a URL`, 'Write it as http://user:pass@host:15672.');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw usageError(
        `api: '${this.display}' must be http or https`,
        'Write it as http://user:pass@host:15672.',
      );
    const username = url.username ? decodeURIComponent(url.username) : fallback.username;
    const password = url.password ? decodeURIComponent(url.password) : fallback.password;
    this.auth = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
    url.username = '';
    url.password = '';
    this.base = url
      .toString()
      .replace(/\/+$/, '')
      .replace(/\/api$/, '');
  }

  private get v(): string {
    return encodeURIComponent(this.vhost);
  }

  /** GET a path under /api; 404 → undefined; unreachable, 401 and other statuses → exit 3 with a hint. */
  async get<T>(path: string): Promise<T | undefined> {
    let response;
    try {
      // Loaded when the API is first asked (undici is ~110 modules): a move never asks it.
      const { request } = await import('undici');
      response = await request(`${this.base}/api${path}`, {
        method: 'GET',
        headers: { authorization: this.auth, accept: 'application/json' },
        headersTimeout: API_TIMEOUT_MS,
        bodyTimeout: API_TIMEOUT_MS,
      });
    } catch (error) {
      throw new TaskreconError(
        `cannot reach the RabbitMQ management API at ${this.display}: ${(error as Error).message}`,
        {
          code: 'CONNECTION',
          hint: 'Check `api:` (http://user:pass@host:15672) and that the rabbitmq_management plugin is enabled; or leave `api:` out to inspect over AMQP alone.',
          cause: error,
        },
      );
    }
    const text = await response.body.text();
    if (response.statusCode === 404) return undefined;
    if (response.statusCode === 401 || response.statusCode === 403)
      throw new TaskreconError(
        `the RabbitMQ management API at ${this.display} refused the login (HTTP ${response.statusCode})`,
        {
          code: 'CONNECTION',
          hint: 'Check the user and password of `api:` (or of `url:` when `api:` has none) and that the user has the monitoring tag.',
        },
      );
    if (response.statusCode >= 300)
      throw new TaskreconError(
        `the RabbitMQ management API at ${this.display} answered HTTP ${response.statusCode} for ${path}`,
        { code: 'CONNECTION', hint: text.slice(0, 200) },
      );
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new TaskreconError(
        `the RabbitMQ management API at ${this.display} did not answer JSON for ${path}`,
        {
          code: 'CONNECTION',
          hint: 'Check that `api:` points at the management plugin (port 15672), not at AMQP.',
        },
      );
    }
  }

  /** Throws (exit 3) when the vhost does not exist or the user may not see it. */
  async checkVhost(): Promise<void> {
    const found = await this.get<{ name: string }>(`/vhosts/${this.v}`);
    if (!found)
      throw usageError(
        `vhost '${this.vhost}' does not exist on the RabbitMQ at ${this.display}`,
        'Check the vhost in the URL path (the default vhost "/" is %2F).',
      );
  }

  async queues(): Promise<TopologyQueue[]> {
    const rows = (await this.get<ApiQueue[]>(`/queues/${this.v}`)) ?? [];
    return rows.map(queueFromApi);
  }

  async queue(name: string): Promise<TopologyQueue | undefined> {
    const row = await this.get<ApiQueue>(`/queues/${this.v}/${encodeURIComponent(name)}`);
    return row ? queueFromApi(row) : undefined;
  }

  async exchanges(): Promise<TopologyExchange[]> {
    const rows = (await this.get<ApiExchange[]>(`/exchanges/${this.v}`)) ?? [];
    return rows.map((e) => ({
      name: e.name,
      type: e.type,
      durable: e.durable,
      arguments: e.arguments ?? {},
      policy: e.effective_policy_definition ?? {},
    }));
  }

  async bindings(): Promise<TopologyBinding[]> {
    const rows = (await this.get<ApiBinding[]>(`/bindings/${this.v}`)) ?? [];
    return rows.map((b) => ({
      source: b.source,
      destination: b.destination,
      destinationType: b.destination_type === 'exchange' ? 'exchange' : 'queue',
      routingKey: b.routing_key,
      arguments: b.arguments ?? {},
    }));
  }
}

interface ApiQueue {
  name: string;
  durable: boolean;
  auto_delete?: boolean;
  exclusive?: boolean;
  arguments?: Record<string, unknown>;
  effective_policy_definition?: Record<string, unknown> | [];
  messages_ready?: number;
  messages_unacknowledged?: number;
  consumers?: number;
}

interface ApiExchange {
  name: string;
  type: string;
  durable: boolean;
  arguments?: Record<string, unknown>;
  effective_policy_definition?: Record<string, unknown>;
}

interface ApiBinding {
  source: string;
  destination: string;
  destination_type: string;
  routing_key: string;
  arguments?: Record<string, unknown>;
}

function queueFromApi(q: ApiQueue): TopologyQueue {
  // The API writes an empty policy as [] rather than {}.
  const policy = Array.isArray(q.effective_policy_definition) ? {} : (q.effective_policy_definition ?? {});
  return {
    name: q.name,
    durable: q.durable,
    exclusive: q.exclusive ?? false,
    autoDelete: q.auto_delete ?? false,
    arguments: q.arguments ?? {},
    policy,
    ready: q.messages_ready ?? null,
    unacked: q.messages_unacknowledged ?? null,
    consumers: q.consumers ?? null,
  };
}

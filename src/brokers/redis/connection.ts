import { isIP } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { maskDsnText } from '../../db/dsn.js';
import { TaskreconError } from '../../errors.js';

/** How long a connect may take before the broker counts as unreachable. */
const CONNECT_TIMEOUT_MS = 5000;
/** How long one command may take (a SCAN step, a move batch) before the run stops. */
const COMMAND_TIMEOUT_MS = 30_000;

/**
 * The one place a Redis client is made. It fails fast: it connects only when asked (lazyConnect),
 * never retries a command or reconnects, and hands its errors to `onError` (without a listener
 * ioredis would print them itself). `options` adds to or overrides that, per caller (timeouts,
 * TLS, offline queue).
 */
export function createRedisClient(
  url: string,
  options: RedisOptions,
  onError: (error: Error) => void,
): Redis {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    ...options,
  });
  client.on('error', onError);
  return client;
}

/** The URL as it may be shown anywhere: the password masked, `redis://user:***@host:port/db`. */
export function displayRedisUrl(url: string): string {
  return maskDsnText(url);
}

/** The DB index a URL names (`redis://host:6379/3` → 3); 0 when it names none. */
export function dbIndexOf(url: string): number {
  try {
    const path = new URL(url).pathname.replace(/^\//, '');
    return path === '' ? 0 : Number(path);
  } catch {
    return 0;
  }
}

function checkUrl(url: string, where: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TaskreconError(`${where}: '${displayRedisUrl(url)}' is not a Redis URL`, {
      code: 'USAGE',
      hint: 'Write redis://[user:password@]host:6379/DB, or rediss://… for TLS.',
    });
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new TaskreconError(`${where}: '${displayRedisUrl(url)}' is not a redis:// or rediss:// URL`, {
      code: 'USAGE',
      hint: 'Write redis://[user:password@]host:6379/DB, or rediss://… for TLS.',
    });
  }
  const db = parsed.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) {
    throw new TaskreconError(`${where}: the DB index '${db}' of ${displayRedisUrl(url)} is not a number`, {
      code: 'USAGE',
      hint: 'The path of a Redis URL is the DB index: redis://host:6379/0.',
    });
  }
}

/** Turns a connect error into what the operator should check: host, password or DB index. */
function connectError(url: string, where: string, error: unknown): TaskreconError {
  const display = displayRedisUrl(url);
  const message = maskDsnText((error as Error)?.message ?? String(error));
  if (/WRONGPASS|invalid password|invalid username-password/i.test(message)) {
    return new TaskreconError(`${where}: Redis at ${display} refused the password`, {
      code: 'CONNECTION',
      hint: 'Check the password in the URL (redis://:PASSWORD@host or redis://USER:PASSWORD@host); nothing was read or moved.',
      cause: error,
    });
  }
  if (/NOAUTH|Authentication required/i.test(message)) {
    return new TaskreconError(`${where}: Redis at ${display} requires a password`, {
      code: 'CONNECTION',
      hint: 'Put it in the URL: redis://:PASSWORD@host:6379/0; nothing was read or moved.',
      cause: error,
    });
  }
  if (/SELECT is not allowed in cluster mode/i.test(message)) {
    return new TaskreconError(`${where}: ${display} is a node of a Redis Cluster, which has only DB 0`, {
      code: 'USAGE',
      hint: 'Drop the DB index from the URL (redis://host:port); one node of the cluster is enough, taskrecon finds the others. Nothing was read or moved.',
      cause: error,
    });
  }
  if (/DB index is out of range|invalid DB index/i.test(message)) {
    return new TaskreconError(`${where}: Redis at ${display} has no DB ${dbIndexOf(url)}`, {
      code: 'CONNECTION',
      hint: 'The path of the URL is the DB index; `redis-cli CONFIG GET databases` tells how many there are. Nothing was read or moved.',
      cause: error,
    });
  }
  return new TaskreconError(`${where}: cannot reach Redis at ${display}: ${message}`, {
    code: 'CONNECTION',
    hint: 'Check host and port (and rediss:// for TLS), and that the Redis server runs: `redis-cli -u URL PING`. Nothing was read or moved.',
    cause: error,
  });
}

/**
 * Opens one connection and proves it usable (AUTH, SELECT and PING done) before anything runs, so an
 * unreachable host, a wrong password or a DB index the server does not have fails at once (exit 3)
 * with a hint — never by endless reconnects. `rediss://` connects over TLS.
 */
export async function connectRedis(url: string, where: string): Promise<Redis> {
  checkUrl(url, where);
  // TLS checks the certificate against the host name; SNI carries a name, never an IP address.
  const host = new URL(url).hostname;
  const tls = url.startsWith('rediss:') ? { tls: isIP(host) ? {} : { servername: host } } : {};
  let lastError: unknown;
  // Errors surface through the commands.
  const client = createRedisClient(
    url,
    {
      ...tls,
      connectTimeout: CONNECT_TIMEOUT_MS,
      commandTimeout: COMMAND_TIMEOUT_MS,
      enableOfflineQueue: false,
      enableReadyCheck: true,
    },
    (error) => {
      lastError = error;
    },
  );
  try {
    await client.connect();
    // ioredis sends SELECT on connect but carries on when the server refuses it: ask again here.
    const db = dbIndexOf(url);
    if (db !== 0) await client.select(db);
    await client.ping();
  } catch (error) {
    client.disconnect();
    throw connectError(url, where, lastError ?? error);
  }
  return client;
}

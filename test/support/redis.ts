import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { serverPort } from './ports.js';

/** The machine's Redis the integration tests use (a scratch DB index per test file). */
export const REDIS_HOST = '127.0.0.1';
export const REDIS_PORT = 6379;

/** Connects to DB `db` of the machine's Redis; fails saying how to start it. */
export async function openTestRedis(db: number, port = REDIS_PORT, password?: string): Promise<Redis> {
  const redis = new Redis({
    host: REDIS_HOST,
    port,
    db,
    password,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
  } catch (error) {
    throw new Error(
      `these tests need Redis on ${REDIS_HOST}:${port} (${(error as Error).message}); start it with: redis-server --daemonize yes`,
    );
  }
  return redis;
}

/** Deletes every key of the connection's DB that starts with `prefix` (SCAN, never KEYS). */
export async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

/**
 * A digest of every key of the DB: name, TYPE, TTL and DUMP (the serialized value). Equal digests
 * before and after a command mean it wrote nothing.
 */
export async function digestDb(redis: Redis): Promise<{ keys: number; digest: string }> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  keys.sort();
  const hash = createHash('sha256');
  for (const key of keys) {
    const [type, ttl, dump] = await Promise.all([redis.type(key), redis.pttl(key), redis.dumpBuffer(key)]);
    hash
      .update(key)
      .update('\0')
      .update(type)
      .update('\0')
      .update(String(ttl > 0 ? 'ttl' : ttl));
    hash
      .update('\0')
      .update(dump ?? Buffer.alloc(0))
      .update('\n');
  }
  return { keys: keys.length, digest: hash.digest('hex') };
}

/** A free loopback port (closed again at once): for "unreachable" and for private servers. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface PrivateRedis {
  port: number;
  url: string;
  stop(): Promise<void>;
}

/**
 * A private redis-server on a free loopback port with the given settings (`--requirepass`,
 * `--appendonly`, `--maxmemory-policy`, `--rename-command`), in its own temporary directory: for
 * cases the shared server must not be changed for. Stopped and removed by `stop()`.
 */
export async function startPrivateRedis(args: string[], password?: string): Promise<PrivateRedis> {
  const port = await serverPort();
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-redis-'));
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', ...args],
    { stdio: 'ignore' },
  );
  const started = Date.now();
  for (;;) {
    try {
      const probe = await openTestRedis(0, port, password);
      probe.disconnect();
      break;
    } catch (error) {
      if (Date.now() - started > 5000) {
        child.kill('SIGKILL');
        throw new Error(`redis-server did not start on port ${port}: ${(error as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const auth = password ? `:${password}@` : '';
  return {
    port,
    url: `redis://${auth}127.0.0.1:${port}/0`,
    stop: async () => {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once something accepts TCP connections on the loopback port (at most `ms`). */
export async function waitForPort(port: number, ms = 5000): Promise<void> {
  const { connect } = await import('node:net');
  const started = Date.now();
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() - started > ms) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A Laravel Redis broker named `name` under `brokers:` of a taskrecon config, as YAML lines. */
export function laravelBrokerYaml(name: string, url: string, prefix: string, queues: string[]): string[] {
  return [
    `  ${name}:`,
    '    kind: redis',
    `    url: ${url}`,
    '    framework: laravel',
    `    prefix: ${prefix}`,
    `    queues: [${queues.join(', ')}]`,
  ];
}

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { serverPort } from './ports.js';
import { waitForPort } from './redis.js';

const run = promisify(execFile);

/**
 * A throw-away Redis Cluster of three masters (no replicas) on loopback ports, its data and
 * nodes-N.conf files under one temporary directory: started by `startRedisCluster`, stopped by PID
 * and removed by `stop()`. Each node also has a direct connection (no redirections followed) for
 * ground truth.
 */
export interface RedisClusterHarness {
  ports: number[];
  /** `redis://127.0.0.1:PORT` of node i. */
  url(i?: number): string;
  /** Direct connections to the nodes, in port order. */
  nodes: Redis[];
  /** `redis-cli -c -p PORT args…` (follows redirections, as an operator would). */
  cli(...args: string[]): Promise<string>;
  /** The node (index) serving a key, by CLUSTER KEYSLOT and the slots of each node. */
  nodeOf(key: string): Promise<number>;
  /** Kills node i at once (SIGKILL), as a crashed master. */
  kill(i: number): void;
  stop(): Promise<void>;
}

async function cli(port: number, args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-c', '-p', String(port), ...args], { timeout: 20_000 });
  return stdout.trim();
}

export async function startRedisCluster(): Promise<RedisClusterHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-cluster-'));
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const port = await serverPort();
      const bus = await serverPort();
      ports.push(port);
      children.push(
        spawn(
          'redis-server',
          [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            '--cluster-enabled',
            'yes',
            '--cluster-port',
            String(bus),
            '--cluster-config-file',
            join(dir, `nodes-${i}.conf`),
            '--cluster-node-timeout',
            '2000',
            // A master down leaves the others serving their slots, as production clusters often do.
            '--cluster-require-full-coverage',
            'no',
            '--save',
            '',
            '--appendonly',
            'no',
            '--dir',
            dir,
            '--daemonize',
            'no',
          ],
          { stdio: 'ignore' },
        ),
      );
    }
    for (const port of ports) await waitForPort(port, 10_000);
  } catch (error) {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `these tests need redis-server and redis-cli (apt-get install redis-server): ${(error as Error).message}`,
    );
  }
  await run(
    'redis-cli',
    [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ],
    { timeout: 30_000 },
  );
  const started = Date.now();
  for (const port of ports) {
    while (!/cluster_state:ok/.test(await cli(port, ['CLUSTER', 'INFO']))) {
      if (Date.now() - started > 30_000)
        throw new Error(`the cluster on ${ports.join(', ')} never reached cluster_state:ok`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const nodes = ports.map((port) => {
    const redis = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, retryStrategy: () => null });
    redis.on('error', () => undefined);
    return redis;
  });
  const alive = ports.map(() => true);
  return {
    ports,
    nodes,
    url: (i = 0) => `redis://127.0.0.1:${ports[i]}`,
    cli: (...args) => cli(ports[alive.indexOf(true)] as number, args),
    nodeOf: async (key) => {
      // Read anew each time: a test may hand a slot to another master.
      const node = nodes[alive.indexOf(true)] as Redis;
      const slot = Number(await node.call('CLUSTER', 'KEYSLOT', key));
      const ranges = (await node.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
      const range = ranges.find(([a, b]) => slot >= a && slot <= b);
      return range ? ports.indexOf(Number(range[2][1])) : -1;
    },
    kill: (i) => {
      alive[i] = false;
      (nodes[i] as Redis).disconnect();
      children[i]?.kill('SIGKILL');
    },
    stop: async () => {
      for (const node of nodes) node.disconnect();
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once('exit', () => resolve());
              child.kill('SIGTERM');
            }),
        ),
      );
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

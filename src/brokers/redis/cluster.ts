import type { Redis } from 'ioredis';
import { TaskreconError } from '../../errors.js';
import { connectRedis, displayRedisUrl } from './connection.js';
import { describeSlots, keySlot, parseClusterNodes, uncoveredSlots, type ClusterNode } from './slots.js';

/**
 * The servers behind a broker URL: the one server, or — when the URL names a node of a Redis
 * Cluster (`cluster_enabled:1`) — every master, found by `CLUSTER NODES`, each with its own
 * connection and the slots it serves. A command goes to the master of its key's slot; SCAN goes to
 * each master. Redirections (MOVED) are not followed: the topology is read once per run, and a
 * slot moved meanwhile fails the command instead of sending it elsewhere.
 */

export interface RedisMaster {
  /** `host:port`. */
  address: string;
  slots: Array<[number, number]>;
  client: Redis;
}

export class RedisNodes {
  private readonly bySlot: Array<RedisMaster | undefined>;

  constructor(
    /** True when the URL names a node of a Redis Cluster. */
    readonly cluster: boolean,
    readonly masters: readonly RedisMaster[],
  ) {
    this.bySlot = new Array<RedisMaster | undefined>(16384);
    for (const master of masters) for (const [a, b] of master.slots) this.bySlot.fill(master, a, b + 1);
  }

  /** The one server, or the first master: for TIME, INFO, CONFIG GET. */
  get any(): Redis {
    return (this.masters[0] as RedisMaster).client;
  }

  /** The client of the master serving this key. */
  forKey(key: string): Redis {
    if (!this.cluster) return this.any;
    return (this.bySlot[keySlot(key)] as RedisMaster).client;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.masters.map(async ({ client }) => {
        try {
          await client.quit();
        } catch {
          client.disconnect();
        }
      }),
    );
  }
}

/** The URL of another node: the seed URL (user, password, TLS) with its host and port. */
function nodeUrl(seedUrl: string, node: ClusterNode): string {
  const url = new URL(seedUrl);
  url.hostname = node.host.includes(':') ? `[${node.host}]` : node.host;
  url.port = String(node.port);
  return url.toString();
}

function downError(where: string, display: string, node: ClusterNode, why: string, cause?: unknown) {
  return new TaskreconError(
    `${where}: master ${node.host}:${node.port} (slots ${describeSlots(node.slots)}) of the Redis Cluster at ${display} is down: ${why}`,
    {
      code: 'CONNECTION',
      hint: 'Counts are exact and moves safe only when every master answers: start the node, or wait until its replica has taken over (`redis-cli -c -u URL CLUSTER NODES`). Nothing was read or moved.',
      cause,
    },
  );
}

/** Reads the cluster's masters through the seed connection and connects to each; exit 3 when one is down. */
async function openCluster(seed: Redis, url: string, where: string): Promise<RedisNodes> {
  const display = displayRedisUrl(url);
  const nodes = parseClusterNodes(String(await seed.call('CLUSTER', 'NODES')));
  const masters = nodes.filter((n) => n.flags.includes('master') && n.slots.length > 0);
  for (const node of masters) {
    const failed = node.flags.find((f) => f === 'fail' || f === 'fail?');
    if (failed) throw downError(where, display, node, `the cluster flags it '${failed}'`);
    if (!node.connected && !node.flags.includes('myself'))
      throw downError(where, display, node, 'its cluster bus link is disconnected');
  }
  const gaps = uncoveredSlots(masters);
  if (gaps.length > 0) {
    throw new TaskreconError(
      `${where}: no master of the Redis Cluster at ${display} serves slots ${describeSlots(gaps)}`,
      {
        code: 'CONNECTION',
        hint: 'Assign the slots (`redis-cli --cluster fix HOST:PORT`) or start the master that served them. Nothing was read or moved.',
      },
    );
  }
  const info = String(await seed.call('CLUSTER', 'INFO'));
  const state = /cluster_state:(\w+)/.exec(info)?.[1];
  if (state !== 'ok') {
    throw new TaskreconError(
      `${where}: the Redis Cluster at ${display} is not serving (cluster_state:${state})`,
      {
        code: 'CONNECTION',
        hint: 'Check `redis-cli -u URL CLUSTER INFO` and the nodes it lists; nothing was read or moved.',
      },
    );
  }
  const opened: RedisMaster[] = [];
  const myself = masters.find((n) => n.flags.includes('myself'));
  try {
    for (const node of masters) {
      const address = `${node.host}:${node.port}`;
      if (node === myself) {
        opened.push({ address, slots: node.slots, client: seed });
        continue;
      }
      let client: Redis;
      try {
        client = await connectRedis(nodeUrl(url, node), `${where}: cluster node ${address}`);
      } catch (error) {
        throw downError(where, display, node, (error as Error).message, error);
      }
      opened.push({ address, slots: node.slots, client });
    }
  } catch (error) {
    for (const master of opened) master.client.disconnect();
    throw error;
  }
  // The seed is a replica: its masters serve every key.
  if (!myself) seed.disconnect();
  return new RedisNodes(true, opened);
}

/**
 * Opens the servers a broker URL names: the one server, or every master of the Redis Cluster
 * whose node it names. Exit 3 with a hint when the server, or any master of the cluster, cannot
 * be reached.
 */
export async function connectRedisNodes(url: string, where: string): Promise<RedisNodes> {
  const seed = await connectRedis(url, where);
  try {
    const info = String(await seed.info('cluster'));
    if (!/cluster_enabled:1/.test(info)) {
      return new RedisNodes(false, [{ address: displayRedisUrl(url), slots: [[0, 16383]], client: seed }]);
    }
    return await openCluster(seed, url, where);
  } catch (error) {
    seed.disconnect();
    throw error;
  }
}

/**
 * A cluster's reply that the topology read at the start no longer holds (a slot moved or being
 * migrated, the cluster down), as what to do: run again. Other errors: undefined.
 */
export function clusterReplyError(error: unknown, where: string): TaskreconError | undefined {
  const message = error instanceof Error ? error.message : '';
  const reply = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b.*/.exec(message);
  if (!reply) return undefined;
  return new TaskreconError(
    `${where}: the Redis Cluster's slots changed or went down during the run (${reply[0]})`,
    {
      code: 'CONNECTION',
      hint: 'Run the command again once `redis-cli -u URL CLUSTER INFO` says cluster_state:ok and no slot is migrating: it reads the masters anew. A batch the reply stopped did not move; its intent is settled by the next run.',
      cause: error,
    },
  );
}

/** BullMQ is read through its library on one server: a cluster URL is refused (exit 3). */
export function bullmqOnCluster(name: string, url: string): TaskreconError {
  return new TaskreconError(
    `broker ${name}: ${displayRedisUrl(url)} is a node of a Redis Cluster, and taskrecon reads BullMQ on one server only`,
    {
      code: 'USAGE',
      hint: 'Point the broker at a standalone Redis, or use framework laravel / thinkphp / list on the cluster. Nothing was read or moved.',
    },
  );
}

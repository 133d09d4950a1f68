import type { Redis } from 'ioredis';
import { connectRedisNodes, type RedisNodes } from '../brokers/redis/cluster.js';
import { createRedisClient } from '../brokers/redis/connection.js';
import { keySlot, tagForSameSlot } from '../brokers/redis/slots.js';
import { MARKER_TTL_SECONDS } from '../brokers/redis/intents.js';
import { LOOK_MARKER } from '../brokers/redis/scripts.js';
import { nameRun, runAlive } from '../brokers/redis/run-name.js';
import { TaskreconError } from '../errors.js';
import { maskDsnText } from '../db/dsn.js';

/** One write onto a Redis list: a plain RPUSH, or a Lua script the framework itself runs (EVAL). */
export type RedisListOp =
  | { kind: 'rpush'; key: string; value: string }
  | { kind: 'eval'; script: string; keys: string[]; args: string[] };

const CONNECT_TIMEOUT_MS = 5000;

/** Every key these ops write. */
function keysOf(ops: readonly RedisListOp[]): string[] {
  return ops.flatMap((op) => (op.kind === 'rpush' ? [op.key] : op.keys));
}

function fenced(): TaskreconError {
  return new TaskreconError(
    'another run settled this batch as not pushed before it was pushed; nothing was pushed',
    {
      code: 'GUARD',
      hint: 'Another taskrecon run settled this run’s open batch; run the command again: it retries what is left.',
    },
  );
}

/**
 * A small client for pushing onto Redis lists, all the pushes of a batch in one MULTI/EXEC so they
 * land together or not at all. Fails fast (no endless reconnects) with a message that says what to check.
 */
export class RedisLists {
  private readonly client: Redis;
  readonly display: string;
  /** The last connection error ioredis reported (its rejections only say "Connection is closed."). */
  private lastError: Error | undefined;
  /** When the URL names a node of a Redis Cluster: every master, each push sent to its key's. */
  private nodes: RedisNodes | undefined;
  private probe: Promise<void> | undefined;

  constructor(private readonly url: string) {
    this.display = maskDsnText(url);
    // Errors surface through the commands.
    this.client = createRedisClient(
      url,
      { connectTimeout: CONNECT_TIMEOUT_MS, enableOfflineQueue: true },
      (error) => {
        this.lastError = error;
      },
    );
  }

  private async ready(): Promise<void> {
    if (this.client.status !== 'ready') {
      try {
        if (this.client.status === 'wait') await this.client.connect();
      } catch (error) {
        throw this.unreachable(error);
      }
    }
    // Concurrent pushes share one probe, so a cluster's masters are connected once.
    this.probe ??= this.probeCluster().catch((error: unknown) => {
      this.probe = undefined;
      throw error;
    });
    await this.probe;
  }

  private async probeCluster(): Promise<void> {
    if (/cluster_enabled:1/.test(String(await this.client.info('cluster'))))
      this.nodes = await connectRedisNodes(this.url, `redis-list ${this.display}`);
  }

  /**
   * The server of these keys: the one server, or the master of their slot on a cluster, where a
   * MULTI may touch one slot only; keys of several slots are refused before anything is pushed.
   */
  private clientFor(keys: readonly string[]): Redis {
    if (!this.nodes) return this.client;
    const slots = new Set(keys.map(keySlot));
    if (slots.size > 1) {
      throw new TaskreconError(
        `Redis Cluster at ${this.display}: one push would write keys of ${slots.size} hash slots (${keys.join(', ')})`,
        {
          code: 'USAGE',
          hint: 'Name the list with a hash tag shared by the keys written together ({tag}); nothing was pushed and no row was changed.',
        },
      );
    }
    return this.nodes.forKey(keys[0] ?? '');
  }

  /**
   * The hash tag of the write-ahead marker `pushAll` writes with these ops (`markerKey`'s tag): on
   * a cluster, one that puts it in the slot of their keys; undefined on one server, where the
   * marker stays untagged. Keys of several slots are refused as `pushAll` refuses them, so before
   * any intent is written.
   */
  async markerTag(ops: readonly RedisListOp[]): Promise<string | undefined> {
    await this.ready();
    if (!this.nodes) return undefined;
    const keys = keysOf(ops);
    this.clientFor(keys);
    return tagForSameSlot(keys[0] ?? '');
  }

  private unreachable(error: unknown): TaskreconError {
    return new TaskreconError(`cannot reach Redis at ${this.display}: ${(error as Error).message}`, {
      code: 'CONNECTION',
      hint: 'Check `url:` of the queue connection in the source config; nothing was pushed and no row was changed.',
      cause: error,
    });
  }

  /** Why this server cannot take pushes (it does not answer PING), or undefined when it answers. */
  async whyUnreachable(): Promise<string | undefined> {
    try {
      await this.ready();
      await this.client.ping();
      return undefined;
    } catch (error) {
      const cause = this.lastError ?? (error as Error);
      if ((cause as NodeJS.ErrnoException).code === 'ECONNREFUSED')
        return `Redis at ${this.display} refused the connection`;
      return `Redis at ${this.display} did not answer PING: ${cause.message}`;
    }
  }

  /**
   * Runs every op in one MULTI/EXEC; throws (so the caller rolls its transaction back) when any fails.
   * With `marker` (a write-ahead intent's marker key and what it pushes), the same MULTI lists the
   * pushed ids there, and the push is refused when the marker exists or appears meanwhile (WATCH):
   * a later run settled the intent as not pushed and fenced it off.
   */
  async pushAll(
    ops: readonly RedisListOp[],
    marker?: { key: string; ids: readonly string[] },
  ): Promise<void> {
    if (ops.length === 0) return;
    await this.ready();
    const keys = keysOf(ops);
    const client = this.clientFor(marker ? [...keys, marker.key] : keys);
    if (marker) {
      await client.watch(marker.key);
      if ((await client.exists(marker.key)) === 1) {
        await client.unwatch();
        throw fenced();
      }
    }
    const multi = client.multi();
    for (const op of ops) {
      if (op.kind === 'rpush') multi.rpush(op.key, op.value);
      else multi.eval(op.script, op.keys.length, ...op.keys, ...op.args);
    }
    if (marker) {
      multi.rpush(marker.key, ...marker.ids);
      multi.expire(marker.key, MARKER_TTL_SECONDS);
    }
    let replies: Array<[Error | null, unknown]> | null;
    try {
      replies = await multi.exec();
    } catch (error) {
      throw this.unreachable(error);
    }
    if (!replies && marker) throw fenced();
    const failed = replies?.find(([error]) => error);
    if (!replies || failed)
      throw new TaskreconError(`Redis refused the push: ${failed?.[0]?.message ?? 'transaction aborted'}`, {
        code: 'REDIS',
      });
  }

  /**
   * What a write-ahead intent's push left: the ids it pushed, or null when it never pushed — and
   * then it never will (the marker is set to fence it off).
   */
  async lookMarker(key: string): Promise<string[] | null> {
    await this.ready();
    return (await this.clientFor([key]).eval(LOOK_MARKER, 1, key, String(MARKER_TTL_SECONDS))) as
      string[] | null;
  }

  /**
   * Names this connection (and a cluster's masters) after the run, before the run opens an intent
   * whose marker lives here: other runs leave its open re-pushes to it while it stays connected.
   */
  async nameRun(runId: string): Promise<void> {
    await this.ready();
    await nameRun([this.client, ...(this.nodes?.masters.map((m) => m.client) ?? [])], runId);
  }

  /** Whether the run's named connection is open here; undefined when CLIENT LIST is refused. */
  async runAlive(runId: string): Promise<boolean | undefined> {
    await this.ready();
    return runAlive(this.client, runId);
  }

  /** Removes a settled intent's marker. */
  async forgetMarker(key: string): Promise<void> {
    await this.clientFor([key]).del(key);
  }

  async close(): Promise<void> {
    await this.nodes?.close();
    if (this.client.status === 'ready') await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
  }
}

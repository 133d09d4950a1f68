import type { Redis } from 'ioredis';
import { createRedisClient } from '../brokers/redis/connection.js';
import { TaskreconError } from '../errors.js';
import { maskDsnText } from '../db/dsn.js';

/** One write onto a Redis list: a plain RPUSH, or a Lua script the framework itself runs (EVAL). */
export type RedisListOp =
  | { kind: 'rpush'; key: string; value: string }
  | { kind: 'eval'; script: string; keys: string[]; args: string[] };

const CONNECT_TIMEOUT_MS = 5000;

/**
 * A small client for pushing onto Redis lists, all the pushes of a batch in one MULTI/EXEC so they
 * land together or not at all. Fails fast (no endless reconnects) with a message that says what to check.
 */
export class RedisLists {
  private readonly client: Redis;
  readonly display: string;
  /** The last connection error ioredis reported (its rejections only say "Connection is closed."). */
  private lastError: Error | undefined;

  constructor(url: string) {
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
    if (this.client.status === 'ready') return;
    try {
      if (this.client.status === 'wait') await this.client.connect();
    } catch (error) {
      throw this.unreachable(error);
    }
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

  /** Runs every op in one MULTI/EXEC; throws (so the caller rolls its transaction back) when any fails. */
  async pushAll(ops: readonly RedisListOp[]): Promise<void> {
    if (ops.length === 0) return;
    await this.ready();
    const multi = this.client.multi();
    for (const op of ops) {
      if (op.kind === 'rpush') multi.rpush(op.key, op.value);
      else multi.eval(op.script, op.keys.length, ...op.keys, ...op.args);
    }
    let replies: Array<[Error | null, unknown]> | null;
    try {
      replies = await multi.exec();
    } catch (error) {
      throw this.unreachable(error);
    }
    const failed = replies?.find(([error]) => error);
    if (!replies || failed)
      throw new TaskreconError(`Redis refused the push: ${failed?.[0]?.message ?? 'transaction aborted'}`, {
        code: 'REDIS',
      });
  }

  async close(): Promise<void> {
    if (this.client.status === 'ready') await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
  }
}

import type { RedisFramework } from '../../config/brokers.js';
import { finding, type QueueFinding, type QueueStats } from '../types.js';
import { describeOther, type ParsedKey } from './layout.js';
import { DURABLE_FSYNC, evictsQueueKeys, type ServerSettings } from './server.js';

/**
 * The Redis findings, from counts and settings already read. Pure: no I/O, "now" is in the counts.
 */

/**
 * How long past its time a delayed job or a reservation of a consumed queue may wait before it
 * counts as nobody's: a running worker migrates due jobs every time it pops (at most a few seconds
 * apart, `block_for` / `--sleep`), so a minute means no worker or mover runs for that queue. A queue
 * no configured queue names has no worker to wait for: there any due job counts at once.
 */
export const OVERDUE_GRACE_SECONDS = 60;

/** delayed-overdue, reservation-expired, unknown-queue of one queue. */
export function queueFindings(
  broker: string,
  stats: QueueStats,
  options: { configured: readonly string[]; nowEpoch: number; reservedOldestEpoch: number | null },
): QueueFinding[] {
  const out: QueueFinding[] = [];
  const q = stats.name;
  const unconsumed = options.configured.length > 0 && !options.configured.includes(q);
  const grace = unconsumed ? 0 : OVERDUE_GRACE_SECONDS;
  if ((stats.delayedOverdue ?? 0) > 0 && (stats.oldestOverdueSeconds ?? 0) >= grace) {
    out.push(
      finding(
        'delayed-overdue',
        broker,
        q,
        stats.delayedOverdue,
        `${stats.delayedOverdue} delayed job(s) of ${q} are past their time, the oldest by ${stats.oldestOverdueSeconds}s: nobody migrates them`,
        `Start a worker for ${q} (it migrates due jobs as it pops), or run \`taskrecon queues recover --queue ${q}\`.`,
      ),
    );
  }
  const expiredAge =
    options.reservedOldestEpoch === null ? 0 : Math.floor(options.nowEpoch - options.reservedOldestEpoch);
  if ((stats.reservedExpired ?? 0) > 0 && expiredAge >= grace) {
    out.push(
      finding(
        'reservation-expired',
        broker,
        q,
        stats.reservedExpired,
        `${stats.reservedExpired} reservation(s) of ${q} expired ${expiredAge}s ago: a worker died mid-job`,
        `A worker of ${q} runs them again if their tries allow (else it fails them); without one, \`taskrecon queues recover --queue ${q}\` puts them back on ready.`,
      ),
    );
  }
  const depth = (stats.ready ?? 0) + (stats.delayed ?? 0) + (stats.reserved ?? 0);
  if (unconsumed && depth > 0) {
    out.push(
      finding(
        'unknown-queue',
        broker,
        q,
        depth,
        `queue ${q} holds ${depth} job(s) and no configured queue names it: nobody consumes it`,
        `If it was renamed in a deploy, move its jobs: \`taskrecon queues move --from ${q} --to ${options.configured[0]} --what all\`; else add it to \`queues:\` of the broker.`,
      ),
    );
  }
  return out;
}

/** no-persistence and evicting, from the server's settings. */
export function serverFindings(
  broker: string,
  settings: ServerSettings,
  queueKeysHaveTtl: boolean,
): QueueFinding[] {
  const out: QueueFinding[] = [];
  const fsyncWeak = settings.appendfsync !== null && !DURABLE_FSYNC.has(settings.appendfsync);
  if (settings.appendonly === false || (settings.appendonly === true && fsyncWeak)) {
    const what =
      settings.appendonly === false ? 'appendonly is off' : `appendfsync is '${settings.appendfsync}'`;
    out.push(
      finding(
        'no-persistence',
        broker,
        null,
        null,
        `${what}: jobs pushed since the last RDB save are lost when Redis restarts`,
        'Set `appendonly yes` and `appendfsync everysec` (redis.conf, or CONFIG SET then CONFIG REWRITE).',
      ),
    );
  }
  if (evictsQueueKeys(settings.maxmemoryPolicy, queueKeysHaveTtl)) {
    out.push(
      finding(
        'evicting',
        broker,
        null,
        null,
        `maxmemory-policy is '${settings.maxmemoryPolicy}': at maxmemory Redis deletes queue keys, jobs and all`,
        'Use `maxmemory-policy noeviction` for a Redis that holds queues (writes then fail loudly instead), or a separate Redis for caches.',
      ),
    );
  }
  return out;
}

/** key-format: keys of the other think-queue layout than the configured one. */
export function keyFormatFindings(
  broker: string,
  framework: RedisFramework,
  others: readonly ParsedKey[],
): QueueFinding[] {
  const other =
    framework === 'thinkphp'
      ? others.filter((k) => k.layout === 'prefixed' && k.prefix === '' && k.part !== 'notify')
      : framework === 'thinkphp-legacy'
        ? others.filter((k) => k.layout === 'thinkphp')
        : [];
  if (other.length === 0) return [];
  const names = [...new Set(other.map((k) => k.queue))].slice(0, 5);
  const seen = describeOther(other[0] as ParsedKey);
  return [
    finding(
      'key-format',
      broker,
      null,
      names.length,
      `keys of the ${seen} layout exist (queues ${names.join(', ')}) but the broker is configured as ${framework}: those jobs are not where the workers look`,
      framework === 'thinkphp'
        ? 'think-queue before 3.0.5 wrote `queues:Q`; after an upgrade move them, or set `framework: thinkphp-legacy` if that is what runs.'
        : 'think-queue 3.0.5 and later write `{queues:Q}`; set `framework: thinkphp` if that is what runs.',
    ),
  ];
}

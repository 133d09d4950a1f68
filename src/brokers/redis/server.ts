import type { Redis } from 'ioredis';

/** What the server says about keeping and evicting data. */
export interface ServerSettings {
  /** Where the figures came from: CONFIG GET, or INFO where CONFIG is refused (managed Redis). */
  via: 'config' | 'info';
  appendonly: boolean | null;
  /** `always` | `everysec` | `no`; null when only INFO answered (it does not say). */
  appendfsync: string | null;
  maxmemoryPolicy: string | null;
  version: string | null;
}

function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) fields.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  return fields;
}

async function configGet(client: Redis, name: string): Promise<string | null> {
  const reply = (await client.config('GET', name)) as unknown as string[];
  return reply.length >= 2 ? String(reply[1]) : null;
}

/** Reads persistence and eviction settings: read-only (CONFIG GET, INFO). */
export async function readServerSettings(client: Redis): Promise<ServerSettings> {
  const server = parseInfo(await client.info('server'));
  const version = server.get('redis_version') ?? null;
  try {
    const [appendonly, appendfsync, maxmemoryPolicy] = await Promise.all([
      configGet(client, 'appendonly'),
      configGet(client, 'appendfsync'),
      configGet(client, 'maxmemory-policy'),
    ]);
    return {
      via: 'config',
      appendonly: appendonly === null ? null : appendonly === 'yes',
      appendfsync,
      maxmemoryPolicy,
      version,
    };
  } catch {
    // CONFIG renamed or refused (ACL, managed services): INFO still tells whether AOF is on.
    const persistence = parseInfo(await client.info('persistence'));
    const memory = parseInfo(await client.info('memory'));
    const aof = persistence.get('aof_enabled');
    return {
      via: 'info',
      appendonly: aof === undefined ? null : aof === '1',
      appendfsync: null,
      maxmemoryPolicy: memory.get('maxmemory_policy') ?? null,
      version,
    };
  }
}

/** appendfsync values with which an acknowledged push survives a crash (within a second). */
export const DURABLE_FSYNC: ReadonlySet<string> = new Set(['everysec', 'always']);

/** Whether the policy may evict a queue key: `allkeys-*` any key, `volatile-*` only keys with a TTL. */
export function evictsQueueKeys(policy: string | null, queueKeysHaveTtl: boolean): boolean {
  if (!policy || policy === 'noeviction') return false;
  if (policy.startsWith('allkeys-')) return true;
  return policy.startsWith('volatile-') && queueKeysHaveTtl;
}

/** How much a server's settings put queued jobs at risk: evicting first, then no AOF, then weak fsync. */
function risk(settings: ServerSettings): number {
  const policy = settings.maxmemoryPolicy;
  const fsyncWeak = settings.appendfsync !== null && !DURABLE_FSYNC.has(settings.appendfsync);
  return (
    (policy && policy !== 'noeviction' ? 4 : 0) +
    (settings.appendonly === false ? 2 : 0) +
    (fsyncWeak ? 1 : 0)
  );
}

/**
 * The settings of every server (each master of a cluster), read-only: the riskiest one decides the
 * findings, since a job lost on one master is lost all the same.
 */
export async function readWeakestSettings(clients: readonly Redis[]): Promise<ServerSettings> {
  const all = await Promise.all(clients.map(readServerSettings));
  return all.reduce((worst, next) => (risk(next) > risk(worst) ? next : worst));
}

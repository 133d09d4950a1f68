import type { Hono, MiddlewareHandler } from 'hono';
import type { ConsoleEnv } from '../env.js';
import { scopeLinks, scopePath, shardPrefix, splitShardPath } from './paths.js';

/** A shard's console app, answering its requests as if it were served at the root. */
export type ShardApp = Pick<Hono<ConsoleEnv>, 'fetch'>;

/**
 * Hands every request under `/shards/<name>/` to that shard's console, a whole console app of its
 * own (the Host check, read-only, the session, Origin, CSRF, the security headers: all run there,
 * on the request as the browser sent it, the prefix taken off the path). Its answer goes back with
 * every link, form and redirect put under the prefix, so a shard's pages never leave it. A path
 * naming no shard of this console goes on to the top level, whose guards then answer (a 404 for a
 * signed-in browser).
 */
export function shardDispatch(apps: ReadonlyMap<string, ShardApp>): MiddlewareHandler<ConsoleEnv> {
  return async (c, next) => {
    const url = new URL(c.req.url);
    const split = splitShardPath(url.pathname);
    const app = split && apps.get(split.name);
    if (!split || !app) return next();
    const prefix = shardPrefix(split.name);
    const inner = new URL(split.rest + url.search, url.origin);
    const raw = c.req.raw;
    // The body is streamed through unread: the shard's guards (read-only first) decide whether it is read.
    const init: RequestInit & { duplex?: 'half' } = { method: raw.method, headers: raw.headers };
    if (raw.body) {
      init.body = raw.body;
      init.duplex = 'half';
    }
    const answer = await app.fetch(new Request(inner, init));
    const headers = new Headers(answer.headers);
    const location = headers.get('location');
    if (location) headers.set('location', scopePath(location, prefix));
    const type = headers.get('content-type') ?? '';
    if (!type.startsWith('text/html') || answer.body === null)
      return new Response(answer.body, { status: answer.status, headers });
    headers.delete('content-length');
    return new Response(scopeLinks(await answer.text(), prefix), { status: answer.status, headers });
  };
}

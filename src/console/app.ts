import { Hono } from 'hono';
import { asset } from './assets.js';
import { BulkRuns } from './bulk.js';
import type { ConsoleDeps } from './deps.js';
import type { ConsoleEnv } from './env.js';
import { errorPage, notFoundPage } from './errors.js';
import { Flashes } from './flash.js';
import { actionRoutes } from './routes/actions.js';
import { pageRoutes, queuesRoute } from './routes/pages.js';
import { shardedRoutes } from './routes/shards.js';
import { shardDispatch, type ShardApp } from './shards/mount.js';
import { queueActionRoutes } from './routes/queue-actions.js';
import { csrfGuard } from './security/csrf.js';
import { securityHeaders } from './security/headers.js';
import { hostGuard } from './security/host.js';
import { sameOriginGuard } from './security/origin.js';
import { readOnlyGuard } from './security/read-only.js';
import { Sessions, sessionGuard } from './security/session.js';

/** Where the console is served; known once the server listens (port 0 picks one). */
export interface Served {
  port: number;
}

export interface ConsoleApp {
  app: Hono<ConsoleEnv>;
  sessions: Sessions;
  /** The bulk runs of this console and of every shard's (the server waits for them on close). */
  bulks: BulkRuns[];
}

/**
 * The console as a Hono app: security first (headers on every answer, the Host check, read-only,
 * the session, then Origin and CSRF on every state change), then the pages and the actions.
 * On a sharded source, each shard is a console app of its own (this same function, the sessions
 * shared) served under `/shards/<name>/`; the top level keeps the merged overview and the queues.
 */
export function createConsoleApp(deps: ConsoleDeps, served: Served, shared?: Sessions): ConsoleApp {
  const sessions = shared ?? new Sessions();
  const bulk = new BulkRuns();
  const bulks = [bulk];
  const flashes = new Flashes();
  const origin = () => `http://127.0.0.1:${served.port}`;
  const app = new Hono<ConsoleEnv>();
  if (deps.shards) {
    const apps = new Map<string, ShardApp>();
    for (const shard of deps.shards.shards) {
      const inner = createConsoleApp(shard.deps, served, sessions);
      apps.set(shard.name, inner.app);
      bulks.push(...inner.bulks);
    }
    app.use('*', shardDispatch(apps));
  }
  app.use('*', securityHeaders());
  app.use(
    '*',
    hostGuard(() => [`127.0.0.1:${served.port}`]),
  );
  if (deps.readOnly) app.use('*', readOnlyGuard());
  app.use(
    '*',
    sessionGuard(sessions, () => `taskrecon_console_${served.port}`),
  );
  app.use('*', sameOriginGuard(origin));
  app.use('*', csrfGuard());
  app.get('/static/:name', (c) => {
    const found = asset(c.req.param('name'));
    if (!found) return notFoundPage(c);
    return c.body(found.body, 200, { 'Content-Type': found.type });
  });
  if (deps.shards) {
    shardedRoutes(app, deps, deps.shards, { bulk, flashes });
    queuesRoute(app, deps, { bulk, flashes });
  } else pageRoutes(app, deps, { bulk, flashes });
  if (!deps.readOnly) {
    if (!deps.shards) actionRoutes(app, deps, { bulk, flashes });
    queueActionRoutes(app, deps, { bulk, flashes });
  }
  app.notFound((c) => notFoundPage(c));
  app.onError((error, c) => errorPage(c, error));
  return { app, sessions, bulks };
}

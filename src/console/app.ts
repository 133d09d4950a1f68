import { Hono } from 'hono';
import { asset } from './assets.js';
import { BulkRuns } from './bulk.js';
import type { ConsoleDeps } from './deps.js';
import type { ConsoleEnv } from './env.js';
import { errorPage, notFoundPage } from './errors.js';
import { Flashes } from './flash.js';
import { actionRoutes } from './routes/actions.js';
import { pageRoutes } from './routes/pages.js';
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
  bulk: BulkRuns;
}

/**
 * The console as a Hono app: security first (headers on every answer, the Host check, read-only,
 * the session, then Origin and CSRF on every state change), then the pages and the actions.
 */
export function createConsoleApp(deps: ConsoleDeps, served: Served): ConsoleApp {
  const sessions = new Sessions();
  const bulk = new BulkRuns();
  const flashes = new Flashes();
  const origin = () => `http://127.0.0.1:${served.port}`;
  const app = new Hono<ConsoleEnv>();
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
  pageRoutes(app, deps, { bulk, flashes });
  if (!deps.readOnly) {
    actionRoutes(app, deps, { bulk, flashes });
    queueActionRoutes(app, deps, { bulk, flashes });
  }
  app.notFound((c) => notFoundPage(c));
  app.onError((error, c) => errorPage(c, error));
  return { app, sessions, bulk };
}

import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { usageError } from '../errors.js';
import { createConsoleApp } from './app.js';
import { openControlSocket } from './control/server.js';
import type { ConsoleDeps } from './deps.js';

/** The only address the console listens on. */
export const LOOPBACK = '127.0.0.1';

export interface RunningConsole {
  /** The start-up URL with its one-time token. */
  url: string;
  address: AddressInfo;
  /** Why `console --link` cannot reach this console (its control socket did not open), if so. */
  controlProblem?: string;
  /** Stops accepting, waits for a bulk run in hand to finish its batch, closes connections. */
  close(): Promise<void>;
}

/**
 * Serves the console on 127.0.0.1:`port` (0: a free port) until close(), with its control socket
 * (`console --link`: a fresh one-time link for one more browser).
 */
export async function startConsole(deps: ConsoleDeps, port: number): Promise<RunningConsole> {
  const served = { port };
  const { app, sessions, bulks } = createConsoleApp(deps, served);
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port, hostname: LOOPBACK }, () => resolve(s));
    s.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? usageError(
              `port ${port} is in use on ${LOOPBACK}`,
              'Pick another with --port, or --port 0 for a free one.',
            )
          : error,
      ),
    );
  });
  const address = server.address() as AddressInfo;
  served.port = address.port;
  const urlOf = (token: string | undefined) => `http://${LOOPBACK}:${address.port}/?token=${token}`;
  let controlProblem: string | undefined;
  const control = await openControlSocket(address.port, () => ({
    url: urlOf(sessions.mint()),
    port: address.port,
    readOnly: deps.readOnly,
    operator: deps.operator,
  })).catch((error: Error) => {
    controlProblem = error.message;
    return undefined;
  });
  return {
    url: urlOf(sessions.startToken),
    address,
    ...(controlProblem ? { controlProblem } : {}),
    async close() {
      await control?.close();
      for (const bulk of bulks) bulk.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if ('closeAllConnections' in server) server.closeAllConnections();
      const deadline = Date.now() + 10_000;
      while (bulks.some((b) => b.running().length > 0) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      await closed;
    },
  };
}

import { chmodSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { controlDir, socketPath } from './paths.js';

/** What a link request is answered with: the shape of `console --json`'s line. */
export interface LinkAnswer {
  url: string;
  port: number;
  readOnly: boolean;
  operator: string;
}

/** The one request the control socket understands. */
export const LINK_REQUEST = 'link';

export interface ControlSocket {
  close(): Promise<void>;
}

/**
 * A running console's local control: a Unix socket, mode 600, in an owner-only directory, so only
 * the user who started the console reaches it (no TCP port, nothing on the network). Its one
 * request, `link`, mints a fresh one-time sign-in link; sessions already signed in are untouched.
 */
export async function openControlSocket(port: number, mint: () => LinkAnswer): Promise<ControlSocket> {
  const path = socketPath(controlDir(), port);
  // A socket left by a console that was killed: the port is ours now, so is the name.
  rmSync(path, { force: true });
  const server: Server = createServer((conn) => {
    let text = '';
    conn.setEncoding('utf8');
    conn.setTimeout(5_000, () => conn.destroy());
    conn.on('data', (chunk: string) => {
      text += chunk;
      if (!text.includes('\n')) {
        if (text.length > 64) conn.destroy();
        return;
      }
      const request = text.slice(0, text.indexOf('\n')).trim();
      conn.end(
        request === LINK_REQUEST
          ? `${JSON.stringify(mint())}\n`
          : `${JSON.stringify({ error: `unknown request '${request.slice(0, 20)}'` })}\n`,
      );
    });
    conn.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  return {
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(path, { force: true });
    },
  };
}

import { createServer } from 'node:net';

/**
 * Ports for the servers a test starts itself (a private Redis, MariaDB replicas, a throw-away
 * PostgreSQL cluster), drawn below the kernel's ephemeral range (32768 and up on Linux). Ports
 * that tests want closed ("unreachable") come from the kernel (listen on 0, then close), so they
 * are always in the ephemeral range: a server started by one test file can never take the port
 * another file, running at the same time, counts on being closed.
 */
const FIRST = 20_000;
const SPAN = 12_000;

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free loopback port for a server the test starts, outside the ephemeral range. */
export async function serverPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = FIRST + Math.floor(Math.random() * SPAN);
    if (await isFree(port)) return port;
  }
  throw new Error(`no free loopback port between ${FIRST} and ${FIRST + SPAN}`);
}

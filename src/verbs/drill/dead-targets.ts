import { createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * Unreachable targets on loopback only (never another address): a port nothing listens on
 * (connection refused), and a listener that accepts and never answers (the caller's timeout fires).
 */

/** A loopback URL whose port was just closed: connecting is refused. */
export async function closedLoopbackUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/tasks`;
}

export interface SilentListener {
  readonly url: string;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

/** A loopback listener that accepts connections, reads nothing and never answers. */
export async function startSilentListener(): Promise<SilentListener> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/tasks`,
    get accepted() {
      return accepted;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

import type { Redis } from 'ioredis';

/**
 * Which runs are still working, as Redis can tell: a run that writes through write-ahead intents
 * names its connections after its run id, and a later run leaves the intents of a run whose named
 * connection is still open to it. The kernel closes a killed process's sockets, and Redis drops the
 * name with the connection; a host that vanished keeps it until Redis's `timeout` or TCP keepalive
 * (`tcp-keepalive`, 300 s by default) ends it.
 */

/** The connection name of a run (CLIENT SETNAME takes no spaces; run ids are uuids). */
export function runClientName(runId: string): string {
  return `taskrecon-run-${runId.replace(/\s/g, '_')}`;
}

/** Names these connections after the run, for as long as they stay open (and again on reconnect). */
export async function nameRun(clients: readonly Redis[], runId: string): Promise<void> {
  const name = runClientName(runId);
  for (const client of clients) {
    // ioredis sends its `connectionName` again on each reconnect.
    client.options.connectionName = name;
    try {
      await client.client('SETNAME', name);
    } catch {
      // A server that refuses CLIENT SETNAME: later runs cannot tell this run is alive.
    }
  }
}

/** Whether a connection named after the run is open; undefined when CLIENT LIST is refused. */
export async function runAlive(client: Redis, runId: string): Promise<boolean | undefined> {
  const name = `name=${runClientName(runId)}`;
  try {
    const list = String(await client.client('LIST'));
    return list.split('\n').some((line) => line.split(' ').includes(name));
  } catch {
    return undefined;
  }
}

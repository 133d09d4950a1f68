import type { ChannelModel } from 'amqplib';
import { closeQuietly, isLocked, isNotFound, openChannel } from './connection.js';

/**
 * Which move runs are still working, as RabbitMQ can tell: a run that writes through write-ahead
 * intents connects with its run in `connection_name` (what operators see) and declares an exclusive
 * queue of that name, which the broker deletes when the connection closes. A later run asks for that
 * queue without declaring it (a passive declare): RESOURCE_LOCKED (405), another connection holds it —
 * the run is alive; NOT_FOUND (404) — it is gone. The kernel closes a killed process's socket at
 * once; a host that vanished holds its queue until the heartbeat (30 s) times out.
 */

/** The connection name and exclusive queue of a run. */
export function runConnectionName(runId: string): string {
  return `taskrecon-run-${runId}`;
}

/** Declares the run's exclusive queue on `connection` (it lives as long as the connection). */
export async function declareRun(connection: ChannelModel, runId: string): Promise<void> {
  const channel = await openChannel(connection);
  try {
    await channel.assertQueue(runConnectionName(runId), {
      exclusive: true,
      autoDelete: true,
      durable: false,
      arguments: { 'x-queue-type': 'classic' },
    });
  } catch {
    // A user who may not declare it: later runs cannot tell this run is alive.
  } finally {
    await closeQuietly(channel);
  }
}

/** Whether the run's connection is open: true, false, or undefined when the broker's answer says neither. */
export async function rabbitRunAlive(connection: ChannelModel, runId: string): Promise<boolean | undefined> {
  const channel = await openChannel(connection);
  try {
    await channel.checkQueue(runConnectionName(runId));
    // Declared and accessible: this very connection's (or a queue someone made with that name).
    return true;
  } catch (error) {
    if (isLocked(error)) return true;
    if (isNotFound(error)) return false;
    return undefined;
  } finally {
    await closeQuietly(channel);
  }
}

import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type Options } from 'amqplib';
import { maskDsnText } from '../../db/dsn.js';
import { TaskreconError, usageError } from '../../errors.js';

/** How long a connect (TCP + AMQP handshake) may take before the broker counts as unreachable. */
export const CONNECT_TIMEOUT_MS = 5000;

/** An AMQP URL taken apart: what amqplib connects with, and how to show it (password masked). */
export interface AmqpTarget {
  connect: Options.Connect;
  vhost: string;
  username: string;
  password: string;
  display: string;
}

const URL_HINT = 'Write it as amqp://user:pass@host:5672/vhost (the default vhost "/" is %2F).';

/** Parses `url:` of a RabbitMQ broker; the vhost is the path (`%2F`, `/` or nothing: the vhost `/`). */
export function parseAmqpUrl(text: string): AmqpTarget {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`'${maskDsnText(text)}' is not an AMQP URL`, URL_HINT);
  }
  if (url.protocol !== 'amqp:' && url.protocol !== 'amqps:')
    throw usageError(`unsupported RabbitMQ URL scheme '${url.protocol.replace(/:$/, '')}'`, URL_HINT);
  const path = url.pathname.replace(/^\//, '');
  const vhost = path === '' ? '/' : decodeURIComponent(path);
  const username = url.username ? decodeURIComponent(url.username) : 'guest';
  const password = url.password ? decodeURIComponent(url.password) : 'guest';
  const tls = url.protocol === 'amqps:';
  return {
    connect: {
      protocol: tls ? 'amqps' : 'amqp',
      hostname: url.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
      port: url.port ? Number(url.port) : tls ? 5671 : 5672,
      username,
      password,
      vhost,
      heartbeat: 30,
    },
    vhost,
    username,
    password,
    display: maskDsnText(text),
  };
}

/** Turns what amqplib throws on connect into a message that says what to check. */
export function connectError(target: AmqpTarget, error: unknown): TaskreconError {
  const text = String((error as Error)?.message ?? error);
  let message = `cannot reach RabbitMQ at ${target.display}: ${text}`;
  let hint =
    'Check that the broker runs and `url:` names its host and AMQP port (5672); nothing was published or acked.';
  if (/ACCESS[-_]REFUSED|403/.test(text)) {
    message = `RabbitMQ at ${target.display} refused the login of user '${target.username}' (wrong user or password)`;
    hint = 'Check the user and password in `url:`; nothing was published or acked.';
  } else if (/NOT_ALLOWED|vhost|Expected ConnectionOpenOk/i.test(text)) {
    // connection.open refused: the vhost does not exist, or the user has no permission on it.
    message = `RabbitMQ at ${target.display}: vhost '${target.vhost}' does not exist or user '${target.username}' may not use it`;
    hint =
      'Check the vhost in the URL path (the default vhost "/" is %2F) and the user\'s permissions; nothing was published or acked.';
  }
  return new TaskreconError(message, { code: 'CONNECTION', hint, cause: error });
}

/** Connects, failing fast (no reconnect loop). Errors after connect are left to the calls that see them. */
export async function openConnection(target: AmqpTarget, name?: string): Promise<ChannelModel> {
  let connection: ChannelModel;
  try {
    // `connection_name` is what the management UI and `rabbitmqctl list_connections` show.
    connection = await amqp.connect(target.connect, {
      timeout: CONNECT_TIMEOUT_MS,
      ...(name === undefined ? {} : { clientProperties: { connection_name: name } }),
    });
  } catch (error) {
    throw connectError(target, error);
  }
  // A broker-side close (a channel error escalated, a restart) surfaces through the pending call.
  connection.on('error', () => undefined);
  return connection;
}

/** A channel whose broker-side close (404 on a passive declare, …) rejects the call, never crashes the process. */
export async function openChannel(connection: ChannelModel): Promise<Channel> {
  const channel = await connection.createChannel();
  channel.on('error', () => undefined);
  return channel;
}

export async function openConfirmChannel(connection: ChannelModel): Promise<ConfirmChannel> {
  const channel = await connection.createConfirmChannel();
  channel.on('error', () => undefined);
  return channel;
}

/** Closes a channel, ignoring one the broker already closed. Close channels before the connection: that flushes acks. */
export async function closeQuietly(closable: { close(): Promise<void> } | undefined): Promise<void> {
  if (!closable) return;
  await closable.close().catch(() => undefined);
}

/** True when a channel call failed because the broker said 405: an exclusive queue of another connection. */
export function isLocked(error: unknown): boolean {
  return /RESOURCE_LOCKED|RESOURCE-LOCKED|405/.test(String((error as Error)?.message ?? error));
}

/** True when a channel call failed because the broker said 404 (no such queue or exchange). */
export function isNotFound(error: unknown): boolean {
  return /NOT_FOUND|404/.test(String((error as Error)?.message ?? error));
}

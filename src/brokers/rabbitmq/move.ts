import type { ChannelModel, ConfirmChannel, GetMessage, Options } from 'amqplib';
import { createHash } from 'node:crypto';
import { TaskreconError, usageError } from '../../errors.js';
import { Pacer } from '../../core/pacer.js';
import type { MovedJob, MoveRequest, MoveResult } from '../types.js';
import { closeQuietly, isNotFound, openChannel, openConfirmChannel, type AmqpTarget } from './connection.js';

/** The header every republished message carries: the run that moved it (its audit rows have the same id). */
export const MOVED_RUN_HEADER = 'x-taskrecon-moved-run';

/** Headers RabbitMQ writes when it dead-letters a message; `resetDeath` drops them all. */
const DEATH_HEADERS = [
  'x-death',
  'x-first-death-exchange',
  'x-first-death-queue',
  'x-first-death-reason',
  'x-last-death-exchange',
  'x-last-death-queue',
  'x-last-death-reason',
];

export interface MoveInput {
  broker: string;
  target: AmqpTarget;
  connection: ChannelModel;
  request: MoveRequest;
}

/** The AMQP message-id, else a fingerprint of the body and the headers RabbitMQ did not add. */
export function messageJobId(message: GetMessage): string {
  const id = message.properties.messageId;
  if (typeof id === 'string' && id !== '') return id;
  const headers = { ...(message.properties.headers ?? {}) } as Record<string, unknown>;
  for (const key of [...DEATH_HEADERS, MOVED_RUN_HEADER]) delete headers[key];
  const hash = createHash('sha256').update(message.content);
  hash.update(JSON.stringify(Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : 1))));
  return `sha256:${hash.digest('hex').slice(0, 24)}`;
}

function headerText(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

export function matches(message: GetMessage, match: MoveRequest['match']): boolean {
  if (!match) return true;
  if (match.header) {
    const value = message.properties.headers?.[match.header.name];
    if (value === undefined || headerText(value) !== match.header.value) return false;
  }
  if (match.body !== undefined && !message.content.toString('utf8').includes(match.body)) return false;
  return true;
}

/** The properties to republish with: all of them, `x-death` dropped on request, the run id added. */
export function republishOptions(
  message: GetMessage,
  request: MoveRequest,
  username: string,
): Options.Publish {
  const p = message.properties;
  const headers = { ...(p.headers ?? {}) } as Record<string, unknown>;
  if (request.resetDeath) for (const key of DEATH_HEADERS) delete headers[key];
  headers[MOVED_RUN_HEADER] = request.runId;
  const options: Options.Publish = { headers, mandatory: true };
  if (p.contentType !== undefined) options.contentType = p.contentType;
  if (p.contentEncoding !== undefined) options.contentEncoding = p.contentEncoding;
  if (p.deliveryMode !== undefined) options.deliveryMode = p.deliveryMode;
  if (p.priority !== undefined) options.priority = p.priority;
  if (p.correlationId !== undefined) options.correlationId = p.correlationId;
  if (p.replyTo !== undefined) options.replyTo = p.replyTo;
  if (p.expiration !== undefined) options.expiration = p.expiration;
  if (p.messageId !== undefined) options.messageId = p.messageId;
  if (p.timestamp !== undefined) options.timestamp = p.timestamp;
  if (p.type !== undefined) options.type = p.type;
  if (p.appId !== undefined) options.appId = p.appId;
  // RabbitMQ refuses a user-id that is not the publishing user's; such a message keeps it in the audit only.
  if (p.userId !== undefined && p.userId === username) options.userId = p.userId;
  return options;
}

function publishConfirmed(
  channel: ConfirmChannel,
  exchange: string,
  key: string,
  message: GetMessage,
  options: Options.Publish,
): Promise<void> {
  return new Promise((resolve, reject) => {
    channel.publish(exchange, key, message.content, options, (error: unknown) =>
      error ? reject(new Error('the broker nacked the republished message')) : resolve(),
    );
  });
}

async function checkTargets(input: MoveInput): Promise<{ depth: number }> {
  const { connection, request, target } = input;
  const where = `vhost '${target.vhost}' of ${target.display}`;
  const channel = await openChannel(connection);
  try {
    const ok = await channel.checkQueue(request.from).catch((error: unknown) => {
      throw isNotFound(error)
        ? usageError(`queue '${request.from}' does not exist in ${where}`, 'Check --from.')
        : error;
    });
    if (request.toExchange !== undefined) {
      if (request.toExchange !== '') {
        const check = await openChannel(connection);
        await check.checkExchange(request.toExchange).catch((error: unknown) => {
          throw isNotFound(error)
            ? usageError(
                `exchange '${request.toExchange}' does not exist in ${where}`,
                'Check --to-exchange.',
              )
            : error;
        });
        await closeQuietly(check);
      }
    } else if (request.to !== undefined) {
      const check = await openChannel(connection);
      await check.checkQueue(request.to).catch((error: unknown) => {
        throw isNotFound(error)
          ? usageError(`queue '${request.to}' does not exist in ${where}`, 'Declare it first, or check --to.')
          : error;
      });
      await closeQuietly(check);
    }
    return { depth: ok.messageCount };
  } finally {
    await closeQuietly(channel);
  }
}

/**
 * Republishes ready messages of `from` to a queue (through the default exchange) or an exchange,
 * one batch at a time: publish with confirms → the batch's audit rows (`onBatch`) → ack the
 * sources. A crash before the acks leaves the sources in place (the broker requeues them) and the
 * copies already confirmed at the target: duplicates, never a loss, and an audit row for each.
 * One pass over the queue's depth at the start: messages that do not match, and every message in a
 * dry run, are held unacked until the pass ends and then nacked back (requeue, in their order).
 */
export async function moveRabbit(input: MoveInput): Promise<MoveResult & { alreadyMoved: number | null }> {
  const { request, connection } = input;
  if (request.what !== 'ready' && request.what !== 'all')
    throw usageError(
      `RabbitMQ has only ready messages: --what ${request.what} does not apply`,
      'Leave --what out.',
    );
  if (request.to === undefined && request.toExchange === undefined)
    throw usageError('queues move needs --to QUEUE or --to-exchange EXCHANGE --routing-key KEY');
  if (request.toExchange === undefined && request.to === request.from)
    throw usageError(`--to is --from ('${request.from}'): nothing to move`);
  const exchange = request.toExchange ?? '';
  const routingKey = request.toExchange !== undefined ? (request.routingKey ?? '') : (request.to as string);
  const to =
    request.toExchange !== undefined ? `exchange '${exchange}' key '${routingKey}'` : (request.to as string);
  const { depth } = await checkTargets(input);
  const limit = request.limit ?? Number.POSITIVE_INFINITY;
  const source = await openChannel(connection);
  const publisher = request.dryRun ? undefined : await openConfirmChannel(connection);
  let returned = 0;
  publisher?.on('return', () => returned++);
  const held: GetMessage[] = [];
  let taken = 0;
  let matched = 0;
  let moved = 0;
  let alreadyMoved: number | null = request.movedBefore ? 0 : null;
  const pacer = new Pacer(request.ratePerSecond, request.clock);
  try {
    let drained = false;
    while (!drained && taken < depth && matched < limit && !request.shouldStop()) {
      const batch: GetMessage[] = [];
      while (batch.length < request.batch && taken < depth && matched + batch.length < limit) {
        const message = await source.get(request.from, { noAck: false });
        if (!message) {
          // Fewer messages than at the start (a consumer took some): the pass is over.
          drained = true;
          break;
        }
        taken++;
        if (matches(message, request.match)) batch.push(message);
        else held.push(message);
      }
      if (batch.length === 0) {
        if (drained || taken >= depth) break;
        continue;
      }
      matched += batch.length;
      if (!publisher) {
        held.push(...batch);
        continue;
      }
      const jobs: MovedJob[] = batch.map((m) => ({
        jobId: messageJobId(m),
        from: request.from,
        to,
        payload: m.content.toString('utf8'),
      }));
      if (request.movedBefore) {
        const seen = await request.movedBefore(jobs.map((j) => j.jobId));
        alreadyMoved = (alreadyMoved ?? 0) + jobs.filter((j) => seen.has(j.jobId)).length;
      }
      const before = returned;
      try {
        await Promise.all(
          batch.map((m) =>
            publishConfirmed(
              publisher,
              exchange,
              routingKey,
              m,
              republishOptions(m, request, input.target.username),
            ),
          ),
        );
      } catch (error) {
        for (const m of batch) source.nack(m, false, true);
        throw new TaskreconError(`republishing to ${to} failed: ${(error as Error).message}`, {
          code: 'BROKER',
          hint: 'The sources of this batch were put back; copies confirmed before the failure may be duplicates.',
        });
      }
      if (returned > before) {
        for (const m of batch) source.nack(m, false, true);
        throw new TaskreconError(`${to} routed ${returned - before} message(s) to no queue`, {
          code: 'BROKER',
          hint: 'Bind a queue to the exchange with that routing key; the sources were put back and nothing of this batch was acked.',
        });
      }
      await request.onBatch(jobs);
      for (const m of batch) source.ack(m);
      moved += batch.length;
      await pacer.wait(moved);
    }
  } finally {
    for (const m of held) source.nack(m, false, true);
    // Closing the channels flushes the acks and nacks before the connection goes.
    await closeQuietly(publisher);
    await closeQuietly(source);
  }
  return {
    broker: input.broker,
    from: request.from,
    to,
    what: 'ready',
    dryRun: request.dryRun,
    matched,
    moved,
    runId: request.runId,
    alreadyMoved,
  };
}

import type { Message, Options } from 'amqplib';
import { createHash } from 'node:crypto';
import type { MoveRequest } from '../types.js';

/** What a moved message is called, which messages a move takes, and how it is republished. */

/** The write-ahead intents of RabbitMQ moves are of this kind (`taskrecon_intent.kind`). */
export const MOVE_INTENT_KIND = 'rabbitmq-move';

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

/**
 * What a quorum queue writes on each delivery: how often the message came back to that queue. It
 * belongs to the source queue, not to the message: a copy never carries it (a classic target would
 * keep a stale count, and a consumer reading it would give up too early), and a message's id does
 * not change with it.
 */
const DELIVERY_COUNT_HEADER = 'x-delivery-count';

/** The AMQP message-id, else a fingerprint of the body and the headers RabbitMQ did not add. */
export function messageJobId(message: Message): string {
  const id = message.properties.messageId;
  if (typeof id === 'string' && id !== '') return id;
  const headers = { ...(message.properties.headers ?? {}) } as Record<string, unknown>;
  for (const key of [...DEATH_HEADERS, MOVED_RUN_HEADER, DELIVERY_COUNT_HEADER]) delete headers[key];
  const hash = createHash('sha256').update(message.content);
  hash.update(JSON.stringify(Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : 1))));
  return `sha256:${hash.digest('hex').slice(0, 24)}`;
}

/**
 * The body as the audit keeps it: the SHA-1 and size of its bytes as the broker holds them, read
 * from the buffer (no text copy of the body; a body that is not UTF-8 is digested as it is).
 */
export function bodyDigest(content: Buffer): { sha1: string; bytes: number } {
  return { sha1: createHash('sha1').update(content).digest('hex'), bytes: content.length };
}

function headerText(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

export function matches(message: Message, match: MoveRequest['match']): boolean {
  if (!match) return true;
  if (match.header) {
    const value = message.properties.headers?.[match.header.name];
    if (value === undefined || headerText(value) !== match.header.value) return false;
  }
  if (match.body !== undefined && !message.content.toString('utf8').includes(match.body)) return false;
  return true;
}

/**
 * The properties to republish with: all of them but the source queue's delivery count, `x-death`
 * dropped on request, the run id added.
 */
export function republishOptions(message: Message, request: MoveRequest, username: string): Options.Publish {
  const p = message.properties;
  const headers = { ...(p.headers ?? {}) } as Record<string, unknown>;
  delete headers[DELIVERY_COUNT_HEADER];
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

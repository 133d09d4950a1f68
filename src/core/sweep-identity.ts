import { createHash } from 'node:crypto';

/**
 * A job's identity across retries, so the sweep can count how often it has retried one job even
 * though every failure of a re-pushed job is a new failed row with a new id:
 * - Laravel: the payload's `uuid` (queue:retry keeps it; the failed_jobs `uuid` column holds it too);
 * - think-queue: the payload's `id` where the connector set one (the Redis connector does);
 * - otherwise a fingerprint of the job class and its data (think-queue's database connector,
 *   payloads without either): `fp:` + the first 40 hex digits of SHA-256 over the job name and
 *   the data as JSON, which queue:retry leaves unchanged (only `attempts` is reset);
 * - task tables: the event id (the row keeps it, and its id, through failed → pending → failed),
 *   else `row:` + the task id.
 * At most 64 characters: it is stored in the audit's `event_id` column.
 */
export type IdentityKind = 'laravel' | 'thinkphp' | 'task';

export interface IdentityInput {
  kind: IdentityKind;
  /** The stored payload text (failed jobs). */
  payload?: string | null;
  /** The task's event id (task tables), or the failed row's uuid column (Laravel). */
  eventId?: string | null;
  rowId: string;
}

export const IDENTITY_MAX = 64;

function parse(text: string | null | undefined): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function short(value: unknown): string | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const text = String(value);
  return text !== '' && text.length <= IDENTITY_MAX ? text : undefined;
}

/** The fingerprint of a job name and its data. */
export function fingerprint(job: string, data: unknown): string {
  const digest = createHash('sha256')
    .update(job)
    .update('\n')
    .update(JSON.stringify(data ?? null))
    .digest('hex');
  return `fp:${digest.slice(0, 40)}`;
}

export function jobIdentity(input: IdentityInput): string {
  if (input.kind === 'task') return short(input.eventId) ?? `row:${input.rowId}`.slice(0, IDENTITY_MAX);
  const payload = parse(input.payload);
  if (input.kind === 'laravel') {
    const uuid = short(payload?.uuid) ?? short(input.eventId);
    if (uuid) return uuid;
    const job = String(payload?.displayName ?? payload?.job ?? '');
    return fingerprint(job, (payload?.data as Record<string, unknown> | undefined)?.command ?? payload?.data);
  }
  const id = short(payload?.id);
  if (id) return id;
  if (!payload) return fingerprint('', input.payload ?? '');
  return fingerprint(String(payload.job ?? ''), payload.data);
}

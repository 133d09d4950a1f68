import type { TaskId } from '../core/task.js';

/** Values read from a row, as the task object holds them. */

export function toId(value: unknown): TaskId {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint')
    return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  const text = String(value);
  return /^\d+$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text;
}

export function toInt(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null;
  const n = Number(value);
  return Number.isFinite(n) ? Math.trunc(n) : null;
}

/** Text from a column that may hold binary: invalid UTF-8 becomes U+FFFD, never a crash. */
export function toText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return String(value);
}

/** Epoch seconds (number or numeric string) to ISO-8601 UTC; null and garbage to null. */
export function toIso(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const seconds = Number(value);
  if (!Number.isFinite(seconds)) return null;
  return new Date(Math.round(seconds * 1000)).toISOString().replace('.000Z', 'Z');
}

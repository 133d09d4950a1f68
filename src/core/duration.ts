import { usageError } from './errors.js';

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)$/;

/**
 * Parses `100ms`, `3s`, `10m`, `2h`, `1d` (a bare number is seconds) into milliseconds.
 * `what` names the flag or key in the error, so the user knows which value to fix.
 */
export function parseDuration(input: string | number, what: string): number {
  if (typeof input === 'number') {
    if (!Number.isFinite(input) || input < 0)
      throw usageError(`${what}: ${input} is not a duration`, DURATION_HINT);
    return input * 1000;
  }
  const text = input.trim();
  if (/^\d+(?:\.\d+)?$/.test(text)) return Number(text) * 1000;
  const match = DURATION.exec(text);
  if (!match) throw usageError(`${what}: '${input}' is not a duration`, DURATION_HINT);
  return Math.round(Number(match[1]) * (UNIT_MS[match[2] as string] as number));
}

const DURATION_HINT = 'Write a number with a unit: 100ms, 30s, 10m, 2h or 1d.';

/** Formats a number of seconds the way an operator reads it: 45s, 12m, 3h10m, 2d4h. */
export function formatSeconds(seconds: number | null): string {
  if (seconds === null) return 'n/a';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : ''}`;
  if (s < 86_400)
    return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? `${Math.floor((s % 3600) / 60)}m` : ''}`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600) ? `${Math.floor((s % 86_400) / 3600)}h` : ''}`;
}

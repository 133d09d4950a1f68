import type { DispatchResult } from './dispatch-result.js';

/**
 * Error classes (the job-retries design): what is worth retrying. Pure: "now" is passed in where a
 * Retry-After date needs it.
 *
 * Retryable: network errors (refused, reset, unreachable, DNS try-again), timeouts, HTTP 408, 425,
 * 429 and 5xx, lock-wait timeouts and deadlocks. Permanent: every other 4xx, a payload that cannot
 * be sent, an unexpected answer. Permanent failures go straight to `failed`.
 */

/** Node/undici error codes of a transient network or timeout condition. */
const RETRYABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
  'EAGAIN',
  'EMFILE',
  'ENFILE',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  // MySQL/MariaDB: lock wait timeout (1205), deadlock (1213), server gone/lost.
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  'PROTOCOL_CONNECTION_LOST',
]);

const RETRYABLE_ERRNOS = new Set([1205, 1213]);

/** Text of a handler's error output that names a transient database condition. */
const RETRYABLE_TEXT =
  /deadlock found|lock wait timeout|try restarting transaction|SQLSTATE\[40001\]|SQLSTATE\[HY000\]: General error: 1205|server has gone away|connection timed out|connection refused/i;

/** An HTTP status: success, retryable or permanent. */
export function classifyHttpStatus(status: number): DispatchResult['outcome'] {
  if (status >= 200 && status < 300) return 'success';
  if (status === 408 || status === 425 || status === 429 || (status >= 500 && status <= 599))
    return 'retryable';
  return 'permanent';
}

/** A thrown error (network, timeout, database): retryable or permanent. */
export function classifyError(error: unknown): 'retryable' | 'permanent' {
  const e = error as { code?: unknown; errno?: unknown; name?: unknown; cause?: unknown; message?: unknown };
  if (e === null || typeof e !== 'object') return 'permanent';
  if (typeof e.code === 'string' && RETRYABLE_CODES.has(e.code)) return 'retryable';
  if (typeof e.errno === 'number' && RETRYABLE_ERRNOS.has(e.errno)) return 'retryable';
  if (
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    e.name === 'ConnectTimeoutError' ||
    e.name === 'HeadersTimeoutError'
  ) {
    return 'retryable';
  }
  if (typeof e.message === 'string' && RETRYABLE_TEXT.test(e.message)) return 'retryable';
  if (e.cause && e.cause !== error) return classifyError(e.cause);
  return 'permanent';
}

/** A command's exit: 0 success, 75 (EX_TEMPFAIL) retryable; else permanent unless its output names a lock wait or deadlock. */
export function classifyExit(code: number | null, output = ''): DispatchResult['outcome'] {
  if (code === 0) return 'success';
  if (code === EXIT_TEMPFAIL) return 'retryable';
  return RETRYABLE_TEXT.test(output) ? 'retryable' : 'permanent';
}

/** sysexits.h EX_TEMPFAIL: "temporary failure, the user is invited to retry". */
export const EXIT_TEMPFAIL = 75;

/** Reads a Retry-After header (seconds, or an HTTP date) into milliseconds from `nowMs`; undefined when absent or garbage. */
export function parseRetryAfter(header: string | string[] | undefined, nowMs: number): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** A one-line description of an error for last_error: its code, then its message (and its cause's). */
export function describeFailure(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
  const parts: string[] = [];
  const message = typeof e?.message === 'string' ? e.message : String(error);
  // Node puts the code in the message of socket errors already ("connect ECONNREFUSED …").
  if (typeof e?.code === 'string' && !message.includes(e.code)) parts.push(e.code);
  parts.push(message);
  if (e?.cause && typeof e.cause.message === 'string' && e.cause.message !== e.message) {
    parts.push(`(${typeof e.cause.code === 'string' ? `${e.cause.code} ` : ''}${e.cause.message})`);
  }
  return parts.join(': ').replace(/\s+/g, ' ').trim();
}

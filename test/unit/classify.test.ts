import { describe, expect, it } from 'vitest';
import {
  classifyError,
  classifyExit,
  classifyHttpStatus,
  describeFailure,
  parseRetryAfter,
} from '../../src/core/classify.js';
import { truncateError } from '../../src/db/sql/transitions.js';

describe('HTTP status classes', () => {
  it('2xx succeed; 408, 425, 429 and 5xx are retryable; other 4xx and 3xx are permanent', () => {
    expect([200, 201, 204, 299].map(classifyHttpStatus)).toEqual([
      'success',
      'success',
      'success',
      'success',
    ]);
    expect([408, 425, 429, 500, 502, 503, 504, 599].every((s) => classifyHttpStatus(s) === 'retryable')).toBe(
      true,
    );
    expect(
      [400, 401, 403, 404, 409, 410, 422, 301, 302, 199, 600].every(
        (s) => classifyHttpStatus(s) === 'permanent',
      ),
    ).toBe(true);
  });
});

describe('thrown errors', () => {
  it('network errors and timeouts are retryable', () => {
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'EAI_AGAIN',
      'UND_ERR_HEADERS_TIMEOUT',
      'UND_ERR_CONNECT_TIMEOUT',
      'UND_ERR_SOCKET',
    ]) {
      expect(classifyError(Object.assign(new Error('x'), { code })), code).toBe('retryable');
    }
    expect(
      classifyError(
        Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' }),
      ),
    ).toBe('retryable');
    // undici wraps the socket error as the cause of a TypeError('fetch failed').
    expect(
      classifyError(
        new TypeError('fetch failed', {
          cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
        }),
      ),
    ).toBe('retryable');
  });

  it('lock-wait timeouts and deadlocks are retryable, by code, errno or message', () => {
    expect(
      classifyError(Object.assign(new Error('Lock wait timeout exceeded'), { code: 'ER_LOCK_WAIT_TIMEOUT' })),
    ).toBe('retryable');
    expect(classifyError(Object.assign(new Error('?'), { errno: 1213 }))).toBe('retryable');
    expect(
      classifyError(
        new Error('SQLSTATE[40001]: Serialization failure: 1213 Deadlock found when trying to get lock'),
      ),
    ).toBe('retryable');
  });

  it('anything else is permanent (a bad payload, a programming error)', () => {
    expect(classifyError(new SyntaxError('Unexpected token } in JSON'))).toBe('permanent');
    expect(classifyError(Object.assign(new Error('duplicate'), { code: 'ER_DUP_ENTRY' }))).toBe('permanent');
    expect(classifyError('boom')).toBe('permanent');
  });

  it('describes an error with its code and cause on one line', () => {
    const e = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
    });
    expect(describeFailure(e)).toBe('fetch failed: (ECONNREFUSED connect ECONNREFUSED 127.0.0.1:9)');
    expect(
      describeFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' })),
    ).toBe('connect ECONNREFUSED 127.0.0.1:9');
    expect(
      describeFailure(Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' })),
    ).toBe('UND_ERR_HEADERS_TIMEOUT: Headers Timeout Error');
  });
});

describe('command exits', () => {
  it('0 succeeds, 75 retries, others are permanent unless the output names a lock wait or deadlock', () => {
    expect(classifyExit(0)).toBe('success');
    expect(classifyExit(75)).toBe('retryable');
    expect(classifyExit(1, 'Invalid argument')).toBe('permanent');
    expect(
      classifyExit(255, 'PDOException: SQLSTATE[HY000]: General error: 1205 Lock wait timeout exceeded'),
    ).toBe('retryable');
    expect(classifyExit(null)).toBe('permanent');
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-29T10:00:00Z');
  it('reads seconds and HTTP dates; ignores garbage', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Sun, 29 Nov 2026 10:01:30 GMT', now)).toBe(90_000);
    expect(parseRetryAfter('Sun, 29 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('last_error truncation', () => {
  it('cuts to the column length in characters, not bytes or UTF-16 units', () => {
    const text = '超时'.repeat(400) + '😀'.repeat(10);
    const cut = truncateError(text, 512);
    expect(Array.from(cut)).toHaveLength(512);
    expect(cut.endsWith('…')).toBe(true);
    expect(truncateError('short', 512)).toBe('short');
    const emoji = truncateError('😀'.repeat(600), 512);
    expect(Array.from(emoji)).toHaveLength(512);
    expect(emoji).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });
});

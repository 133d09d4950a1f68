import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { ConsoleEnv } from '../../src/console/env.js';
import { csrfGuard, CSRF_FIELD } from '../../src/console/security/csrf.js';

const TOKEN = 'the-session-token';

function app() {
  const a = new Hono<ConsoleEnv>();
  a.use('*', async (c, next) => {
    c.set('csrf', TOKEN);
    await next();
  });
  a.use('*', csrfGuard());
  a.post('/act', async (c) => c.text(`done ${String((await c.req.parseBody()).reason)}`));
  return a;
}

function form(fields: Record<string, string>) {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  };
}

describe('console CSRF token', () => {
  it('accepts a form carrying the session token, and the handler still reads the body', async () => {
    const res = await app().request('/act', form({ [CSRF_FIELD]: TOKEN, reason: 'fixed' }));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('done fixed');
  });

  it('refuses no token, a stale one and a prefix of the right one', async () => {
    for (const sent of [undefined, 'an-old-session-token', TOKEN.slice(0, 5), '']) {
      const fields: Record<string, string> = { reason: 'x' };
      if (sent !== undefined) fields[CSRF_FIELD] = sent;
      const res = await app().request('/act', form(fields));
      expect(res.status, String(sent)).toBe(403);
    }
  });

  it('refuses a body that is not a form (JSON, text)', async () => {
    const res = await app().request('/act', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ [CSRF_FIELD]: TOKEN }),
    });
    expect(res.status).toBe(403);
  });
});

import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { sameOriginGuard } from '../../src/console/security/origin.js';

const ORIGIN = 'http://127.0.0.1:8731';

function app() {
  const a = new Hono();
  a.use(
    '*',
    sameOriginGuard(() => ORIGIN),
  );
  a.get('/', (c) => c.text('page'));
  a.post('/act', (c) => c.text('done'));
  return a;
}

describe('console Origin / Sec-Fetch-Site check', () => {
  it('lets a POST from its own page through', async () => {
    const res = await app().request('/act', {
      method: 'POST',
      headers: { origin: ORIGIN, 'sec-fetch-site': 'same-origin' },
    });
    expect(res.status).toBe(200);
  });

  it('lets a form post through that sends Origin: null (no-referrer) from its own page', async () => {
    const res = await app().request('/act', {
      method: 'POST',
      headers: { origin: 'null', 'sec-fetch-site': 'same-origin' },
    });
    expect(res.status).toBe(200);
  });

  it('refuses a foreign Origin, another loopback port, and no Origin at all', async () => {
    for (const origin of ['http://evil.example', 'http://127.0.0.1:9999', 'null', undefined]) {
      const headers: Record<string, string> = origin ? { origin } : {};
      const res = await app().request('/act', { method: 'POST', headers });
      expect(res.status, String(origin)).toBe(403);
    }
  });

  it('refuses a same-site (other port) or cross-site fetch even with a forged Origin', async () => {
    for (const site of ['same-site', 'cross-site', 'none']) {
      const res = await app().request('/act', {
        method: 'POST',
        headers: { origin: ORIGIN, 'sec-fetch-site': site },
      });
      expect(res.status, site).toBe(403);
    }
  });

  it('does not get in the way of reading pages', async () => {
    const res = await app().request('/', { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(res.status).toBe(200);
  });
});

import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY, securityHeaders } from '../../src/console/security/headers.js';

function app() {
  const a = new Hono();
  a.use('*', securityHeaders());
  a.get('/', (c) => c.html('<p>ok</p>'));
  a.get('/refused', (c) => c.text('no', 403));
  a.get('/boom', () => {
    throw new Error('boom');
  });
  a.onError((_e, c) => c.text('error page', 500));
  return a;
}

describe('console security headers', () => {
  it('sets a strict CSP without inline script, and the other headers, on a page', async () => {
    const res = await app().request('/');
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "object-src 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'self'",
    ])
      expect(csp).toContain(directive);
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('sets them on refusals and error pages too', async () => {
    for (const path of ['/refused', '/boom', '/missing']) {
      const res = await app().request(path);
      expect(res.headers.get('content-security-policy'), path).toBe(CONTENT_SECURITY_POLICY);
    }
  });
});

import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { readOnlyGuard } from '../../src/console/security/read-only.js';

describe('console --read-only', () => {
  const a = new Hono();
  a.use('*', readOnlyGuard());
  let changed = 0;
  a.get('/', (c) => c.text('page'));
  a.all('/change', (c) => {
    changed++;
    return c.text('changed');
  });

  it('refuses every method that could change something, before the handler runs', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await a.request('/change', { method });
      expect(res.status, method).toBe(403);
    }
    expect(changed).toBe(0);
  });

  it('still serves pages', async () => {
    expect((await a.request('/')).status).toBe(200);
    expect((await a.request('/change', { method: 'HEAD' })).status).toBe(200);
  });
});

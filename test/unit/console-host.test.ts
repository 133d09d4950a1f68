import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { hostGuard } from '../../src/console/security/host.js';

function app(port: { value: number }) {
  const a = new Hono();
  a.use(
    '*',
    hostGuard(() => [`127.0.0.1:${port.value}`]),
  );
  a.get('/', (c) => c.text('data'));
  return a;
}

describe('console Host check (DNS rebinding)', () => {
  it('answers the exact loopback address and port it serves', async () => {
    const res = await app({ value: 8731 }).request('/', { headers: { host: '127.0.0.1:8731' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('data');
  });

  it('refuses a rebound name, localhost, another port and a missing Host', async () => {
    const a = app({ value: 8731 });
    for (const host of ['evil.example:8731', 'localhost:8731', '127.0.0.1:8732', '127.0.0.1', '']) {
      const res = await a.request('/', { headers: { host } });
      expect(res.status, host).toBe(421);
      expect(await res.text()).not.toContain('data');
    }
  });

  it('reads the port per request (port 0 is known only once listening)', async () => {
    const port = { value: 0 };
    const a = app(port);
    port.value = 40123;
    expect((await a.request('/', { headers: { host: '127.0.0.1:40123' } })).status).toBe(200);
  });
});

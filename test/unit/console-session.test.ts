import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { ConsoleEnv } from '../../src/console/env.js';
import { MINTED_LINK_MS, Sessions, sessionGuard } from '../../src/console/security/session.js';

function app() {
  const sessions = new Sessions();
  const a = new Hono<ConsoleEnv>();
  a.use(
    '*',
    sessionGuard(sessions, () => 'tr_session'),
  );
  a.get('/', (c) => c.text(`data csrf=${c.get('csrf')}`));
  a.get('/tasks', (c) => c.text('tasks'));
  a.get('/static/console.css', (c) => c.text('css'));
  return { a, token: sessions.startToken as string };
}

function cookieOf(res: Response): string {
  return (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
}

describe('console session', () => {
  it('shows no data without a session', async () => {
    const { a } = app();
    const res = await a.request('/');
    expect(res.status).toBe(401);
    expect(await res.text()).not.toContain('data');
  });

  it('swaps the one-time token for an HttpOnly SameSite=Strict cookie and drops it from the URL', async () => {
    const { a, token } = app();
    const res = await a.request(`/tasks?list=failed&token=${token}`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/tasks?list=failed');
    const setCookie = res.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    const page = await a.request('/', { headers: { cookie: cookieOf(res) } });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/^data csrf=\S{20,}$/);
  });

  it('takes the token once: a copied URL opens nothing afterwards', async () => {
    const { a, token } = app();
    expect((await a.request(`/?token=${token}`)).status).toBe(303);
    const again = await a.request(`/?token=${token}`);
    expect(again.status).toBe(403);
    expect(again.headers.get('set-cookie')).toBeNull();
  });

  it('lets the browser that spent the token open the URL again (it is signed in already)', async () => {
    const { a, token } = app();
    const first = await a.request(`/?token=${token}`);
    const again = await a.request(`/tasks?token=${token}`, { headers: { cookie: cookieOf(first) } });
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe('/tasks');
    expect(again.headers.get('set-cookie')).toBeNull();
  });

  it('refuses a wrong token and a made-up cookie', async () => {
    const { a, token } = app();
    expect((await a.request(`/?token=${token}x`)).status).toBe(403);
    expect((await a.request('/', { headers: { cookie: 'tr_session=guess' } })).status).toBe(401);
  });

  it('serves the static assets without a session (they hold no data)', async () => {
    const { a } = app();
    expect((await a.request('/static/console.css')).status).toBe(200);
  });
});

describe('minted links (console --link)', () => {
  function minting(now: { ms: number }) {
    const sessions = new Sessions(() => now.ms);
    const a = new Hono<ConsoleEnv>();
    a.use(
      '*',
      sessionGuard(sessions, () => 'tr_session'),
    );
    a.get('/', (c) => c.text('data'));
    return { a, sessions };
  }

  it('signs one more browser in while the first stays signed in, once per minted token', async () => {
    const now = { ms: 1_000_000 };
    const { a, sessions } = minting(now);
    const first = cookieOf(await a.request(`/?token=${sessions.startToken}`));
    const minted = sessions.mint();
    const second = await a.request(`/?token=${minted}`);
    expect(second.status).toBe(303);
    expect((await a.request('/', { headers: { cookie: cookieOf(second) } })).status).toBe(200);
    expect((await a.request('/', { headers: { cookie: first } })).status).toBe(200);
    expect((await a.request(`/?token=${minted}`)).status).toBe(403);
  });

  it('a minted token stops working after ten minutes; the start-up token is not revived by minting', async () => {
    const now = { ms: 1_000_000 };
    const { a, sessions } = minting(now);
    const start = sessions.startToken as string;
    expect((await a.request(`/?token=${start}`)).status).toBe(303);
    const minted = sessions.mint();
    now.ms += MINTED_LINK_MS;
    const late = await a.request(`/?token=${minted}`);
    expect(late.status).toBe(403);
    expect(await late.text()).toContain('taskrecon console --link');
    expect((await a.request(`/?token=${start}`)).status).toBe(403);
    const fresh = sessions.mint();
    now.ms += MINTED_LINK_MS - 1;
    expect((await a.request(`/?token=${fresh}`)).status).toBe(303);
  });
});

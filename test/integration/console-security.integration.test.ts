import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { networkInterfaces, tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { runJson } from '../support/cli.js';
import { csrfOf, launchChromium, signIn, startConsoleCli, type ConsoleProcess } from '../support/console.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

/**
 * The console's security, end to end: the real CLI on a throw-away database of each engine,
 * Chromium as the victim's browser, and a second loopback server on another port serving the
 * attacker's page. One browser and one attacker for the file; a console and a database per engine.
 */

let browser: Browser;
let attacker: Server;
let attackerOrigin: string;
let attackPage = '';
const XSS_ERROR = `<img src=x onerror="window.__pwned='error'"><script>window.__pwned='error'</script>`;
/** The queue actions' state changes (Recover / Move: preview, then apply). */
const QUEUE_POSTS = ['/queues/preview', '/queues/apply'];
const XSS_PAYLOAD = JSON.stringify({ note: `</pre><script>window.__pwned='payload'</script><b>bold</b>` });

/** A page of another origin (another loopback port) that posts a retry to the console as soon as it loads. */
function attackHtml(target: string, csrf: string | undefined): string {
  return `<!doctype html><html><body><form id="f" method="post" action="${target}">
<input type="hidden" name="action" value="retry"><input type="hidden" name="reason" value="pwned">
${csrf ? `<input type="hidden" name="_csrf" value="${csrf}">` : ''}</form>
<script>document.getElementById('f').submit()</script></body></html>`;
}

function post(url: string, headers: Record<string, string>, body: Record<string, string>) {
  return fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(body).toString(),
  });
}

function rawGet(port: number, host: string, cookie: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host, cookie } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  browser = await launchChromium();
  attacker = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(attackPage);
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerOrigin = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => attacker?.close(resolve));
});

describe.each(TEST_ENGINES)('console security on %s', (engine) => {
  let db: EngineDb;
  let cwd: string;
  let main: ConsoleProcess;
  let victim: BrowserContext;
  let page: Page;
  let staleCsrf: string;
  // The Host check and the listening address belong to the HTTP server, whatever the database:
  // those two run on one engine only.
  const serverOnly = it.runIf(engine === TEST_ENGINES[0]);
  const rows = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => db.rows<T>(sql, params);

  async function insertFailed(bizId: string, error = 'HTTP 500', payload = '{"n":1}'): Promise<number> {
    const eventId = randomUUID();
    await db.run(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, last_error)
       VALUES ('sec', ?, ?, ?, 3, 8, ?)`,
      [bizId, eventId, payload, error],
    );
    const [row] = await rows<{ id: number }>('SELECT id FROM async_task WHERE event_id = ?', [eventId]);
    return Number(row?.id);
  }

  async function statusOf(id: number): Promise<number | undefined> {
    return (await rows<{ status: number }>('SELECT status FROM async_task WHERE id = ?', [id]))[0]?.status;
  }

  async function auditCount(id: number): Promise<number> {
    return Number(
      (
        await rows<{ n: number }>('SELECT COUNT(*) AS n FROM taskrecon_audit WHERE task_id = ?', [String(id)])
      )[0]?.n,
    );
  }

  beforeAll(async () => {
    db = await createEngineDb(engine, 'console_security');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-console-sec-'));
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${db.dsn}\n`);
    expect((await runJson(['init'], { cwd })).code).toBe(0);
    await insertFailed('order-visible-secret');
    // A token from an earlier run of the console: stale now.
    const earlier = await startConsoleCli(['--operator', 'old'], { cwd });
    const cookie = await signIn(earlier.url);
    staleCsrf = csrfOf(
      await (await fetch(`${earlier.origin}/tasks?list=failed`, { headers: { cookie } })).text(),
    );
    expect(await earlier.stop()).toBe(0);
    main = await startConsoleCli(['--operator', 'alice'], { cwd });
    victim = await browser.newContext();
    page = await victim.newPage();
    await page.goto(main.url);
  });

  afterAll(async () => {
    await victim?.close();
    await main?.stop();
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('shows no data without the token', async () => {
    const id = (
      await rows<{ id: number }>("SELECT id FROM async_task WHERE biz_id = 'order-visible-secret'")
    )[0]?.id;
    for (const path of ['/', '/tasks?list=failed', `/tasks/${id}`, '/audit']) {
      const res = await fetch(`${main.origin}${path}`, { redirect: 'manual' });
      expect(res.status, path).toBe(401);
      expect(await res.text()).not.toContain('order-visible-secret');
    }
    const stranger = await browser.newPage();
    await stranger.goto(`${main.origin}/tasks?list=failed`);
    expect(await stranger.content()).not.toContain('order-visible-secret');
    await stranger.close();
    // The control: signed in, the same page shows it.
    await page.goto(`${main.origin}/tasks?list=failed`);
    expect(await page.content()).toContain('order-visible-secret');
  });

  it('a cross-origin form post from another loopback port changes nothing, without a token, with a stale one, even with the right one', async () => {
    const target = await insertFailed('order-csrf-target');
    const rightCsrf = csrfOf(await page.content());
    for (const csrf of [undefined, staleCsrf, rightCsrf]) {
      attackPage = attackHtml(`${main.origin}/tasks/${target}/actions`, csrf);
      const answered = page.waitForResponse((r) => r.url().includes(`/tasks/${target}/actions`));
      await page.goto(`${attackerOrigin}/`);
      const res = await answered;
      expect(res.status(), String(csrf)).toBe(403);
    }
    expect(await statusOf(target)).toBe(3);
    expect(await auditCount(target)).toBe(0);
    // The queue actions' forms, posted from the attacker's page with the right token: refused alike.
    for (const path of QUEUE_POSTS) {
      attackPage = attackHtml(`${main.origin}${path}`, rightCsrf);
      const answered = page.waitForResponse((r) => r.url().endsWith(path));
      await page.goto(`${attackerOrigin}/`);
      expect((await answered).status(), path).toBe(403);
    }
  });

  it('a POST with a foreign Origin changes nothing; the same POST from the console itself does', async () => {
    const cookie = await victim
      .cookies(main.origin)
      .then((cs) => cs.map((c) => `${c.name}=${c.value}`).join('; '));
    await page.goto(`${main.origin}/tasks?list=failed`);
    const csrf = csrfOf(await page.content());
    const target = await insertFailed('order-origin-target');
    for (const origin of ['http://evil.example', attackerOrigin]) {
      const res = await post(
        `${main.origin}/tasks/${target}/actions`,
        { cookie, origin },
        { action: 'retry', reason: 'pwned', _csrf: csrf },
      );
      expect(res.status, origin).toBe(403);
      for (const path of QUEUE_POSTS) {
        const queued = await post(
          `${main.origin}${path}`,
          { cookie, origin },
          { kind: 'recover', broker: 'jobs', queue: 'default', reason: 'pwned', _csrf: csrf },
        );
        expect(queued.status, `${path} ${origin}`).toBe(403);
      }
    }
    expect(await statusOf(target)).toBe(3);
    expect(await auditCount(target)).toBe(0);
    const ok = await post(
      `${main.origin}/tasks/${target}/actions`,
      { cookie, origin: main.origin },
      { action: 'retry', reason: 'control', _csrf: csrf },
    );
    expect(ok.status).toBe(303);
    expect(await statusOf(target)).toBe(0);
    expect(await auditCount(target)).toBe(1);
  });

  serverOnly('refuses a foreign Host (DNS rebinding), even with the session cookie', async () => {
    const cookie = await victim
      .cookies(main.origin)
      .then((cs) => cs.map((c) => `${c.name}=${c.value}`).join('; '));
    const foreign = await rawGet(main.port, `evil.example:${main.port}`, cookie);
    expect(foreign.status).toBe(421);
    expect(foreign.body).not.toContain('Overview');
    const own = await rawGet(main.port, `127.0.0.1:${main.port}`, cookie);
    expect(own.status).toBe(200);
  });

  it('renders a task whose error and payload hold HTML and script as text: no script runs', async () => {
    const id = await insertFailed('order-xss', XSS_ERROR, XSS_PAYLOAD);
    await page.goto(`${main.origin}/tasks/${id}`);
    expect(
      await page.evaluate(() => (globalThis as unknown as { __pwned?: string }).__pwned),
    ).toBeUndefined();
    expect(await page.locator('#last-error').textContent()).toBe(XSS_ERROR);
    expect(await page.locator('#payload').textContent()).toContain(
      `</pre><script>window.__pwned='payload'</script>`,
    );
    expect(await page.locator('b:text("bold")').count()).toBe(0);
    await page.goto(`${main.origin}/tasks?list=failed&error=onerror`);
    expect(await page.locator('td.error').first().textContent()).toContain('<img src=x');
    expect(
      await page.evaluate(() => (globalThis as unknown as { __pwned?: string }).__pwned),
    ).toBeUndefined();
  });

  it('an error page shows neither a stack nor the DSN', async () => {
    for (const path of ['/tasks/99999999', '/tasks/not-a-number']) {
      const res = await page.goto(`${main.origin}${path}`);
      const body = await page.content();
      expect(res?.status(), path).toBeGreaterThanOrEqual(400);
      expect(body).not.toContain(db.name);
      expect(body).not.toContain(db.dsn.slice(0, db.dsn.indexOf(':') + 1));
      expect(body).not.toMatch(/at \S+ \(.*:\d+:\d+\)/);
    }
  });

  serverOnly('listens on the loopback address only', async () => {
    const listening = execFileSync('ss', ['-Hltn', `sport = :${main.port}`], { encoding: 'utf8' }).trim();
    expect(listening.split('\n')).toHaveLength(1);
    expect(listening).toContain(`127.0.0.1:${main.port}`);
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal);
    if (external) {
      const refused = await new Promise<boolean>((resolve) => {
        const s = connect(main.port, external.address);
        s.once('connect', () => (s.destroy(), resolve(false)));
        s.once('error', () => resolve(true));
      });
      expect(refused).toBe(true);
    }
  });

  it('--read-only shows no action and refuses every POST', async () => {
    const target = await insertFailed('order-read-only');
    const ro = await startConsoleCli(['--read-only'], { cwd });
    try {
      const cookie = await signIn(ro.url);
      const detail = await (await fetch(`${ro.origin}/tasks/${target}`, { headers: { cookie } })).text();
      expect(detail).toContain('read-only');
      expect(detail).not.toContain('name="action"');
      for (const path of [`/tasks/${target}/actions`, '/bulk', ...QUEUE_POSTS]) {
        const res = await post(
          `${ro.origin}${path}`,
          { cookie, origin: ro.origin, 'sec-fetch-site': 'same-origin' },
          { action: 'retry', reason: 'ro', _csrf: 'x', list: 'failed' },
        );
        expect(res.status, path).toBe(403);
      }
      expect(await statusOf(target)).toBe(3);
      expect(await auditCount(target)).toBe(0);
    } finally {
      expect(await ro.stop()).toBe(0);
    }
  });
});

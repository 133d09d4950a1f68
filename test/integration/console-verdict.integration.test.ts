import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { runCli, runJson } from '../support/cli.js';
import { launchChromium, startConsoleCli, type ConsoleProcess } from '../support/console.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { dropPrefix, laravelBrokerYaml, openTestRedis } from '../support/redis.js';

/**
 * The console's verdict, its audit page and its fresh links in a real Chromium, on each engine:
 * the overview's OK / WARNING / CRITICAL against `report`'s exit code on three planted states, a
 * queue move made from the CLI on the audit page under the one operator of TASKRECON_OPERATOR, and
 * `console --link` signing a second browser in while the first stays signed in.
 */

const REDIS_DB = 15;
const REDIS_URL = `redis://127.0.0.1:6379/${REDIS_DB}`;
const RUN = randomBytes(3).toString('hex');
const OPERATOR = `carol-${RUN}`;
const SCREENSHOT = join(import.meta.dirname, '..', '..', 'docs', 'img', 'console-verdict.png');

let browser: Browser;
let redis: Redis;

beforeAll(async () => {
  browser = await launchChromium();
  redis = await openTestRedis(REDIS_DB);
});

afterAll(async () => {
  await browser?.close();
  if (redis) await dropPrefix(redis, `tr_verdict_${RUN}_`);
  redis?.disconnect();
});

describe.each(TEST_ENGINES)('console verdict, audit and links on %s', (engine) => {
  const prefix = `tr_verdict_${RUN}_${engine}_`;
  const env = { TASKRECON_OPERATOR: OPERATOR };
  let db: EngineDb;
  let cwd: string;
  /** A second config beside the first: the same database, and a Redis broker for the queue move. */
  let brokerCwd: string;
  let consoleProc: ConsoleProcess;
  let first: BrowserContext;
  let page: Page;

  async function insert(status: number, createdAgo: number, updatedAgo: number, error: string | null) {
    await db.run(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
       VALUES ('verdict', ?, ?, '{}', ?, 1, ${db.at(3600)}, ?, ${db.at(-createdAgo)}, ${db.at(-updatedAgo)})`,
      [`b-${randomUUID()}`, randomUUID(), status, error],
    );
  }

  /** The overview's verdict, read as a person reads it. */
  async function verdictShown(): Promise<string> {
    await page.goto(`${consoleProc.origin}/`);
    return ((await page.locator('#verdict-status').textContent()) ?? '').trim();
  }

  beforeAll(async () => {
    db = await createEngineDb(engine, 'console_verdict');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-console-verdict-'));
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${db.dsn}\n`);
    expect((await runJson(['init'], { cwd })).code).toBe(0);
    brokerCwd = join(cwd, 'brokers');
    mkdirSync(brokerCwd);
    writeFileSync(
      join(brokerCwd, 'taskrecon.config.yaml'),
      [`db: ${db.dsn}`, 'brokers:', ...laravelBrokerYaml('app', REDIS_URL, prefix, ['old', 'new']), ''].join(
        '\n',
      ),
    );
    consoleProc = await startConsoleCli([], { cwd, env });
    first = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await first.newPage();
    page.on('dialog', (d) => void d.accept());
    await page.goto(consoleProc.url);
  });

  afterAll(async () => {
    await first?.close();
    expect(await consoleProc?.stop()).toBe(0);
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it("shows the verdict `report` exits with, on three planted states, with the breached thresholds and an 'as of' time", async () => {
    const reportStatus = async () => (await runCli(['report'], { cwd, env })).code;
    // OK: nothing in the table.
    expect(await reportStatus()).toBe(0);
    expect(await verdictShown()).toBe('OK');
    await expect(page.locator('#verdict .breach').count()).resolves.toBe(0);
    await expect(page.locator('#verdict time#as-of').getAttribute('datetime')).resolves.toMatch(
      /^\d{4}-\d\d-\d\dT/,
    );
    // WARNING: a task whose lease expired two hours ago (stuck), nothing created in the window.
    await insert(1, 7200, 7200, null);
    expect(await reportStatus()).toBe(1);
    expect(await verdictShown()).toBe('WARNING');
    await expect(page.locator('#verdict .breach').allTextContents()).resolves.toEqual([
      expect.stringContaining('stuck'),
    ]);
    // CRITICAL: of four tasks created in the window, two failed (50% ≥ the 5% crit threshold).
    await insert(2, 60, 30, null);
    await insert(2, 60, 30, null);
    await insert(3, 60, 30, 'HTTP 503 from partner');
    await insert(3, 60, 30, 'HTTP 503 from partner');
    expect(await reportStatus()).toBe(2);
    expect(await verdictShown()).toBe('CRITICAL');
    const breaches = await page.locator('#verdict .breach').allTextContents();
    expect(breaches.join('\n')).toContain('failureRate 50% >= 5% (crit)');
    expect(breaches.join('\n')).toContain('stuck');
    // The charts show their current value and a time axis.
    await expect(page.locator('figure.chart .now').count()).resolves.toBeGreaterThan(0);
    await expect(page.locator('figure.chart .axis-time').count()).resolves.toBeGreaterThan(0);
    if (process.env.TASKRECON_SCREENSHOTS === '1' && engine === TEST_ENGINES[0]) {
      mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: false });
    }
  });

  it('auto-refresh is off by default and a toggle turns it on, without inline script (the CSP holds)', async () => {
    await page.goto(`${consoleProc.origin}/`);
    await expect(page.locator('meta[http-equiv="refresh"]').count()).resolves.toBe(0);
    await Promise.all([page.waitForURL(/refresh=/), page.click('#auto-refresh a')]);
    await expect(page.locator('meta[http-equiv="refresh"]').getAttribute('content')).resolves.toMatch(
      /^\d+$/,
    );
    await expect(page.locator('script:not([src])').count()).resolves.toBe(0);
    await Promise.all([page.waitForURL(`${consoleProc.origin}/`), page.click('#auto-refresh a')]);
    await expect(page.locator('meta[http-equiv="refresh"]').count()).resolves.toBe(0);
  });

  it('one operator: the console and a CLI queue move both act as TASKRECON_OPERATOR, and the audit page shows the move', async () => {
    const jobs = Array.from({ length: 3 }, (_, i) =>
      JSON.stringify({ uuid: `${RUN}-${engine}-${i}`, displayName: 'App\\Jobs\\Ship', attempts: 0 }),
    );
    await redis.rpush(`${prefix}queues:old`, ...jobs);
    const moved = await runJson<{ moved?: number }>(
      [
        'queues',
        'move',
        '--broker',
        'app',
        '--from',
        'old',
        '--to',
        'new',
        '--reason',
        'renamed in the deploy',
        '--yes',
      ],
      { cwd: brokerCwd, env },
    );
    expect(moved.code).toBe(0);
    // A retry from the console.
    const [failed] = await db.rows<{ id: number }>('SELECT id FROM async_task WHERE status = 3 LIMIT 1');
    await page.goto(`${consoleProc.origin}/tasks/${failed?.id}`);
    const retry = page.locator('section.actions:not(.force-effect) form.task-actions');
    const retryButton = retry.locator('button[value="retry"]');
    await retry.locator('input[name="reason"]').fill('partner is back');
    await Promise.all([page.waitForURL(/flash=/), retryButton.click()]);
    await page.goto(`${consoleProc.origin}/audit`);
    const rows = page.locator('table.audit tbody tr');
    const text = (await rows.allTextContents()).join('\n');
    expect(text).toContain('queue-move');
    expect(text).toContain('renamed in the deploy');
    expect(text).toContain('retry');
    const operators = new Set(
      (await page.locator('table.audit td.operator').allTextContents()).map((t) => t.trim()),
    );
    expect(operators).toEqual(new Set([OPERATOR]));
    // A broker job is no task of this table: its row links to no task page.
    await expect(page.locator(`table.audit a[href^="/tasks/${RUN}"]`).count()).resolves.toBe(0);
    // `audit --operator` from the CLI finds both under the one name.
    const audit = await runJson<{ entries?: Array<{ action: string }> } | Array<{ action: string }>>(
      ['audit', '--operator', OPERATOR],
      { cwd, env },
    );
    expect(audit.code).toBe(0);
    const actions = JSON.stringify(audit.json);
    expect(actions).toContain('retry');
  });

  it('the audit page links only to tasks that still exist', async () => {
    const [row] = await db.rows<{ id: number }>(
      "SELECT id FROM async_task WHERE biz_type = 'verdict' AND status = 1",
    );
    const id = String(row?.id);
    const [own] = await db.rows<{ source: string }>(
      "SELECT source FROM taskrecon_audit WHERE action = 'retry' LIMIT 1",
    );
    const source = String(own?.source);
    await db.run(
      `INSERT INTO taskrecon_audit (operator, host, action, source, task_table, task_id, from_status, to_status, reason, run_id)
       VALUES ('drill', 'h', 'drill-retry', ?, 'async_task', '999999999', 'failed', 'pending', 'drill', ?)`,
      [source, randomUUID()],
    );
    await db.run(
      `INSERT INTO taskrecon_audit (operator, host, action, source, task_table, task_id, from_status, to_status, reason, run_id)
       VALUES ('drill', 'h', 'drill-retry', ?, 'async_task', ?, 'failed', 'pending', 'drill', ?)`,
      [source, id, randomUUID()],
    );
    await page.goto(`${consoleProc.origin}/audit?operator=drill`);
    await expect(page.locator('table.audit a[href="/tasks/999999999"]').count()).resolves.toBe(0);
    await expect(page.locator('table.audit td', { hasText: '999999999' }).count()).resolves.toBe(1);
    await expect(page.locator(`table.audit a[href="/tasks/${id}"]`).count()).resolves.toBe(1);
  });

  it('`console --link` mints a fresh one-time link: a second browser signs in, the first stays signed in', async () => {
    // The start-up link was spent by the first browser: a second browser cannot use it.
    const second = await browser.newContext();
    const other = await second.newPage();
    const reused = await other.goto(consoleProc.url);
    expect(reused?.status()).toBe(403);
    const minted = await runCli(['console', '--link', '--port', String(consoleProc.port)], { cwd, env });
    expect(minted.code, minted.stderr).toBe(0);
    const link = minted.stdout.trim();
    expect(link).toMatch(new RegExp(`^${consoleProc.origin}/\\?token=[A-Za-z0-9_-]{43}$`));
    await other.goto(link);
    expect(other.url()).toBe(`${consoleProc.origin}/`);
    await expect(other.locator('h1').textContent()).resolves.toBe('Overview');
    // The first browser is still signed in.
    await page.goto(`${consoleProc.origin}/audit`);
    await expect(page.locator('h1').textContent()).resolves.toBe('Audit log');
    // The minted link worked once.
    const third = await browser.newContext();
    const late = await third.newPage();
    expect((await late.goto(link))?.status()).toBe(403);
    await third.close();
    await second.close();
    // --json says the same as one JSON line.
    const json = await runJson<{ url: string }>(['console', '--link', '--port', String(consoleProc.port)], {
      cwd,
      env,
    });
    expect(json.code).toBe(0);
    expect(json.json?.url).toMatch(/\?token=/);
  });

  it('the failed list shows its total and its tasks grouped by normalised error, sortable, each group a link', async () => {
    for (const id of [1001, 1002, 1003]) await insert(3, 120, 60, `coupon ${id} timed out after 3000 ms`);
    await insert(3, 120, 60, 'abort: client closed');
    const [{ n } = { n: 0 }] = await db.rows<{ n: number }>(
      'SELECT COUNT(*) AS n FROM async_task WHERE status = 3',
    );
    await page.goto(`${consoleProc.origin}/tasks?list=failed`);
    await expect(page.locator('#list-total').textContent()).resolves.toBe(String(n));
    const groups = async () =>
      (await page.locator('table.groups tbody tr').allTextContents()).map((t) =>
        t.replace(/\s+/g, ' ').trim(),
      );
    expect((await groups())[0]).toBe('3 coupon # timed out after # ms');
    expect(await groups()).toContain(`${Number(n) - 4} HTTP 503 from partner`);
    await Promise.all([page.waitForURL(/gsort=error/), page.click('text=error text')]);
    const byText = (await groups()).map((g) => g.replace(/^\d+ /, ''));
    expect(byText).toEqual([...byText].sort((a, b) => a.localeCompare(b)));
    expect(byText[0]).toBe('abort: client closed');
    await Promise.all([page.waitForURL(/error=timed/), page.click('table.groups a:text("coupon")')]);
    const shown = await page.locator('table.tasks tbody tr td.error').allTextContents();
    expect(shown).toHaveLength(3);
    for (const e of shown) expect(e).toMatch(/^coupon 100\d timed out after 3000 ms$/);
  });

  it('Forget on a task goes through the same preview as a bulk Forget: nothing deleted before it is applied', async () => {
    await insert(3, 60, 30, 'forget me');
    const [row] = await db.rows<{ id: number }>("SELECT id FROM async_task WHERE last_error = 'forget me'");
    const id = String(row?.id);
    await page.goto(`${consoleProc.origin}/tasks/${id}`);
    const forget = page.locator('section.actions:not(.force-effect) form.task-actions');
    const forgetButton = forget.locator('button[value="forget"]');
    await forget.locator('input[name="reason"]').fill('duplicate of another order');
    await Promise.all([page.waitForURL(/\/bulk\//), forgetButton.click()]);
    await expect(page.locator('#frozen-count').textContent()).resolves.toBe('1');
    expect(await db.rows('SELECT id FROM async_task WHERE id = ?', [id])).toHaveLength(1);
    await page.fill('form.apply input[name="reason"]', 'duplicate of another order');
    await Promise.all([page.waitForURL(/\/bulk\//), page.click('form.apply button')]);
    await page.waitForSelector('#bulk-result');
    expect(await db.rows('SELECT id FROM async_task WHERE id = ?', [id])).toHaveLength(0);
    const audit = await db.rows<{ operator: string }>(
      "SELECT operator FROM taskrecon_audit WHERE action = 'forget' AND task_id = ?",
      [id],
    );
    expect(audit).toEqual([{ operator: OPERATOR }]);
  });

  it('`console --link` with no console running on the port says so and exits 3', async () => {
    const res = await runJson<{ error?: { message: string } }>(['console', '--link', '--port', '1'], {
      cwd,
      env,
    });
    expect(res.code).toBe(3);
    expect(JSON.stringify(res.json)).toMatch(/no console/i);
  });
});

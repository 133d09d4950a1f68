import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { runJson } from '../support/cli.js';
import { launchChromium, startConsoleCli, type ConsoleProcess } from '../support/console.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

/**
 * The console in a real Chromium against a throw-away database on each engine: list → detail →
 * retry with a reason, the overview's 24 h failure rate, the due and stuck lists, paging, and a bulk retry of a filtered set of
 * 5,000 whose preview freezes the exact ids while new failures keep arriving. One browser for the
 * file; one console and one database per engine.
 */

let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

describe.each(TEST_ENGINES)('console in Chromium on %s', (engine) => {
  let db: EngineDb;
  let cwd: string;
  let consoleProc: ConsoleProcess;
  let page: Page;
  let seeded = 0;
  const rows = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => db.rows<T>(sql, params);

  /** `count` failed tasks of `bizType`, created two hours ago, in statements of 500 rows. */
  async function seedFailed(count: number, bizType: string, error = 'HTTP 503 from partner'): Promise<void> {
    for (let from = 0; from < count; from += 500) {
      const n = Math.min(500, count - from);
      const values: unknown[] = [];
      for (let i = 0; i < n; i++) {
        const seq = ++seeded;
        values.push(
          bizType,
          `order-${seq}`,
          `${bizType}-${seq}-${randomUUID()}`,
          JSON.stringify({ orderId: `order-${seq}`, amount: seq }),
          error,
        );
      }
      await db.run(
        `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, last_error, created_at, updated_at)
         VALUES ${Array.from({ length: n }, () => `(?, ?, ?, ?, 3, 8, ${db.at(-3600)}, ?, ${db.at(-7200)}, ${db.at(-3600)})`).join(', ')}`,
        values,
      );
    }
  }

  beforeAll(async () => {
    db = await createEngineDb(engine, 'console_browser');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-console-'));
    writeFileSync(join(cwd, 'taskrecon.config.yaml'), `db: ${db.dsn}\n`);
    expect((await runJson(['init'], { cwd })).code).toBe(0);
    await seedFailed(3, 'coupon', 'coupon service: 504 Gateway Timeout after 3000 ms');
    consoleProc = await startConsoleCli(['--operator', 'alice'], { cwd });
    page = await browser.newPage();
    page.on('dialog', (d) => void d.accept());
    await page.goto(consoleProc.url);
  });

  afterAll(async () => {
    await page?.close();
    const code = await consoleProc?.stop();
    expect(code).toBe(0);
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('signs in with the one-time token, drops it from the address bar, and shows the 24 h failure rate', async () => {
    expect(page.url()).toBe(`${consoleProc.origin}/`);
    await expect(page.locator('h1').textContent()).resolves.toBe('Overview');
    // The overview's trend: the three tasks were created two hours ago, and all three failed.
    const rate = page.locator('.card:has(.label:text("Failure rate, 24 h")) .value');
    await expect(rate.textContent()).resolves.toBe('100%');
  });

  it('list → detail → retry with a reason: the row is pending and the audit row names operator and reason', async () => {
    await page.click('nav >> text=Failed');
    const first = page.locator('table.tasks tbody tr').first();
    const id = (await first.locator('td').first().textContent())?.trim() as string;
    await first.locator('a').first().click();
    await expect(page.locator('#task-status').textContent()).resolves.toBe('failed');
    await expect(page.locator('#last-error').textContent()).resolves.toContain('504 Gateway Timeout');
    const retry = page.locator('section.actions:not(.force-effect) form.task-actions');
    const retryButton = retry.locator('button[value="retry"]');
    // One reason box for the task's actions, a button each.
    expect(await page.locator('section.actions input[name="reason"]').count()).toBe(1);
    expect(await retry.locator('button[name="action"]').count()).toBeGreaterThan(1);
    await retry.locator('input[name="reason"]').fill('partner API is back');
    await Promise.all([page.waitForURL(/flash=/), retryButton.click()]);
    await expect(page.locator('.flash.ok').textContent()).resolves.toContain('failed → pending');
    await expect(page.locator('#task-status').textContent()).resolves.toBe('pending');
    const [row] = await rows<{ status: number }>('SELECT status FROM async_task WHERE id = ?', [id]);
    expect(row?.status).toBe(0);
    const audit = await rows<{
      operator: string;
      reason: string;
      action: string;
      from_status: string;
      to_status: string;
    }>('SELECT operator, reason, action, from_status, to_status FROM taskrecon_audit WHERE task_id = ?', [
      id,
    ]);
    expect(audit).toEqual([
      {
        operator: 'alice',
        reason: 'partner API is back',
        action: 'retry',
        from_status: 'failed',
        to_status: 'pending',
      },
    ]);
    await expect(page.locator('table.audit td.operator').textContent()).resolves.toBe('alice');
  });

  it('refuses an action without a reason and changes nothing', async () => {
    const [row] = await rows<{ id: number }>(
      "SELECT id FROM async_task WHERE status = 3 AND biz_type = 'coupon' LIMIT 1",
    );
    const res = await page.request.post(`${consoleProc.origin}/tasks/${row?.id}/actions`, {
      form: {
        action: 'retry',
        reason: '',
        _csrf: (await page.locator('input[name="_csrf"]').first().getAttribute('value')) ?? '',
      },
      headers: { origin: consoleProc.origin },
    });
    expect(res.status()).toBe(400);
    expect(await res.text()).toContain('a reason is required');
    const [after] = await rows<{ status: number }>('SELECT status FROM async_task WHERE id = ?', [row?.id]);
    expect(after?.status).toBe(3);
  });

  it('lists due and stuck tasks, searches errors whatever their case, and pages through a failed list by its next link', async () => {
    const task = (bizType: string, bizId: string, status: number, nextRetry: number, updated: number) =>
      db.run(
        `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time, created_at, updated_at)
         VALUES (?, ?, ?, '{}', ?, 1, ${db.at(nextRetry)}, ${db.at(updated - 60)}, ${db.at(updated)})`,
        [bizType, bizId, `${bizType}:${bizId}`, status],
      );
    await task('late', 'd1', 0, -600, -600);
    await task('late', 'd2', 0, -300, -300);
    await task('late', 'later', 0, 3600, -60);
    await task('hung', 'h1', 1, -7200, -7200);
    await task('hung', 'fresh', 1, 0, -10);
    const idsOf = async (bizType: string, bizIds: string[]) =>
      (
        await rows<{ id: number }>(
          `SELECT id FROM async_task WHERE biz_type = ? AND biz_id IN (${bizIds.map(() => '?').join(', ')}) ORDER BY id`,
          [bizType, ...bizIds],
        )
      ).map((r) => String(r.id));
    const shownIds = async () =>
      (await page.locator('table.tasks tbody tr td:first-child').allTextContents()).map((t) => t.trim());
    await page.goto(`${consoleProc.origin}/tasks?list=due&biz=late`);
    expect((await shownIds()).sort()).toEqual((await idsOf('late', ['d1', 'd2'])).sort());
    await page.goto(`${consoleProc.origin}/tasks?list=stuck&biz=hung`);
    expect(await shownIds()).toEqual(await idsOf('hung', ['h1']));
    // The error search ignores ASCII case on every engine (the two coupon tasks still failed).
    await page.goto(`${consoleProc.origin}/tasks?list=failed&error=${encodeURIComponent('GATEWAY timeout')}`);
    expect((await shownIds()).sort()).toEqual(
      (await rows<{ id: number }>("SELECT id FROM async_task WHERE biz_type = 'coupon' AND status = 3"))
        .map((r) => String(r.id))
        .sort(),
    );
    expect(await shownIds()).toHaveLength(2);
    await seedFailed(60, 'page');
    await page.goto(`${consoleProc.origin}/tasks?list=failed&biz=page`);
    const first = await shownIds();
    expect(first).toHaveLength(50);
    await Promise.all([page.waitForURL(/after=/), page.click('a[rel="next"]')]);
    const second = await shownIds();
    expect(second).toHaveLength(10);
    await expect(page.locator('text=end of list').count()).resolves.toBe(1);
    const all = (await rows<{ id: number }>("SELECT id FROM async_task WHERE biz_type = 'page'")).map((r) =>
      String(r.id),
    );
    expect(new Set([...first, ...second])).toEqual(new Set(all));
  });

  it('bulk retry of a filtered set of 5,000: the preview freezes the exact ids while new failures arrive', async () => {
    await seedFailed(5000, 'bulk');
    await seedFailed(40, 'other');
    await page.goto(`${consoleProc.origin}/tasks?list=failed&biz=bulk&error=503`);
    expect(await page.locator('table.tasks tbody tr').count()).toBe(50);
    const frozenIds = (
      await rows<{ id: number }>("SELECT id FROM async_task WHERE biz_type = 'bulk' AND status = 3")
    ).map((r) => r.id);
    expect(frozenIds).toHaveLength(5000);
    await page.selectOption('form.bulk select[name="action"]', 'retry');
    await Promise.all([page.waitForURL(/\/bulk\//), page.click('form.bulk button')]);
    await expect(page.locator('#frozen-count').textContent()).resolves.toBe('5,000');
    // New failures of the same filter arrive while the preview is open, and keep arriving while it applies.
    await seedFailed(120, 'bulk');
    let arriving = true;
    const arrivals = (async () => {
      while (arriving) {
        await seedFailed(25, 'bulk');
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await page.fill('form.apply input[name="reason"]', 'partner outage over');
    await page.click('form.apply button');
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator('#bulk-state').getAttribute('data-state');
        },
        { timeout: 120_000, interval: 500 },
      )
      .toBe('done');
    arriving = false;
    await arrivals;
    await expect(page.locator('#bulk-result').textContent()).resolves.toContain('applied 5,000');
    const moved = await rows<{ id: number }>(
      "SELECT id FROM async_task WHERE biz_type = 'bulk' AND status = 0 ORDER BY id",
    );
    expect(moved.map((r) => r.id)).toEqual([...frozenIds].sort((a, b) => a - b));
    const late = await rows<{ n: number; failed: number }>(
      `SELECT COUNT(*) AS n, ${db.countIf('status = 3')} AS failed FROM async_task WHERE biz_type = 'bulk' AND id > ?`,
      [Math.max(...frozenIds)],
    );
    expect(Number(late[0]?.n)).toBeGreaterThanOrEqual(120);
    expect(Number(late[0]?.failed)).toBe(Number(late[0]?.n));
    const audit = await rows<{ n: number; ops: number }>(
      "SELECT COUNT(*) AS n, COUNT(DISTINCT operator) AS ops FROM taskrecon_audit WHERE reason = 'partner outage over' AND operator = 'alice'",
    );
    expect(Number(audit[0]?.n)).toBe(5000);
    const others = await rows<{ n: number }>(
      "SELECT COUNT(*) AS n FROM async_task WHERE biz_type = 'other' AND status = 3",
    );
    expect(Number(others[0]?.n)).toBe(40);
  });
});

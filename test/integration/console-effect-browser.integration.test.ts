import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { runCli, runJson } from '../support/cli.js';
import { launchChromium, startConsoleCli, type ConsoleProcess } from '../support/console.js';

/**
 * The console's retry on the demo sandbox (SQLite), in Chromium: a task diff calls unsettled shows
 * its effect and is refused a retry, the second confirmation names the business row and retries it
 * audited as forced; a missing effect retries at once; the bulk preview shows each task's effect
 * and the run lists the tasks it skipped. The README's screenshot of the refusal is taken here.
 */

// Written into docs/img with TASKRECON_SCREENSHOTS=1, else into a temp dir (the checkout stays as it was).
const IMG = process.env.TASKRECON_SCREENSHOTS
  ? fileURLToPath(new URL('../../docs/img/', import.meta.url))
  : mkdtempSync(join(tmpdir(), 'taskrecon-effect-shots-'));
const config = ['--config', 'taskrecon-demo.config.yaml'];
let cwd: string;
let consoleProc: ConsoleProcess;
let browser: Browser;
let page: Page;
let unsettled: Array<{ taskId: number; rule: string; key: string }>;

interface AuditJson {
  entries: Array<{ action: string; taskId: string; reason: string | null; operator: string }>;
}
const audited = async (action: string) =>
  (await runJson<AuditJson>(['audit', '--action', action, '--limit', '0', ...config], { cwd })).json.entries;
const statusOf = async (id: number) =>
  (await runJson<{ task: { status: string } }>(['show', String(id), ...config], { cwd })).json.task.status;

beforeAll(async () => {
  browser = await launchChromium();
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-console-effect-'));
  expect((await runCli(['demo', '--no-tour'], { cwd })).code).toBe(0);
  const diff = await runCli(['diff', '--format', 'ndjson', ...config], { cwd });
  unsettled = diff.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { kind: string; taskId: number; rule: string; key: string })
    .filter((f) => f.kind === 'unsettled');
  expect(unsettled.length).toBeGreaterThan(5);
  consoleProc = await startConsoleCli([...config, '--operator', 'alice@ops'], { cwd });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('dialog', (d) => void d.accept());
  await page.goto(consoleProc.url);
});

afterAll(async () => {
  await browser?.close();
  expect(await consoleProc?.stop()).toBe(0);
});

describe('effect-aware retry in the console', () => {
  it('refuses an unsettled task, then retries it after the second confirmation naming the row', async () => {
    const task = unsettled.find((f) => f.rule === 'coupon-applied') as (typeof unsettled)[number];
    await page.goto(`${consoleProc.origin}/tasks/${task.taskId}`);
    expect(await page.locator('#task-effect').getAttribute('data-state')).toBe('present');
    expect(await page.locator('#task-effect').textContent()).toContain(
      `user_coupon where order_id = '${task.key}'`,
    );
    const retry = page.locator('section.actions:not(.force-effect) form.task-actions');
    const retryButton = retry.locator('button[value="retry"]');
    await retry.locator('input[name="reason"]').fill('coupon service is back');
    await Promise.all([page.waitForURL(/confirm=effect/), retryButton.click()]);
    expect(await page.locator('.flash.error').first().textContent()).toContain('Retry refused');
    expect(await statusOf(task.taskId)).toBe('failed');
    const second = page.locator('#force-effect');
    expect(await second.textContent()).toContain(`1 row in user_coupon where order_id = '${task.key}'`);
    await page.screenshot({ path: join(IMG, 'console-effect-refused.png'), fullPage: true });
    expect((await audited('effect-refused')).map((e) => Number(e.taskId))).toEqual([task.taskId]);
    // The box must be ticked: without it the browser does not send the form.
    await second.locator('input[name="reason"]').fill('coupon revoked by hand, retry');
    await second.locator('button').click();
    expect(await statusOf(task.taskId)).toBe('failed');
    await second.locator('input[name="force-effect"]').check();
    await Promise.all([page.waitForURL(/flash=/), second.locator('button').click()]);
    expect(await page.locator('.flash.ok').textContent()).toContain('audited as effect-forced');
    expect(await statusOf(task.taskId)).toBe('pending');
    const forced = await audited('effect-forced');
    expect(forced.map((e) => [Number(e.taskId), e.operator])).toEqual([[task.taskId, 'alice@ops']]);
  });

  it('bulk: the preview shows each task’s effect; the run skips and lists the unsettled ones, audited', async () => {
    await page.goto(`${consoleProc.origin}/tasks?list=failed&biz=points`);
    await page.locator('form.bulk select[name="action"]').selectOption('retry');
    await Promise.all([page.waitForURL(/\/bulk\//), page.locator('form.bulk button').click()]);
    expect(await page.locator('#effect-note').textContent()).toContain('not retried');
    const cells = await page.locator('table.tasks td.effect').allTextContents();
    expect(cells.length).toBeGreaterThan(0);
    expect(cells.every((c) => ['missing', 'present'].includes(c.trim()))).toBe(true);
    await page.locator('form.apply input[name="reason"]').fill('points service is back');
    await page.locator('form.apply button').click();
    await page.locator('#bulk-state[data-state="done"]').waitFor({ timeout: 30_000 });
    const points = unsettled
      .filter((f) => f.rule === 'points-applied')
      .map((f) => f.taskId)
      .sort((a, b) => a - b);
    const listed = (await page.locator('#effect-skipped a').allTextContents())
      .map(Number)
      .sort((a, b) => a - b);
    expect(listed).toEqual(points);
    const refused = (await audited('effect-refused')).map((e) => Number(e.taskId));
    for (const id of points) {
      expect(refused).toContain(id);
      expect(await statusOf(id)).toBe('failed');
    }
    expect((await audited('retry')).length).toBeGreaterThan(1);
  });
});

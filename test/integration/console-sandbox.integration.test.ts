import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { runCli, runJson } from '../support/cli.js';
import { launchChromium, startConsoleCli, type ConsoleProcess } from '../support/console.js';
import { assertMatchesSchema } from '../support/schemas.js';

/**
 * The console on the demo sandbox (SQLite), in Chromium: the overview agrees with `scan`, the failed
 * list pages by keyset through every failed task exactly once, diff findings of a rule show, and the
 * README's screenshots are taken here.
 */

// The README's screenshots: written into docs/img with TASKRECON_SCREENSHOTS=1, else into a temp dir
// (so that a test run leaves the checkout as it found it).
const IMG = process.env.TASKRECON_SCREENSHOTS
  ? fileURLToPath(new URL('../../docs/img/', import.meta.url))
  : mkdtempSync(join(tmpdir(), 'taskrecon-console-shots-'));
let cwd: string;
let consoleProc: ConsoleProcess;
let browser: Browser;
let page: Page;

interface ScanJson {
  summary: { total: number; byStatus: { failed: number }; stuck: number; due: number };
}

beforeAll(async () => {
  browser = await launchChromium();
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-console-demo-'));
  const demo = await runCli(['demo', '--no-tour'], { cwd });
  expect(demo.code, demo.stderr).toBe(0);
  consoleProc = await startConsoleCli(['--config', 'taskrecon-demo.config.yaml', '--operator', 'alice@ops'], {
    cwd,
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('dialog', (d) => void d.accept());
  await page.goto(consoleProc.url);
});

afterAll(async () => {
  await browser?.close();
  expect(await consoleProc?.stop()).toBe(0);
});

describe('console on the demo sandbox', () => {
  it('shows the counts scan reports, with trend charts, and takes the overview screenshot', async () => {
    const scan = await runJson<ScanJson>(['scan', '--config', 'taskrecon-demo.config.yaml', '--limit', '1'], {
      cwd,
    });
    const card = async (label: string) =>
      (await page.locator(`.card:has(.label:text-is("${label}")) .value`).textContent())?.trim();
    expect(await card('Tasks')).toBe(scan.json.summary.total.toLocaleString('en-US'));
    expect(await card('Failed')).toBe(scan.json.summary.byStatus.failed.toLocaleString('en-US'));
    expect(await card('Stuck')).toBe(scan.json.summary.stuck.toLocaleString('en-US'));
    expect(await page.locator('figure.chart').count()).toBe(8);
    expect(await page.locator('figure.chart rect.bar').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(IMG, 'console-overview.png'), fullPage: true });
  });

  it('pages through every failed task once by keyset, 50 a page', async () => {
    const scan = await runJson<ScanJson>(['scan', '--config', 'taskrecon-demo.config.yaml', '--limit', '1'], {
      cwd,
    });
    await page.goto(`${consoleProc.origin}/tasks?list=failed`);
    const seen: string[] = [];
    for (let pages = 0; pages < 100; pages++) {
      const ids = await page.locator('table.tasks tbody tr td.num a').allTextContents();
      expect(ids.length).toBeLessThanOrEqual(50);
      seen.push(...ids);
      const next = page.locator('a[rel="next"]');
      if ((await next.count()) === 0) break;
      await next.click();
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBe(scan.json.summary.byStatus.failed);
  });

  it('filters by error text and by payload text', async () => {
    await page.goto(`${consoleProc.origin}/tasks?list=failed&error=${encodeURIComponent('HTTP 503')}`);
    const errors = await page.locator('table.tasks td.error').allTextContents();
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(e).toContain('HTTP 503');
    const id = (await page.locator('table.tasks tbody tr td.num a').first().textContent()) as string;
    await page.goto(`${consoleProc.origin}/tasks/${id}`);
    const payload = JSON.parse((await page.locator('#payload').textContent()) as string) as Record<
      string,
      unknown
    >;
    const needle = String(Object.values(payload)[0]);
    await page.goto(`${consoleProc.origin}/tasks?list=failed&payload=${encodeURIComponent(needle)}`);
    const found = await page.locator('table.tasks tbody tr td.num a').allTextContents();
    expect(found).toContain(id);
    await page.goto(
      `${consoleProc.origin}/tasks?list=failed&payload=${encodeURIComponent('no-such-text-anywhere')}`,
    );
    expect(await page.locator('table.tasks tbody tr td.num a').count()).toBe(0);
  });

  it('task detail: takes the screenshot, then marks it compensated with a reason', async () => {
    await page.goto(`${consoleProc.origin}/tasks?list=failed&biz=points`);
    await page.locator('table.tasks tbody tr td.num a').first().click();
    await page.screenshot({ path: join(IMG, 'console-detail.png'), fullPage: true });
    const form = page.locator('section.actions:not(.force-effect) form.task-actions');
    const formButton = form.locator('button[value="mark-compensated"]');
    await form.locator('input[name="reason"]').fill('points granted by hand');
    await Promise.all([page.waitForURL(/flash=/), formButton.click()]);
    expect(await page.locator('#task-status').textContent()).toBe('compensated');
    expect(await page.locator('table.audit td.reason').textContent()).toBe('points granted by hand');
    await page.goto(`${consoleProc.origin}/audit`);
    expect(await page.locator('table.audit td.operator').first().textContent()).toBe('alice@ops');
  });

  it('shows the diff findings of a rule', async () => {
    await page.goto(`${consoleProc.origin}/diff`);
    await page.locator('ul.rules a').first().click();
    expect(await page.locator('h1').textContent()).toMatch(/^Diff: /);
    expect(await page.locator('table.findings tbody tr').count()).toBeGreaterThan(0);
  });

  it('report --trend 24h prints the same series as sparklines, and --json carries them', async () => {
    const args = ['report', '--config', 'taskrecon-demo.config.yaml', '--trend', '24h'];
    const text = await runCli(args, { cwd });
    expect(text.stdout).toContain('Trend over 24h (24 buckets of 1h, oldest first)');
    expect(text.stdout).toMatch(/created\s+[ ▁▂▃▄▅▆▇█]{24}\s+now/);
    const json = await runJson<{ trend: { points: Array<{ created: number; failed: number }> } }>(args, {
      cwd,
    });
    assertMatchesSchema('report', json.json);
    expect(json.json.trend.points).toHaveLength(24);
    await page.goto(`${consoleProc.origin}/`);
    const chartMax = await page
      .locator('figure.chart figcaption:has-text("Created") .muted')
      .first()
      .textContent();
    const max = Math.max(...json.json.trend.points.map((p) => p.created));
    expect(chartMax).toBe(`max ${max.toLocaleString('en-US')}`);
  });

  it('--json prints one JSON line with the URL, matching its schema, and stops cleanly on SIGINT', async () => {
    const json = await startConsoleCli(['--config', 'taskrecon-demo.config.yaml', '--read-only', '--json'], {
      cwd,
    });
    const line = JSON.parse(json.firstLine) as { url: string; port: number; readOnly: boolean };
    assertMatchesSchema('console', line);
    expect(line.readOnly).toBe(true);
    expect((await fetch(line.url, { redirect: 'manual' })).status).toBe(303);
    expect(await json.stop()).toBe(0);
  });

  it('--quiet still prints the URL (what the person asked for), and nothing else', async () => {
    const quiet = await startConsoleCli(['--config', 'taskrecon-demo.config.yaml', '--quiet'], { cwd });
    expect(quiet.firstLine).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/);
    expect(await quiet.stop()).toBe(0);
    expect(quiet.stderr()).toBe('');
  });
});

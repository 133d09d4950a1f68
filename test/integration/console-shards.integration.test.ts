import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatRate } from '../../src/console/pages/charts.js';
import { trendStart } from '../../src/core/trend.js';
import { runCli } from '../support/cli.js';
import { csrfOf, launchChromium, signIn, startConsoleCli, type ConsoleProcess } from '../support/console.js';
import {
  dropShards,
  groundTruth,
  machineMariadb,
  openShardDb,
  seedShards,
  shardsConfigYaml,
  startMariadbServers,
  stopMariadbServers,
  type MariadbServer,
  type ShardLayout,
  type ShardServer,
  type ShardSpec,
} from '../support/mariadb-servers.js';

// The console on a sharded source: three shards in two databases on the machine's MariaDB, one
// shard named with characters HTML and URLs treat specially. The merged overview against SQL
// run on each shard; every other page, and a retry, under one shard's prefix.
const prefix = `tr_csh_${randomBytes(3).toString('hex')}_`;
const ODD = `eu/<i>&'9`;
const layout: ShardLayout = {
  shards: [
    {
      name: `${prefix}0.async_task_0`,
      index: 0,
      server: 0,
      database: `${prefix}0`,
      table: 'async_task_0',
      rows: 60,
    },
    {
      name: `${prefix}0.async_task_1`,
      index: 1,
      server: 0,
      database: `${prefix}0`,
      table: 'async_task_1',
      rows: 67,
    },
    { name: ODD, index: 2, server: 0, database: `${prefix}1`, table: 'async_task_2', rows: 74 },
  ],
};
const [A, B, C] = layout.shards as [ShardSpec, ShardSpec, ShardSpec];
const FAILED = 3;
let servers: ShardServer[] = [];
let dir = '';
let yaml = '';
let cons: ConsoleProcess;
let cookie = '';

/** `/shards/<name>`, as the console writes it (every character but letters, digits and -_.~ encoded). */
const prefixOf = (s: ShardSpec) =>
  `/shards/${encodeURIComponent(s.name).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`)}`;

async function onShard<T = Record<string, unknown>>(shard: ShardSpec, sql: string): Promise<T[]> {
  const db = await openShardDb(servers[0] as ShardServer, shard.database);
  try {
    return await db.query<T>(sql);
  } finally {
    await db.end();
  }
}

const checksum = async (s: ShardSpec) => {
  const rows = await onShard(s, `CHECKSUM TABLE \`${s.table}\` EXTENDED`);
  const audit = await onShard<{ n: unknown }>(s, `SELECT COUNT(*) AS n FROM taskrecon_audit`);
  return `${String(rows[0]?.Checksum)}:${String(audit[0]?.n)}`;
};

const failedIds = async (s: ShardSpec) =>
  (
    await onShard<{ id: unknown }>(s, `SELECT id FROM \`${s.table}\` WHERE status = ${FAILED} ORDER BY id`)
  ).map((r) => Number(r.id));

async function get(path: string, withCookie = true) {
  const res = await fetch(`${cons.origin}${path}`, {
    redirect: 'manual',
    headers: withCookie ? { cookie } : {},
  });
  return { status: res.status, text: await res.text(), location: res.headers.get('location') };
}

async function post(path: string, body: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(`${cons.origin}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie,
      origin: cons.origin,
      'content-type': 'application/x-www-form-urlencoded',
      ...headers,
    },
    body: new URLSearchParams(body).toString(),
  });
  return { status: res.status, text: await res.text(), location: res.headers.get('location') };
}

/** Every local path a page's links and forms point to. */
const localLinks = (page: string) =>
  [...page.matchAll(/\s(?:href|action)="(\/[^"]*)"/g)].map((m) => (m[1] as string).replace(/&amp;/g, '&'));

/** The number on an overview card. */
function card(page: string, label: string): number {
  const m = new RegExp(
    `<span class="label">${label}</span\\s*><span class="value">(?:<a [^>]*>)?([\\d,]+)`,
  ).exec(page);
  if (!m) throw new Error(`no ${label} card on the overview`);
  return Number((m[1] as string).replace(/,/g, ''));
}

beforeAll(async () => {
  servers = [machineMariadb()];
  await seedShards(servers, layout);
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-console-shards-'));
  yaml = shardsConfigYaml(servers, layout);
  writeFileSync(join(dir, 'taskrecon.config.yaml'), yaml);
  for (const database of [`${prefix}0`, `${prefix}1`]) {
    const init = await runCli(['init', '--audit-only', '--db', (servers[0] as ShardServer).dsn(database)], {
      cwd: dir,
    });
    expect(init.code, init.stderr).toBe(0);
  }
  cons = await startConsoleCli(['--operator', 'shard-tester'], { cwd: dir });
  cookie = await signIn(cons.url);
}, 90_000);

afterAll(async () => {
  await cons?.stop();
  await dropShards(servers, layout).catch(() => undefined);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('console on a sharded source', () => {
  it('the overview adds every shard (as SQL on each counts) and lists each shard with its own figures', async () => {
    const truth = await groundTruth(servers, layout);
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(card(page.text, 'Tasks')).toBe(truth.total);
    expect(card(page.text, 'Failed')).toBe(truth.byStatus.failed);
    expect(card(page.text, 'Stuck')).toBe(truth.stuck);
    expect(card(page.text, 'Due')).toBe(truth.due);
    expect(truth.total).toBe(60 + 67 + 74);
    const table = /<table class="counts" id="shards">([\s\S]*?)<\/table>/.exec(page.text)?.[1] ?? '';
    for (const s of truth.shards) {
      const spec = layout.shards.find((l) => l.name === s.name) as ShardSpec;
      const row = new RegExp(
        `<a class="shard" href="${prefixOf(spec).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/">[^<]*</a></td>\\s*<td class="num">([\\d,]+)</td>`,
      ).exec(table);
      expect(row?.[1], s.name).toBe(String(s.total));
      expect(table).toContain(`href="${prefixOf(spec)}/tasks?list=failed">${s.byStatus.failed}</a>`);
    }
    // The trend charts add every shard's buckets: the 24 h failure rate is failed ÷ created over every
    // shard's rows created since the span's first bucket (one clock: every shard is on this server).
    const [clock] = await onShard<{ now: unknown }>(A, 'SELECT UNIX_TIMESTAMP() AS now');
    const since = trendStart('24h', Number(clock?.now));
    let created = 0;
    let failed = 0;
    for (const spec of layout.shards) {
      const [r] = await onShard<{ n: unknown; f: unknown }>(
        spec,
        `SELECT COUNT(*) AS n, SUM(status = ${FAILED}) AS f FROM \`${spec.table}\` WHERE UNIX_TIMESTAMP(created_at) >= ${since}`,
      );
      created += Number(r?.n);
      failed += Number(r?.f ?? 0);
    }
    expect(created).toBeGreaterThan(0);
    expect(page.text).toMatch(/Last 24h/);
    expect(page.text).toMatch(/Last 7d/);
    const rate = /<span class="label">Failure rate, 24 h<\/span\s*><span class="value">([^<]+)<\/span>/.exec(
      page.text,
    );
    expect(rate?.[1]).toBe(formatRate(failed / created));
    // The 24 h Created chart: its bars (one an hour, each titled with its count) add up to every shard's rows.
    const day = page.text.slice(page.text.indexOf('Last 24h'));
    const chart = /<figure class="chart">\s*<figcaption>\s*Created[\s\S]*?<\/figure>/.exec(day)?.[0] ?? '';
    const bars = [...chart.matchAll(/<title>[^<]*: ([\d,]+)<\/title>/g)].map((m) =>
      Number((m[1] as string).replace(/,/g, '')),
    );
    expect(bars.length).toBe(24);
    expect(bars.reduce((a, b) => a + b, 0)).toBe(created);
    // The odd name is text, escaped; never markup.
    expect(page.text).toContain('eu/&lt;i&gt;&amp;&#39;9');
    expect(page.text).not.toContain(ODD);
    expect(page.text).not.toContain('<i>');
  });

  it("a shard's failed list shows that shard's failed rows only, every link inside its prefix", async () => {
    const page = await get(`${prefixOf(A)}/tasks?list=failed`);
    expect(page.status).toBe(200);
    const shown = [
      ...new Set(
        [...page.text.matchAll(new RegExp(`href="${prefixOf(A)}/tasks/(\\d+)"`, 'g'))].map((m) =>
          Number(m[1]),
        ),
      ),
    ].sort((x, y) => x - y);
    const expected = await failedIds(A);
    expect(expected.length).toBeGreaterThan(0);
    expect(shown).toEqual(expected);
    expect(shown).not.toEqual(await failedIds(B));
    const links = localLinks(page.text);
    expect(links.length).toBeGreaterThan(5);
    const outside = links.filter((l) => !l.startsWith(`${prefixOf(A)}/`) && !l.startsWith('/static/'));
    // The one way out: the header's link back to the merged overview.
    expect(outside).toEqual(['/']);
    expect(page.text).toMatch(/<a href="\/" data-unscoped>all shards<\/a>/);
  });

  it("a shard's own overview counts that shard alone; the diff page is off there and at the top, saying why", async () => {
    const truth = await groundTruth(servers, layout);
    for (const spec of [A, C]) {
      const own = truth.shards.find((s) => s.name === spec.name);
      const page = await get(`${prefixOf(spec)}/`);
      expect(page.status).toBe(200);
      expect(card(page.text, 'Tasks')).toBe(own?.total);
      expect(card(page.text, 'Failed')).toBe(own?.byStatus.failed);
      expect(card(page.text, 'Stuck')).toBe(own?.stuck);
    }
    const diff = await get(`${prefixOf(A)}/diff`);
    expect(diff.status).toBe(200);
    expect(diff.text).toContain('The console&#39;s diff page does not run on a sharded source yet');
    const top = await get('/diff');
    expect(top.status).toBe(200);
    expect(top.text).toContain('The console&#39;s diff page does not run on a sharded source yet');
    expect((await get(`${prefixOf(A)}/diff/anything`)).status).toBe(404);
  });

  it("a task's page under a shard, its actions posting to that shard", async () => {
    const [id] = await failedIds(B);
    const page = await get(`${prefixOf(B)}/tasks/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`Task ${id}`);
    expect(page.text).toContain(`action="${prefixOf(B)}/tasks/${id}/actions"`);
    expect(page.text).toContain(`shard <b class="shard">${B.name}</b>`);
    // The odd shard's pages name it escaped.
    const odd = await get(`${prefixOf(C)}/tasks?list=failed`);
    expect(odd.status).toBe(200);
    expect(odd.text).toContain(`shard <b class="shard">eu/&lt;i&gt;&amp;&#39;9</b>`);
    expect(odd.text).not.toContain('<i>');
  });

  it('a retry on one shard changes that shard alone, audited in its own database with its table', async () => {
    const [id] = await failedIds(C);
    expect(id).toBeDefined();
    const others = await Promise.all([checksum(A), checksum(B)]);
    const form = await get(`${prefixOf(C)}/tasks/${id}`);
    const res = await post(`${prefixOf(C)}/tasks/${id}/actions`, {
      action: 'retry',
      reason: 'retried from the shard page',
      _csrf: csrfOf(form.text),
    });
    expect(res.status, res.text).toBe(303);
    expect(res.location?.startsWith(`${prefixOf(C)}/tasks/${id}?flash=`)).toBe(true);
    const after = await onShard<{ status: unknown }>(C, `SELECT status FROM async_task_2 WHERE id = ${id}`);
    expect(Number(after[0]?.status)).not.toBe(FAILED);
    expect(await Promise.all([checksum(A), checksum(B)])).toEqual(others);
    const audit = await onShard<{ task_table: string; action: string; source: string; operator: string }>(
      C,
      `SELECT task_table, action, source, operator FROM taskrecon_audit WHERE task_id = '${id}'`,
    );
    expect(audit).toEqual([
      { task_table: 'async_task_2', action: 'retry', source: 'tasks', operator: 'shard-tester' },
    ]);
    const shown = await get(res.location as string);
    expect(shown.status).toBe(200);
    expect(shown.text).toMatch(/class="flash ok"/);
  });

  it("a bulk preview and the audit log stay inside the shard: its ids only, its run's audit rows", async () => {
    const list = await get(`${prefixOf(B)}/tasks?list=failed`);
    const res = await post(`${prefixOf(B)}/bulk`, {
      action: 'retry',
      list: 'failed',
      _csrf: csrfOf(list.text),
    });
    expect(res.status, res.text).toBe(303);
    expect(res.location?.startsWith(`${prefixOf(B)}/bulk/`)).toBe(true);
    const preview = await get(res.location as string);
    expect(preview.status).toBe(200);
    const previewed = [
      ...new Set(
        [...preview.text.matchAll(new RegExp(`href="${prefixOf(B)}/tasks/(\\d+)"`, 'g'))].map((m) =>
          Number(m[1]),
        ),
      ),
    ].sort((x, y) => x - y);
    expect(previewed).toEqual(await failedIds(B));
    expect(
      localLinks(preview.text).filter((l) => !l.startsWith(`${prefixOf(B)}/`) && !l.startsWith('/static/')),
    ).toEqual(['/']);
    // The retry of the odd shard is in its audit log, and in no other shard's.
    const oddAudit = await get(`${prefixOf(C)}/audit`);
    expect(oddAudit.text).toContain('retried from the shard page');
    expect((await get(`${prefixOf(A)}/audit`)).text).not.toContain('retried from the shard page');
  });

  it('under a prefix the guards still hold: a wrong CSRF token, another Origin, no session', async () => {
    const [id] = await failedIds(A);
    const before = await checksum(A);
    const stale = await post(`${prefixOf(A)}/tasks/${id}/actions`, {
      action: 'retry',
      reason: 'forged',
      _csrf: 'not-the-token',
    });
    expect(stale.status).toBe(403);
    expect(stale.text).toMatch(/CSRF/);
    const form = await get(`${prefixOf(A)}/tasks/${id}`);
    const foreign = await post(
      `${prefixOf(A)}/tasks/${id}/actions`,
      { action: 'retry', reason: 'forged', _csrf: csrfOf(form.text) },
      { origin: 'http://127.0.0.1:1' },
    );
    expect(foreign.status).toBe(403);
    expect(await checksum(A)).toBe(before);
    const anonymous = await get(`${prefixOf(A)}/tasks?list=failed`, false);
    expect(anonymous.status).toBe(401);
  });

  it('--read-only refuses a change under a prefix and shows no action there', async () => {
    const ro = await startConsoleCli(['--read-only'], { cwd: dir });
    try {
      const roCookie = await signIn(ro.url);
      const [id] = await failedIds(A);
      const before = await checksum(A);
      const page = await fetch(`${ro.origin}${prefixOf(A)}/tasks/${id}`, { headers: { cookie: roCookie } });
      const text = await page.text();
      expect(page.status).toBe(200);
      expect(text).not.toContain('/actions"');
      const res = await fetch(`${ro.origin}${prefixOf(A)}/tasks/${id}/actions`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: roCookie, origin: ro.origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'action=retry&reason=read-only+test&_csrf=x',
      });
      expect(res.status).toBe(403);
      expect(await res.text()).toMatch(/read-only/);
      expect(await checksum(A)).toBe(before);
    } finally {
      await ro.stop();
    }
  });

  it('an unknown shard is a 404; a per-shard page at the top level offers each shard', async () => {
    expect((await get('/shards/nope/')).status).toBe(404);
    expect((await get('/shards/nope/tasks?list=failed')).status).toBe(404);
    expect((await get('/shards/nope')).status).toBe(404);
    const pick = await get('/tasks?list=failed');
    expect(pick.status).toBe(200);
    for (const s of layout.shards) expect(pick.text).toContain(`href="${prefixOf(s)}/tasks?list=failed"`);
  });

  it('a shard that cannot be reached stops the start naming it; --allow-partial names it on the overview', async () => {
    const gone = `      - { db: "mysql://root@127.0.0.1:1/${prefix}9", table: async_task_9, name: gone-shard }\n`;
    const partial = mkdtempSync(join(tmpdir(), 'taskrecon-console-shards-'));
    try {
      writeFileSync(join(partial, 'taskrecon.config.yaml'), `${yaml}${gone}`);
      const stopped = await runCli(['console', '--port', '0'], { cwd: partial });
      expect(stopped.code).toBe(3);
      expect(stopped.stderr).toContain('gone-shard');
      expect(stopped.stdout).toBe('');
      const second = await startConsoleCli(['--allow-partial'], { cwd: partial });
      try {
        const res = await fetch(`${second.origin}/`, { headers: { cookie: await signIn(second.url) } });
        const page = await res.text();
        expect(res.status).toBe(200);
        expect(page).toMatch(/id="shards-missing"[\s\S]*gone-shard/);
        expect(card(page, 'Tasks')).toBe(60 + 67 + 74);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(partial, { recursive: true, force: true });
    }
  });

  it('in a browser: overview → a shard → its failed list → a task → retry, all inside the shard, then back to all shards', async () => {
    const browser = await launchChromium();
    try {
      const context = await browser.newContext();
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (m) => {
        // A refused script, style or form (the Content-Security-Policy) shows here; the favicon's 404 does not count.
        if (m.type() === 'error' && !/status of 404/.test(m.text())) problems.push(m.text());
      });
      page.on('dialog', (d) => void d.accept());
      const minted = await runCli(['console', '--link', '--port', String(cons.port)], { cwd: dir });
      expect(minted.code, minted.stderr).toBe(0);
      await page.goto(minted.stdout.trim());
      expect(page.url()).toBe(`${cons.origin}/`);
      await Promise.all([
        page.waitForURL(`${cons.origin}${prefixOf(B)}/`),
        page.click(`#shards a.shard >> text=${B.name}`),
      ]);
      await page.click('nav >> text=Failed');
      expect(page.url()).toBe(`${cons.origin}${prefixOf(B)}/tasks?list=failed`);
      const first = page.locator('table.tasks tbody tr').first();
      const id = Number((await first.locator('td').first().textContent())?.trim());
      await first.locator('a').first().click();
      expect(page.url()).toBe(`${cons.origin}${prefixOf(B)}/tasks/${id}`);
      const retry = page.locator('section.actions:not(.force-effect) form.task-actions');
      await retry.locator('input[name="reason"]').fill('retried in a browser');
      await Promise.all([page.waitForURL(/flash=/), retry.locator('button[value="retry"]').click()]);
      expect(page.url().startsWith(`${cons.origin}${prefixOf(B)}/tasks/${id}?flash=`)).toBe(true);
      await expect(page.locator('#task-status').textContent()).resolves.toBe('pending');
      const audit = await onShard<{ reason: string }>(
        B,
        `SELECT reason FROM taskrecon_audit WHERE task_id = '${id}'`,
      );
      expect(audit.map((a) => a.reason)).toEqual(['retried in a browser']);
      await Promise.all([page.waitForURL(`${cons.origin}/`), page.click('a[data-unscoped]')]);
      await expect(page.locator('h1').textContent()).resolves.toBe('Overview');
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);

  it('a shard whose server stops while the console runs: the overview names it and sums the others exactly', async () => {
    let extra: MariadbServer[] = [];
    const partial = mkdtempSync(join(tmpdir(), 'taskrecon-console-shards-'));
    let second: ConsoleProcess | undefined;
    try {
      extra = await startMariadbServers(1);
      const all = [servers[0] as ShardServer, ...extra];
      const late: ShardSpec = {
        name: `${prefix}x.async_task_3`,
        index: 3,
        server: 1,
        database: `${prefix}x`,
        table: 'async_task_3',
        rows: 81,
      };
      await seedShards(all, { shards: [late] });
      writeFileSync(
        join(partial, 'taskrecon.config.yaml'),
        shardsConfigYaml(all, { shards: [...layout.shards, late] }),
      );
      second = await startConsoleCli([], { cwd: partial });
      const signed = await signIn(second.url);
      const overview = async () => {
        const res = await fetch(`${second?.origin}/`, { headers: { cookie: signed } });
        return { status: res.status, text: await res.text() };
      };
      const truth = await groundTruth(servers, layout);
      const before = await overview();
      expect(before.status).toBe(200);
      expect(card(before.text, 'Tasks')).toBe(truth.total + 81);
      await (extra[0] as MariadbServer).stop();
      const after = await overview();
      expect(after.status).toBe(200);
      expect(card(after.text, 'Tasks')).toBe(truth.total);
      expect(card(after.text, 'Failed')).toBe(truth.byStatus.failed);
      expect(card(after.text, 'Due')).toBe(truth.due);
      expect(after.text).toMatch(
        new RegExp(`id="shards-missing"[\\s\\S]*${late.name.replace(/\./g, '\\.')}`),
      );
      expect(after.text).toMatch(/class="shard-error"[\s\S]*did not answer/);
      expect(after.text).toMatch(/id="verdict-error"/);
      expect(after.text).toContain('no trend charts while a shard does not answer');
      expect(after.text).not.toMatch(/Last 24h/);
    } finally {
      await second?.stop();
      await stopMariadbServers(extra);
      rmSync(partial, { recursive: true, force: true });
    }
  }, 90_000);
});

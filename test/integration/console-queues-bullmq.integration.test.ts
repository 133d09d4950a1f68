import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJson } from '../support/cli.js';
import { signIn, startConsoleCli, type ConsoleProcess } from '../support/console.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { dropPrefix, openTestRedis } from '../support/redis.js';
import { runWorker, testQueue } from '../support/bullmq/worker.js';

// The console's queues page on a BullMQ broker: the failed jobs a real BullMQ Worker failed, with
// their payload and error, every byte of both escaped (a payload and an error carrying markup).

const REDIS_DB = 12;
const URL = `redis://127.0.0.1:6379/${REDIS_DB}`;
const RUN = randomBytes(4).toString('hex');
const SCRIPT = '<script>alert("owned")</script>';
const ERROR = `bad <img src=x onerror=alert(1)> & 'quotes'`;
let redis: Redis;

beforeAll(async () => {
  redis = await openTestRedis(REDIS_DB);
});

afterAll(async () => {
  if (redis) await dropPrefix(redis, `trtest-bullcon-${RUN}`);
  redis?.disconnect();
});

describe.each(TEST_ENGINES)('console queues page with a BullMQ broker (%s)', (engine) => {
  const prefix = `trtest-bullcon-${RUN}-${engine}`;
  let db: EngineDb;
  let cwd: string;
  let queue: Queue;
  let consoleProc: ConsoleProcess;
  let cookie: string;
  let ids: string[];

  beforeAll(async () => {
    db = await createEngineDb(engine, 'console_bullmq');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-console-bullmq-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      `db: ${db.dsn}\nbrokers:\n  jobs: { kind: redis, url: "${URL}", framework: bullmq, prefix: "${prefix}" }\n`,
    );
    expect((await runJson(['init', '--profile', 'async-task'], { cwd })).code).toBe(0);
    queue = testQueue(REDIS_DB, prefix, 'mail');
    const jobs = await queue.addBulk([
      { name: 'send-mail', data: { to: 'a@example.com', body: SCRIPT } },
      { name: 'render<b>', data: { to: 'b@example.com' } },
    ]);
    ids = jobs.map((j) => String(j.id));
    await runWorker(REDIS_DB, prefix, 'mail', {
      fail: true,
      error: (job: Job) => (job.name === 'send-mail' ? ERROR : 'template missing'),
      until: async () => (await queue.getJobCounts('failed')).failed === 2,
    });
    consoleProc = await startConsoleCli([], { cwd });
    cookie = await signIn(consoleProc.url);
  }, 60_000);

  afterAll(async () => {
    await consoleProc?.stop();
    await queue?.close();
    await db?.drop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it("shows each failed job's id, name, payload and error, escaped", async () => {
    const page = await fetch(`${consoleProc.origin}/queues`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const body = await page.text();
    expect(body).toContain('Failed jobs of mail');
    for (const id of ids) expect(body).toContain(`<td>${id}</td>`);
    // The payload as JSON, escaped: the script is text, never an element.
    expect(body).toContain('&lt;script&gt;alert(\\&quot;owned\\&quot;)&lt;/script&gt;');
    expect(body).not.toContain('<script>alert');
    expect(body).toContain('a@example.com');
    // The error and the stack's first line, escaped.
    expect(body).toContain('bad &lt;img src=x onerror=alert(1)&gt; &amp; &#39;quotes&#39;');
    expect(body).not.toContain('<img src=x');
    expect(body).toContain('template missing');
    // The job name too.
    expect(body).toContain('render&lt;b&gt;');
    expect(body).not.toContain('render<b>');
    // The failed count closes the queue's row.
    expect(body.replace(/\s+/g, ' ')).toMatch(/<td>mail<\/td>(?:(?!<\/tr>).)*<td class="num">2<\/td> <\/tr>/);
  });

  it('reading the page changes nothing in BullMQ', async () => {
    await fetch(`${consoleProc.origin}/queues`, { headers: { cookie } });
    expect(await queue.getJobCounts('failed', 'wait')).toEqual({ failed: 2, wait: 0 });
  });
});

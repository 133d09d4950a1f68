import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli, runJson } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';
import { assertMatchesSchema } from '../support/schemas.js';

// Webhooks are loopback listeners: one that records what it receives, one that never answers.
const SECRET = 'SECintegration';
let receiver: HttpServer;
let silent: Server;
const sockets: Socket[] = [];
let received: Array<{ path: string; query: URLSearchParams; body: Record<string, unknown> }> = [];
let receiverUrl: string;
let silentUrl: string;

interface ReportJson {
  status: string;
  notifications: Array<{
    kind: string;
    target: string;
    outcome: string;
    reason: string;
    error: string | null;
  }>;
}

const outcomes = (json: ReportJson) => json.notifications.map((n) => `${n.kind}:${n.outcome}:${n.reason}`);

beforeAll(async () => {
  receiver = createHttpServer((req, res) => {
    let data = '';
    req.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      received.push({
        path: url.pathname,
        query: url.searchParams,
        body: JSON.parse(data) as Record<string, unknown>,
      });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ errcode: 0, errmsg: 'ok', code: 0 }));
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  silent = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => silent?.close(resolve));
  await new Promise((resolve) => receiver?.close(resolve));
});

beforeEach(() => {
  received = [];
});

describe.each(TEST_ENGINES)('report --notify (%s)', (engine) => {
  let db: EngineDb;
  let cwd: string;

  beforeAll(async () => {
    db = await createEngineDb(engine, 'report_notify');
    cwd = mkdtempSync(join(tmpdir(), 'taskrecon-notify-'));
    writeFileSync(
      join(cwd, 'taskrecon.config.yaml'),
      [
        `db: ${db.dsn}`,
        'report:',
        '  thresholds: { failureRate: { warn: off, crit: off }, oldestDue: { warn: off } }',
        '  notify:',
        `    - { kind: wecom, url: "${receiverUrl}/wecom?key=KEY" }`,
        `    - { kind: dingtalk, url: "${receiverUrl}/dingtalk?access_token=TOKEN", secret: ${SECRET} }`,
        '',
      ].join('\n'),
    );
    const init = await runCli(['init', '--db', db.dsn]);
    expect(init.code, init.stderr).toBe(0);
    // The state table is created by the first --notify run, not only by init.
    await db.run('DROP TABLE taskrecon_notify');
    // One stuck task (stuck ≥ 1: WARNING) and one failed coupon task to name in the alert.
    await db.run(`INSERT INTO async_task (biz_type, biz_id, event_id, status, last_error, created_at, updated_at) VALUES
      ('sms', 'order-7', 'evt-stuck', 1, NULL, ${db.at(-3600)}, ${db.at(-1800)}),
      ('coupon', 'order-9', 'evt-failed', 3, 'HTTP 503 from coupon-svc', ${db.at(-600)}, ${db.at(-300)})`);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const report = async (...args: string[]) => {
    const result = await runJson<ReportJson>(['report', '--notify', ...args], { cwd });
    assertMatchesSchema('report', result.json);
    return result;
  };

  it('creates its state table on demand, and sends a new breach once to each target, signed, naming biz type, biz_id, event_id and error', async () => {
    const { code, json } = await report();
    expect(code).toBe(1);
    expect(outcomes(json)).toEqual(['wecom:sent:new', 'dingtalk:sent:new']);
    expect(json.notifications[0]?.target).toBe(`${receiverUrl}/wecom?key=***`);
    expect(received.map((r) => r.path).sort()).toEqual(['/dingtalk', '/wecom']);
    const wecom = received.find((r) => r.path === '/wecom')?.body as { markdown: { content: string } };
    expect(wecom.markdown.content).toContain('[taskrecon] WARNING async-task: stuck 1 >= 1 (warn)');
    expect(wecom.markdown.content).toContain(
      'coupon: 1 failed in window, 1 awaiting action — biz_id `order-9`, event_id `evt-failed`: HTTP 503 from coupon-svc',
    );
    const ding = received.find((r) => r.path === '/dingtalk');
    const timestamp = ding?.query.get('timestamp') as string;
    expect(ding?.query.get('access_token')).toBe('TOKEN');
    expect(ding?.query.get('sign')).toBe(
      createHmac('sha256', SECRET).update(`${timestamp}\n${SECRET}`).digest('base64'),
    );
    expect(Math.abs(Number(timestamp) - Date.now())).toBeLessThan(60_000);
    const [table] = await db.rows<{ n: number }>('SELECT COUNT(*) AS n FROM taskrecon_notify');
    expect(Number(table?.n)).toBe(2);
  });

  it('does not repeat the same breach on the next run', async () => {
    const { code, json } = await report();
    expect(code).toBe(1);
    expect(outcomes(json)).toEqual(['wecom:suppressed:cooldown', 'dingtalk:suppressed:cooldown']);
    expect(received).toEqual([]);
  });

  it('notifies again when the level changes, and once more when it clears', async () => {
    const critical = await report('--threshold', 'stuck.crit=1');
    expect(critical.code).toBe(2);
    expect(outcomes(critical.json)).toEqual(['wecom:sent:changed', 'dingtalk:sent:changed']);
    expect(received).toHaveLength(2);
    received = [];
    const again = await report('--threshold', 'stuck.crit=1');
    expect(outcomes(again.json)).toEqual(['wecom:suppressed:cooldown', 'dingtalk:suppressed:cooldown']);
    expect(received).toHaveLength(0);
    const cleared = await report('--threshold', 'stuck.warn=off');
    expect(cleared.code).toBe(0);
    expect(outcomes(cleared.json)).toEqual(['wecom:sent:recovered', 'dingtalk:sent:recovered']);
    expect(
      (received.find((r) => r.path === '/wecom')?.body as { markdown: { content: string } }).markdown.content,
    ).toContain('[taskrecon] RECOVERED');
    received = [];
    const quiet = await report('--threshold', 'stuck.warn=off');
    expect(outcomes(quiet.json)).toEqual(['wecom:suppressed:ok', 'dingtalk:suppressed:ok']);
    expect(received).toHaveLength(0);
  });

  it('repeats a persisting breach with --notify-cooldown 0', async () => {
    await report(); // back to WARNING: "new" after the recovery
    received = [];
    const { json } = await report('--notify-cooldown', '0s');
    expect(outcomes(json)).toEqual(['wecom:sent:repeat', 'dingtalk:sent:repeat']);
    expect(received).toHaveLength(2);
  });

  it('gives up on a webhook that never answers, reports it, keeps the exit code, and retries it next run', async () => {
    const started = Date.now();
    const hung = await runJson<ReportJson>(
      ['report', '--webhook', `slack=${silentUrl}/services/T1/B1/hang`, '--notify-timeout', '700ms'],
      { cwd },
    );
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(hung.code).toBe(1);
    expect(hung.json.notifications).toEqual([
      expect.objectContaining({
        kind: 'slack',
        outcome: 'failed',
        reason: 'new',
        error: 'no answer within 700 ms',
      }),
    ]);
    expect(hung.stderr).toContain('webhook slack');
    const retried = await runJson<ReportJson>(
      ['report', '--webhook', `slack=${silentUrl}/services/T1/B1/hang`, '--notify-timeout', '300ms'],
      { cwd },
    );
    expect(retried.json.notifications[0]).toMatchObject({ outcome: 'failed', reason: 'new' });
  });
});

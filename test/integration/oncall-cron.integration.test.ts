import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

// The README's crontab, run line by line through sh as cron would, on a healthy and a broken system.
const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');

function crontabLines(): string[] {
  const block = /```cron\n([\s\S]*?)```/.exec(README)?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.split(/\s+/).slice(5).join(' '));
}

interface Sandbox {
  dir: string;
  log: string;
  textfile: string;
}

function sandbox(name: string, config: string[]): Sandbox {
  const dir = mkdtempSync(join(tmpdir(), `taskrecon-cron-${name}-`));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  mkdirSync(join(dir, 'log'));
  mkdirSync(join(dir, 'textfile'));
  writeFileSync(join(bin, 'taskrecon'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(join(bin, 'taskrecon'), 0o755);
  writeFileSync(join(dir, 'taskrecon.config.yaml'), `${config.join('\n')}\n`);
  return { dir, log: join(dir, 'log'), textfile: join(dir, 'textfile') };
}

/** One crontab command through `sh -c` in the sandbox: what cron would mail is its stdout and stderr. */
function runLine(
  box: Sandbox,
  line: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const command = line
    .replaceAll('/var/log/taskrecon/', `${box.log}/`)
    .replaceAll('/var/lib/node_exporter/textfile/', `${box.textfile}/`);
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], {
      cwd: box.dir,
      env: { ...process.env, PATH: `${join(box.dir, 'bin')}:${process.env.PATH ?? ''}`, TASKRECON_DB: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let healthy: TestSchema;
let broken: TestSchema;
let hook: Server;
let hookUrl: string;
const received: string[] = [];

const insertTasks = async (schema: TestSchema, rows: Array<[string, number, string | null]>) => {
  const values = rows.map(
    ([biz, status, error], i) =>
      `('${biz}', 'B${i}', 'evt-${biz}-${i}', ${status}, ${status === 3 ? 8 : 0}, NOW() - INTERVAL 1 MINUTE, ${error === null ? 'NULL' : `'${error}'`}, NOW() - INTERVAL 5 MINUTE, NOW() - INTERVAL 4 MINUTE)`,
  );
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, next_retry_time, last_error, created_at, updated_at) VALUES ${values.join(',')}`,
  );
};

beforeAll(async () => {
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push(body);
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/hook`;
  healthy = await createTestSchema('oncall_cron_ok');
  broken = await createTestSchema('oncall_cron_bad');
  for (const schema of [healthy, broken]) {
    const init = await runCli(['init', '--db', schema.dsn]);
    expect(init.code, init.stderr).toBe(0);
  }
  // Healthy: work that succeeded, and two due tasks a working handler takes.
  await insertTasks(healthy, [
    ['coupon', 2, null],
    ['coupon', 2, null],
    ['points', 2, null],
    ['coupon', 0, null],
    ['points', 0, null],
  ]);
  // Broken: failures in the window, and due tasks whose handler is down.
  await insertTasks(broken, [
    ['coupon', 3, 'HTTP 503 from coupon-service'],
    ['coupon', 3, 'HTTP 503 from coupon-service'],
    ['coupon', 2, null],
    ['coupon', 0, null],
    ['points', 0, null],
  ]);
}, 60_000);

afterAll(async () => {
  await healthy?.drop();
  await broken?.drop();
  hook?.close();
});

const config = (schema: TestSchema | string, handler: string) => [
  `db: ${typeof schema === 'string' ? schema : schema.dsn}`,
  'handlers:',
  `  default: ${handler}`,
  'report:',
  '  notify:',
  `    - { kind: generic, url: "${hookUrl}" }`,
];

describe("the README's crontab", () => {
  const lines = crontabLines();

  it('has the three lines, each quiet', () => {
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).toMatch(/^taskrecon \S+ --quiet /);
  });

  it('is mail-silent on a healthy system: zero bytes on stdout and stderr from every line', async () => {
    const box = sandbox('ok', config(healthy, '{ type: mark-only }'));
    for (const line of lines) {
      const run = await runLine(box, line);
      expect({ line, code: run.code, stdout: run.stdout, stderr: run.stderr }).toEqual({
        line,
        code: 0,
        stdout: '',
        stderr: '',
      });
    }
    // The work was done: the due tasks ran, the log and the metrics file are written.
    const [rows] = await healthy.sql.query('SELECT COUNT(*) AS n FROM async_task WHERE status = 2');
    expect((rows as Array<{ n: number }>)[0]?.n).toBe(5);
    const log = readFileSync(join(box.log, 'redrive.log'), 'utf8').trim().split('\n');
    expect(JSON.parse(log.at(-1) as string)).toMatchObject({ event: 'run_summary', succeeded: 2 });
    const prom = parsePrometheusTextFormat(readFileSync(join(box.textfile, 'taskrecon.prom'), 'utf8'));
    expect(prom.find((f) => f.name === 'taskrecon_up')?.metrics[0]?.value).toBe('1');
    expect(received).toEqual([]);
  }, 60_000);

  it('on a broken system prints the alert text where cron mails it, and sends the alert; the metrics line writes its file silently', async () => {
    const box = sandbox('bad', config(broken, '{ type: http, url: "http://127.0.0.1:1/tasks" }'));
    const runs = [];
    for (const line of lines) runs.push(await runLine(box, line));
    const [redrive, prometheus, notify] = runs;
    // Every attempt failed: exit 1 and why.
    expect(redrive?.code).toBe(1);
    expect(redrive?.stdout).toContain('claimed');
    expect(redrive?.stdout).toMatch(/why 2 attempts did not succeed\n\s+2\s+.*ECONNREFUSED/);
    // The metrics file was written: Prometheus alerts on it, cron mails nothing.
    expect(prometheus).toEqual({ code: 0, stdout: '', stderr: '' });
    const prom = parsePrometheusTextFormat(readFileSync(join(box.textfile, 'taskrecon.prom'), 'utf8'));
    expect(prom.find((f) => f.name === 'taskrecon_report_status')?.metrics[0]?.value).toBe('2');
    expect(notify?.code).toBe(2);
    expect(received.join('\n')).toContain('CRITICAL');
    expect(received.join('\n')).toContain('HTTP 503 from coupon-service');
  }, 60_000);

  it('when the database is down, every line says so and the metrics file says taskrecon_up 0', async () => {
    const box = sandbox('down', config('mysql://root@127.0.0.1:1/nothing', '{ type: mark-only }'));
    writeFileSync(
      join(box.textfile, 'taskrecon.prom'),
      'taskrecon_up{source="async-task"} 1\ntaskrecon_last_success_timestamp_seconds{source="async-task"} 1700000000\ntaskrecon_report_overall_due{source="async-task"} 41\n',
    );
    for (const line of lines) {
      const run = await runLine(box, line);
      expect(run.code, line).toBe(3);
      expect(run.stderr, line).toMatch(/Error: .*127\.0\.0\.1:1/);
    }
    const text = readFileSync(join(box.textfile, 'taskrecon.prom'), 'utf8');
    const families = parsePrometheusTextFormat(text);
    expect(families.find((f) => f.name === 'taskrecon_up')?.metrics[0]?.value).toBe('0');
    expect(
      families.find((f) => f.name === 'taskrecon_last_success_timestamp_seconds')?.metrics[0]?.value,
    ).toBe('1700000000');
    expect(text).not.toContain('taskrecon_report_overall_due');
  }, 60_000);
});

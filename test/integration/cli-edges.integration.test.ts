import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, runCli, runJson } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The edges of the command line an operator meets before any task: a pipe closed early, a
// mistyped command under --json, help that says what a command does, a zone without daylight saving.

/** Runs `taskrecon ARGS | head -1` in bash with pipefail: the CLI's own exit code and what head printed. */
function pipedIntoHead(
  args: string[],
  cwd?: string,
): Promise<{ code: number; head: string; stderr: string }> {
  const quoted = args.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const script = `"${process.execPath}" "${BIN}" ${quoted} | head -1; echo "exit=\${PIPESTATUS[0]}" >&2`;
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], {
      cwd,
      env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', () => {
      const code = Number(/exit=(\d+)/.exec(stderr)?.[1] ?? -1);
      resolve({ code, head: stdout, stderr });
    });
  });
}

describe('output piped into head', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'taskrecon-pipe-'));
    const dsn = `sqlite:${join(dir, 'tasks.sqlite')}`;
    writeFileSync(join(dir, 'taskrecon.config.yaml'), `db: ${dsn}\n`);
    expect((await runCli(['init'], { cwd: dir })).code).toBe(0);
    const sqlite = new Database(join(dir, 'tasks.sqlite'));
    const insert = sqlite.prepare(
      `INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, next_retry_time, last_error)
       VALUES ('coupon', ?, ?, '{}', 3, datetime('now'), 'cURL error 28: Operation timed out after 3000 milliseconds')`,
    );
    sqlite.transaction(() => {
      for (let i = 0; i < 5000; i++) insert.run(`PAY2026120500${i}`, `evt-coupon-${i}`);
    })();
    sqlite.close();
  });

  it('taskrecon --help | head -1 exits 0', async () => {
    const piped = await pipedIntoHead(['--help']);
    expect(piped.head).toMatch(/^Keeps database-backed async task systems honest/);
    expect(piped.code, piped.stderr).toBe(0);
  });

  it('a command whose output outgrows the pipe exits 0 when head stops reading', async () => {
    for (const format of ['csv', 'table', 'ndjson']) {
      const piped = await pipedIntoHead(
        ['scan', '--status', 'failed', '--limit', '0', '--format', format],
        dir,
      );
      expect(piped.head.length, format).toBeGreaterThan(0);
      expect(piped.code, `${format}: ${piped.stderr}`).toBe(0);
      expect(piped.stderr, format).not.toMatch(/EPIPE|Error/);
    }
  });
});

describe('a mistyped command', () => {
  it('answers --json with a JSON error and exit 3, suggesting the command meant', async () => {
    const result = await runJson<{ error: { code: string; message: string; hint: string; exit: number } }>([
      'scna',
      '--limit',
      '3',
    ]);
    expect(result.code).toBe(3);
    assertMatchesSchema('error', result.json);
    expect(result.json.error).toMatchObject({ code: 'USAGE', exit: 3 });
    expect(result.json.error.message).toContain("'scna' is not a taskrecon command");
    expect(result.json.error.hint).toContain("Did you mean 'scan'?");
  });

  it('without --json still explains itself on stderr, stdout empty', async () => {
    const result = await runCli(['reprot']);
    expect(result.code).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain("Did you mean 'report'?");
  });
});

describe('help', () => {
  it('does not call queues read-only: its move and recover change the broker', async () => {
    const top = await runCli(['--help']);
    const queues = await runCli(['queues', '--help']);
    expect(top.code).toBe(0);
    expect(queues.code).toBe(0);
    for (const text of [top.stdout, queues.stdout]) {
      expect(text).not.toMatch(/Read-only\./);
      // Paragraphs of help about queues (the --read-db flag's list of read-only commands names none).
      for (const paragraph of text.split(/\n\s*\n/).filter((p) => /queues/.test(p)))
        expect(paragraph).not.toMatch(/read-only|read only/i);
    }
    expect(queues.stdout).toMatch(/queues move/);
    expect(queues.stdout).toMatch(/queues recover/);
  });
});

describe('a MariaDB server without time zone tables', () => {
  let schema: TestSchema;
  let dir: string;

  beforeAll(async () => {
    schema = await createTestSchema('cli_edges_zones');
    dir = mkdtempSync(join(tmpdir(), 'taskrecon-zones-'));
    writeFileSync(join(dir, 'taskrecon.config.yaml'), `db: ${schema.dsn}\n`);
    expect((await runCli(['init'], { cwd: dir })).code).toBe(0);
    const [rows] = await schema.sql.query('SELECT COUNT(*) AS n FROM mysql.time_zone_name');
    // The check below needs a server that cannot resolve zone names (the test server has none loaded).
    expect(Number((rows as Array<{ n: number }>)[0]?.n)).toBe(0);
  });

  afterAll(async () => {
    await schema?.drop();
  });

  const scanWith = (zone: string) => {
    writeFileSync(join(dir, `${zone.replace('/', '-')}.yaml`), `db: ${schema.dsn}\nappTimeZone: ${zone}\n`);
    return runCli(['scan', '--config', `${zone.replace('/', '-')}.yaml`], { cwd: dir });
  };

  it('says nothing about the zone tables for zones without daylight saving (UTC, Asia/Shanghai)', async () => {
    for (const zone of ['UTC', 'Asia/Shanghai', 'Etc/UTC']) {
      const result = await scanWith(zone);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr, zone).not.toMatch(/time zone tables/);
    }
  });

  it('warns for a zone with daylight saving, which an offset cannot follow', async () => {
    const result = await scanWith('Europe/Berlin');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/no time zone tables.*Europe\/Berlin/);
  });
});

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../support/cli.js';
import { dropPrefix, openTestRedis } from '../support/redis.js';

// Every table on an 80-column terminal, on the demo sandbox's realistic values (PAY2026… biz ids,
// evt-coupon-PAY2026… event ids, ISO times, long HTTP errors): each line fits, ids, times and
// headings are whole (low-value columns are left out first, free text is what gets cut), and
// doctor's long messages wrap under themselves.

const COLUMNS = 80;
let cwd: string;
let redis: Redis;
const prefix = `tr_narrow_${randomBytes(3).toString('hex')}_`;
const CONFIG = ['--config', 'taskrecon-demo.config.yaml'];

/** What the CLI shows on a pseudo-terminal COLUMNS wide (colour off). */
async function onTerminal(args: string[]): Promise<string> {
  const script = [
    'import fcntl, os, pty, struct, sys, termios',
    'pid, fd = pty.fork()',
    'if pid == 0:',
    `    fcntl.ioctl(sys.stdout.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", 50, ${COLUMNS}, 0, 0))`,
    '    os.execvp(sys.argv[1], sys.argv[1:])',
    'out = b""',
    'while True:',
    '    try:',
    '        chunk = os.read(fd, 65536)',
    '    except OSError:',
    '        break',
    '    if not chunk:',
    '        break',
    '    out += chunk',
    'os.waitpid(pid, 0)',
    'sys.stdout.write(out.decode("utf-8", "replace"))',
  ].join('\n');
  const { stdout } = await promisify(execFile)('python3', ['-c', script, process.execPath, BIN, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '', COLUMNS: String(COLUMNS) },
    timeout: 120_000,
  });
  return stdout.replace(/\r/g, '');
}

interface Table {
  head: string[];
  rows: string[];
}

/** The tables of a command's output: heading lines above each rule, rows below it up to a blank line. */
function tablesOf(text: string): Table[] {
  const lines = text.split('\n');
  const tables: Table[] = [];
  lines.forEach((line, i) => {
    if (!/^─[─ ]*$/.test(line)) return;
    const head: string[] = [];
    for (
      let k = i - 1;
      k >= 0 && lines[k] !== '' && !/^\S.*:|^[A-Z]/.test(lines[k] ?? '') && head.length < 3;
      k--
    )
      head.unshift(lines[k] as string);
    if (head.length === 0 && i > 0) head.push(lines[i - 1] as string);
    const rows: string[] = [];
    // Up to a blank line, or the findings `queues` prints right under its table.
    for (let k = i + 1; k < lines.length && lines[k] !== '' && !/^(WARN|CRIT) /.test(lines[k] ?? ''); k++)
      rows.push(lines[k] as string);
    tables.push({ head, rows });
  });
  return tables;
}

/** The checks every table at 80 columns passes. */
function expectFits(command: string, text: string): Table[] {
  const tables = tablesOf(text);
  expect(tables.length, `${command} printed no table:\n${text}`).toBeGreaterThan(0);
  for (const table of tables) {
    for (const line of [...table.head, ...table.rows])
      expect(line.length, `${command}: wider than ${COLUMNS}:\n${line}`).toBeLessThanOrEqual(COLUMNS);
    for (const line of table.head) expect(line, `${command}: a heading was cut`).not.toContain('…');
    for (const line of table.rows) {
      // No id, count or time cut: nothing ends in a digit followed by the ellipsis.
      expect(line, `${command}: a number, id or time was cut`).not.toMatch(/\d…/);
      expect(line, `${command}: a biz id was cut`).not.toMatch(/PAY\d{0,11}…/);
      expect(line, `${command}: an event id was cut`).not.toMatch(/evt-[a-z]*-?(PAY\d*)?…/);
    }
  }
  return tables;
}

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'taskrecon-narrow-'));
  const built = await runCli(['demo', '--tasks', '600', '--no-tour'], { cwd, timeoutMs: 120_000 });
  expect(built.code, built.stderr).toBe(0);
  // Audit rows to list: a retry of three failed coupons, and diff's enqueue of the lost effects.
  const retried = await runCli(
    [
      'compensate',
      '--action',
      'retry',
      '--status',
      'failed',
      '--biz-type',
      'coupon',
      '--limit',
      '3',
      '--reason',
      'coupon service is back after the incident of the night',
      '--yes',
      ...CONFIG,
    ],
    { cwd },
  );
  expect(retried.code, retried.stderr).toBe(0);
  redis = await openTestRedis(0);
  const job = (uuid: string) => JSON.stringify({ uuid, displayName: 'App\\Jobs\\SendPaidSms', attempts: 0 });
  await redis.rpush(`${prefix}queues:notifications_high_priority_v2`, job('a'), job('b'));
  await redis.rpush(`${prefix}queues:notifications_high_priority_v1_before_deploy`, job('c'));
}, 180_000);

afterAll(async () => {
  if (redis) await dropPrefix(redis, prefix);
  redis?.disconnect();
});

describe(`tables on a ${COLUMNS}-column terminal`, () => {
  it('scan: every list keeps id, biz id and a time whole, leaving out status and attempts first', async () => {
    const text = await onTerminal(['scan', '--limit', '5', ...CONFIG]);
    const tables = expectFits('scan', text);
    const lists = tables.filter((t) => t.head.join(' ').includes('biz id'));
    expect(lists.length).toBeGreaterThan(0);
    for (const list of lists)
      for (const row of list.rows.filter((r) => /^\d/.test(r)))
        expect(row).toMatch(/ PAY\d{12} .*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
    expect(text).toMatch(/left out to fit 80 columns: status, attempts/);
  });

  it('report: headings stacked, not cut ("latency avg", not "laten…")', async () => {
    const text = await onTerminal(['report', ...CONFIG]);
    const [table] = expectFits('report', text);
    expect(table?.head.join('\n')).toMatch(/latency/);
    expect(table?.head.join('\n')).toMatch(/avg/);
    expect(table?.head.join('\n')).toMatch(/p95/);
  });

  it('audit: times to the second and task ids whole, who and why kept', async () => {
    const text = await onTerminal(['audit', '--limit', '10', ...CONFIG]);
    const [table] = expectFits('audit', text);
    expect(table?.head[0]).toMatch(/operator/);
    expect(table?.head[0]).toMatch(/reason/);
    for (const row of table?.rows.filter((r) => /^\d/.test(r)) ?? [])
      expect(row).toMatch(/^\d+\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\S+\s+retry\s+tasks#\d+\s+coupon service/);
  });

  it('diff: keys and event ids whole in the samples', async () => {
    const text = await onTerminal(['diff', '--samples', '3', ...CONFIG]);
    const tables = expectFits('diff', text);
    const samples = tables.filter((t) => t.head.join(' ').includes('finding'));
    expect(samples.length).toBeGreaterThan(0);
    expect(samples.flatMap((t) => t.rows).join('\n')).toMatch(/PAY\d{12}\s+evt-\w+-PAY\d{12}/);
  });

  it('show: the audit history fits, the time whole', async () => {
    const audited = await runCli(['audit', '--limit', '1', '--format', 'json', ...CONFIG], { cwd });
    const entry = (JSON.parse(audited.stdout) as { entries: Array<{ taskId: number }> }).entries[0];
    const text = await onTerminal(['show', String(entry?.taskId), ...CONFIG]);
    const [table] = expectFits('show', text);
    expect(table?.rows[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\s+\S+\s+retry\s+failed → pending/,
    );
  });

  it('sweep --dry-run and compensate --dry-run: ids whole', async () => {
    expectFits('sweep', await onTerminal(['sweep', '--dry-run', ...CONFIG]));
    expectFits(
      'compensate',
      await onTerminal([
        'compensate',
        '--action',
        'retry',
        '--status',
        'failed',
        '--limit',
        '5',
        '--dry-run',
        '--yes',
        ...CONFIG,
      ]),
    );
  });

  it('queues: long queue names whole', async () => {
    const text = await onTerminal([
      'queues',
      '--redis',
      'redis://127.0.0.1:6379/0',
      '--framework',
      'laravel',
      '--prefix',
      prefix,
      '--queue',
      'notifications_high_priority_v2',
    ]);
    expectFits('queues', text);
    expect(text).toMatch(/^notifications_high_priority_v1_before_deploy +\d/m);
    expect(text).toMatch(/^WARN unknown-queue redis\/notifications_high_priority_v1_before_deploy:/m);
    // The findings and their hints wrap under themselves.
    for (const line of text.split('\n').filter((l) => /^(WARN|CRIT) /.test(l)))
      expect(line.length, line).toBeLessThanOrEqual(COLUMNS);
  });

  it('doctor: a long message wraps under itself, each line within the terminal', async () => {
    const text = await onTerminal(['doctor', ...CONFIG]);
    const checks = text.split('\n\n')[1]?.split('\n') ?? [];
    expect(checks.length).toBeGreaterThan(5);
    // Within the terminal, but for a single word longer than a line (the sandbox's path), kept whole.
    for (const line of checks)
      if (!/^ +\S+$/.test(line)) expect(line.length, line).toBeLessThanOrEqual(COLUMNS);
    // The columns check names eleven mappings: more than a line, continued at the message's column.
    const at = checks.findIndex((l) => /^ok\s+columns\s+profile/.test(l));
    expect(at).toBeGreaterThanOrEqual(0);
    expect(checks[at + 1]).toMatch(/^ {25}\S/);
  });
});

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../support/cli.js';
import { createTestSchema, type TestSchema } from '../support/mariadb.js';

// Terminal and piped output an on-call engineer and a script can both rely on.
let schema: TestSchema;
const ERROR_TEXT =
  'line one\nline two\twith tab and a very long tail that a terminal table has to cut somewhere';

/** Runs the CLI on a pseudo-terminal `columns` wide and returns what it showed. */
async function onTerminal(args: string[], columns: number): Promise<string> {
  const script = [
    'import fcntl, os, pty, struct, sys, termios',
    'pid, fd = pty.fork()',
    'if pid == 0:',
    `    fcntl.ioctl(sys.stdout.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", 50, ${columns}, 0, 0))`,
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
    env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' },
    timeout: 60_000,
  });
  return stdout.replace(/\r/g, '');
}

beforeAll(async () => {
  schema = await createTestSchema('oncall_terminal');
  expect((await runCli(['init', '--db', schema.dsn])).code).toBe(0);
  const values = Array.from({ length: 1234 }, (_, i) => `('coupon', 'O${i}', 'e${i}', 2)`);
  await schema.sql.query(
    `INSERT INTO async_task (biz_type, biz_id, event_id, status) VALUES ${values.join(',')}`,
  );
  await schema.sql.query(
    "INSERT INTO async_task (biz_type, biz_id, event_id, status, retry_count, last_error) VALUES ('points', 'P1', 'ep1', 3, 8, ?)",
    [ERROR_TEXT],
  );
}, 60_000);

afterAll(async () => {
  await schema?.drop();
});

describe('piped text is machine-safe', () => {
  it('plain integers, TAB and newline escaped, the value in full, every row as many cells as its header', async () => {
    const run = await runCli(['scan', '--db', schema.dsn]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(/\d,\d{3}/);
    expect(run.stdout).toMatch(/\ball\t1235\t/);
    expect(run.stdout).toContain(
      'line one\\nline two\\twith tab and a very long tail that a terminal table has to cut somewhere',
    );
    const lines = run.stdout.split('\n');
    const failedHead = lines.findIndex((l) => l.startsWith('id\t'));
    expect(failedHead).toBeGreaterThan(-1);
    const cells = (lines[failedHead] as string).split('\t').length;
    expect((lines[failedHead + 1] as string).split('\t')).toHaveLength(cells);
  });

  it('colour only when asked for: --color or FORCE_COLOR when piped, none by default', async () => {
    const plain = await runCli(['scan', '--db', schema.dsn], { env: { NO_COLOR: '' } });
    expect(plain.stdout).not.toContain('\u001b[');
    const flag = await runCli(['scan', '--db', schema.dsn, '--color'], { env: { NO_COLOR: '' } });
    expect(flag.stdout).toContain('\u001b[');
    const forced = await runCli(['scan', '--db', schema.dsn], { env: { NO_COLOR: '', FORCE_COLOR: '1' } });
    expect(forced.stdout).toContain('\u001b[');
    const off = await runCli(['scan', '--db', schema.dsn, '--no-color'], {
      env: { NO_COLOR: '', FORCE_COLOR: '1' },
    });
    expect(off.stdout).not.toContain('\u001b[');
  });
});

describe('tables on a terminal', () => {
  it('fit its width, cut with …, one rule under the header and none under the rows; --wide shows all', async () => {
    const screen = await onTerminal(['scan', '--db', schema.dsn, '--status', 'failed'], 80);
    const tableLines = screen.split('\n').filter((l) => l.includes('points') || /^─/.test(l));
    expect(tableLines.length).toBeGreaterThan(1);
    // Every table (its header, its rule and its rows, up to the blank line after it) fits.
    const lines = screen.split('\n');
    const tables = lines.flatMap((l, i) =>
      /^─/.test(l) ? lines.slice(i - 1, i + lines.slice(i).findIndex((x) => x.trim() === '')) : [],
    );
    expect(tables.length).toBeGreaterThan(3);
    for (const line of tables) expect([...line].length, line).toBeLessThanOrEqual(80);
    expect(screen).toContain('…');
    expect(screen).not.toMatch(/[├┼┤]/);
    const wide = await onTerminal(['scan', '--db', schema.dsn, '--status', 'failed', '--wide'], 80);
    expect(wide).toContain('very long tail that a terminal table has to cut somewhere');
  });
});

describe('filters that cannot match, and typos', () => {
  it('warns on a --since in the future and an --until before --since', async () => {
    const future = await runCli(['scan', '--db', schema.dsn, '--since', '2099-01-01T00:00:00Z']);
    expect(future.stderr).toMatch(/--since 2099-01-01T00:00:00Z is in the future/);
    const inverted = await runCli(['scan', '--db', schema.dsn, '--since', '2h', '--until', '3h']);
    expect(inverted.stderr).toMatch(/--until .* is not after --since/);
    const fine = await runCli(['scan', '--db', schema.dsn, '--since', '3h', '--until', '2h']);
    expect(fine.stderr).not.toContain('warning');
  });

  it('warns on a --biz-type no row has, naming the known ones', async () => {
    const run = await runCli(['scan', '--db', schema.dsn, '--biz-type', 'copon']);
    expect(run.stderr).toContain(
      '--biz-type copon: no task has this biz type; biz types in the table: coupon, points',
    );
    expect(run.stderr).toContain('did you mean coupon?');
    const known = await runCli(['report', '--db', schema.dsn, '--biz-type', 'coupon']);
    expect(known.stderr).not.toContain('no task has this biz type');
  });

  it('a mistyped command or flag gets "did you mean" and exit 3; -h is --help', async () => {
    const command = await runCli(['scna']);
    expect(command.code).toBe(3);
    expect(command.stderr).toContain("Did you mean 'scan'?");
    const flag = await runCli(['scan', '--db', schema.dsn, '--limt', '5']);
    expect(flag.code).toBe(3);
    expect(flag.stderr).toContain('Did you mean --limit?');
    const help = await runCli(['scan', '-h']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('USAGE');
  });
});

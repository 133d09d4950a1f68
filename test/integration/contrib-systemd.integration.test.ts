import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../support/cli.js';

// contrib/systemd/: the units pass `systemd-analyze verify` (with ExecStart pointing at a real
// taskrecon: a wrapper around the built CLI), are hardened (systemd-analyze security, offline),
// run on the schedule they say, and the sysusers and tmpfiles files create the user, the config
// directory and the textfile directory's ACL in a scratch root.

const CONTRIB = fileURLToPath(new URL('../../contrib/systemd/', import.meta.url));
const UNITS = [
  'taskrecon-redrive.service',
  'taskrecon-redrive.timer',
  'taskrecon-report.service',
  'taskrecon-report.timer',
];
let unitDir: string;

function run(command: string, args: string[]): { code: number | null; out: string; err: string } {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

/** `systemd-analyze verify` of these files: clean means exit 0 and nothing on stderr (warnings included). */
function verify(files: string[]): { clean: boolean; err: string } {
  const result = run('systemd-analyze', ['verify', '--man=no', ...files]);
  return { clean: result.code === 0 && result.err.trim() === '', err: result.err };
}

/** The units copied to `dir` with ExecStart pointing at `binary`, each file passed through `edit`. */
function writeUnits(
  dir: string,
  binary: string,
  edit: (name: string, text: string) => string = (_, t) => t,
): void {
  for (const name of UNITS) {
    const text = readFileSync(join(CONTRIB, name), 'utf8').replaceAll('/usr/local/bin/taskrecon', binary);
    writeFileSync(join(dir, name), edit(name, text));
  }
}

function directives(name: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of readFileSync(join(CONTRIB, name), 'utf8').split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match) out.set(match[1]!, [...(out.get(match[1]!) ?? []), match[2]!]);
  }
  return out;
}

beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-systemd-'));
  const wrapper = join(dir, 'taskrecon');
  writeFileSync(wrapper, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`);
  chmodSync(wrapper, 0o755);
  expect(run(wrapper, ['--version']).out).toMatch(/^taskrecon\/\d+\.\d+\.\d+ /);
  unitDir = join(dir, 'units');
  mkdirSync(unitDir);
  writeUnits(unitDir, wrapper);
});

describe('systemd-analyze', () => {
  it('verify accepts the units, without a warning', () => {
    expect(
      readdirSync(CONTRIB)
        .filter((f) => /\.(service|timer)$/.test(f))
        .sort(),
    ).toEqual([...UNITS].sort());
    const result = verify(UNITS.map((name) => join(unitDir, name)));
    expect(result.err).toBe('');
    expect(result.clean).toBe(true);
  });

  it('security rates both services well hardened (exposure at most 2 of 10)', () => {
    for (const name of ['taskrecon-redrive.service', 'taskrecon-report.service']) {
      const result = run('systemd-analyze', ['security', '--offline=yes', '--no-pager', join(unitDir, name)]);
      const match = /Overall exposure level for \S+: (\d+\.\d+)/.exec(result.out);
      expect(match, result.out + result.err).not.toBeNull();
      expect(Number(match![1]), `${name}:\n${result.out}`).toBeLessThanOrEqual(2);
    }
  });

  it('verify rejects a misspelt setting, a missing binary and a bad schedule', () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskrecon-systemd-bad-'));
    writeUnits(dir, join(unitDir, '..', 'taskrecon'), (name, text) =>
      name === 'taskrecon-redrive.service'
        ? text.replace('ProtectSystem=strict', 'ProtectSytem=strict')
        : text,
    );
    expect(verify([join(dir, 'taskrecon-redrive.service')]).err).toContain("Unknown key 'ProtectSytem'");
    const missing = mkdtempSync(join(tmpdir(), 'taskrecon-systemd-missing-'));
    writeUnits(missing, join(missing, 'no-such-taskrecon'));
    expect(verify([join(missing, 'taskrecon-report.service')]).err).toContain('is not executable');
    const timer = mkdtempSync(join(tmpdir(), 'taskrecon-systemd-timer-'));
    writeUnits(timer, join(unitDir, '..', 'taskrecon'), (name, text) =>
      text.replace('OnCalendar=minutely', 'OnCalendar=every minute'),
    );
    expect(verify([join(timer, 'taskrecon-redrive.timer')]).clean).toBe(false);
  });
});

describe('what the units say', () => {
  it('redrive every minute, report every 2 minutes, both started by timers.target', () => {
    expect(directives('taskrecon-redrive.timer').get('OnCalendar')).toEqual(['minutely']);
    expect(directives('taskrecon-report.timer').get('OnCalendar')).toEqual(['*:0/2']);
    for (const timer of ['taskrecon-redrive.timer', 'taskrecon-report.timer'])
      expect(directives(timer).get('WantedBy')).toEqual(['timers.target']);
    const next = run('systemd-analyze', ['calendar', '--iterations=2', '*:0/2']);
    expect(next.code, next.err).toBe(0);
  });

  it('run redrive and report, as a user of their own, read-only, with loopback only unless allowed', () => {
    const redrive = directives('taskrecon-redrive.service');
    const report = directives('taskrecon-report.service');
    expect(redrive.get('ExecStart')?.[0]).toMatch(/^\/usr\/local\/bin\/taskrecon redrive /);
    expect(report.get('ExecStart')?.[0]).toMatch(
      /^\/usr\/local\/bin\/taskrecon report .*--format prometheus --output \/var\/lib\/prometheus\/node-exporter\/taskrecon\.prom$/,
    );
    expect(report.get('SuccessExitStatus')).toEqual(['1 2']);
    for (const unit of [redrive, report]) {
      expect(unit.get('User')).toEqual(['taskrecon']);
      expect(unit.get('ProtectSystem')).toEqual(['strict']);
      expect(unit.get('NoNewPrivileges')).toEqual(['yes']);
      expect(unit.get('CapabilityBoundingSet')).toEqual(['']);
      expect(unit.get('RestrictAddressFamilies')).toEqual(['AF_UNIX AF_INET AF_INET6']);
      expect(unit.get('IPAddressDeny')).toEqual(['any']);
      expect(unit.get('IPAddressAllow')).toEqual(['localhost']);
    }
    expect(redrive.get('ReadWritePaths')).toBeUndefined();
    expect(report.get('ReadWritePaths')).toEqual(['/var/lib/prometheus/node-exporter']);
  });
});

describe('sysusers and tmpfiles, applied to a scratch root', () => {
  it('create the taskrecon user, its config directory and write access to the textfile directory', () => {
    const root = mkdtempSync(join(tmpdir(), 'taskrecon-root-'));
    mkdirSync(join(root, 'etc'));
    for (const file of ['passwd', 'group', 'shadow', 'gshadow']) writeFileSync(join(root, 'etc', file), '');
    const users = run('systemd-sysusers', [`--root=${root}`, join(CONTRIB, 'taskrecon.sysusers')]);
    expect(users.code, users.err).toBe(0);
    const passwd = readFileSync(join(root, 'etc', 'passwd'), 'utf8');
    const user = /^taskrecon:x:(\d+):(\d+):[^:]*:\/var\/lib\/taskrecon:\/usr\/sbin\/nologin$/m.exec(passwd);
    expect(user, passwd).not.toBeNull();

    mkdirSync(join(root, 'var/lib/prometheus/node-exporter'), { recursive: true });
    // The ACL names a user this machine's own user database must know: apply it for `nobody`.
    const conf = join(root, 'taskrecon.conf');
    writeFileSync(
      conf,
      readFileSync(join(CONTRIB, 'taskrecon.tmpfiles'), 'utf8').replace('u:taskrecon:', 'u:nobody:'),
    );
    const files = run('systemd-tmpfiles', [`--root=${root}`, '--create', conf]);
    expect(files.code, files.err).toBe(0);
    const configDir = spawnSync('stat', ['-c', '%a %U %g', join(root, 'etc/taskrecon')], {
      encoding: 'utf8',
    });
    expect(configDir.stdout.trim()).toBe(`750 root ${user![2]}`);
    // The directory's access ACL: a user entry for nobody (65534) with rwx.
    const acl = spawnSync(
      'python3',
      [
        '-c',
        'import os,struct,sys;d=os.getxattr(sys.argv[1],"system.posix_acl_access");' +
          'print(" ".join("%d:%o:%d"%struct.unpack_from("<HHI",d,4+8*i) for i in range((len(d)-4)//8)))',
        join(root, 'var/lib/prometheus/node-exporter'),
      ],
      { encoding: 'utf8' },
    );
    expect(acl.stdout.trim().split(' '), acl.stderr).toContain('2:7:65534');
  });
});

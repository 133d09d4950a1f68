import { execFileSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg, { type Client } from 'pg';
import { serverPort } from './ports.js';

/**
 * A throw-away PostgreSQL cluster of the test's own: `initdb` into a temp dir with scram-sha-256
 * authentication and a password, started on a free loopback port with its socket in that dir, so a
 * test can refuse a wrong password and take the server down (which the shared server allows
 * neither). `startPgStandby` makes a streaming replica of one (`pg_basebackup -R`) on another
 * port. The binaries are Debian's (`/usr/lib/postgresql/<version>/bin`, the newest version); as
 * root they run as the `postgres` OS user, who owns the dir. `destroy()` stops the postmaster by
 * its PID and removes the dir.
 */
export interface PgCluster {
  port: number;
  user: string;
  password: string;
  /** DSN of a database on the cluster, with the given password (the right one by default). */
  dsn(database?: string, password?: string): string;
  /** An admin client (the cluster's user, right password) to a database on the cluster. */
  connect(database?: string): Promise<Client>;
  /** Starts the postmaster (again) and waits until it accepts connections. */
  start(): void;
  /** Takes the server down at once, as a crash does: `pg_ctl stop -m immediate`, no checkpoint. */
  crash(): void;
  /** The postmaster's PID, read from postmaster.pid, or undefined when it is not running. */
  pid(): number | undefined;
  destroy(): void;
}

/** Where a cluster lives: its temp dir (data, socket, log inside) and how it runs. */
interface ClusterFiles {
  bin: string;
  dir: string;
  user: string;
  password: string;
  settings?: Record<string, string>;
}

/** The `postgres` OS user's ids when the tests run as root, which owns every file a cluster writes. */
function ownDir(dir: string, paths: string[]): void {
  const ids = postgresIds();
  if (ids) for (const path of [dir, ...paths]) chownSync(path, ids.uid, ids.gid);
}

/** A temp dir with a socket dir and a log, owned by the OS user the server runs as. */
function clusterDir(): { dir: string; socket: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-pgcluster-'));
  const socket = join(dir, 'socket');
  const log = join(dir, 'postgres.log');
  mkdirSync(socket);
  writeFileSync(log, '');
  ownDir(dir, [socket, log]);
  return { dir, socket, log };
}

function debianBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const newest = versions[0];
  if (newest === undefined)
    throw new Error(
      `no PostgreSQL server binaries under ${root}/<version>/bin (Debian's postgresql package)`,
    );
  return join(root, newest, 'bin');
}

/** initdb and postgres refuse to run as root: run them as the `postgres` OS user then. */
function asPostgres(file: string, args: string[]): string {
  const root = process.getuid?.() === 0;
  const [command, argv] = root ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
  return execFileSync(command, argv, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  });
}

function postgresIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

export async function startPgCluster(
  options: { user?: string; password?: string; settings?: Record<string, string> } = {},
): Promise<PgCluster> {
  const bin = debianBinDir();
  const user = options.user ?? 'taskrecon';
  const password = options.password ?? 'cluster-pw-9f2c';
  const { dir } = clusterDir();
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  ownDir(dir, [pwfile]);
  asPostgres(join(bin, 'initdb'), [
    '-D',
    join(dir, 'data'),
    '--auth=scram-sha-256',
    `--username=${user}`,
    `--pwfile=${pwfile}`,
    '--encoding=UTF8',
    '--no-sync',
  ]);
  return runCluster({
    bin,
    dir,
    user,
    password,
    ...(options.settings ? { settings: options.settings } : {}),
  });
}

/**
 * A streaming replica of `primary` on another loopback port: `pg_basebackup -R` (the base backup
 * and its WAL, `standby.signal` and `primary_conninfo` with the primary's password) into a temp
 * dir of its own (a fast checkpoint: a spread one waits minutes), started as a hot standby. Same
 * user and password as the primary.
 */
export async function startPgStandby(primary: PgCluster): Promise<PgCluster> {
  const bin = debianBinDir();
  const { dir } = clusterDir();
  const conninfo = `host=127.0.0.1 port=${primary.port} user=${primary.user} password=${primary.password}`;
  asPostgres(join(bin, 'pg_basebackup'), [
    '-d',
    conninfo,
    '-D',
    join(dir, 'data'),
    '-R',
    '-X',
    'stream',
    '--checkpoint=fast',
    '--no-sync',
  ]);
  return runCluster({ bin, dir, user: primary.user, password: primary.password });
}

/** Starts the cluster whose data is in `files.dir`/data on a free loopback port; removes the dir when it will not start. */
async function runCluster(files: ClusterFiles): Promise<PgCluster> {
  const { bin, dir, user, password } = files;
  const data = join(dir, 'data');
  const socket = join(dir, 'socket');
  const log = join(dir, 'postgres.log');
  const port = await serverPort();
  const settings = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: socket,
    fsync: 'off',
    ...files.settings,
  };
  const serverOptions = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');

  const cluster: PgCluster = {
    port,
    user,
    password,
    dsn(database = 'postgres', pw = password) {
      return `postgres://${user}:${encodeURIComponent(pw)}@127.0.0.1:${port}/${database}`;
    },
    async connect(database = 'postgres') {
      const client = new pg.Client({ connectionString: cluster.dsn(database) });
      await client.connect();
      await client.query(`SELECT set_config('TimeZone', 'UTC', false)`);
      return client;
    },
    start() {
      asPostgres(join(bin, 'pg_ctl'), [
        'start',
        '-D',
        data,
        '-l',
        log,
        '-w',
        '-t',
        '60',
        '-o',
        serverOptions,
      ]);
    },
    crash() {
      asPostgres(join(bin, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w', '-t', '60']);
    },
    pid() {
      const file = join(data, 'postmaster.pid');
      if (!existsSync(file)) return undefined;
      const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
      try {
        process.kill(pid, 0);
        return pid;
      } catch {
        return undefined;
      }
    },
    destroy() {
      const pid = cluster.pid();
      if (pid !== undefined) {
        try {
          cluster.crash();
        } catch {
          process.kill(pid, 'SIGKILL');
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    cluster.start();
  } catch (error) {
    const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the throw-away PostgreSQL cluster did not start: ${String(error)}\n${text}`, {
      cause: error,
    });
  }
  return cluster;
}

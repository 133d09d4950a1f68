import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { TEST_SERVER } from './mariadb.js';
import { serverPort } from './ports.js';

export * from './shard-seed.js';
export * from './shard-sql.js';
export * from './shard-truth.js';

/** A MariaDB server a test reaches on loopback as root: the machine's, or one it started. */
export interface MariadbEndpoint {
  engine: 'mysql';
  host: string;
  port: number;
  /** DSN of `database` on this server, for `db:` in a config or --db. */
  dsn(database: string): string;
  /** A fresh admin connection (multiple statements, date strings); the caller ends it. */
  connect(database?: string): Promise<mysql.Connection>;
}

/** A throw-away `mariadbd` on a free loopback port, its datadir under a temp directory. */
export interface MariadbServer extends MariadbEndpoint {
  /** The running process's id (changes on restart). */
  readonly pid: number;
  /** The server's temp directory (datadir, socket, error log). */
  readonly dir: string;
  /** True while the process runs (a paused server still runs). */
  readonly running: boolean;
  /** SIGTERM, then waits for the exit (SIGKILL after 15 s). The datadir stays for restart(). */
  stop(): Promise<void>;
  /** SIGKILL, then waits for the exit: a crashed server. */
  kill(): Promise<void>;
  /** SIGSTOP: the port stays open but nothing answers (a hung server). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** Starts the stopped or killed server again on the same port and datadir. */
  restart(): Promise<void>;
  /** Stops the server if it runs and deletes its temp directory. */
  destroy(): Promise<void>;
}

export interface StartOptions {
  /** InnoDB buffer pool in MiB (default 32). */
  bufferPoolMb?: number;
  /** Extra mariadbd options, e.g. `--general-log=1`. */
  extraArgs?: string[];
  /** Bounded wait for each server to accept connections (default 20 s). */
  startupMs?: number;
}

const ADMIN = { user: 'root', multipleStatements: true, dateStrings: true, supportBigNumbers: true };

function endpoint(host: string, port: number, dsn: (database: string) => string): MariadbEndpoint {
  return {
    engine: 'mysql',
    host,
    port,
    dsn,
    connect: (database) => mysql.createConnection({ ...ADMIN, host, port, database }),
  };
}

/** The machine's server (TASKRECON_TEST_DB, else 127.0.0.1:3306 as root), as an endpoint. */
export function machineMariadb(): MariadbEndpoint {
  const url = new URL(TEST_SERVER);
  const port = Number(url.port || 3306);
  const dsn = (database: string) => {
    const u = new URL(TEST_SERVER);
    u.pathname = `/${database}`;
    return u.toString();
  };
  return {
    ...endpoint(url.hostname, port, dsn),
    connect: async (database) => {
      const u = new URL(dsn(database ?? ''));
      if (!database) u.pathname = '';
      return mysql.createConnection({ ...ADMIN, uri: u.toString() });
    },
  };
}

function logTail(log: string): string {
  return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').slice(-12).join('\n') : '(no log)';
}

const HOW_TO =
  'The shard tests start their own mariadbd (apt-get install mariadb-server provides mariadbd and mariadb-install-db)';

/** One fresh datadir made by mariadb-install-db; the others start from copies of it. */
function installDatadir(datadir: string, options: StartOptions): void {
  const install = spawnSync(
    'mariadb-install-db',
    [
      '--no-defaults',
      `--datadir=${datadir}`,
      '--user=root',
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      '--innodb-log-file-size=8M',
      `--innodb-buffer-pool-size=${options.bufferPoolMb ?? 32}M`,
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  if (install.error || install.status !== 0)
    throw new Error(
      `mariadb-install-db failed (${install.error?.message ?? `exit ${String(install.status)}`}). ${HOW_TO}.\n${install.stderr ?? ''}`,
    );
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });
}

/** Polls with the mysql2 driver until the server answers, the process exits, or the time is up. */
async function waitReady(child: ChildProcess, port: number, log: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let gone = false;
  void exited(child).then(() => (gone = true));
  for (;;) {
    try {
      const conn = await mysql.createConnection({ ...ADMIN, host: '127.0.0.1', port, connectTimeout: 2000 });
      await conn.end();
      return;
    } catch (error) {
      if (gone)
        throw new Error(`mariadbd on 127.0.0.1:${port} exited while starting. ${HOW_TO}.\n${logTail(log)}`);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(
          `mariadbd on 127.0.0.1:${port} did not accept connections within ${ms} ms: ${String(error)}\n${logTail(log)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Leaves no server behind when the test process ends without its afterAll. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

async function startOne(dir: string, template: string, options: StartOptions): Promise<MariadbServer> {
  const datadir = join(dir, 'data');
  cpSync(template, datadir, { recursive: true });
  const log = join(dir, 'error.log');
  let port = await serverPort();
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    const proc = spawn(
      '/usr/sbin/mariadbd',
      [
        '--no-defaults',
        '--user=root',
        `--datadir=${datadir}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(dir, 'mariadbd.sock')}`,
        `--pid-file=${join(dir, 'mariadbd.pid')}`,
        `--log-error=${log}`,
        '--skip-name-resolve',
        '--skip-log-bin',
        '--innodb-log-file-size=8M',
        `--innodb-buffer-pool-size=${options.bufferPoolMb ?? 32}M`,
        ...(options.extraArgs ?? []),
      ],
      { stdio: 'ignore' },
    );
    live.add(proc);
    void exited(proc).then(() => live.delete(proc));
    child = proc;
    await waitReady(proc, port, log, options.startupMs ?? 20_000);
  };
  // The port is free when drawn; another process may still take it first: draw again then.
  for (let attempt = 1; ; attempt++) {
    try {
      await launch();
      break;
    } catch (error) {
      const bindFailed = /Bind on TCP\/IP port|Address already in use/.test(logTail(log));
      if (!bindFailed || attempt >= 3) throw error;
      port = await serverPort();
    }
  }
  const current = () => child as ChildProcess;
  const signal = async (sig: NodeJS.Signals, graceMs: number) => {
    const proc = current();
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    if (sig === 'SIGTERM') proc.kill('SIGCONT');
    proc.kill(sig);
    const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    await exited(proc);
    clearTimeout(timer);
  };
  const server: MariadbServer = {
    ...endpoint('127.0.0.1', port, (database) => `mysql://root@127.0.0.1:${port}/${database}`),
    get pid() {
      return current().pid ?? -1;
    },
    dir,
    get running() {
      return current().exitCode === null && current().signalCode === null;
    },
    stop: () => signal('SIGTERM', 15_000),
    kill: () => signal('SIGKILL', 15_000),
    pause: () => void current().kill('SIGSTOP'),
    resume: () => void current().kill('SIGCONT'),
    async restart() {
      if (server.running) throw new Error(`mariadbd on port ${port} still runs: stop() or kill() it first`);
      await launch();
    },
    async destroy() {
      await signal('SIGTERM', 15_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

/**
 * Starts `count` throw-away MariaDB servers at once, root without a password on loopback ports,
 * each with its own datadir (copies of one fresh `mariadb-install-db` datadir). A server that
 * cannot start fails the call with its error log and what to install; the others are destroyed.
 */
export async function startMariadbServers(
  count: number,
  options: StartOptions = {},
): Promise<MariadbServer[]> {
  installExitHook();
  const root = mkdtempSync(join(tmpdir(), 'taskrecon-shards-'));
  const template = join(root, 'template');
  try {
    installDatadir(template, options);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  const started = await Promise.allSettled(
    Array.from({ length: count }, (_, i) => startOne(join(root, `server${i}`), template, options)),
  );
  const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await stopMariadbServers(servers);
    rmSync(root, { recursive: true, force: true });
    throw failed.reason;
  }
  rmSync(template, { recursive: true, force: true });
  return servers;
}

/** Destroys every server (stop, then delete its directory) and the shared temp directory. */
export async function stopMariadbServers(servers: MariadbServer[]): Promise<void> {
  await Promise.all(servers.map((s) => s.destroy()));
  const roots = new Set(servers.map((s) => join(s.dir, '..')));
  for (const root of roots) rmSync(root, { recursive: true, force: true });
}

/** Resolves true when nothing accepts a MySQL connection on 127.0.0.1:`port` (refused or timed out). */
export async function refusesConnections(port: number, timeoutMs = 2000): Promise<boolean> {
  try {
    const conn = await mysql.createConnection({
      ...ADMIN,
      host: '127.0.0.1',
      port,
      connectTimeout: timeoutMs,
    });
    await conn.end();
    return false;
  } catch {
    return true;
  }
}

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { serverPort } from './ports.js';

/**
 * A throw-away primary and replica: two `mariadbd` processes on free loopback ports, each with its
 * own datadir under the temp directory, the primary writing a binlog and the replica replicating
 * from it. The test server on 3306 is left alone (its binlog may be off and restarting it is not
 * ours to do). Fails with what to install when mariadbd cannot start; never skips.
 */
export interface ReplicaPair {
  primaryDsn(database: string): string;
  replicaDsn(database: string): string;
  primary: mysql.Connection;
  replica: mysql.Connection;
  /** Waits until the replica has applied everything the primary wrote so far. */
  caughtUp(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const STARTUP_MS = 30_000;

function startupError(what: string, log: string): Error {
  const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-15).join('\n') : '(no log)';
  return new Error(
    `${what}. The replica tests start their own mariadbd (apt-get install mariadb-server provides mariadbd and mariadb-install-db).\n${tail}`,
  );
}

async function waitForServer(port: number, log: string): Promise<mysql.Connection> {
  const deadline = Date.now() + STARTUP_MS;
  for (;;) {
    try {
      return await mysql.createConnection({
        host: '127.0.0.1',
        port,
        user: 'root',
        multipleStatements: true,
      });
    } catch (error) {
      if (Date.now() > deadline)
        throw startupError(`mariadbd on 127.0.0.1:${port} did not start: ${String(error)}`, log);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

export async function startReplicaPair(): Promise<ReplicaPair> {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-replica-'));
  const install = spawnSync(
    'mariadb-install-db',
    [
      '--no-defaults',
      `--datadir=${join(dir, 'primary')}`,
      '--user=root',
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
    ],
    { encoding: 'utf8' },
  );
  if (install.error || install.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `mariadb-install-db failed (${install.error?.message ?? `exit ${install.status}`}): install mariadb-server.\n${install.stderr ?? ''}`,
    );
  }
  // The replica starts from a copy of the fresh datadir, so both hold the same system tables.
  cpSync(join(dir, 'primary'), join(dir, 'replica'), { recursive: true });
  const children: ChildProcess[] = [];
  const start = (name: string, port: number, extra: string[]) => {
    const log = join(dir, `${name}.log`);
    const child = spawn(
      'mariadbd',
      [
        '--no-defaults',
        '--user=root',
        `--datadir=${join(dir, name)}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(dir, `${name}.sock`)}`,
        `--pid-file=${join(dir, `${name}.pid`)}`,
        `--log-error=${log}`,
        '--skip-name-resolve',
        '--innodb-buffer-pool-size=32M',
        ...extra,
      ],
      { stdio: 'ignore' },
    );
    children.push(child);
    return log;
  };
  const [primaryPort, replicaPort] = [await serverPort(), await serverPort()];
  const primaryLog = start('primary', primaryPort, [
    '--server-id=1',
    `--log-bin=${join(dir, 'primary', 'binlog')}`,
  ]);
  const replicaLog = start('replica', replicaPort, ['--server-id=2', '--skip-log-bin']);
  const stop = async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            const timer = setTimeout(() => {
              child.kill('SIGKILL');
              resolve();
            }, 15_000);
            child.on('exit', () => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  let primary: mysql.Connection;
  let replica: mysql.Connection;
  try {
    primary = await waitForServer(primaryPort, primaryLog);
    replica = await waitForServer(replicaPort, replicaLog);
    const [status] = await primary.query('SHOW MASTER STATUS');
    const at = (status as Array<{ File: string; Position: number }>)[0];
    if (!at) throw startupError('the primary writes no binlog', primaryLog);
    await replica.query(
      `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primaryPort}, MASTER_USER='root', MASTER_PASSWORD='', ` +
        `MASTER_LOG_FILE=?, MASTER_LOG_POS=?, MASTER_CONNECT_RETRY=1`,
      [at.File, at.Position],
    );
    await replica.query('START SLAVE');
  } catch (error) {
    await stop();
    throw error;
  }
  const dsn = (port: number, database: string) => `mysql://root@127.0.0.1:${port}/${database}`;
  return {
    primaryDsn: (database) => dsn(primaryPort, database),
    replicaDsn: (database) => dsn(replicaPort, database),
    primary,
    replica,
    async caughtUp(timeoutMs = 20_000) {
      const [rows] = await primary.query('SHOW MASTER STATUS');
      const target = (rows as Array<{ File: string; Position: number }>)[0];
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const [s] = await replica.query('SHOW SLAVE STATUS');
        const r = (s as Array<Record<string, unknown>>)[0];
        if (
          r &&
          r.Relay_Master_Log_File === target?.File &&
          Number(r.Exec_Master_Log_Pos) >= Number(target?.Position)
        )
          return;
        if (Date.now() > deadline) throw new Error(`the replica did not catch up: ${JSON.stringify(r)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop() {
      await Promise.allSettled([primary.end(), replica.end()]);
      await stop();
    },
  };
}

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type mysql from 'mysql2/promise';
import { ensureAptPackages } from '../apt.js';

/**
 * The real Laravel 8 queue (Debian's php-laravel-framework) driven from tests: `dispatch.php` pushes
 * EffectJobs with Laravel's own RedisQueue (ready, `later()` delayed, and abandoned reservations),
 * `worker.php` runs Laravel's own Illuminate\Queue\Worker as `queue:work --stop-when-empty` does.
 * Each job run writes one row into the `effects` table, keyed by the job's payload id.
 */

export const LARAVEL_PACKAGES = ['php-cli', 'php-redis', 'php-mysql', 'php-laravel-framework'] as const;

/** Laravel's database queue on PostgreSQL also needs PDO's pgsql driver. */
export const LARAVEL_PGSQL_PACKAGES = [...LARAVEL_PACKAGES, 'php-pgsql'] as const;

const HERE = fileURLToPath(new URL('.', import.meta.url));

/** Installs PHP and Laravel when missing (a fresh CI machine has none of them). */
export function ensureLaravel(options: { pgsql?: boolean } = {}): void {
  ensureAptPackages(options.pgsql ? LARAVEL_PGSQL_PACKAGES : LARAVEL_PACKAGES);
}

export interface LaravelTarget {
  redisDb: number;
  /** Laravel's `database.redis.options.prefix` (e.g. `laravel_database_`). */
  prefix: string;
  /** The queue connection's `retry_after`, seconds. */
  retryAfter: number;
  /** MariaDB schema holding the `effects` table (unless `pgsql` is given). */
  mysqlDatabase?: string;
  mysqlHost?: string;
  mysqlPort?: number;
  /**
   * A PostgreSQL database (user postgres) holding Laravel's `jobs` and `failed_jobs` tables: the
   * queue connection `database` is Laravel's DatabaseQueue on it, and the effect rows go there.
   */
  pgsql?: { database: string; host?: string; port?: number; user?: string };
  /** Jobs whose label is in the `failing` table throw (needs that table in the effects database). */
  failing?: boolean;
}

export interface DispatchedIds {
  ready: string[];
  delayed: string[];
  reserved: string[];
}

export interface WorkerRun {
  processed: number;
  failed: number;
  status: number;
  stderr: string;
}

export interface EffectRow {
  job_id: string;
  label: string;
  queue: string;
  attempts: number;
}

/** Creates the table the EffectJob writes into. */
export async function createEffectsTable(sql: mysql.Connection): Promise<void> {
  await sql.query(
    `CREATE TABLE effects (
       id BIGINT AUTO_INCREMENT PRIMARY KEY,
       job_id VARCHAR(64) NOT NULL,
       label VARCHAR(64) NOT NULL,
       queue VARCHAR(191) NOT NULL,
       attempts INT NOT NULL,
       KEY (job_id)
     )`,
  );
}

export async function effectRows(sql: mysql.Connection): Promise<EffectRow[]> {
  const [rows] = await sql.query('SELECT job_id, label, queue, attempts FROM effects ORDER BY id');
  return rows as EffectRow[];
}

/** Pushes jobs with Laravel's RedisQueue; returns their payload ids by kind. */
export async function laravelDispatch(
  target: LaravelTarget,
  options: {
    queue: string;
    connection?: 'redis' | 'database';
    ready?: number;
    delayed?: number;
    delaySeconds?: number;
    reserved?: number;
  },
): Promise<DispatchedIds> {
  const args = [
    `--connection=${options.connection ?? 'redis'}`,
    `--queue=${options.queue}`,
    `--ready=${options.ready ?? 0}`,
    `--delayed=${options.delayed ?? 0}`,
    `--delay=${options.delaySeconds ?? 2}`,
    `--reserved=${options.reserved ?? 0}`,
  ];
  const { code, stdout, stderr } = await runPhp('dispatch.php', args, target);
  if (code !== 0) throw new Error(`laravel dispatch.php exited ${code}: ${stderr}`);
  return JSON.parse(stdout.trim()) as DispatchedIds;
}

/** Runs Laravel's own worker on a queue until a pop finds it empty. */
export async function laravelWork(
  target: LaravelTarget,
  options: { queue: string; connection?: 'redis' | 'database'; tries?: number },
): Promise<WorkerRun> {
  const args = [
    `--connection=${options.connection ?? 'redis'}`,
    `--queue=${options.queue}`,
    `--tries=${options.tries ?? 3}`,
  ];
  const { code, stdout, stderr } = await runPhp('worker.php', args, target);
  const line = stdout.trim().split('\n').pop() ?? '';
  if (code !== 0 || !line.startsWith('{'))
    throw new Error(`laravel worker.php exited ${code}: ${stdout}\n${stderr}`);
  return { ...(JSON.parse(line) as Omit<WorkerRun, 'stderr'>), stderr };
}

function runPhp(
  script: string,
  args: string[],
  target: LaravelTarget,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LARAVEL_REDIS_HOST: '127.0.0.1',
    LARAVEL_REDIS_PORT: '6379',
    LARAVEL_REDIS_DB: String(target.redisDb),
    LARAVEL_REDIS_PREFIX: target.prefix,
    LARAVEL_RETRY_AFTER: String(target.retryAfter),
    LARAVEL_MYSQL_DSN: target.mysqlDatabase
      ? `mysql:host=${target.mysqlHost ?? '127.0.0.1'};port=${target.mysqlPort ?? 3306};dbname=${target.mysqlDatabase}`
      : '',
    LARAVEL_MYSQL_USER: 'root',
    LARAVEL_PGSQL_DATABASE: target.pgsql?.database ?? '',
    LARAVEL_PGSQL_HOST: target.pgsql?.host ?? '127.0.0.1',
    LARAVEL_PGSQL_PORT: String(target.pgsql?.port ?? 5432),
    LARAVEL_PGSQL_USER: target.pgsql?.user ?? 'postgres',
    LARAVEL_FAILING: target.failing ? '1' : '',
  };
  return new Promise((resolve, reject) => {
    const child = spawn('php', [`${HERE}${script}`, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

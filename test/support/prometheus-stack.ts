import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { ensureAptPackages } from './apt.js';
import { serverPort } from './ports.js';

/**
 * Debian's node_exporter (textfile collector only) and Prometheus, started by a test on loopback
 * ports of their own, data and logs under `dir`, stopped by PID. Prometheus scrapes the exporter
 * every second and evaluates `ruleFiles` every second.
 */
export interface PrometheusStack {
  exporterUrl: string;
  prometheusUrl: string;
  /** The tail of both logs, for an assertion message. */
  logs(): string;
  stop(): Promise<void>;
}

function installed(name: string): boolean {
  const result = spawnSync('dpkg-query', ['-W', '-f=${Status}', name], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.includes('install ok installed');
}

/**
 * Installs Debian's packages when missing. On a machine whose policy lets packages start their
 * services, a package installed here starts its daemon on the default port (0.0.0.0:9090, :9100):
 * that daemon, started by this install, is stopped again, so nothing stays listening for others.
 */
export function ensurePrometheusPackages(packages: readonly string[]): void {
  const missing = packages.filter((name) => !installed(name));
  ensureAptPackages(packages);
  for (const name of missing) {
    const script = `/etc/init.d/${name}`;
    if (spawnSync(script, ['status'], { stdio: 'ignore' }).status === 0)
      spawnSync(script, ['stop'], { stdio: 'ignore', timeout: 60_000 });
  }
}

async function waitForHttp(url: string, child: ChildProcess, log: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (child.exitCode !== null)
      throw new Error(`${url}: the process exited (${child.exitCode}):\n${tail(log)}`);
    try {
      const response = await request(url);
      await response.body.text();
      if (response.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer within ${ms} ms:\n${tail(log)}`);
}

function tail(path: string): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '';
  }
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    process.kill(child.pid as number, 'SIGTERM');
  });
}

export async function startPrometheusStack(
  dir: string,
  textfileDir: string,
  ruleFiles: string[],
): Promise<PrometheusStack> {
  const exporterPort = await serverPort();
  const exporterLog = join(dir, 'node-exporter.log');
  const exporter = spawn(
    'prometheus-node-exporter',
    [
      `--web.listen-address=127.0.0.1:${exporterPort}`,
      '--collector.disable-defaults',
      '--collector.textfile',
      `--collector.textfile.directory=${textfileDir}`,
    ],
    { stdio: ['ignore', openSync(exporterLog, 'a'), openSync(exporterLog, 'a')] },
  );
  const exporterUrl = `http://127.0.0.1:${exporterPort}`;
  const children: ChildProcess[] = [exporter];
  const stop = async () => {
    for (const child of children.reverse()) await stopProcess(child);
  };
  try {
    await waitForHttp(`${exporterUrl}/metrics`, exporter, exporterLog);
    const prometheusPort = await serverPort();
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global:',
        '  scrape_interval: 1s',
        '  evaluation_interval: 1s',
        'rule_files:',
        ...ruleFiles.map((file) => `  - ${JSON.stringify(file)}`),
        'scrape_configs:',
        '  - job_name: node',
        '    static_configs:',
        `      - targets: ['127.0.0.1:${exporterPort}']`,
        '',
      ].join('\n'),
    );
    const prometheusLog = join(dir, 'prometheus.log');
    const prometheus = spawn(
      'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${prometheusPort}`,
      ],
      { stdio: ['ignore', openSync(prometheusLog, 'a'), openSync(prometheusLog, 'a')] },
    );
    children.push(prometheus);
    const prometheusUrl = `http://127.0.0.1:${prometheusPort}`;
    await waitForHttp(`${prometheusUrl}/-/ready`, prometheus, prometheusLog);
    return {
      exporterUrl,
      prometheusUrl,
      logs: () => `node_exporter:\n${tail(exporterLog)}\nprometheus:\n${tail(prometheusLog)}`,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** GET a Prometheus API path and return its `data`. */
export async function prometheusApi<T>(base: string, path: string): Promise<T> {
  const response = await request(`${base}${path}`);
  const body = (await response.body.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? body.status}`);
  return body.data;
}

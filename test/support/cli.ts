import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  input?: string;
  timeoutMs?: number;
}

/** Runs the built CLI as a real process, the way a user, cron or CI does. */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 50_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Runs the CLI with --json and parses stdout. */
export async function runJson<T = unknown>(
  args: string[],
  options: CliOptions = {},
): Promise<{ code: number | null; json: T; stderr: string }> {
  const result = await runCli([...args, '--json'], options);
  let json: T;
  try {
    json = JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
  return { code: result.code, json, stderr: result.stderr };
}

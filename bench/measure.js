/**
 * Runs one child process and measures it: wall time (high-resolution, from spawn to exit) and peak
 * resident memory (VmHWM, from `/usr/bin/time -f %M` when present, else by polling /proc/PID/status).
 */
import { spawn } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const GNU_TIME = '/usr/bin/time';
const useGnuTime = existsSync(GNU_TIME);

/**
 * @param {string} command
 * @param {string[]} args
 * @param {{stdout?: string, env?: Record<string,string>, cwd?: string}} options stdout: a file path ('/dev/null' default)
 * @returns {Promise<{seconds: number, cpuSeconds: number, peakRssMb: number, code: number, stderr: string}>} cpuSeconds: user + system (NaN without GNU time)
 */
export async function measure(command, args, options = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-bench-'));
  const timeFile = join(dir, 'time');
  const out = openSync(options.stdout ?? '/dev/null', 'w');
  const argv = useGnuTime
    ? [GNU_TIME, ['-f', '%M %U %S', '-o', timeFile, command, ...args]]
    : [command, args];
  const started = performance.now();
  const child = spawn(argv[0], argv[1], {
    stdio: ['ignore', out, 'pipe'],
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  let polledKb = 0;
  const poll = useGnuTime
    ? undefined
    : setInterval(() => {
        try {
          const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
          if (m) polledKb = Math.max(polledKb, Number(m[1]));
        } catch {
          // the process has ended
        }
      }, 20);
  const code = await new Promise((resolve) => child.on('close', (c) => resolve(c ?? 1)));
  const seconds = (performance.now() - started) / 1000;
  if (poll) clearInterval(poll);
  closeSync(out);
  let peakKb = polledKb;
  let cpuSeconds = Number.NaN;
  if (useGnuTime) {
    const lines = readFileSync(timeFile, 'utf8').trim().split('\n');
    const [maxRss, user, system] = (lines[lines.length - 1] ?? '').split(' ').map(Number);
    peakKb = maxRss ?? Number.NaN;
    cpuSeconds = (user ?? Number.NaN) + (system ?? Number.NaN);
  }
  rmSync(dir, { recursive: true, force: true });
  return { seconds, cpuSeconds, peakRssMb: peakKb / 1024, code, stderr };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export const rssMethod = useGnuTime
  ? '`/usr/bin/time -f %M` (peak RSS of the child)'
  : 'VmHWM of /proc/PID/status polled every 20 ms';

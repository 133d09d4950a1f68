import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { chromium, type Browser } from 'playwright-core';
import { ensureAptPackages } from './apt.js';
import { BIN } from './cli.js';

/** A `taskrecon console` process started by a test, as a user starts it. */
export interface ConsoleProcess {
  /** The first stdout line: the URL with the one-time token. */
  url: string;
  /** The first stdout line as printed (with --json: the JSON line). */
  firstLine: string;
  /** http://127.0.0.1:PORT */
  origin: string;
  port: number;
  child: ChildProcessWithoutNullStreams;
  stderr(): string;
  /** Ctrl-C, and the exit code. */
  stop(): Promise<number | null>;
}

export async function startConsoleCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<ConsoleProcess> {
  const child = spawn(process.execPath, [BIN, 'console', ...args], {
    cwd: options.cwd,
    env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '', ...options.env },
  });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`console did not start:\n${err}`)), 30_000);
    createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
    void exited.then((code) => reject(new Error(`console exited ${code} before printing its URL:\n${err}`)));
  });
  const link = url.startsWith('{') ? (JSON.parse(url) as { url: string }).url : url;
  const parsed = new URL(link);
  return {
    url: link,
    firstLine: url,
    origin: parsed.origin,
    port: Number(parsed.port),
    child,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

/** Debian's Chromium through playwright-core, installed with apt when missing. */
export async function launchChromium(): Promise<Browser> {
  ensureAptPackages(['chromium']);
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/** Signs a plain HTTP client in: spends the token, returns the session cookie header. */
export async function signIn(consoleUrl: string): Promise<string> {
  const res = await fetch(consoleUrl, { redirect: 'manual' });
  const cookie = res.headers.get('set-cookie');
  if (res.status !== 303 || !cookie) throw new Error(`sign-in failed: ${res.status}`);
  return cookie.split(';')[0] as string;
}

/** The CSRF token of a page's forms. */
export function csrfOf(pageHtml: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(pageHtml);
  if (!m) throw new Error('no CSRF field on the page');
  return m[1] as string;
}

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BIN } from './cli.js';

const DRIVER = fileURLToPath(new URL('./compensate-pty.py', import.meta.url));

/** What the pseudo-terminal showed, the exit code, and the step whose prompt never appeared. */
export interface Screen {
  code: number | null;
  screen: string;
  failedStep: number | null;
}

/** Runs `compensate` in a pseudo-terminal in `cwd`, answering each prompt as it appears. */
export async function driveCompensate(
  cwd: string,
  args: string[],
  steps: Array<{ expect: string; send: string }>,
): Promise<Screen> {
  const { stdout } = await promisify(execFile)(
    'python3',
    [DRIVER, JSON.stringify(steps), '--', process.execPath, BIN, 'compensate', ...args],
    {
      cwd,
      env: { ...process.env, NO_COLOR: '1', TASKRECON_DB: '' },
      timeout: 120_000,
      maxBuffer: 10_000_000,
    },
  );
  return JSON.parse(stdout) as Screen;
}

import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { usageError } from './errors.js';

/** Files a command writes (reports, JUnit, state): checked before any work, written atomically. */

/** Checks before any work that `--output FILE` can be written: its directory exists. */
export function checkOutputPath(path: string, flag = '--output', what = 'file'): string {
  const full = resolve(path);
  const dir = dirname(full);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw usageError(
      `${flag}: the directory ${dir} does not exist`,
      `Create it first, or write the ${what} elsewhere.`,
    );
  }
  return full;
}

/**
 * Writes a file atomically, as node_exporter's textfile collector needs: a temporary file in the
 * same directory (same file system), flushed to disk, then renamed over the target. A reader sees
 * the old file or the new one, never half of one; on failure the temporary file is removed.
 */
export function writeFileAtomic(path: string, content: string): void {
  const full = resolve(path);
  const temp = join(dirname(full), `.${basename(full)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(temp, 'w', 0o644);
    writeSync(fd, content);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, full);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    if (existsSync(temp)) unlinkSync(temp);
    throw error;
  }
}

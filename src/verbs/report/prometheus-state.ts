import { existsSync, readFileSync } from 'node:fs';
import { renderPrometheusDown } from '../../render/prometheus.js';
import { writeFileAtomic } from '../../files.js';

const LAST_SUCCESS = /^taskrecon_last_success_timestamp_seconds(?:\{[^}]*\})?\s+(\d+(?:\.\d+)?)\s*$/m;

/** The last success time written into a previous `--output` file (null: none, or unreadable). */
export function lastSuccessFromFile(path: string): number | null {
  try {
    if (!existsSync(path)) return null;
    const match = LAST_SUCCESS.exec(readFileSync(path, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/**
 * A report that could not reach the database rewrites its Prometheus file with `taskrecon_up 0`,
 * keeping the last success time of the previous file, so no stale figures stay behind looking
 * current. Returns whether the file was written (a failure to write it must not hide the first error).
 */
export function writeDownFile(path: string, sourceName: () => string): boolean {
  try {
    writeFileAtomic(path, renderPrometheusDown(sourceName(), lastSuccessFromFile(path)));
    return true;
  } catch {
    return false;
  }
}

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Whether git ignores a path of the repository (exit 0 of `git check-ignore`). */
function ignored(path: string): boolean {
  try {
    execFileSync('git', ['check-ignore', '-q', path], { cwd: ROOT });
    return true;
  } catch {
    return false;
  }
}

describe('the demo tour leaves no untracked file in the repository', () => {
  it('ignores the sandbox, its config and the drill report the tour names', () => {
    for (const file of [
      'taskrecon-demo.sqlite',
      'taskrecon-demo.sqlite-wal',
      'taskrecon-demo.config.yaml',
      'drill-report.xml',
    ])
      expect(ignored(file), file).toBe(true);
    // Not everything: a real config file stays visible to git.
    expect(ignored('taskrecon.config.yaml')).toBe(false);
  });
});

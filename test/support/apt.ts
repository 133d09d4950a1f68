import { execFileSync, spawnSync } from 'node:child_process';

/**
 * Debian packages some integration tests need (Chromium for the console, PHP and Laravel for the
 * real framework queue, Prometheus and node_exporter for the shipped rules, zsh for completion).
 * The test setup installs them when missing, as root, waiting for the dpkg lock another test file
 * may hold (and trying again); when that cannot work it fails saying what to run.
 */
export function ensureAptPackages(packages: readonly string[]): void {
  const missing = packages.filter((name) => !installed(name));
  if (missing.length === 0) return;
  const lock = ['-o', 'DPkg::Lock::Timeout=600'];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // Two test files may install at once; a lock the other holds (the package lists' among them) fails
  // a run: try again, three times at most.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3 && missing.some((name) => !installed(name)); attempt++) {
    if (attempt > 0) execFileSync('sleep', ['15']);
    try {
      execFileSync('apt-get', [...lock, 'update'], { stdio: 'ignore', env, timeout: 600_000 });
      execFileSync('apt-get', [...lock, 'install', '-y', '--no-install-recommends', ...missing], {
        stdio: 'ignore',
        env,
        timeout: 1_200_000,
      });
    } catch (error) {
      lastError = error;
    }
  }
  const still = missing.filter((name) => !installed(name));
  if (still.length === 0) return;
  const why = lastError ? (lastError as Error).message : 'apt-get did not install them';
  throw new Error(
    `these tests need the Debian packages ${still.join(', ')} and could not install them ` +
      `(${why}). Install them with: apt-get update && apt-get install -y ${still.join(' ')}`,
  );
}

function installed(name: string): boolean {
  const result = spawnSync('dpkg-query', ['-W', '-f=${Status}', name], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.includes('install ok installed');
}

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Shell completion as a person gets it: bash runs the completion function the setup line installs
 * with COMP_WORDS set as bash would; zsh types the line and a TAB in a real interactive zsh on a
 * pseudo-terminal (zsh-complete.zsh). Each returns the matches offered, in order.
 */
const ZSH_COMPLETE = fileURLToPath(new URL('./zsh-complete.zsh', import.meta.url));

export function bashComplete(
  setupLine: string,
  words: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
): string[] {
  const quoted = words.map((w) => `'${w.replaceAll("'", "'\\''")}'`).join(' ');
  const script = `${setupLine}\nCOMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _taskrecon_autocomplete; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const result = spawnSync('bash', ['-c', script], { env, encoding: 'utf8', cwd, timeout: 30_000 });
  if (result.status !== 0) throw new Error(`bash completion failed: ${result.stderr}`);
  return result.stdout.split('\n').filter(Boolean);
}

export function zshComplete(
  functionsDir: string,
  line: string,
  env: NodeJS.ProcessEnv,
  cwd?: string,
): string[] {
  const result = spawnSync('zsh', ['-f', ZSH_COMPLETE, functionsDir, line], {
    env,
    encoding: 'utf8',
    cwd,
    timeout: 30_000,
  });
  if (result.status !== 0) throw new Error(`zsh completion failed (${result.status}): ${result.stderr}`);
  return result.stdout.split('\n').filter(Boolean);
}

import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { LoadedConfig } from './load.js';

export const CONFIG_FILE_NAMES = ['taskrecon.config.yaml', 'taskrecon.config.yml', 'taskrecon.config.json'];

/** Finds the config file upward from `cwd`: the first directory holding one of CONFIG_FILE_NAMES. */
export function findConfigFile(cwd: string): string | undefined {
  let dir = resolve(cwd);
  for (;;) {
    for (const name of CONFIG_FILE_NAMES) {
      const candidate = join(dir, name);
      if (existsSync(candidate)) return candidate;
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The config file to read: `explicitPath` (from --config) or the one found upward; undefined when there is none. */
export function configFileFor(explicitPath: string | undefined, cwd: string): string | undefined {
  return explicitPath ? resolve(cwd, explicitPath) : findConfigFile(cwd);
}

/**
 * The reader of config files (load.ts: the YAML parser and the schema, over a hundred modules),
 * imported only when there is a file to read, so a run given everything by flags starts without it.
 */
let reader: ((explicitPath: string | undefined, cwd: string) => LoadedConfig) | undefined;

/** Imports the config reader when `explicitPath` or a file found upward from `cwd` will need it. */
export async function prepareConfigReader(explicitPath: string | undefined, cwd: string): Promise<void> {
  if (reader || !configFileFor(explicitPath, cwd)) return;
  reader = (await import('./load.js')).loadConfig;
}

/**
 * The config (none is an empty config), read synchronously: the reader must have been prepared
 * when there is a file (BaseCommand does it before any command runs).
 */
export function readConfig(explicitPath: string | undefined, cwd: string): LoadedConfig {
  if (!configFileFor(explicitPath, cwd)) return { config: {}, path: undefined };
  if (!reader) throw new Error('the config reader was not prepared: await prepareConfigReader() first');
  return reader(explicitPath, cwd);
}

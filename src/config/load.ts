import { existsSync, readFileSync } from 'node:fs';
import { parseYaml } from '../core/yaml.js';
import type { z } from '../core/zod.js';
import { configError } from '../errors.js';
import { configSchema, type TaskreconConfig } from './schema.js';
import { configFileFor } from './find.js';
import { closest } from './suggest.js';

export { CONFIG_FILE_NAMES, findConfigFile } from './find.js';

export interface LoadedConfig {
  config: TaskreconConfig;
  /** The file it came from, or undefined when there is none. */
  path: string | undefined;
}

/** Loads and validates the config: `explicitPath` (from --config) or the one found upward; none is an empty config. */
export function loadConfig(explicitPath: string | undefined, cwd = process.cwd()): LoadedConfig {
  const path = configFileFor(explicitPath, cwd);
  if (!path) return { config: {}, path: undefined };
  if (!existsSync(path)) throw configError(`config file ${path} does not exist`, 'Check the --config path.');
  const text = readFileSync(path, 'utf8');
  let raw: unknown;
  try {
    raw = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw configError(
      `config file ${path} is not valid ${path.endsWith('.json') ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
    );
  }
  return { config: validateConfig(raw ?? {}, path), path };
}

export function validateConfig(raw: unknown, path: string): TaskreconConfig {
  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0] as z.core.$ZodIssue;
  const at = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] as string;
    const where = at ? `${at}.${key}` : key;
    const known = knownKeysAt(issue.path);
    const guess = closest(key, known);
    throw configError(
      `${path}: unknown key '${where}'`,
      guess ? `Did you mean '${guess}'?` : `Keys allowed here: ${known.join(', ')}.`,
    );
  }
  throw configError(
    `${path}: ${at || '(top level)'}: ${issue.message}`,
    'See the configuration reference in the README.',
  );
}

/** The keys the schema allows at a path, for "did you mean" hints. */
function knownKeysAt(path: PropertyKey[]): string[] {
  let schema: unknown = configSchema;
  const unwrap = (s: unknown): unknown => {
    for (;;) {
      const def = (s as { _zod?: { def?: Record<string, unknown> } })._zod?.def;
      if (!def) return s;
      if (def.type === 'optional' || def.type === 'nullable' || def.type === 'default') s = def.innerType;
      else return s;
    }
  };
  for (const segment of path) {
    schema = unwrap(schema);
    const def = (schema as { _zod: { def: Record<string, unknown> } })._zod.def;
    if (def.type === 'object') schema = (def.shape as Record<string, unknown>)[String(segment)];
    else if (def.type === 'record') schema = def.valueType;
    else if (def.type === 'array') schema = def.element;
    else if (def.type === 'union') return [];
    else return [];
  }
  schema = unwrap(schema);
  const def = (schema as { _zod?: { def: Record<string, unknown> } })._zod?.def;
  if (def?.type === 'union') {
    const keys = new Set<string>();
    for (const option of def.options as Array<{ _zod: { def: { shape?: Record<string, unknown> } } }>) {
      for (const k of Object.keys(option._zod.def.shape ?? {})) keys.add(k);
    }
    return [...keys];
  }
  return def?.type === 'object' ? Object.keys(def.shape as Record<string, unknown>) : [];
}

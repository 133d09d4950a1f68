import { readFileSync } from 'node:fs';
import { configError } from '../errors.js';
import type { BrokerConfig } from './brokers.js';

/**
 * Secrets kept out of the config file, as for the database DSN (`TASKRECON_DB`, `passwordFile`):
 * a broker's `url` from `urlEnv` (an environment variable) or `urlFile`, its password from
 * `passwordFile`; a webhook's `url` and `secret` likewise (`urlEnv`/`urlFile`,
 * `secretEnv`/`secretFile`). Read when the broker or webhook is used, so a variable another
 * command needs does not stop this one. A variable that is unset or a file that cannot be read
 * is exit 3 naming the key and how to fix it.
 */

/** One secret given inline, by an environment variable or by a file; undefined when none is given. */
export interface SecretForms {
  inline?: string;
  env?: string;
  file?: string;
}

/** The file's text without its trailing newline, as `passwordFile` reads it. */
export function readSecretFile(where: string, path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw configError(
      `${where}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      'Check the path (relative paths are relative to the working directory) and that this user may read it.',
    );
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '')
    throw configError(`${where}: ${path} is empty`, 'Write the secret into the file (one line).');
  return value;
}

/** The secret from whichever form is given. `key` is the config path of the inline form (brokers.x.url). */
export function resolveSecret(key: string, forms: SecretForms, env: NodeJS.ProcessEnv): string | undefined {
  if (forms.inline !== undefined) return forms.inline;
  if (forms.env !== undefined) {
    const value = env[forms.env];
    if (value === undefined || value === '')
      throw configError(
        `${key}Env: the environment variable ${forms.env} is not set`,
        `Export ${forms.env} for taskrecon (e.g. Environment= or EnvironmentFile= in its systemd unit), or give ${key.split('.').pop()} or ${key.split('.').pop()}File instead.`,
      );
    return value;
  }
  if (forms.file !== undefined) return readSecretFile(`${key}File`, forms.file);
  return undefined;
}

/** A URL with its password replaced (a URL-encoded password, as a DSN's). */
function withPassword(key: string, url: string, password: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw configError(`${key}: the URL is not a URL, so passwordFile cannot be put into it`);
  }
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/** A broker's config with its URL resolved from url, urlEnv or urlFile, and passwordFile applied. */
export function resolveBrokerUrl<T extends BrokerConfig>(
  name: string,
  config: T,
  env: NodeJS.ProcessEnv = process.env,
): T & { url: string } {
  const key = `brokers.${name}.url`;
  const url = resolveSecret(key, { inline: config.url, env: config.urlEnv, file: config.urlFile }, env);
  if (url === undefined)
    throw configError(
      `brokers.${name}: no url`,
      'Give the broker `url:`, `urlEnv: VARIABLE` (the URL in an environment variable) or `urlFile: PATH`.',
    );
  const password =
    config.passwordFile === undefined
      ? undefined
      : readSecretFile(`brokers.${name}.passwordFile`, config.passwordFile);
  return { ...config, url: password === undefined ? url : withPassword(key, url, password) };
}

import { hostname, userInfo } from 'node:os';

/** The environment variable naming the person who acts, for every command and the console alike. */
export const OPERATOR_ENV = 'TASKRECON_OPERATOR';

/**
 * Who acts, for the audit, when --operator is not given: TASKRECON_OPERATOR when set (one name for
 * the console and the CLI, so `audit --operator` finds one person), else OS user@host.
 */
export function defaultOperator(env: NodeJS.ProcessEnv = process.env): string {
  const named = env[OPERATOR_ENV]?.trim();
  if (named) return named;
  let user = env.USER ?? env.LOGNAME ?? 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (containers): the environment's name will do
  }
  return `${user}@${hostname()}`;
}

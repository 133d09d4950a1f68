import { hostname, userInfo } from 'node:os';

/** The environment variable naming the person who acts, for every command and the console alike. */
export const OPERATOR_ENV = 'TASKRECON_OPERATOR';

/**
 * Who acts, for the audit, when --operator is not given: TASKRECON_OPERATOR when set, else the
 * config's `operator:`, else OS user@host — one name for the console and every command, so
 * `audit --operator` finds one person.
 */
export function defaultOperator(env: NodeJS.ProcessEnv = process.env, configured?: string): string {
  const named = env[OPERATOR_ENV]?.trim() || configured?.trim();
  if (named) return named;
  let user = env.USER ?? env.LOGNAME ?? 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (containers): the environment's name will do
  }
  return `${user}@${hostname()}`;
}

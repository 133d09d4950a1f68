import { hostname, userInfo } from 'node:os';

/** OS user@host: who acts, for the audit, when --operator is not given. */
export function defaultOperator(): string {
  let user = process.env.USER ?? process.env.LOGNAME ?? 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (containers): the environment's name will do
  }
  return `${user}@${hostname()}`;
}

import { connect } from 'node:net';
import { usageError } from '../../errors.js';
import { controlDir, socketPath, socketPorts } from './paths.js';
import { LINK_REQUEST, type LinkAnswer } from './server.js';

const NO_CONSOLE_HINT = 'Start one with `taskrecon console` (as this user); it prints its first link itself.';

/** Which console to ask: the one on `port`, else the only one this user runs. */
function pickPort(dir: string, port: number): number {
  if (port > 0) return port;
  const ports = socketPorts(dir);
  if (ports.length === 0) throw usageError('no console is running for this user', NO_CONSOLE_HINT);
  if (ports.length > 1)
    throw usageError(
      `${ports.length} consoles are running (ports ${ports.sort((a, b) => a - b).join(', ')})`,
      'Say which with --port.',
    );
  return ports[0] as number;
}

/**
 * `console --link`: asks the running console, over its owner-only control socket, for a fresh
 * one-time sign-in link. Exit 3 when no console of this user runs (on `port`).
 */
export async function requestLink(port: number): Promise<LinkAnswer> {
  const dir = controlDir(process.env, false);
  const chosen = pickPort(dir, port);
  const text = await new Promise<string>((resolve, reject) => {
    const conn = connect(socketPath(dir, chosen));
    let answer = '';
    conn.setEncoding('utf8');
    conn.setTimeout(5_000, () => conn.destroy(new Error('the console did not answer within 5 s')));
    conn.on('connect', () => conn.write(`${LINK_REQUEST}\n`));
    conn.on('data', (chunk: string) => (answer += chunk));
    conn.on('end', () => resolve(answer));
    conn.on('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'ENOENT' || error.code === 'ECONNREFUSED'
          ? usageError(`no console is running on port ${chosen} for this user`, NO_CONSOLE_HINT)
          : error,
      ),
    );
  });
  const parsed = JSON.parse(text) as Partial<LinkAnswer> & { error?: string };
  if (typeof parsed.url !== 'string') throw new Error(`the console refused: ${parsed.error ?? text}`);
  return parsed as LinkAnswer;
}

import { lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { usageError } from '../../errors.js';

/** A running console's control socket is `console-PORT.sock` in the owner's control directory. */
const SOCKET = /^console-(\d+)\.sock$/;

function uid(): number {
  return process.getuid?.() ?? 0;
}

/**
 * The directory of this user's console control sockets: `$XDG_RUNTIME_DIR/taskrecon` (a directory
 * only its owner can enter), else `taskrecon-UID` in the temporary directory. Created owner-only; one
 * that is a link, belongs to someone else or lets others in is refused: whoever can reach a socket
 * there can sign a browser in.
 */
export function controlDir(env: NodeJS.ProcessEnv = process.env, create = true): string {
  const dir = env.XDG_RUNTIME_DIR
    ? join(env.XDG_RUNTIME_DIR, 'taskrecon')
    : join(tmpdir(), `taskrecon-${uid()}`);
  if (create) mkdirSync(dir, { recursive: true, mode: 0o700 });
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    return dir;
  }
  if (!st.isDirectory() || st.isSymbolicLink() || st.uid !== uid() || (st.mode & 0o077) !== 0)
    throw usageError(
      `${dir} is not a private directory of this user (owner, mode 700, no link)`,
      `Remove it (or chmod 700 it if it is yours); the console keeps its control socket there.`,
    );
  return dir;
}

/** The control socket of the console on `port`. */
export function socketPath(dir: string, port: number): string {
  return join(dir, `console-${port}.sock`);
}

/** The ports of the consoles with a control socket in `dir`. */
export function socketPorts(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((n) => {
    const m = SOCKET.exec(n);
    return m ? [Number(m[1])] : [];
  });
}

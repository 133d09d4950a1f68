import { maskDsnText } from '../db/dsn.js';

/**
 * Commands printed for the operator to paste carry the connection they ran with (`--config`,
 * `--db` with its password masked, `--source`, …), so the pasted command reaches the same table
 * instead of the default one.
 */
const CONNECTION_FLAGS = ['config', 'db', 'password-file', 'source', 'profile', 'table', 'read-db'] as const;

let connection: string[] = [];

/** Remembers the connection flags of this run (BaseCommand calls it once the flags are parsed). */
export function setPasteConnection(flags: Partial<Record<string, unknown>>): void {
  connection = [];
  for (const name of CONNECTION_FLAGS) {
    const value = flags[name];
    if (typeof value !== 'string' || value === '') continue;
    connection.push(
      `--${name}`,
      shellQuote(name === 'db' || name === 'read-db' ? maskDsnText(value) : value),
    );
  }
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./*-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** `taskrecon ARGS` with this run's connection flags (those ARGS do not already name). */
export function pasteCommand(args: string): string {
  const extra: string[] = [];
  for (let i = 0; i < connection.length; i += 2) {
    const flag = connection[i] as string;
    if (!new RegExp(`(^|\\s)${flag}(=|\\s|$)`).test(args)) extra.push(flag, connection[i + 1] as string);
  }
  return `taskrecon ${[args, ...extra].filter(Boolean).join(' ')}`;
}

/** Every `taskrecon …` command quoted in backticks in a message or hint, completed by `pasteCommand`. */
export function withPasteConnection(text: string): string {
  if (connection.length === 0) return text;
  return text.replace(/`taskrecon ([^`]*)`/g, (_, args: string) => `\`${pasteCommand(args.trim())}\``);
}

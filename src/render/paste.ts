import { maskDsnText } from '../db/dsn.js';

/**
 * Commands printed for the operator to paste carry the connection they ran with (`--config`,
 * `--db` with its password masked, `--source`, …, and for `queues` the `--broker` / `--redis` /
 * `--rabbitmq` it ran with), so the pasted command reaches the same table or broker instead of the
 * default one.
 */
const CONNECTION_FLAGS = ['config', 'db', 'password-file', 'source', 'profile', 'table', 'read-db'] as const;
/** The broker a run named: only `queues` and its subcommands take these, so only their commands get them. */
const BROKER_FLAGS = ['broker', 'redis', 'framework', 'prefix', 'lists', 'rabbitmq', 'api'] as const;
/** Flags whose value is a URL that may carry a password. */
const MASKED = new Set<string>(['db', 'read-db', 'redis', 'rabbitmq', 'api']);
/** The commands that take the broker flags: `queues`, `queues move`, `queues recover`. */
const TAKES_BROKER = /^queues(\s|$)/;

let connection: string[] = [];
let broker: string[] = [];

/** `--name value` pairs of the string flags among `names`, quoted for a shell, URLs masked. */
function pairs(flags: Partial<Record<string, unknown>>, names: readonly string[]): string[] {
  const out: string[] = [];
  for (const name of names) {
    const value = flags[name];
    if (typeof value !== 'string' || value === '') continue;
    out.push(`--${name}`, shellQuote(MASKED.has(name) ? maskDsnText(value) : value));
  }
  return out;
}

/** Remembers the connection (and broker) flags of this run (BaseCommand calls it once the flags are parsed). */
export function setPasteConnection(flags: Partial<Record<string, unknown>>): void {
  connection = pairs(flags, CONNECTION_FLAGS);
  broker = pairs(flags, BROKER_FLAGS);
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./*-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** `taskrecon ARGS` with this run's connection flags (those ARGS do not already name), and its broker flags for `queues`. */
export function pasteCommand(args: string): string {
  const flags = TAKES_BROKER.test(args) ? [...connection, ...broker] : connection;
  const extra: string[] = [];
  for (let i = 0; i < flags.length; i += 2) {
    const flag = flags[i] as string;
    if (!new RegExp(`(^|\\s)${flag}(=|\\s|$)`).test(args)) extra.push(flag, flags[i + 1] as string);
  }
  return `taskrecon ${[args, ...extra].filter(Boolean).join(' ')}`;
}

/** The command that lists one run's audit rows, with this run's connection. */
export function auditRunCommand(runId: string): string {
  return pasteCommand(`audit --run ${runId}`);
}

/** Every `taskrecon …` command quoted in backticks in a message or hint, completed by `pasteCommand`. */
export function withPasteConnection(text: string): string {
  if (connection.length === 0 && broker.length === 0) return text;
  return text.replace(/`taskrecon ([^`]*)`/g, (_, args: string) => `\`${pasteCommand(args.trim())}\``);
}

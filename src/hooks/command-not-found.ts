import type { Hook } from '@oclif/core';
import { closest } from '../config/suggest.js';
import { ExitCode } from '../errors.js';

/**
 * A mistyped command gets "did you mean", as mistyped config keys do, and exits 3 (usage) with a
 * pointer to the command list; nothing runs. Under --json the error is the JSON document every
 * command prints for its errors, on stdout.
 */
const hook: Hook.CommandNotFound = async function (options) {
  const ids = options.config.commandIDs.map((id) => id.replace(/:/g, ' '));
  const typed = options.id.replace(/:/g, ' ');
  const guess = closest(typed, ids);
  const message = `'${typed}' is not a taskrecon command.`;
  const hint = `${guess ? `Did you mean '${guess}'? ` : ''}See taskrecon --help for the list.`;
  if ((options.argv ?? []).includes('--json')) {
    const error = { code: 'USAGE', message, hint, exit: ExitCode.couldNotRun };
    process.stdout.write(`${JSON.stringify({ error }, null, 2)}\n`);
    this.exit(ExitCode.couldNotRun);
  }
  this.error(`${message} ${hint}`, { exit: ExitCode.couldNotRun });
};

export default hook;

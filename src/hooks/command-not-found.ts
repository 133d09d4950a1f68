import type { Hook } from '@oclif/core';
import { closest } from '../config/suggest.js';

/**
 * A mistyped command gets "did you mean", as mistyped config keys do, and exits 3 (usage) with a
 * pointer to the command list; nothing runs.
 */
const hook: Hook.CommandNotFound = async function (options) {
  const ids = options.config.commandIDs.map((id) => id.replace(/:/g, ' '));
  const typed = options.id.replace(/:/g, ' ');
  const guess = closest(typed, ids);
  const suggestion = guess ? ` Did you mean '${guess}'?` : '';
  this.error(`'${typed}' is not a taskrecon command.${suggestion} See taskrecon --help for the list.`, {
    exit: 3,
  });
};

export default hook;

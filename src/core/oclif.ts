/**
 * The parts of oclif taskrecon runs on: the runner bin/run.js starts, and what commands are built
 * from. `npm run build` replaces this module's output with one bundled file with its code cache
 * (scripts/bundle-libs.js): loading oclif's ~100 modules one by one, twice over (the runner's, then
 * the command's), was the larger part of every command's start-up. Everything of oclif a command
 * uses at run time comes from here, so the runner and the commands share one copy of it.
 */
export { run } from '@oclif/core/run';
export { flush } from '@oclif/core/flush';
export { handle } from '@oclif/core/handle';
export { settings } from '@oclif/core/settings';
export { Command } from '@oclif/core/command';
export { ExitError } from '@oclif/core/errors';
export * as Args from '@oclif/core/args';
export * as Flags from '@oclif/core/flags';

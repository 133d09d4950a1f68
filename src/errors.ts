/** The typed errors and exit codes live in core/, so the pure core can throw them; this is their public entry. */
export * from './core/errors.js';

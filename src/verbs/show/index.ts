/** show: one task in full, with its audit history. */
export * from './show.js';

/** redrive: claim what is due or stuck, run it through its handler, settle the outcome. */
export * from './redrive.js';

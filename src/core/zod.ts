/**
 * zod, as every schema of taskrecon imports it. `npm run build` replaces this module's output with
 * one bundled file (scripts/bundle-libs.js): resolving and loading zod's ~95 ES modules one by one
 * is a visible part of every command's start-up.
 */
export { z } from 'zod';

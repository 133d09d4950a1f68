/**
 * mysql2's promise API, as the MySQL engine imports it. `npm run build` replaces this module's
 * output with one bundled file (scripts/bundle-libs.js): mysql2's ~100 CommonJS modules are
 * otherwise resolved and read one by one at every command's start.
 */
export { default as mysql } from 'mysql2/promise';

/**
 * The YAML parser the configuration is read with. `npm run build` replaces this module's output
 * with one bundled file (scripts/bundle-libs.js), as for zod: ~70 modules fewer to load at start-up.
 */
export { parse as parseYaml } from 'yaml';

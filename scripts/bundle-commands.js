#!/usr/bin/env node
// Start-up: `scan` alone imports ~130 modules of dist/, and Node resolves, reads, compiles and
// links each one before the command runs. After tsc and bundle-libs.js, this bundles the files
// oclif loads by path — every command and hook — in place, in one build: what they share is split
// into dist/chunks/ (one copy of each module, whichever command runs), and each dynamic import is
// a chunk of its own, loaded when the code reaches it, as before. Packages and the bundled
// libraries' shims (bundle-libs.js) stay outside, loaded as they were. Without esbuild (an install
// without dev dependencies) the commands stay as tsc wrote them: the same behaviour, a slower start.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  process.stderr.write('bundle-commands: esbuild is not installed; the commands stay unbundled\n');
  process.exit(0);
}

/** The first line of a bundled command (so a second run over them does nothing). */
const MARK = '// Bundled by scripts/bundle-commands.js.';
/** The first line of a library shim (bundle-libs.js): kept outside the bundles, one copy per process. */
const SHIM = '// Built by scripts/bundle-libs.js';
/** Stands for the path from an output file to dist/ until the output's place is known. */
const DIST = '__TASKRECON_DIST__';
/** Stands for `import.meta.url` of the module it was written in (its dist/-relative path). */
const FILE_URL = '__TASKRECON_FILE_URL__';

const walk = (dir) =>
  existsSync(dir)
    ? readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? walk(path) : path.endsWith('.js') ? [path] : [];
      })
    : [];
const entries = [...walk(join(dist, 'commands')), ...walk(join(dist, 'hooks'))];
if (entries.length === 0) throw new Error('bundle-commands: no commands in dist/; run tsc first');
if (entries.some((file) => readFileSync(file, 'utf8').startsWith(MARK))) {
  process.stderr.write('bundle-commands: dist/ is bundled already (run tsc first to bundle again)\n');
  process.exit(0);
}
const posix = (path) => path.split(sep).join('/');
const shims = new Map();
const isShim = (file) => {
  if (!shims.has(file))
    shims.set(file, file === join(dist, 'core', 'bundled.js') || readFileSync(file, 'utf8').startsWith(SHIM));
  return shims.get(file);
};

const stayOutside = {
  name: 'stay-outside',
  setup(build) {
    // A shim (or its loader) is imported by the path from dist/, fixed for each output below.
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      const file = join(args.resolveDir, args.path);
      if (!file.startsWith(dist + sep) || !existsSync(file) || !isShim(file)) return undefined;
      return { path: `${DIST}/${posix(relative(dist, file))}`, external: true };
    });
    // import.meta.url names the module's own file: in a chunk it would name the chunk.
    build.onLoad({ filter: /\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta.url')) return undefined;
      const self = JSON.stringify(posix(relative(dist, args.path)));
      return { contents: text.replaceAll('import.meta.url', `${FILE_URL}(${self})`), loader: 'js' };
    });
  },
};

rmSync(join(dist, 'chunks'), { recursive: true, force: true });
const result = await esbuild.build({
  entryPoints: entries,
  outdir: dist,
  outbase: dist,
  entryNames: '[dir]/[name]',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  allowOverwrite: true,
  write: false,
  // Each file starts with MARK; a source map beside it (no comment pointing to it, so Node never
  // loads one) names the module a stack frame's line came from (db/statement-limit.ts reads it).
  banner: { js: MARK },
  sourcemap: 'external',
  sourcesContent: false,
  logLevel: 'warning',
  plugins: [stayOutside],
});

// The placeholders are replaced within their lines, so the source maps still find every line.
for (const file of result.outputFiles) {
  mkdirSync(dirname(file.path), { recursive: true });
  if (file.path.endsWith('.map')) {
    writeFileSync(file.path, file.contents);
    continue;
  }
  let up = posix(relative(dirname(file.path), dist)) || '.';
  if (!up.startsWith('.')) up = `./${up}`;
  const text = file.text
    .replaceAll(`${DIST}/`, `${up}/`)
    .replace(new RegExp(`${FILE_URL}\\(("[^"]+")\\)`, 'g'), (_, self) => {
      const path = JSON.parse(self);
      return `new URL(${JSON.stringify(`${up}/${path}`)}, import.meta.url).href`;
    });
  if (text.includes(DIST) || text.includes(FILE_URL))
    throw new Error(`bundle-commands: a placeholder is left in ${file.path}`);
  writeFileSync(file.path, text);
}

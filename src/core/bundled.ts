import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

/**
 * The libraries `npm run build` bundles (scripts/bundle-libs.js) are CommonJS files with, beside
 * each, V8's code cache for it (`<file>.v8`, written by the build on the Node that installed
 * taskrecon). With the cache V8 skips parsing and compiling what the library runs at load — most
 * of its cost at every command's start. A cache from another Node or V8 is rejected by V8 itself
 * and the file is compiled as usual: the same library, a slower start.
 */

type Wrapper = (
  exports: unknown,
  require: NodeJS.Require,
  module: { exports: unknown },
  filename: string,
  dirname: string,
  dynamicImport: (specifier: string) => Promise<unknown>,
) => void;

/**
 * The function a bundle's text runs in: CommonJS's own parameters and `__import`, which stands for
 * `import()` in it (the build rewrites each dynamic import of a bundle to a call of it). A script
 * of node:vm has no dynamic import of its own (only through an experimental option, and none once
 * compiled from a code cache), so a bundle imports through this module's import(): the same
 * loader, for the absolute URLs oclif imports its commands and hooks by.
 */
export function wrapBundle(text: string): string {
  return `(function (exports, require, module, __filename, __dirname, __import) {${text}\n})`;
}

function run(
  file: string,
  cachedData: Buffer | undefined,
): { script: Script; exports: Record<string, unknown> } {
  const script = new Script(wrapBundle(readFileSync(file, 'utf8')), { filename: file, cachedData });
  const wrapper = script.runInThisContext() as Wrapper;
  const module = { exports: {} as Record<string, unknown> };
  wrapper.call(
    module.exports,
    module.exports,
    createRequire(file),
    module,
    file,
    dirname(file),
    (specifier) => import(specifier),
  );
  return { script, exports: module.exports };
}

function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(`${file}.v8`);
  } catch {
    return undefined;
  }
}

/** The exports of a bundled library, loaded with its code cache when there is one V8 accepts. */
export function loadBundled(url: URL): Record<string, unknown> {
  const file = fileURLToPath(url);
  return run(file, readCache(file)).exports;
}

/** The code cache of a bundled library, made by loading it once (what the build writes beside it). */
export function bundledCodeCache(url: URL): Buffer {
  return run(fileURLToPath(url), undefined).script.createCachedData();
}

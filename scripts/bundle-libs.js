#!/usr/bin/env node
// Start-up: a command that reads a configuration and a MySQL table loads zod, yaml and mysql2, ~270
// modules between them. After tsc, this replaces the modules that re-export them (LIBS) with one
// bundled file each, so Node reads three files instead. Without esbuild (an install without dev
// dependencies) the re-exports stay: the same behaviour, a slower start.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  process.stderr.write('bundle-libs: esbuild is not installed; its modules stay re-exports\n');
  process.exit(0);
}

/** The re-exporting modules, relative to src/ (and, as .js, to dist/). */
const LIBS = ['core/zod', 'core/yaml', 'db/engines/mysql/driver'];

for (const lib of LIBS) {
  const entry = join(root, 'src', `${lib}.ts`);
  const outfile = join(root, 'dist', `${lib}.js`);
  if (!existsSync(outfile)) throw new Error(`bundle-libs: ${outfile} is missing; run tsc first`);
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    // yaml's Node entry and mysql2 are CommonJS and require Node's built-ins.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);",
    },
  });
}

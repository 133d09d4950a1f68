#!/usr/bin/env -S node --import tsx
// Runs the CLI from the TypeScript sources (no build): `./bin/dev.js scan --help`.
import { flush, handle, run } from '@oclif/core';

await run(process.argv.slice(2), { root: new URL('..', import.meta.url).pathname, development: true })
  .then(() => flush())
  .catch((error) => {
    // As bin/run.js: usage errors exit 3, not oclif's 2.
    if (error?.oclif && (error.oclif.exit === 2 || error.oclif.exit === 127)) error.oclif.exit = 3;
    return handle(error);
  });

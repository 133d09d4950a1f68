#!/usr/bin/env node
// Start-up matters (`taskrecon --help` within 300 ms): oclif's runner and everything the commands
// use of oclif come from one bundle with its code cache (dist/core/oclif.js, built by
// scripts/bundle-libs.js), not ~100 modules loaded one by one; commands import what they need when
// they run. Without the bundle (an install without esbuild) the same module re-exports oclif's own.
import module from 'node:module';

// Node 22.1+ keeps V8's compiled code of every module it loads in a cache on disk (the system's
// temporary folder; NODE_DISABLE_COMPILE_CACHE=1 turns it off), so later runs skip most of the
// parsing and compiling. Node 20 has no such cache: there only the bundled libraries carry theirs.
module.enableCompileCache?.();

const { run, flush, handle, settings } = await import('../dist/core/oclif.js');
// Always the compiled commands in dist/: with NODE_ENV=development or test, oclif on Node 22+ would
// otherwise look for TypeScript sources to run and warn on stderr when it finds none.
settings.enableAutoTranspile = false;

// A reader that stops early (`taskrecon --help | head -1`, `scan … | head`) closes the pipe: that is
// the reader's choice, not a failure, so the run ends there with the exit code it has so far (0
// unless a verdict was already set) instead of an EPIPE error or Node's exit 13 for the unsettled await.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error?.code !== 'EPIPE') throw error;
    process.exit(Number(process.exitCode) || 0);
  });
}

// oclif exits 2 on usage errors; taskrecon reserves 2 for report CRITICAL, so usage errors exit 3.
const remapUsageExit = (error) => {
  if (error?.oclif && (error.oclif.exit === 2 || error.oclif.exit === 127)) error.oclif.exit = 3;
  return handle(error);
};

// flush() takes a timeout in ms: never hand it the command's result (a NaN timeout cuts large
// piped output short with "timed out"; test/integration/show.integration.test.ts checks it).
await run(process.argv.slice(2), import.meta.url)
  .then(() => flush())
  .catch(remapUsageExit);

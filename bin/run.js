#!/usr/bin/env node
import { flush, handle, run } from '@oclif/core';

// oclif exits 2 on usage errors; taskrecon reserves 2 for report CRITICAL, so usage errors exit 3.
const remapUsageExit = (error) => {
  if (error?.oclif && (error.oclif.exit === 2 || error.oclif.exit === 127)) error.oclif.exit = 3;
  return handle(error);
};

// flush() takes a timeout in ms: never hand it the command's result (a NaN timeout cuts large output short).
await run(process.argv.slice(2), import.meta.url)
  .then(() => flush())
  .catch(remapUsageExit);

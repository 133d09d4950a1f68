#!/usr/bin/env -S node --import tsx
import { flush, handle, run } from '@oclif/core';

await run(process.argv.slice(2), import.meta.url)
  .then(flush)
  .catch((error) => {
    if (error?.oclif && (error.oclif.exit === 2 || error.oclif.exit === 127)) error.oclif.exit = 3;
    return handle(error);
  });

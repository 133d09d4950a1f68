// Preloaded with `node --import` into a process under test: records the URL of every module the
// ES module loader resolves (one a line) to the file named by TASKRECON_RECORD_MODULES.
import { register } from 'node:module';

const file = process.env.TASKRECON_RECORD_MODULES;
if (file) register('./record-modules-hooks.mjs', import.meta.url, { data: { file } });

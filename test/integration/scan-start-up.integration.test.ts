import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wrapBundle } from '../../src/core/bundled.js';
import { runCli } from '../support/cli.js';
import { createEngineDb, TEST_ENGINES, type EngineDb } from '../support/engine-db.js';

// A whole list streamed as NDJSON with everything given by flags starts without what it does not
// use: the config reader (the YAML parser, the config schema and its validation library) and the
// sweep rules. With a config file the reader is loaded and the file is read as before. The build
// bundles oclif, zod, yaml and mysql2 into one file each (scripts/bundle-libs.js): none of their own
// modules is loaded one by one, and each bundle carries a code cache this Node's V8 accepts. It
// bundles the commands too (scripts/bundle-commands.js): a command loads its own file and the
// chunks it shares with others, not the modules of dist/ one by one.
const RECORDER = fileURLToPath(new URL('../support/record-modules.mjs', import.meta.url));
const UNBUNDLED = /\/node_modules\/(zod|yaml|mysql2|@oclif\/core)\//;
const BUNDLES = ['core/oclif', 'core/zod', 'core/yaml', 'db/engines/mysql/driver'].map((lib) =>
  fileURLToPath(new URL(`../../dist/${lib}.bundle.cjs`, import.meta.url)),
);
const UNUSED = [
  /\/node_modules\/zod\//,
  /\/node_modules\/yaml\//,
  /\/dist\/core\/(zod|yaml)\.js$/,
  /\/dist\/config\/load\.js$/,
  /\/dist\/verbs\/sweep\//,
];
/** What a command may load of dist/ by path: its bundle, shared chunks, the libraries' shims and their loader. */
const BUNDLED_PATHS =
  /\/dist\/(commands\/.*|chunks\/.*|core\/(oclif|zod|yaml|bundled)|db\/engines\/mysql\/driver)\.js$/;

/**
 * The modules of dist/ a loaded file holds: for a bundled command or a chunk, the ones esbuild
 * names in it (a `// dist/…` line above each), else the file itself.
 */
function modulesIn(url: string): string[] {
  if (!/\/dist\/(commands|chunks)\//.test(url)) return [url];
  const text = readFileSync(fileURLToPath(url), 'utf8');
  const held = [...text.matchAll(/^\/\/ (?:\S*\/)?(dist\/\S+\.js)$/gm)].map((m) => `/${m[1]!}`);
  return [url, ...held];
}

describe.each(TEST_ENGINES)('scan --format ndjson start-up (%s)', (engine) => {
  let db: EngineDb;
  let bare: string;
  let configured: string;

  beforeAll(async () => {
    db = await createEngineDb(engine, 'scan_start_up');
    configured = mkdtempSync(join(tmpdir(), 'taskrecon-start-up-'));
    writeFileSync(join(configured, 'taskrecon.config.yaml'), `db: ${db.dsn}\n`);
    expect((await runCli(['init'], { cwd: configured })).code).toBe(0);
    await db.run(`INSERT INTO async_task (biz_type, biz_id, event_id, payload, status, retry_count, next_retry_time) VALUES
      ('coupon', 'o-1', 'ev-1', '{}', 0, 1, ${db.at(-60)}), ('sms', 'o-2', 'ev-2', '{}', 3, 7, ${db.at(-60)})`);
    bare = mkdtempSync(join(tmpdir(), 'taskrecon-start-up-bare-'));
  });

  afterAll(async () => {
    await db?.drop();
  });

  const scan = async (cwd: string, extra: string[]) => {
    const record = join(mkdtempSync(join(tmpdir(), 'taskrecon-modules-')), 'modules.txt');
    writeFileSync(record, '');
    const result = await runCli(
      ['scan', '--status', 'pending', '--limit', '0', '--format', 'ndjson', ...extra],
      {
        cwd,
        env: { NODE_OPTIONS: `--import ${RECORDER}`, TASKRECON_RECORD_MODULES: record },
      },
    );
    expect(result.code, result.stderr).toBe(0);
    const modules = [...new Set(readFileSync(record, 'utf8').split('\n').filter(Boolean))].flatMap(modulesIn);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { bizId: string });
    return { modules, lines };
  };

  it('given everything by flags, loads neither the config reader nor the sweep rules', async () => {
    const { modules, lines } = await scan(bare, ['--db', db.dsn, '--profile', 'async-task']);
    expect(lines.map((l) => l.bizId)).toEqual(['o-1']);
    expect(modules.some((m) => m.endsWith('/dist/commands/scan.js'))).toBe(true);
    expect(modules.filter((m) => UNUSED.some((u) => u.test(m)))).toEqual([]);
  });

  it('loads oclif from its bundle and the command as one bundle with chunks, not module by module', async () => {
    const { modules } = await scan(bare, ['--db', db.dsn, '--profile', 'async-task']);
    expect(modules.filter((m) => UNBUNDLED.test(m))).toEqual([]);
    const byPath = modules.filter((m) => m.startsWith('file:') && m.includes('/dist/'));
    expect(byPath.filter((m) => !BUNDLED_PATHS.test(m))).toEqual([]);
    // The bundles hold what the command runs: the command's base and the scan verb among it.
    expect(modules).toContain('/dist/base-command.js');
    expect(modules).toContain('/dist/verbs/scan/scan.js');
  });

  it('with a config file, reads it (and loads the reader)', async () => {
    const { modules, lines } = await scan(configured, []);
    expect(lines.map((l) => l.bizId)).toEqual(['o-1']);
    expect(modules.some((m) => m.endsWith('/dist/core/yaml.js'))).toBe(true);
    expect(modules.some((m) => m.endsWith('/dist/core/zod.js'))).toBe(true);
    expect(modules.filter((m) => UNBUNDLED.test(m))).toEqual([]);
  });
});

describe('the bundled libraries', () => {
  it.each(BUNDLES)('%s has a code cache V8 accepts, and a wrong one is rejected', (bundle) => {
    const source = wrapBundle(readFileSync(bundle, 'utf8'));
    const accepted = new Script(source, { filename: bundle, cachedData: readFileSync(`${bundle}.v8`) });
    expect(accepted.cachedDataRejected).toBe(false);
    // The check can fail: the cache of another source is refused.
    const other = new Script(`${source};`, { filename: bundle, cachedData: readFileSync(`${bundle}.v8`) });
    expect(other.cachedDataRejected).toBe(true);
  });
});

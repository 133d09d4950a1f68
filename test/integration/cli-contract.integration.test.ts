import { beforeAll, describe, expect, it } from 'vitest';
import { Plugin } from '@oclif/core';
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli, runJson } from '../support/cli.js';
import { assertMatchesSchema } from '../support/schemas.js';

// The CLI's contract: a current manifest, help with a summary and examples for every
// command, and --json output that matches the schemas in schemas/.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface ManifestCommand {
  id: string;
  summary?: string;
  examples?: string[];
  flags: Record<string, unknown>;
  args: Record<string, unknown>;
}
interface Manifest {
  commands: Record<string, ManifestCommand>;
}

/** The manifest `oclif manifest` would write for the built commands in dist/. */
async function freshManifest(): Promise<Manifest> {
  const plugin = new Plugin({
    root: ROOT,
    type: 'core',
    ignoreManifest: true,
    errorOnManifestCreate: true,
    respectNoCacheDefault: true,
  });
  await plugin.load();
  return JSON.parse(JSON.stringify(plugin.manifest)) as Manifest;
}

/** The committed oclif.manifest.json (the file in the work tree when there is no git history). */
function committedManifest(): Manifest {
  try {
    return JSON.parse(
      execFileSync('git', ['show', 'HEAD:oclif.manifest.json'], {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    ) as Manifest;
  } catch {
    return JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as Manifest;
  }
}

let manifest: Manifest;

/** A JSON value with every number and every ISO time replaced, so two runs a second apart compare equal. */
function withoutClocks(value: unknown): unknown {
  if (typeof value === 'number') return 0;
  if (typeof value === 'string') return /^\d{4}-\d\d-\d\dT/.test(value) ? 'time' : value;
  if (Array.isArray(value)) return value.map(withoutClocks);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutClocks(v)]));
  }
  return value;
}

beforeAll(async () => {
  manifest = await freshManifest();
});

describe('oclif manifest', () => {
  it('is committed as the build produces it (run `npm run build` and commit oclif.manifest.json)', () => {
    const committed = committedManifest();
    expect(Object.keys(committed.commands).sort()).toEqual(Object.keys(manifest.commands).sort());
    for (const [id, command] of Object.entries(manifest.commands)) {
      expect(committed.commands[id], `oclif.manifest.json is stale for '${id}'`).toEqual(command);
    }
  });
});

describe('help', () => {
  it('gives every command a summary and at least one example with long flags only', () => {
    for (const command of Object.values(manifest.commands)) {
      expect(command.summary?.trim(), `${command.id} has no summary`).toBeTruthy();
      expect(command.examples?.length ?? 0, `${command.id} has no example`).toBeGreaterThan(0);
      for (const example of command.examples ?? []) {
        expect(example, `${command.id}: examples use long flags`).not.toMatch(/\s-[a-zA-Z](\s|$)/);
      }
    }
  });

  it('prints the summary and the examples in --help', async () => {
    for (const id of ['init', 'scan', 'doctor', 'show']) {
      const { code, stdout } = await runCli([id, '--help']);
      expect(code).toBe(0);
      expect(stdout).toContain(manifest.commands[id]?.summary?.slice(0, 40));
      expect(stdout).toContain('EXAMPLES');
      expect(stdout).toContain(`taskrecon ${id}`);
    }
  });
});

describe('--json output matches schemas/', () => {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-contract-'));
  const db = `sqlite:${join(dir, 'contract.sqlite')}`;

  it('init, scan, doctor and show, and errors', async () => {
    const init = await runJson(['init', '--db', db]);
    expect(init.code).toBe(0);
    assertMatchesSchema('init', init.json);
    const printed = await runJson(['init', '--print', '--dialect', 'sqlite']);
    assertMatchesSchema('init', printed.json);
    const sqlite = new Database(join(dir, 'contract.sqlite'));
    sqlite.exec(`INSERT INTO async_task (id, biz_type, biz_id, event_id, payload, status, next_retry_time, last_error, updated_at) VALUES
      (1, 'sms', 'b1', 'e1', '{"to":"138"}', 0, datetime('now', '-1 minute'), NULL, datetime('now')),
      (2, 'sms', 'b2', 'e2', 'not json', 1, datetime('now'), NULL, datetime('now', '-1 hour')),
      (3, 'coupon', 'b3', 'e3', '{}', 3, datetime('now'), 'HTTP 500', datetime('now'))`);
    sqlite.close();
    const scan = await runJson<{ summary: { due: number; stuck: number } }>(['scan', '--db', db]);
    expect(scan.code).toBe(0);
    assertMatchesSchema('scan', scan.json);
    expect(scan.json.summary).toMatchObject({ due: 1, stuck: 1 });
    const doctor = await runJson(['doctor', '--db', db]);
    expect(doctor.code).toBe(0);
    assertMatchesSchema('doctor', doctor.json);
    for (const id of ['1', '2', '3']) {
      const show = await runJson(['show', id, '--db', db]);
      expect(show.code).toBe(0);
      assertMatchesSchema('show', show.json);
    }
    const missing = await runJson(['show', '404', '--db', db]);
    expect(missing.code).toBe(3);
    assertMatchesSchema('error', missing.json);
  }, 180_000);

  it('--format json prints what --json prints, errors included', async () => {
    const config = join(dir, 'format.yaml');
    writeFileSync(
      config,
      `db: ${db}\nrules:\n  - { name: sms-sent, bizType: sms, business: { table: async_task, key: event_id } }\n`,
    );
    for (const args of [['scan'], ['audit'], ['diff'], ['diff', '--rule', 'no-such-rule']]) {
      const viaJson = await runJson([...args, '--config', config]);
      const viaFormat = await runCli([...args, '--config', config, '--format', 'json']);
      expect(viaFormat.code, `${args[0]} --format json`).toBe(viaJson.code);
      const parsed = JSON.parse(viaFormat.stdout) as Record<string, unknown>;
      // The clocks (times, ages, durations) move between the two runs; all else is the same.
      expect(withoutClocks(parsed), `${args[0]} --format json`).toEqual(withoutClocks(viaJson.json));
    }
  }, 180_000);

  it('a schema rejects output that breaks it', () => {
    expect(() => assertMatchesSchema('doctor', { source: {}, checks: [] })).toThrow(/does not match/);
    expect(() => assertMatchesSchema('show', { source: {}, task: { id: 1 }, audit: [] })).toThrow(
      /does not match/,
    );
  });
});

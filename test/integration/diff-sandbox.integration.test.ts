import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildFixtures } from '../../src/verbs/demo/fixtures.js';
import { buildSandbox, BUSINESS_TABLES } from '../../src/verbs/demo/sandbox.js';
import { diffWithFindings } from '../support/diff-json.js';

/**
 * The demo sandbox (SQLite) carries missing, duplicated and orphan effects whose truth the
 * fixtures know: diff must find exactly those, joining in SQLite, and again with the business
 * tables in a second SQLite file (both sides checksummed by the client).
 */
const TASKS = 1500;
let dir: string;
let file: string;
let copy: string;

function truth(): Record<string, string[]> {
  const fixtures = buildFixtures(TASKS);
  const out: Record<string, string[]> = {};
  for (const bizType of Object.keys(BUSINESS_TABLES)) {
    const tasks = fixtures.tasks.filter((t) => t.bizType === bizType);
    out[`${bizType}-applied`] = [
      ...tasks.filter((t) => t.status === 2 && t.effects === 0).map((t) => `missing:${t.bizId}`),
      ...tasks.filter((t) => t.status === 2 && t.effects > 1).map((t) => `duplicate:${t.bizId}`),
      ...tasks
        .filter((t) => (t.status === 0 || t.status === 3) && t.effects > 0)
        .map((t) => `unsettled:${t.bizId}`),
      ...fixtures.orphans.filter(([b]) => b === bizType).map(([, id]) => `orphan:${id}`),
    ].sort();
  }
  return out;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'taskrecon-diffsandbox-'));
  file = join(dir, 'sandbox.sqlite');
  await buildSandbox(file, TASKS);
  copy = join(dir, 'business.sqlite');
  copyFileSync(file, copy);
});

describe('diff on the demo sandbox', () => {
  it.each([
    ['joining in SQLite', false],
    ['against business tables in another SQLite file', true],
  ])('finds exactly the planted effects %s', async (_label, cross) => {
    const rules = Object.entries(BUSINESS_TABLES)
      .map(
        ([bizType, b]) =>
          `  - { name: ${bizType}-applied, bizType: ${bizType}, business: { table: ${b.table}, key: ${b.key}${cross ? `, db: "sqlite:${copy}"` : ''} } }`,
      )
      .join('\n');
    const config = join(dir, cross ? 'cross.yaml' : 'same.yaml');
    writeFileSync(config, `db: sqlite:${file}\nrules:\n${rules}\n`);
    const json = await diffWithFindings(['--config', config, '--samples', '1000']);
    const expected = truth();
    for (const rule of json.rules) {
      expect(rule.mode).toBe(cross ? 'cross-server' : 'same-server');
      const found = rule.samples.map((s) => `${s.kind}:${s.key}`).sort();
      expect(found, rule.name).toEqual(expected[rule.name]);
      expect(found.length).toBeGreaterThan(0);
    }
  });
});

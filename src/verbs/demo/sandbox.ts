import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskreconError } from '../../errors.js';
import { auditDdl, asyncTaskDdl } from '../../db/ddl.js';
import { connect } from '../../db/connect.js';
import {
  store,
  DEMO_BUSINESS_DDL,
  SWEEP_DEMO_DDL,
  SWEEP_DEMO_RULES,
  SWEEP_DEMO_SOURCE,
} from '../../db/port/index.js';
import { buildFixtures } from './fixtures.js';

/** The business tables the sandbox's tasks were meant to change, and the column that names the order. */
export const BUSINESS_TABLES = {
  coupon: { table: 'user_coupon', key: 'order_id' },
  points: { table: 'user_points', key: 'order_id' },
  sms: { table: 'sms_log', key: 'order_id' },
} as const;

export interface Sandbox {
  file: string;
  configFile: string;
  tasks: number;
  businessRows: number;
  /** Ids worth looking at in the tour. */
  samples: { failedId: number | null; stuckId: number | null; dueId: number | null };
}

/**
 * Builds the SQLite sandbox: the reference task table, taskrecon's audit table, three business
 * tables and `count` tasks, plus a config file beside it. An existing sandbox is rebuilt; any
 * other file at that path is left alone.
 */
export async function buildSandbox(fileArg: string, count: number): Promise<Sandbox> {
  const file = resolve(fileArg);
  if (existsSync(file)) {
    let isSandbox = false;
    try {
      const probe = await connect(`sqlite:${file}`);
      isSandbox = await store.sandbox.isDemoSandbox(probe);
      await probe.close();
    } catch {
      // Not SQLite at all: certainly not ours.
    }
    if (!isSandbox) {
      throw new TaskreconError(`${file} exists and is not a taskrecon sandbox; it was left as it is`, {
        code: 'USAGE',
        hint: 'Choose another path with --file.',
      });
    }
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
  }
  const db = await connect(`sqlite:${file}`, { create: true });
  try {
    for (const statement of [
      ...asyncTaskDdl(db.dialect),
      ...auditDdl(db.dialect),
      ...DEMO_BUSINESS_DDL,
      ...SWEEP_DEMO_DDL,
    ])
      await db.execute(statement);
    const fixtures = buildFixtures(count);
    const businessRows = await db.transaction(async (tx) => {
      let rows = 0;
      for (const task of fixtures.tasks) {
        await store.sandbox.insertDemoTask(tx, task);
        for (let i = 0; i < task.effects; i++)
          rows += await store.sandbox.insertDemoEffect(
            tx,
            task.bizType,
            task.bizId,
            task.eventId,
            JSON.parse(task.payload),
          );
      }
      for (const [bizType, orderId] of fixtures.orphans)
        rows += await store.sandbox.insertDemoEffect(tx, bizType, orderId, null, {
          user_id: 10_001,
          points: 5,
          phone: '13800000000',
        });
      // think-queue failures for the sweep (not business rows).
      await store.sandbox.insertSweepDemoFailures(tx);
      await store.sandbox.markSandbox(tx, count);
      return rows;
    });
    const configFile = join(dirname(file), `${basename(file).replace(/\.sqlite$/, '')}.config.yaml`);
    writeFileSync(configFile, sandboxConfig(basename(file), effectHandlerArgv(file)));
    return { file, configFile, tasks: count, businessRows, samples: await store.sandbox.demoSamples(db) };
  } finally {
    await db.close();
  }
}

/** The sandbox's handler script, beside this module wherever the package is installed. */
const EFFECT_HANDLER = fileURLToPath(new URL('./effect-handler.js', import.meta.url));

/**
 * The argv of the sandbox's `command` handler: this Node running the handler script on the sandbox
 * file, all absolute, so the config works from any directory and wherever the package lives.
 */
export function effectHandlerArgv(sqliteFile: string): string[] {
  return [process.execPath, EFFECT_HANDLER, resolve(sqliteFile), '{bizType}', '{bizId}', '{eventId}'];
}

/**
 * The sandbox's config: one source, a handler per biz type that writes the task's business row
 * (once per event id), and a diff rule per business table.
 */
export function sandboxConfig(sqliteFile: string, handlerArgv: string[]): string {
  const handler = `{ type: command, argv: [${handlerArgv.map((a) => JSON.stringify(a)).join(', ')}], timeout: 30s }`;
  return `# taskrecon sandbox config, written by \`taskrecon demo\`. The db path is relative to this file;
# the handler runs the sandbox's own script, which writes each task's business row once per event id.
db: sqlite:${sqliteFile}
sources:
  tasks: { profile: async-task, table: async_task, default: true }
${SWEEP_DEMO_SOURCE}handlers:
${Object.keys(BUSINESS_TABLES)
  .map((bizType) => `  ${bizType}: ${handler}`)
  .join('\n')}
retry:
  default: { policy: schedule, schedule: [1s, 4s, 16s, 64s, 5m, 30m, 2h] }
rules:
${Object.entries(BUSINESS_TABLES)
  .map(
    ([bizType, b]) =>
      `  - { name: ${bizType}-applied, bizType: ${bizType}, taskStatus: [success], business: { table: ${b.table}, key: ${b.key}, expect: exactly-one } }`,
  )
  .join('\n')}
report:
  thresholds: { failureRate: { warn: 1%, crit: 5% }, stuck: { warn: 1 }, oldestDue: { warn: 10m } }
${SWEEP_DEMO_RULES}`;
}

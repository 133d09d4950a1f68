import { Flags } from '../core/oclif.js';
import { BaseCommand } from '../base-command.js';
import {
  ackDdl,
  alertClaimDdl,
  auditDdl,
  intentDdl,
  pushMarkerDdl,
  notifyDdl,
  queueSnapshotDdl,
  taskTableDdl,
  type DdlProfile,
} from '../db/ddl.js';
import { ENGINE_NAMES, engineFor } from '../db/engines/registry.js';
import { parseDsn } from '../db/dsn.js';
import type { EngineName } from '../db/engines/types.js';
import { renderInit } from '../render/init.js';
import { pasteCommand } from '../render/paste.js';

export interface InitResult {
  db: string | null;
  printed: boolean;
  statements: string[];
  created: string[];
}

export default class Init extends BaseCommand<typeof Init> {
  static override summary =
    "Create the reference task table and taskrecon's audit table, or print their DDL.";
  static override description =
    'Creates async_task (the classic task-table design) or job_retries (the job-retries design) with the indexes scan and redrive need, and ' +
    'taskrecon_audit. Tables that exist are left as they are. Laravel and think-queue tables come from their own migrations.';
  static override examples = [
    '<%= config.bin %> init --db mysql://root@127.0.0.1:3306/shop',
    '<%= config.bin %> init --print --profile job-retries > job_retries.sql',
    '<%= config.bin %> init --db sqlite:tasks.sqlite --table my_tasks',
  ];

  static override flags = {
    print: Flags.boolean({ summary: 'Print the DDL for a DBA instead of running it.' }),
    dialect: Flags.string({
      summary: 'With --print and no --db: the SQL dialect.',
      options: [...ENGINE_NAMES],
      default: 'mysql',
    }),
    'audit-only': Flags.boolean({ summary: "Only create taskrecon's own tables." }),
  };

  async run(): Promise<InitResult> {
    const choice = this.context.source();
    // A config with brokers and no task sources: only taskrecon's own tables (audit, snapshots).
    const profile = choice.profile.name;
    // Laravel's and think-queue's tables come from their own migrations: beside them, init creates
    // only taskrecon's own tables (and says so) instead of refusing.
    const frameworkTable = profile !== 'async-task' && profile !== 'job-retries';
    const ownOnly =
      this.flags['audit-only'] ||
      frameworkTable ||
      (!this.flags.profile &&
        !this.flags.table &&
        !this.context.config.sources &&
        !!this.context.config.brokers);
    const dsnText = this.flags.db || process.env.TASKRECON_DB || choice.config.db || this.context.config.db;
    const engine =
      this.flags.print && !dsnText
        ? engineFor(this.flags.dialect as EngineName)
        : engineFor(parseDsn(this.context.dsn(choice)).kind);
    const targetDialect = engine.dialect;
    const statements = [
      ...(ownOnly ? [] : taskTableDdl(targetDialect, profile as DdlProfile, choice.profile.table)),
      ...auditDdl(targetDialect),
      ...notifyDdl(targetDialect),
      ...alertClaimDdl(targetDialect),
      ...queueSnapshotDdl(targetDialect),
      ...intentDdl(targetDialect),
      ...pushMarkerDdl(targetDialect),
      ...ackDdl(targetDialect),
    ];
    if (this.flags.print) {
      this.log(statements.map((s) => `${s};`).join('\n\n'));
      return { db: null, printed: true, statements, created: [] };
    }
    const db = await this.context.open(choice, { create: true });
    const tables = [
      ...(ownOnly ? [] : [choice.profile.table]),
      'taskrecon_audit',
      'taskrecon_notify',
      'taskrecon_alert_claim',
      'taskrecon_queue_snapshot',
      'taskrecon_intent',
      'taskrecon_push_marker',
      'taskrecon_ack',
    ];
    const existing = new Set<string>();
    for (const table of tables) if (await db.columns(table)) existing.add(table);
    for (const statement of statements) await db.execute(statement);
    const created = tables.filter((t) => !existing.has(t));
    if (!this.jsonEnabled())
      this.log(
        renderInit({
          db: db.display,
          tables: tables.map((t) => ({ table: t, created: !existing.has(t) })),
          frameworkTable: frameworkTable && !this.flags['audit-only'] ? choice.profile.table : undefined,
          next: pasteCommand('doctor'),
        }),
      );
    return { db: db.display, printed: false, statements, created };
  }
}
